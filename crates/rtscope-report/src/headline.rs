//! The answer first: what a study's author writes in the conclusion, at the top of the report.
//! Per group of runs (the grouping every plot uses) the worst wake-up and where it was,
//! p99.99 over all the group's samples, the deadlines missed, and the cause of the worst spike
//! where the run was explained; with several groups, how each compares with the first.

use crate::escape::escape;
use crate::group::Grouping;
use crate::model::RunData;
use rtscope_core::Histogram;
use rtscope_explain::book::Explained;
use rtscope_explain::cause::CauseLine;
use rtscope_explain::words::dur;
use rtscope_store::RunId;
use std::fmt::Write;

/// The answer for one group of runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The group's name (the values that tell it apart), or the run's name.
    pub name: String,
    /// Its runs.
    pub runs: Vec<RunId>,
    /// Wake-ups measured.
    pub samples: u64,
    /// The worst wake-up (ns), its run and seconds into that run.
    pub worst: Option<(u64, RunId, Option<f64>)>,
    /// p99.99 over all the group's samples (ns), whether it is a lower bound, and whether
    /// fewer than 10 samples lie beyond it (too few for a meaningful value).
    pub p9999: Option<(u64, bool, bool)>,
    /// Deadlines missed (`None`: unknown for some run, e.g. an import).
    pub missed: Option<u64>,
    /// What caused the worst explained spike of the worst run, with the shares of that spike.
    pub cause: Option<Cause>,
}

/// The cause of a spike, as `--explain` charged it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// The spike (ns).
    pub spike_ns: u64,
    /// What caused it, by the one rule of `rtscope_explain::cause`.
    pub why: Why,
    /// The spike is the run's worst wake-up (else a smaller one: the worst was not explained).
    pub is_worst: bool,
}

/// What a spike's cause line can say.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// Traced: a culprit with at least half of the spike, else a group, a spread or mostly
    /// unexplained, every share given.
    Traced(CauseLine),
    /// From the monitors only: the busiest thread of the interval, when there was one (its
    /// share of the spike is not known).
    Monitors(Option<String>),
}

/// One answer per group of `grouping` (per run when there is one group).
pub fn answers(runs: &[RunData], grouping: &Grouping) -> Vec<Answer> {
    let groups: Vec<(String, Vec<usize>)> = if grouping.groups.len() > 1 {
        let g = grouping.groups.iter();
        g.map(|g| (g.name.clone(), g.runs.clone())).collect()
    } else {
        (0..runs.len()).map(|i| (runs[i].name(), vec![i])).collect()
    };
    groups
        .into_iter()
        .map(|(name, idx)| answer(name, &idx.iter().map(|&i| &runs[i]).collect::<Vec<_>>()))
        .collect()
}

fn answer(name: String, runs: &[&RunData]) -> Answer {
    let mut h = Histogram::new();
    let mut over = rtscope_core::Overflow::default();
    let mut missed = Some(0u64);
    let mut worst: Option<(u64, RunId, Option<f64>)> = None;
    let mut worst_run: Option<&RunData> = None;
    for r in runs {
        let s = &r.detail.summary;
        h.merge(&s.histogram);
        over = over.merge(r.detail.overflow_all());
        missed = missed.zip(r.missed()).map(|(a, b)| a + b);
        if let Some(m) = s.max_ns.filter(|&m| worst.is_none_or(|w| m > w.0)) {
            let at = r
                .detail
                .threads
                .iter()
                .filter(|t| t.figures.max_ns == Some(m))
                .find_map(|t| t.figures.max_offset_ns)
                .map(|ns| ns as f64 / 1e9);
            worst = Some((m, r.id(), at));
            worst_run = Some(r);
        }
    }
    let p = h.percentile_over_all("p99.99", 0.9999, over);
    Answer {
        name,
        runs: runs.iter().map(|r| r.id()).collect(),
        samples: runs.iter().map(|r| r.detail.summary.samples).sum(),
        p9999: p.value.map(|v| (v.0, p.lower_bound, p.tail_samples < 10.0)),
        missed,
        cause: worst_run.and_then(|r| cause(r, worst.map_or(0, |w| w.0))),
        worst,
    }
}

