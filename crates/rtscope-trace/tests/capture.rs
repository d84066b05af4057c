//! Captures the committed fixtures (tests/fixtures/<scenario>/) on a live kernel:
//! `cargo test -p rtscope-trace --test capture -- --ignored` as root. Each fixture holds the
//! `format` files of the traced events, `header_page`, the raw `trace_pipe_raw` pages around
//! the spikes (`pages.bin`, whole pages) and the spikes the engine saw (`spikes.json`).

mod support;

use rtscope_explain::model::Spike;
use rtscope_trace::decode::decode_pages;
use rtscope_trace::decode::Schema;
use rtscope_trace::tracefs::{Instance, InstanceConfig, Tracefs};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use support::*;

fn record(
    cpu: usize,
    scenario: impl FnOnce() -> Vec<Spike>,
) -> (Instance, Vec<Vec<u8>>, Vec<Spike>) {
    record_with(cpu, false, scenario)
}

/// [`record`], with the kernel stack trigger when `stacks`.
fn record_with(
    cpu: usize,
    stacks: bool,
    scenario: impl FnOnce() -> Vec<Spike>,
) -> (Instance, Vec<Vec<u8>>, Vec<Spike>) {
    let tfs = Tracefs::discover().unwrap();
    let cfg = InstanceConfig {
        cpus: vec![cpu],
        buffer_kb: 4096,
        hrtimer_events: false,
        timerlat: false,
        stacks: match stacks {
            true => rtscope_trace::tracefs::StackChoice::Every,
            false => rtscope_trace::tracefs::StackChoice::Off,
        },
        late: Default::default(),
        formats_only: false,
    };
    let inst = Instance::create(&tfs, &cfg).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let path = inst.pipe_raw(cpu);
    let size = inst.page_size;
    let (s, hk) = (stop.clone(), cpus_or_skip().unwrap().1);
    let reader = std::thread::spawn(move || {
        pin_and_name(hk[0], c"capture", None);
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .unwrap();
        let mut pages = Vec::new();
        loop {
            let done = s.load(Ordering::Relaxed);
            let mut buf = vec![0u8; size];
            match f.read(&mut buf) {
                Ok(n) if n > 0 => pages.push(buf),
                _ if done => return pages,
                _ => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
    });
    let spikes = scenario();
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    (inst, reader.join().unwrap(), spikes)
}

fn save(name: &str, inst: &Instance, pages: &[Vec<u8>], spikes: &[Spike]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("formats")).unwrap();
    let tfs = Tracefs::discover().unwrap();
    std::fs::write(
        dir.join("header_page"),
        rtscope_trace::tracefs::read_bounded(&tfs.root.join("events/header_page")).unwrap(),
    )
    .unwrap();
    for f in &inst.formats {
        let (sys, _) = rtscope_trace::tracefs::lean_events(true)
            .into_iter()
            .chain([("ftrace", "kernel_stack")])
            .find(|e| e.1 == f.name)
            .unwrap();
        let text = rtscope_trace::tracefs::read_bounded(
            &tfs.root
                .join("events")
                .join(sys)
                .join(&f.name)
                .join("format"),
        )
        .unwrap();
        std::fs::write(dir.join("formats").join(format!("{}.format", f.name)), text).unwrap();
    }
    // Keep the pages with events from 5 ms before a deadline to 1 ms after its wake-up.
    let schema = Schema::new(inst.formats.iter().cloned());
    let keep: Vec<&Vec<u8>> = pages
        .iter()
        .filter(|p| {
            let (ev, _, _) = decode_pages(p, p.len(), &inst.layout, &schema);
            let (Some(a), Some(b)) = (ev.first(), ev.last()) else {
                return false;
            };
            spikes
                .iter()
                .any(|s| a.ts <= s.wakeup_ns + 1_000_000 && b.ts + 5_000_000 >= s.deadline_ns)
        })
        .collect();
    std::fs::write(
        dir.join("pages.bin"),
        keep.iter()
            .flat_map(|p| p.iter().copied())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let json: Vec<String> = spikes
        .iter()
        .map(|s| {
            format!(
                "{{\"cpu\":{},\"tid\":{},\"deadline_ns\":{},\"wakeup_ns\":{}}}",
                s.cpu, s.tid, s.deadline_ns, s.wakeup_ns
            )
        })
        .collect();
    std::fs::write(
        dir.join("spikes.json"),
        format!("[\n{}\n]\n", json.join(",\n")),
    )
    .unwrap();
    if inst.stacks == rtscope_trace::tracefs::Stacks::On {
        save_symbols(&dir, inst, &keep);
    }
    eprintln!(
        "{name}: {} spikes, {} of {} pages kept",
        spikes.len(),
        keep.len(),
        pages.len()
    );
}

/// The lines of `/proc/kallsyms` naming the addresses of the kept pages' stacks (`kallsyms`):
/// the fixture names its stacks as this kernel did, without the whole file.
fn save_symbols(dir: &Path, inst: &Instance, pages: &[&Vec<u8>]) {
    use rtscope_trace::decode::Kind;
    let schema = Schema::new(inst.formats.iter().cloned());
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let mut syms: Vec<(u64, &str)> = text
        .lines()
        .filter_map(|l| {
            let a = u64::from_str_radix(l.split_whitespace().next()?, 16).ok()?;
            let kind = l.split_whitespace().nth(1)?;
            (a != 0 && matches!(kind, "t" | "T" | "w" | "W")).then_some((a, l))
        })
        .collect();
    syms.sort_unstable_by_key(|s| s.0);
    let mut lines = std::collections::BTreeSet::new();
    for p in pages {
        let (ev, _, _) = decode_pages(p, p.len(), &inst.layout, &schema);
        for e in ev {
            if let Kind::KernelStack { frames } = e.kind {
                for a in frames {
                    let i = syms.partition_point(|s| s.0 < a);
                    if let Some(s) = i.checked_sub(1).map(|i| syms[i]) {
                        lines.insert(s);
                    }
                }
            }
        }
    }
    let out: Vec<&str> = lines.into_iter().map(|s| s.1).collect();
    std::fs::write(dir.join("kallsyms"), out.join("\n") + "\n").unwrap();
}

/// The spikes at whose deadline the CPU ran the idle task (the last scheduler switch before it).
fn idle_ones(inst: &Instance, pages: &[Vec<u8>], spikes: Vec<Spike>) -> Vec<Spike> {
    use rtscope_trace::decode::Kind;
    let schema = Schema::new(inst.formats.iter().cloned());
    let all: Vec<u8> = pages.iter().flat_map(|p| p.iter().copied()).collect();
    let (ev, _, _) = decode_pages(&all, inst.page_size, &inst.layout, &schema);
    let switches: Vec<(u64, i32)> = ev
        .iter()
        .filter_map(|e| {
            if let Kind::Switch { next_pid, .. } = e.kind {
                Some((e.ts, next_pid))
            } else {
                None
            }
        })
        .collect();
    spikes
        .into_iter()
        .filter(|s| {
            let i = switches.partition_point(|w| w.0 < s.deadline_ns);
            i > 0 && switches[i - 1].1 == 0
        })
        .collect()
}

fn wanted(name: &str) -> bool {
    std::env::var("RTSCOPE_CAPTURE").map_or(true, |v| v.split(',').any(|x| x == name))
}

/// The fixture `name`: the culprit's bursts on `cpu` during `secs` s of measurement (with the
/// stack trigger when `stacks`), the spikes kept those inside a burst.
fn capture_culprit(cpu: usize, name: &str, stacks: bool, secs: u64) {
    let bursts = Arc::new(Mutex::new(Vec::new()));
    let (inst, pages, spikes) = record_with(cpu, stacks, || {
        let _c = culprit(cpu, 3, bursts.clone());
        measure(cpu, secs, 1_500_000, |_| {})
    });
    let b = bursts.lock().unwrap().clone();
    let spikes: Vec<Spike> = spikes
        .into_iter()
        .filter(|s| {
            b.iter()
                .any(|&(x, y)| s.deadline_ns >= x && s.deadline_ns <= y)
        })
        .collect();
    save(name, &inst, &pages, &spikes);
}

#[test]
#[ignore = "writes the fixtures; run as root on purpose"]
fn capture_fixtures() {
    let (cpu, _) = cpus_or_skip().unwrap();
    if wanted("culprit") {
        capture_culprit(cpu, "culprit", false, 2);
    }
    if wanted("stacks") {
        // The culprit again, with the kernel stack trigger: each spike's switch back to the
        // measuring thread comes with the culprit's stack.
        capture_culprit(cpu, "stacks", true, 1);
    }
    if wanted("timer_storm") {
        let targets = Arc::new(Mutex::new(Vec::new()));
        let (inst, pages, spikes) = record(cpu, || {
            let _s = timer_storm(cpu, 4000, targets.clone());
            measure(cpu, 2, 40_000, |_| {})
        });
        let t = targets.lock().unwrap().clone();
        let spikes: Vec<Spike> = spikes
            .into_iter()
            .filter(|s| t.iter().any(|&t| s.deadline_ns.abs_diff(t) < 1_000))
            .collect();
        save("timer_storm", &inst, &pages, &spikes);
    }
    if wanted("idle") {
        // Wake-ups at which the CPU was idle (this machine is shared: not every one is).
        let (inst, pages, spikes) = record(cpu, || measure(cpu, 1, 0, |_| {}));
        let idle = idle_ones(&inst, &pages, spikes);
        let step = (idle.len() / 8).max(1);
        let spikes: Vec<Spike> = idle.into_iter().step_by(step).take(8).collect();
        save("idle", &inst, &pages, &spikes);
    }
}
