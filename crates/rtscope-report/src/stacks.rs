//! Where in the kernel, in the report's "Why" section: the time by kernel function over every
//! traced spike of a run with kernel stacks, and a flame graph of the same spikes' folded
//! stacks weighted by the time charged to their context (inline SVG, drawn here: no script,
//! no dependency). A run recorded before every spike's stacks were kept draws its kept
//! spikes'.

use crate::escape::escape;
use rtscope_explain::book::{ExplainSummary, Explained};
use rtscope_explain::folded::FoldedStack;
use rtscope_explain::model::KernelStack;
use rtscope_explain::render::handler_line;
use rtscope_explain::stack::{leading_handler, FunctionTime, SHOWN_FRAMES};
use rtscope_explain::tally::folded_weights;
use rtscope_explain::words::dur;
use std::fmt::Write;

/// Rows of the function table shown.
const MAX_ROWS: usize = 15;
/// The flame graph's width and the height of one frame (px).
const WIDTH: f64 = 960.0;
const ROW: f64 = 17.0;
/// Frames drawn per stack at most (the outermost first).
const MAX_DEPTH: usize = 32;

/// Where in the kernel, for the worst-spikes table's cell: the spike's handler where one led
/// it, else the folded first frames of its stack.
pub fn cell(e: &Explained) -> String {
    let Explained::Traced(a) = e else {
        return String::new();
    };
    if leading_handler(a).is_some() || a.stack.is_none() {
        return a.handler.as_ref().map_or(String::new(), handler_line);
    }
    a.stack
        .as_ref()
        .map_or(String::new(), |s| match s.in_user_space() {
            true => format!("no kernel stack: it ran in user space ({})", s.task),
            false => format!("{} ({})", s.top(SHOWN_FRAMES).join(" ← "), s.task),
        })
}

/// The table and the flame graph of `s`, when its spikes have kernel stacks.
pub fn section(h: &mut String, s: &ExplainSummary) {
    if s.functions.is_empty() {
        return;
    }
    function_table(h, &s.functions);
    let under: u64 = s.functions.iter().map(|r| r.ns).sum();
    let rest = s.counts.traced_ns.saturating_sub(under);
    if rest > 0 {
        let _ = writeln!(
            h,
            "<p class=\"muted\">Under no kernel function: {} of {} traced (hypervisor {}; the rest idle, interrupts and contexts without a stack: the culprits above).</p>",
            escape(&dur(rest)),
            escape(&dur(s.counts.traced_ns)),
            escape(&dur(s.class_totals().hypervisor_ns))
        );
    }
    match s.stacks.is_empty() {
        false => flame_graph(h, &s.stacks, "every traced spike"),
        true => {
            let kept = s.worst.iter().filter_map(|e| match e {
                Explained::Traced(a) => Some(a),
                Explained::Coarse(_) => None,
            });
            flame_graph(h, &folded_weights(kept), "the kept spikes")
        }
    }
}

fn function_table(h: &mut String, rows: &[FunctionTime]) {
    h.push_str("<table class=\"functions\"><tr><th class=\"t\">time by kernel function</th><th>spikes</th><th>total time</th></tr>\n");
    for r in rows.iter().take(MAX_ROWS) {
        let _ = writeln!(
            h,
            "<tr><td class=\"t\"><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            escape(&r.function),
            r.spikes,
            escape(&dur(r.ns))
        );
    }
    h.push_str("</table>\n");
    if rows.len() > MAX_ROWS {
        let ns: u64 = rows[MAX_ROWS..].iter().map(|r| r.ns).sum();
        let _ = writeln!(
            h,
            "<p class=\"muted\">… {} more functions, {} in all.</p>",
            rows.len() - MAX_ROWS,
            escape(&dur(ns))
        );
    }
    h.push_str("<p class=\"muted\">Each traced spike's time charged to the context its kernel stack is of, under the stack's first function outside the scheduler, tracing, interrupt-entry and sleep code; \"(user space)\": the task held the CPU in user space (docs/explain.md, \"Kernel stacks\").</p>\n");
}

/// A frame of the flame graph and its callees.
#[derive(Default)]
struct Node {
    name: String,
    ns: u64,
    kids: Vec<Node>,
}

impl Node {
    fn insert(&mut self, frames: &[&str], ns: u64) {
        self.ns = self.ns.saturating_add(ns);
        let Some((first, rest)) = frames.split_first() else {
            return;
        };
        let i = match self.kids.iter().position(|k| k.name == *first) {
            Some(i) => i,
            None => {
                self.kids.push(Node {
                    name: first.to_string(),
                    ..Node::default()
                });
                self.kids.len() - 1
            }
        };
        self.kids[i].insert(rest, ns);
    }