/// The cause of the worst spike `r`'s explanation kept.
fn cause(r: &RunData, max_ns: u64) -> Option<Cause> {
    let (s, _) = r.explain.as_ref()?;
    let top = s.worst.iter().max_by_key(|e| e.latency_ns())?;
    let spike_ns = top.latency_ns();
    let why = match top {
        Explained::Traced(a) => Why::Traced(CauseLine::of(a)?),
        Explained::Coarse(c) => {
            let t = c.top_threads.iter().max_by_key(|(_, ns)| *ns);
            Why::Monitors(t.map(|(t, _)| t.to_string()))
        }
    };
    Some(Cause {
        spike_ns,
        why,
        is_worst: spike_ns >= max_ns,
    })
}

/// A latency for people, with its unit (`4.65 ms`, `412.0 µs`).
pub fn human(ns: u64) -> String {
    dur(ns)
}

/// The sentence of one answer: `worst 4.65 ms (run 2, 11.1 s in), p99.99 412 µs, 745 of 249,255
/// deadlines missed; the worst was caused by blocking by rust-lld:5156 (99 %)`. A culprit is
/// named as the cause only with at least half of the spike; else the line names its kind as a
/// group, or says the spike was spread or mostly unexplained, every share given
/// (`rtscope_explain::cause`).
pub fn sentence(a: &Answer) -> String {
    sentence_with(a, true)
}

/// [`sentence`]; `thin_note` false leaves out the note on a p99.99 resting on fewer than 10
/// samples (said once for all groups instead, [`thin_note`]).
pub fn sentence_with(a: &Answer, thin_note: bool) -> String {
    let mut o = match a.worst {
        Some((ns, run, at)) => {
            let at = at.map_or(String::new(), |s| format!(", {s:.1} s in"));
            format!("worst {} (run {run}{at})", human(ns))
        }
        None => "no wake-up measured".into(),
    };
    if let Some((v, lower, thin)) = a.p9999 {
        let ge = if lower { "≥ " } else { "" };
        let _ = write!(o, ", p99.99 {ge}{}", human(v));
        if thin && thin_note {
            o.push_str(" (fewer than 10 samples beyond it: measure longer)");
        }
    }
    match a.missed {
        Some(0) => o.push_str(", no deadline missed"),
        Some(m) => {
            let _ = write!(o, ", {m} deadlines missed");
        }
        None => {}
    }
    if let Some(c) = &a.cause {
        let which = if c.is_worst {
            "the worst".to_string()
        } else {
            format!("the worst explained spike ({})", human(c.spike_ns))
        };
        let _ = match &c.why {
            Why::Traced(line) => write!(o, "; {}", line.sentence(&which)),
            Why::Monitors(Some(t)) => write!(
                o,
                "; {which} was not traced (from the monitors only: the busiest thread {t}, its \
                 share unknown)"
            ),
            Why::Monitors(None) => {
                write!(o, "; {which} was not traced (nothing from the monitors)")
            }
        };
    }
    o
}

/// How each group compares with the first: the ratio of their worst wake-ups and p99.99.
pub fn verdicts(answers: &[Answer]) -> Vec<String> {
    let Some(base) = answers.first() else {
        return Vec::new();
    };
    answers[1..]
        .iter()
        .filter_map(|a| against(a, base, &a.name, &base.name))
        .collect()
}

/// `a` against `base` (named so): `NAME against BASE: worst 3.95× higher, p99.99 1.05× higher`.
fn against(a: &Answer, base: &Answer, name: &str, base_name: &str) -> Option<String> {
    let ratio = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
        _ => None,
    };
    let words = |r: f64| {
        if r >= 1.0 {
            format!("{r:.2}× higher")
        } else {
            format!("{:.2}× lower", 1.0 / r)
        }
    };
    let w = ratio(a.worst.map(|w| w.0), base.worst.map(|w| w.0))?;
    let mut o = format!("{name} against {base_name}: worst {}", words(w));
    if let Some(p) = ratio(a.p9999.map(|p| p.0), base.p9999.map(|p| p.0)) {
        let _ = write!(o, ", p99.99 {}", words(p));
    }
    Some(o)
}

