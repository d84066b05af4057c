//! The recorder attached to this kernel's tracepoints, around a SCHED_FIFO thread that sleeps
//! on a pinned CPU: its switches, its wakings and the interrupts that woke it are in the
//! window (facts only: no time is asserted).

use super::{RecordKind, Recorder, Setting, Vector};
use crate::late::run::rig;
use rtscope_testkit::require;

/// A thread pinned to the caller's CPU at SCHED_FIFO 50 that sleeps 1 ms 30 times: its TID.
fn fifo_sleeper() -> u32 {
    std::thread::spawn(|| {
        rig::pin();
        let param = libc::sched_param { sched_priority: 50 };
        // SAFETY: sched_setscheduler on the calling thread (0) with a live parameter.
        let set = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        assert_eq!(set, 0, "SCHED_FIFO: {}", std::io::Error::last_os_error());
        let ms = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        for _ in 0..30 {
            // SAFETY: a relative sleep on a live timespec; no remainder asked.
            unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ms, std::ptr::null_mut()) };
        }
        rig::tid()
    })
    .join()
    .expect("the sleeper")
}

/// How many of `tid`'s wakings in `w` fall between a local timer interrupt's entry and exit.
fn woken_in_local_timer(w: &[super::Record], tid: u32) -> usize {
    let mut inside = false;
    let mut n = 0;
    for r in w {
        match r.kind {
            RecordKind::VectorEntry {
                vector: Vector::LocalTimer,
                ..
            } => inside = true,
            RecordKind::VectorExit {
                vector: Vector::LocalTimer,
                ..
            } => inside = false,
            RecordKind::Waking { pid, .. } if pid == tid && inside => n += 1,
            _ => {}
        }
    }
    n
}

#[test]
fn the_attached_recorder_sees_a_fifo_threads_switches_wakings_and_timer_interrupts() {
    require!(rtscope_testkit::is_root(), "root: the recorder's programs");
    let path = std::path::Path::new(crate::btf::VMLINUX);
    require!(path.exists(), "a kernel with BTF ({})", path.display());
    // A ring of 65,536 records a CPU (2 MiB): the default 4,096 held less than the sleeper's
    // 30 sleeps beside CI's hog and the end-to-end suite's SCHED_FIFO runs on its CPU (14 of
    // its 30 wakings kept, 29 Nov 2026).
    let setting = Setting {
        records: 1 << 16,
        ..Setting::default()
    };
    let rec = Recorder::start(&setting).expect("the recorder");
    for tp in ["sched_switch", "sched_waking", "timer_expire_entry"] {
        assert!(rec.attached().contains(&tp), "{tp}: {:?}", rec.missing());
    }
    assert_eq!(rec.attached().len() + rec.missing().len(), 23);
    // A kernel with BTF types its tracepoints' probes (Linux 5.5): every program is a tp_btf
    // one, so the PIDs and priorities below were read by the verifier-checked loads; but the
    // IPI function call's, whose argument is a function pointer the verifier does not let a
    // tp_btf program read (6.18: "arg0 type FUNC_PROTO is not a struct"): a raw program reads
    // it from its context as cheaply.
    assert!(
        rec.untyped()
            .iter()
            .all(|m| m.tracepoint.starts_with("csd_function_")),
        "BTF-typed programs: {:?}",
        rec.untyped()
    );
    assert_eq!(rec.typed() + rec.untyped().len(), rec.attached().len());
    for m in rec.missing() {
        eprintln!("not recorded: {}: {}", m.tracepoint, m.reason);
    }
    let cpu = rig::pin();
    let from = rig::ktime();
    let before = rec.written(cpu);
    let tid = fifo_sleeper();
    let to = rig::ktime();
    let w = rec.window(cpu, from, to);
    // Records the ring no longer held (written over before the window was read): then only
    // those it kept are counted, each sleep whole but at its ends.
    let over = (rec.written(cpu) - before).saturating_sub(u64::from(setting.records));
    assert!(!w.is_empty() && w.windows(2).all(|p| p[0].ts <= p[1].ts));
    assert!(w.iter().all(|r| r.cpu == cpu && r.ts >= from && r.ts <= to));
    let count = |f: &dyn Fn(&RecordKind) -> bool| w.iter().filter(|r| f(&r.kind)).count();
    // Switched in at its FIFO priority (kernel prio 99 - 50), out asleep.
    let ins = count(
        &|k| matches!(k, RecordKind::Switch { next_pid, next_prio: 49, .. } if *next_pid == tid),
    );
    let outs = count(
        &|k| matches!(k, RecordKind::Switch { prev_pid, prev_state: 1, prev_prio: 49, .. } if *prev_pid == tid),
    );
    let wakings = count(&|k| matches!(k, RecordKind::Waking { pid, prio: 49 } if *pid == tid));
    let least = if over == 0 { 20 } else { 1 };
    assert!(
        ins >= least && outs >= least && wakings >= least,
        "{ins} {outs} {wakings} ({over} records written over): {w:?}"
    );
    // Its sleeps end in the timer interrupt (hrtimers run there).
    let timer = count(&|k| {
        if cfg!(target_arch = "x86_64") {
            matches!(
                k,
                RecordKind::VectorEntry {
                    vector: Vector::LocalTimer,
                    ..
                }
            )
        } else {
            matches!(k, RecordKind::IrqEntry { .. })
        }
    });
    assert!(
        timer >= least,
        "{timer} timer interrupts ({over} records written over)"
    );
    // Its wake-ups happen inside the timer interrupt that expires its sleep's hrtimer.
    if cfg!(target_arch = "x86_64") {
        let inside = woken_in_local_timer(&w, tid);
        assert!(
            inside >= 1,
            "{inside} of {wakings} wakings in a local timer interrupt"
        );
    }
    assert!(rec.written(cpu) >= w.len() as u64);
}