    fn depth(&self) -> usize {
        1 + self.kids.iter().map(Node::depth).max().unwrap_or(0)
    }
}

/// The flame graph of `folded` (root first, `;`-separated; weights in ns) of `which` spikes:
/// the roots at the bottom, each frame as wide as the charged time under it.
fn flame_graph(h: &mut String, folded: &[FoldedStack], which: &str) {
    let mut root = Node::default();
    for f in folded {
        let frames: Vec<&str> = f.stack.split(';').take(MAX_DEPTH).collect();
        root.insert(&frames, f.ns);
    }
    if root.ns == 0 {
        return;
    }
    let depth = root.depth() - 1;
    let height = depth as f64 * ROW + 2.0;
    let _ = writeln!(
        h,
        "<p>Kernel stacks of {which} under their task, weighted by the time charged to it ({} in all; hover a frame for its time):</p>\n<svg class=\"flame\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"flame graph of the kernel stacks of {which}\" font-family=\"monospace\" font-size=\"11\">",
        escape(&dur(root.ns))
    );
    let scale = WIDTH / root.ns as f64;
    let mut x = 0.0;
    for k in &root.kids {
        draw(h, k, x, 0, height, scale, root.ns);
        x += k.ns as f64 * scale;
    }
    h.push_str("</svg>\n");
}

fn draw(h: &mut String, n: &Node, x: f64, level: usize, height: f64, scale: f64, total: u64) {
    let w = n.ns as f64 * scale;
    if w < 0.5 {
        return;
    }
    let y = height - (level + 1) as f64 * ROW;
    // Warm colours by name, stable across reports.
    let hash = n
        .name
        .bytes()
        .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
    let (r, g) = (205 + hash % 50, 80 + (hash / 50) % 120);
    let name = escape(&n.name);
    let _ = write!(
        h,
        "<g><title>{name}: {} ({:.1} %)</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"rgb({r},{g},60)\" stroke=\"#fff\" stroke-width=\"0.5\"/>",
        escape(&dur(n.ns)),
        n.ns as f64 * 100.0 / total as f64,
        ROW - 1.0
    );
    let fits = ((w - 4.0) / 6.6).floor().max(0.0) as usize;
    if fits >= 3 {
        let label: String = if n.name.chars().count() > fits {
            let mut s: String = n.name.chars().take(fits.saturating_sub(1)).collect();
            s.push('…');
            s
        } else {
            n.name.clone()
        };
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x + 2.0,
            y + ROW - 5.0,
            escape(&label)
        );
    }
    h.push_str("</g>\n");
    let mut at = x;
    for k in &n.kids {
        draw(h, k, at, level + 1, height, scale, total);
        at += k.ns as f64 * scale;
    }
}