/// With a row key beside other keys (load case × kernel, the seed-002 design): per load case,
/// each group of the case against the case's first group, named by the other keys' values
/// (`idle: kernel=rt against kernel=regular: worst 3.95× higher, …`) — like with like, where
/// [`verdicts`] would set every group against the first case. `None` without such a grouping
/// (or when `answers` are not one per group).
pub fn verdicts_by_row(answers: &[Answer], g: &Grouping) -> Option<Vec<String>> {
    let row = g.row_key()?;
    if answers.len() != g.groups.len() {
        return None;
    }
    let others: Vec<usize> = (0..g.keys.len()).filter(|&k| k != row).collect();
    let name = |i: usize| {
        let parts: Vec<String> = others
            .iter()
            .map(|&k| match &g.keys[k] {
                crate::group::Key::Tag(t) => format!("{t}={}", g.groups[i].values[k]),
                _ => g.groups[i].values[k].clone(),
            })
            .collect();
        parts.join(" · ")
    };
    let mut out = Vec::new();
    for r in g.row_values(row) {
        let members: Vec<usize> = (0..g.groups.len())
            .filter(|&i| g.groups[i].values[row] == r)
            .collect();
        let Some((&base, rest)) = members.split_first() else {
            continue;
        };
        for &i in rest {
            let line = against(&answers[i], &answers[base], &name(i), &name(base));
            out.extend(line.map(|l| format!("{r}: {l}")));
        }
    }
    Some(out)
}

/// The comparisons of a report's answer: per load case ([`verdicts_by_row`]) when the groups
/// form a grid of load cases, else each group against the first ([`verdicts`]).
pub fn comparisons(answers: &[Answer], g: &Grouping) -> Vec<String> {
    verdicts_by_row(answers, g)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| verdicts(answers))
}

/// Said once when several groups' p99.99 rest on fewer than 10 samples beyond it.
pub fn thin_note(answers: &[Answer]) -> Option<String> {
    let thin = answers
        .iter()
        .filter(|a| a.p9999.is_some_and(|p| p.2))
        .count();
    (thin > 1).then(|| {
        format!(
            "p99.99 of {thin} of the {} groups rests on fewer than 10 samples beyond it: measure longer.",
            answers.len()
        )
    })
}

/// The answer as terminal lines (`mixed: worst 2.45 ms …`, then `mixed against idle: …`), over
/// the latency runs of `runs` grouped as a report groups them; control characters escaped.
pub fn lines(runs: &[RunData]) -> Vec<String> {
    let runs: Vec<RunData> = runs
        .iter()
        .filter(|r| !crate::noise::is_noise(r))
        .cloned()
        .collect();
    if runs.is_empty() {
        return Vec::new();
    }
    let grouping = Grouping::new(&runs, None);
    let all = answers(&runs, &grouping);
    let text = all
        .iter()
        .map(|a| format!("{}: {}", a.name, sentence(a)))
        .chain(comparisons(&all, &grouping));
    text.map(|l| rtscope_core::text::escape(&l).into_owned())
        .collect()
}

