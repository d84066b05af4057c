//! Scenarios for the live tests and the fixture capture: a measuring thread from rtscope-engine,
//! an injected culprit thread, a timerfd storm.
#![allow(dead_code)]

use rtscope_core::Nanos;
use rtscope_engine::{Alignment, CpuSet, Policy, Run, RunConfig, ThreadSpec, Wake};
use rtscope_explain::model::Spike;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The measured CPU and the housekeeping CPUs, or why the live tests cannot run (for
/// `rtscope_testkit::require_ok!`).
pub fn cpus_or_skip() -> Result<(usize, Vec<usize>), String> {
    if !rtscope_testkit::is_root() {
        return Err("needs root (tracefs and SCHED_FIFO)".into());
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        return Err("needs 2 CPUs (one measured, one for the trace reader)".into());
    }
    Ok((n - 1, (0..n - 1).collect()))
}

/// What the eBPF recorder's live tests need (root, the kernel's BTF, a measured CPU and
/// housekeeping ones): the CPUs, or `None` once `require!` has said why not.
pub fn bpf_cpus() -> Option<(usize, Vec<usize>)> {
    rtscope_testkit::require!(
        rtscope_testkit::is_root(),
        "root: eBPF programs, tracefs, SCHED_FIFO"
    );
    let btf = std::path::Path::new(rtscope_bpf::btf::VMLINUX);
    rtscope_testkit::require!(btf.exists(), "a kernel with BTF ({})", btf.display());
    let cpus = cpus_or_skip();
    rtscope_testkit::require!(cpus.is_ok(), "{}", cpus.as_ref().err().map_or("", |e| e));
    cpus.ok()
}

pub use rtscope_testkit::now_ns;

pub fn sleep_until(t: u64) {
    let ts = libc::timespec {
        tv_sec: (t / 1_000_000_000) as i64,
        tv_nsec: (t % 1_000_000_000) as i64,
    };
    // SAFETY: `ts` is valid for the call; a null remainder is allowed with TIMER_ABSTIME.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

pub fn pin_and_name(cpu: usize, name: &std::ffi::CStr, fifo: Option<i32>) {
    // SAFETY: a local cpu_set_t, a NUL-terminated name and a local sched_param.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0);
        if let Some(p) = fifo {
            let mut sp: libc::sched_param = std::mem::zeroed();
            sp.sched_priority = p;
            libc::sched_setscheduler(0, libc::SCHED_FIFO, &sp);
        }
    }
}

/// One real-time test at a time, across test binaries too: they share the measured CPU.
pub fn serial() -> rtscope_testkit::RtLock {
    rtscope_testkit::rt_lock()
}

/// Measures on `cpu` (SCHED_FIFO 98, 1 ms, deadlines on whole milliseconds of CLOCK_MONOTONIC)
/// for `secs`, handing the new wake-ups at or above `threshold_ns` to `on_spikes` every 50 ms
/// (from this non-measuring thread) and once more at the end.
pub fn measure(
    cpu: usize,
    secs: u64,
    threshold_ns: u64,
    mut on_spikes: impl FnMut(&[Spike]),
) -> Vec<Spike> {
    let spec = ThreadSpec {
        affinity: Some(CpuSet::from_cpus([cpu])),
        policy: Policy::Fifo,
        priority: 98,
        interval: Nanos::from_ms(1),
    };
    let mut c = RunConfig::new(vec![spec]);
    c.duration = Some(Nanos::from_ms(secs * 1000));
    c.alignment = Alignment::Second(Nanos::ZERO);
    c.event_threshold = Some(Nanos(threshold_ns));
    c.event_capacity = 20_000;
    let run = Run::start(c).expect("engine starts (root)");
    let mut all: Vec<Spike> = Vec::new();
    let mut drain = |run: &Run, all: &mut Vec<Spike>| {
        let t = &run.threads()[0];
        let new: Vec<Spike> = t.events().snapshot()[all.len()..]
            .iter()
            .map(|s| Spike {
                cpu,
                tid: t.tid(),
                deadline_ns: s.time.0 - s.latency.0,
                wakeup_ns: s.time.0,
                smis: None,
            })
            .collect();
        on_spikes(&new);
        all.extend(new);
    };
    while run.wait(Nanos::from_ms(50)) != Wake::Finished {
        drain(&run, &mut all);
    }
    drain(&run, &mut all);
    run.finish();
    all
}

/// Runs until dropped.
pub struct Background {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A SCHED_FIFO 99 thread named `culprit` on `cpu`, busy for `busy_ms` every 300 ms; the
/// busy intervals (ns, CLOCK_MONOTONIC) are pushed to `bursts`.
pub fn culprit(cpu: usize, busy_ms: u64, bursts: Arc<Mutex<Vec<(u64, u64)>>>) -> Background {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let handle = std::thread::spawn(move || {
        pin_and_name(cpu, c"culprit", Some(99));
        let mut next = now_ns() / 1_000_000 * 1_000_000 + 100_300_000;
        while !s.load(Ordering::Relaxed) {
            sleep_until(next);
            let start = now_ns();
            let end = start + busy_ms * 1_000_000;
            while now_ns() < end {
                std::hint::spin_loop();
            }
            bursts.lock().unwrap().push((start, now_ns()));
            next += 300_000_000;
        }
    });
    Background {
        stop,
        handle: Some(handle),
    }
}

/// `n` timerfds on `cpu` armed every 300 ms to expire 5 µs before a whole millisecond (a
/// deadline of the measuring thread); the targeted deadlines are pushed to `targets`.
pub fn timer_storm(cpu: usize, n: usize, targets: Arc<Mutex<Vec<u64>>>) -> Background {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let handle = std::thread::spawn(move || {
        pin_and_name(cpu, c"storm", None);
        let lim = libc::rlimit {
            rlim_cur: n as u64 + 64,
            rlim_max: n as u64 + 64,
        };
        // SAFETY: a valid rlimit; timerfd_create takes plain flags.
        let fds: Vec<i32> = unsafe {
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            (0..n)
                .map(|_| libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC))
                .filter(|&f| f >= 0)
                .collect()
        };
        while !s.load(Ordering::Relaxed) {
            let target = (now_ns() / 1_000_000 + 150) * 1_000_000;
            let at = target - 5_000;
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: (at / 1_000_000_000) as i64,
                    tv_nsec: (at % 1_000_000_000) as i64,
                },
            };
            for &fd in &fds {
                // SAFETY: `fd` is a timerfd we own; `spec` is valid; old value not wanted.
                unsafe {
                    libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
                };
            }
            targets.lock().unwrap().push(target);
            sleep_until(target + 150_000_000);
        }
        for fd in fds {
            // SAFETY: closing our own descriptors.
            unsafe { libc::close(fd) };
        }
    });
    Background {
        stop,
        handle: Some(handle),
    }
}
