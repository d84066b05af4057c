//! The checks on this machine, with helper processes that create what they must find: one
//! holding /dev/cpu_dma_latency open at 0 µs, and SCHED_FIFO tasks pinned on the measured
//! CPU. Needs root (opening /dev/cpu_dma_latency and SCHED_FIFO), as CI runs; without root
//! the tests fail under RTSCOPE_TEST_STRICT=1 and say so and return otherwise.

use rtscope_check::{audit, CheckId, LiveProbe, Options, System, Verdict};
use rtscope_testkit::{is_root, require};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A helper process, killed and reaped when dropped.
struct Helper(Child);

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `ready` holds (at most 10 s; a loaded CI machine can be slow to exec).
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn last_online_cpu() -> u32 {
    let probe = LiveProbe;
    *System::new(Path::new("/"), &probe)
        .online_cpus()
        .last()
        .expect("an online CPU")
}

fn live_audit(cpus: &[u32]) -> rtscope_check::Audit {
    let probe = LiveProbe;
    let sys = System::new(Path::new("/"), &probe);
    audit(
        &sys,
        &Options {
            cpus: cpus.to_vec(),
            priority: 90,
        },
    )
}

#[test]
fn a_process_holding_cpu_dma_latency_is_named() {
    require!(is_root(), "needs root to open /dev/cpu_dma_latency");
    require!(
        Path::new("/dev/cpu_dma_latency").exists(),
        "needs /dev/cpu_dma_latency (a kernel with CONFIG_CPU_IDLE / PM QoS)"
    );
    // The shell opens the device on fd 3, requests 0 µs and becomes `sleep`, which keeps it.
    let child = Command::new("sh")
        .args([
            "-c",
            "exec 3>/dev/cpu_dma_latency; printf 0 >&3; exec sleep 30",
        ])
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn sh");
    let helper = Helper(child);
    let pid = helper.0.id();
    wait_for("the helper to hold /dev/cpu_dma_latency as sleep", || {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let held = std::fs::read_link(format!("/proc/{pid}/fd/3"))
            .is_ok_and(|l| l == Path::new("/dev/cpu_dma_latency"));
        comm.trim() == "sleep" && held
    });
    let a = live_audit(&[]);
    let f = a.get(CheckId::CpuDmaLatency).unwrap();
    assert_eq!(f.verdict, Verdict::Ok, "{f:#?}");
    assert!(f.evidence.contains(&format!("sleep[{pid}]")), "{f:#?}");
    assert!(f.evidence.contains("request in force 0 µs"), "{f:#?}");
    assert!(f.setting.as_deref().unwrap().starts_with("held"));
    drop(helper);
}

/// Starts `sleep 30` as SCHED_FIFO `prio` pinned to `cpu` (chrt and taskset exec in turn, so
/// the pid stays the same) and waits until it runs as such.
fn rt_sleeper(prio: u32, cpu: u32) -> Helper {
    let child = Command::new("chrt")
        .args([
            "-f",
            &prio.to_string(),
            "taskset",
            "-c",
            &cpu.to_string(),
            "sleep",
            "30",
        ])
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn chrt (util-linux)");
    let helper = Helper(child);
    let pid = helper.0.id();
    wait_for("the RT helper to become sleep", || {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
    });
    helper
}

#[test]
fn an_rt_task_pinned_on_the_measured_cpu_is_named() {
    require!(is_root(), "needs root for SCHED_FIFO helpers");
    let cpu = last_online_cpu();
    let high = rt_sleeper(95, cpu);
    let low = rt_sleeper(10, cpu);
    let (hp, lp) = (high.0.id(), low.0.id());
    let a = live_audit(&[cpu]);
    let f = a.get(CheckId::RtTasks).unwrap();
    assert_eq!(f.verdict, Verdict::Bad, "{f:#?}");
    assert!(
        f.evidence
            .contains(&format!("sleep[{hp}] FIFO 95 on CPUs {cpu}")),
        "{f:#?}"
    );
    assert!(
        f.evidence
            .contains(&format!("sleep[{lp}] FIFO 10 on CPUs {cpu}")),
        "{f:#?}"
    );
    assert!(f.fix.as_deref().unwrap().contains("chrt -o -p 0"));
    drop(high);
    // Only the low-priority one left: a warning, still named.
    let a = live_audit(&[cpu]);
    let f = a.get(CheckId::RtTasks).unwrap();
    assert!(
        f.evidence.contains(&format!("sleep[{lp}] FIFO 10")),
        "{f:#?}"
    );
    assert!(!f.evidence.contains(&format!("sleep[{hp}]")), "{f:#?}");
    drop(low);
}

#[test]
fn this_machine_gets_a_finding_for_every_check() {
    let a = live_audit(&[]);
    assert_eq!(a.findings.len(), CheckId::ALL.len());
    assert!(!a.cpus.is_empty());
    // What is certain here: the kernel is PREEMPT_RT exactly when uname -v or
    // /sys/kernel/realtime says so, and a hypervisor CPU flag means a VM.
    let version = uname_version();
    let rt = version.split_whitespace().any(|w| w == "PREEMPT_RT")
        || std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|s| s.trim() == "1");
    let f = a.get(CheckId::PreemptRt).unwrap();
    assert_eq!(f.verdict == Verdict::Ok, rt, "{f:#?}");
    let hypervisor = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"));
    if hypervisor {
        assert_eq!(
            a.get(CheckId::Virtualization).unwrap().verdict,
            Verdict::Warn
        );
    }
    for f in &a.findings {
        if matches!(f.verdict, Verdict::Warn | Verdict::Bad) {
            assert!(f.fix.is_some(), "{} has no fix", f.check.id());
        }
    }
}

fn uname_version() -> String {
    use rtscope_check::Probe;
    LiveProbe.uname().expect("uname").version
}