/// The section: one line per group, then the comparisons.
pub fn section(h: &mut String, runs: &[RunData], grouping: &Grouping) {
    let all = answers(runs, grouping);
    if all.is_empty() {
        return;
    }
    h.push_str("<div class=\"answer\" id=\"answer\"><h2>The answer</h2>\n<ul>\n");
    let note = thin_note(&all);
    for a in &all {
        let _ = writeln!(
            h,
            "<li><b>{}</b>: {}</li>",
            escape(&a.name),
            escape(&sentence_with(a, note.is_none()))
        );
    }
    h.push_str("</ul>\n");
    if let Some(n) = note {
        let _ = writeln!(h, "<p class=\"thin\">{}</p>", escape(&n));
    }
    let v = comparisons(&all, grouping);
    if verdicts_by_row(&all, grouping).is_some_and(|r| !r.is_empty()) {
        h.push_str("<ul class=\"verdicts\">\n");
        for line in &v {
            let _ = writeln!(h, "<li>{}</li>", escape(line));
        }
        h.push_str("</ul>\n");
    } else if !v.is_empty() {
        h.push_str("<p>");
        h.push_str(&escape(&v.join("; ")));
        h.push_str(".</p>\n");
    }
    h.push_str(
        "<p class=\"muted\">Worst = the largest wake-up latency measured; p99.99 over every \
         sample of the group; causes from <code>--explain</code> where the run was explained \
         (<a href=\"#why\">why</a>).</p></div>\n",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::study_runs;
    use rtscope_explain::book::SpikeBook;
    use rtscope_explain::model::{Attribution, Category, Charge, Spike, Task, Tier};

    /// The seed-000 design (two kernels × two cases, two repeats): one answer per group with
    /// the group's own worst run and every sample, and each group compared with the first.
    #[test]
    fn each_group_gets_its_worst_wake_up_p99_99_and_missed_deadlines_then_a_verdict() {
        let runs = study_runs();
        let g = Grouping::new(&runs, None);
        let a = answers(&runs, &g);
        assert_eq!(a.len(), g.groups.len());
        assert!(a.len() > 1);
        for (ans, grp) in a.iter().zip(&g.groups) {
            let members: Vec<&RunData> = grp.runs.iter().map(|&i| &runs[i]).collect();
            let max = members.iter().filter_map(|r| r.detail.summary.max_ns).max();
            assert_eq!(ans.worst.map(|w| w.0), max, "{}", ans.name);
            let run = ans.worst.unwrap().1;
            assert!(members.iter().any(|r| r.id() == run));
            let samples: u64 = members.iter().map(|r| r.detail.summary.samples).sum();
            assert_eq!(ans.samples, samples);
            let (p, _, _) = ans.p9999.unwrap();
            assert!(p <= max.unwrap());
            let s = sentence(ans);
            assert!(
                s.starts_with(&format!("worst {} (run {run}", human(max.unwrap()))),
                "{s}"
            );
        }
        let v = verdicts(&a);
        assert_eq!(v.len(), a.len() - 1);
        assert!(
            v[0].contains(&format!("against {}: worst ", a[0].name)),
            "{v:?}"
        );
        // Load cases × kernels: each case's kernels compared, like with like.
        let rows = comparisons(&a, &g);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(rows[0].starts_with("idle: kernel=rt against kernel=std: worst "));
        assert!(rows[1].starts_with("cpu: kernel=rt against kernel=std: worst "));
        let mut h = String::new();
        section(&mut h, &runs, &g);
        assert!(
            h.contains("id=\"answer\"") && h.contains(&format!("<li>{}</li>", escape(&rows[0]))),
            "{h}"
        );
    }

    /// Ten groups whose p99.99 each rest on fewer than 10 samples: the page says so once, not
    /// in every line (the seed-002 design's answer was a wall of the same note).
    #[test]
    fn a_thin_p99_99_is_noted_once_for_all_groups() {
        let runs = study_runs();
        let g = Grouping::new(&runs, None);
        let mut a = answers(&runs, &g);
        for x in &mut a {
            if let Some(p) = x.p9999.as_mut() {
                p.2 = true;
            }
        }
        let note = thin_note(&a).unwrap();
        assert_eq!(
            note,
            "p99.99 of 4 of the 4 groups rests on fewer than 10 samples beyond it: measure longer."
        );
        assert!(!sentence_with(&a[0], false).contains("measure longer"));
        assert!(sentence(&a[0]).contains("measure longer"));
        a[1].p9999.as_mut().unwrap().2 = false;
        a[2].p9999.as_mut().unwrap().2 = false;
        a[3].p9999.as_mut().unwrap().2 = false;
        assert_eq!(thin_note(&a), None, "one group: said in its own line");
    }

    /// A run explained by one traced spike of `latency` ns charged as `charges`, above the
    /// run's own worst wake-up.
    fn explained(charges: &[(Category, u64)], latency: u64) -> RunData {
        let mut r = crate::tests::run_with(1, &[]);
        let mut b = SpikeBook::new(60_000_000_000, 5, 10);
        b.add(Explained::Traced(Attribution {
            spike: Spike {
                cpu: 1,
                tid: 9,
                deadline_ns: 5_000_000_000,
                wakeup_ns: 5_000_000_000 + latency,
                smis: None,
            },
            charges: charges
                .iter()
                .map(|(c, ns)| Charge::new(c.clone(), *ns))
                .collect(),
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: None,
            handler: None,
        }));
        r.detail.summary.max_ns = Some(latency);
        r.explain = Some((b.summary(Tier::FlightRecorder, None, 300_000), 0));
        r
    }

    fn task(comm: &str, pid: i32, prio: i32) -> Task {
        Task {
            comm: comm.into(),
            pid,
            prio,
        }
    }

    /// The sentence's cause, from `; ` on.
    fn cause_of(r: &RunData) -> String {
        let s = sentence(
            &answers(
                std::slice::from_ref(r),
                &Grouping::new(std::slice::from_ref(r), None),
            )[0],
        );
        s[s.find("; the worst").expect(&s)..].to_string()
    }

    /// Issue 65: two busy culprits sharing the worst spike. Neither is "the" cause: threads of
    /// one kind are named together with their share; two of different kinds make a spread
    /// line with both shares.
    #[test]
    fn two_culprits_sharing_the_worst_spike_are_never_named_as_the_cause() {
        let a = Category::Thread {
            task: task("busy_a", 4711, 0),
        };
        let b = Category::Thread {
            task: task("busy_b", 4712, 0),
        };
        let r = explained(
            &[
                (a.clone(), 480_000),
                (b, 450_000),
                (Category::TimerIrqHandler, 70_000),
            ],
            1_000_000,
        );
        assert_eq!(
            cause_of(&r),
            "; the worst was caused by 2 threads of higher or equal priority (93 % together, \
             largest busy_a:4711:rt99 48 %)"
        );
        let irq = Category::Irq {
            name: "eth0 (irq 24)".into(),
        };
        let r = explained(&[(a, 500_000), (irq, 500_000)], 1_000_000);
        let text = cause_of(&r);
        assert_eq!(
            text,
            "; the worst had no main cause, spread over 2 causes (largest thread \
             busy_a:4711:rt99 50 %, then IRQ eth0 (irq 24) 50 %)"
        );
        assert!(!text.contains("caused by"), "{text}");
    }

    /// Issue 65: the 51.67 ms spike split over four lower-priority tasks of 9–15 % each. The
    /// answer names the group with its share, in the report's box and on the terminal, and
    /// a single culprit holding most of a spike is still named, with its share.
    #[test]
    fn four_blocking_tasks_make_a_group_line_and_a_majority_culprit_is_still_named() {
        let blocking = |comm: &str, pid| Category::Blocking {
            task: task(comm, pid, 120),
        };
        let r = explained(
            &[
                (blocking("synth_db", 9843), 7_800_000),
                (blocking("kworker/1:2", 88), 7_300_000),
                (blocking("synth_db", 9844), 6_300_000),
                (blocking("rsyslogd", 612), 5_000_000),
                (
                    Category::Irq {
                        name: "eth0".into(),
                    },
                    15_000_000,
                ),
                (Category::ReturnToUser, 10_270_000),
            ],
            51_670_000,
        );
        let group = "; the worst was caused by 4 lower-priority tasks holding the CPU (51 % \
                     together, largest synth_db:9843:nice0 15 %)";
        assert_eq!(cause_of(&r), group);
        let terminal = lines(std::slice::from_ref(&r));
        assert!(terminal[0].ends_with(group), "{terminal:?}");
        let mut h = String::new();
        section(
            &mut h,
            std::slice::from_ref(&r),
            &Grouping::new(std::slice::from_ref(&r), None),
        );
        assert!(h.contains(&escape(group)), "{h}");
        let r = explained(
            &[
                (blocking("rust-lld", 5156), 4_600_000),
                (Category::Unexplained, 50_000),
            ],
            4_650_000,
        );
        assert_eq!(
            cause_of(&r),
            "; the worst was caused by blocking by rust-lld:5156:nice0 (98 %; 1 % unexplained)"
        );
    }

    /// A worst spike explained from the monitors only has no share to give: the answer names
    /// the busiest thread and says its share is unknown, never "(0 %)".
    #[test]
    fn a_spike_from_the_monitors_only_names_its_busiest_thread_with_its_share_unknown() {
        use rtscope_explain::coarse::{CoarseExplanation, CoarseThread};
        let mut r = explained(&[], 2_000_000);
        let mut b = SpikeBook::new(60_000_000_000, 5, 10);
        let thread = |comm: &str, tid| CoarseThread {
            comm: comm.into(),
            tid,
        };
        b.add(Explained::Coarse(CoarseExplanation {
            spike: Spike {
                cpu: 0,
                tid: 9,
                deadline_ns: 1_000_000_000,
                wakeup_ns: 1_002_000_000,
                smis: None,
            },
            start_ns: 0,
            end_ns: 1_000_000_000,
            top_irqs: Vec::new(),
            top_softirqs: Vec::new(),
            steal_ns: 0,
            top_threads: vec![(thread("make", 41), 300_000), (thread("cc1", 40), 900_000)],
            not_traced: None,
        }));
        r.explain = Some((b.summary(Tier::Coarse, None, 300_000), 0));
        assert_eq!(
            cause_of(&r),
            "; the worst was not traced (from the monitors only: the busiest thread cc1:40, its \
             share unknown)"
        );
    }
}