/// Whether a stack or a handler was recorded for any of `s`'s kept spikes.
pub fn any(s: &ExplainSummary) -> bool {
    s.worst.iter().any(|e| {
        matches!(e, Explained::Traced(a) if a.handler.is_some()
            || a.stack.as_ref().is_some_and(|k: &KernelStack| !k.frames.is_empty()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_explain::book::SpikeBook;
    use rtscope_explain::model::{Attribution, Category, Charge, Spike, Task, Tier};

    fn task() -> Task {
        Task {
            comm: "noisy<x>".into(),
            pid: 5,
            prio: 120,
        }
    }

    /// A spike of `latency` at `at`, charged to `noisy<x>` whose stack is `frames`.
    fn spike(at: u64, latency: u64, frames: &[&str]) -> Explained {
        Explained::Traced(Attribution {
            spike: Spike {
                cpu: 1,
                tid: 9,
                deadline_ns: at,
                wakeup_ns: at + latency,
                smis: None,
            },
            charges: vec![Charge::new(Category::Blocking { task: task() }, latency)],
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: Some(KernelStack {
                task: task(),
                frames: frames.iter().map(|f| f.to_string()).collect(),
            }),
            handler: None,
        })
    }

    #[test]
    fn the_function_table_and_the_flame_graph_show_every_stack_weighted_and_escaped() {
        let mut b = SpikeBook::new(60_000_000_000, 10, 10);
        b.add(spike(
            1_000_000,
            3_000_000,
            &[
                "__schedule",
                "noisy_hold_preempt_off [noisy]",
                "noisy_thread [noisy]",
                "kthread",
            ],
        ));
        b.add(spike(
            9_000_000,
            1_000_000,
            &[
                "bpf_trace_run4",
                "__schedule",
                "do_nanosleep",
                "hrtimer_nanosleep",
                "__x64_sys_clock_nanosleep",
                "do_syscall_64",
                "entry_SYSCALL_64_after_hwframe",
            ],
        ));
        b.add(spike(
            20_000_000,
            2_000_000,
            &["__schedule", "<script>", "kthread"],
        ));
        let s = b.summary(Tier::FlightRecorder, None, 100_000);
        assert!(any(&s));
        let mut h = String::new();
        section(&mut h, &s);
        assert!(
            h.contains("<code>noisy_hold_preempt_off [noisy]</code></td><td>1</td><td>3.00 ms"),
            "{h}"
        );
        assert!(h.contains("<svg class=\"flame\""), "{h}");
        assert!(
            h.contains("<title>noisy_hold_preempt_off [noisy]: 3.00 ms (50.0 %)</title>"),
            "{h}"
        );
        // The task is the root, every spike's (not only the kept ones': one per window here);
        // kthread the outermost kernel frame of two stacks: one frame, 5 ms wide of 6.
        assert!(
            h.contains("<title>noisy&lt;x&gt;: 6.00 ms (100.0 %)</title>"),
            "{h}"
        );
        assert!(h.contains("every traced spike"), "{h}");
        // Every spike's time is charged to its stack's task here: nothing is left apart.
        assert!(!h.contains("Under no kernel function"), "{h}");
        assert!(
            h.contains("<title>kthread: 5.00 ms (83.3 %)</title>"),
            "{h}"
        );
        assert!(h.contains("<title>(user space): 1.00 ms"), "{h}");
        assert!(
            h.contains("&lt;script&gt;") && !h.contains("<script>"),
            "{h}"
        );
        // The task and three levels at most above it: no frame of the scheduler, the sleep
        // or the tracer is drawn.
        for plumbing in ["__schedule", "do_nanosleep", "bpf_trace_run4"] {
            assert!(!h.contains(plumbing), "{h}");
        }
        assert!(h.contains("height=\"70\""), "{h}");
        assert_eq!(
            cell(&s.worst[1]),
            "no kernel stack: it ran in user space (noisy<x>:5:nice0)"
        );
        // A summary stored before every spike's stacks were kept draws its kept spikes'.
        let old = ExplainSummary {
            stacks: Vec::new(),
            ..s.clone()
        };
        let mut h = String::new();
        section(&mut h, &old);
        assert!(h.contains("Kernel stacks of the kept spikes"), "{h}");
        assert!(
            h.contains("<title>kthread: 5.00 ms (83.3 %)</title>"),
            "{h}"
        );
    }

    /// A spike led by a tasklet shows it in its cell, the table and the graph, under its
    /// context; one whose handler ran briefly keeps its stack.
    #[test]
    fn a_leading_handler_names_its_spike_in_the_cell_the_table_and_the_graph() {
        use rtscope_explain::model::{Category, Charge, Handler, HandlerKind, Softirq};
        let lead = |e: &mut Explained, ns: u64| {
            if let Explained::Traced(a) = e {
                a.charges = vec![Charge {
                    category: Category::Softirq {
                        vec: Softirq::Tasklet,
                    },
                    ns: 400_000,
                    times: 1,
                }];
                a.handler = Some(Handler {
                    kind: HandlerKind::Tasklet,
                    function: "noisy_long_softirq [noisy]".into(),
                    ns,
                    times: 1,
                });
            }
        };
        let mut led = spike(1_000_000, 500_000, &["__schedule", "do_idle"]);
        lead(&mut led, 390_000);
        let mut brief = spike(5_000_000, 600_000, &["__schedule", "do_nanosleep"]);
        lead(&mut brief, 10_000);
        assert_eq!(
            cell(&led),
            "noisy_long_softirq [noisy] (tasklet, 390.0 µs in 1 run)"
        );
        assert_eq!(cell(&brief), "do_nanosleep (noisy<x>:5:nice0)");
        let mut b = SpikeBook::new(60_000_000_000, 10, 10);
        b.add(led);
        b.add(brief);
        let s = b.summary(Tier::FlightRecorder, None, 100_000);
        let mut h = String::new();
        section(&mut h, &s);
        assert!(
            h.contains("<code>noisy_long_softirq [noisy]</code></td><td>1</td><td>390.0 µs"),
            "{h}"
        );
        assert!(h.contains("<title>tasklet: 390.0 µs"), "{h}");
        // The rest of the two spikes' 1.1 ms is apart, said under the table.
        assert!(
            h.contains("Under no kernel function: 710.0 µs of 1.10 ms traced (hypervisor 0 ns;"),
            "{h}"
        );
    }

    #[test]
    fn a_run_without_stacks_gets_neither_table_nor_graph() {
        let s = SpikeBook::new(60_000_000_000, 10, 10).summary(Tier::FlightRecorder, None, 1);
        let mut h = String::new();
        section(&mut h, &s);
        assert!(h.is_empty());
        assert!(!any(&s));
    }
}
