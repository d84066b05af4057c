//! The hardware-only mode of `rtscope noise --irqs-off`: the kernel's hwlat tracer in per-CPU
//! mode. On each chosen CPU a kernel thread spins `width` of every `window` with interrupts
//! off, reading the clock; a gap between two reads (inner) or between two iterations (outer)
//! over `tracing_thresh` can only be the hardware, the firmware (SMI) or the hypervisor — or an
//! NMI, which the tracer counts and times. Per window it reports the longest such gap, when it
//! is over the threshold, and how many gaps were over it.
//!
//! The tracer runs in the top-level buffer (it cannot run in an instance), so rtscope refuses
//! when that buffer's tracer is in use, saves every setting it changes, writes them back when
//! it ends and leaves a reaper process that writes them back if rtscope is killed.
//!
//! Where the kernel has no hwlat tracer (`CONFIG_HWLAT_TRACER`), or one without the per-CPU
//! mode (before Linux 5.15: it would move one thread round-robin across the CPUs, never
//! measuring them at once), [`check`] says so and names the fix.

use crate::reaper::Reaper;
use crate::tracefs::{cpumask, read_bounded, write_file, Tracefs};
use crate::TraceError;
use std::path::PathBuf;

/// What an `--irqs-off` run asks the tracer for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HwlatConfig {
    /// The CPUs, one sampling thread each.
    pub cpus: Vec<usize>,
    /// Time spun with interrupts off in every window, µs.
    pub width_us: u64,
    /// The window, µs.
    pub window_us: u64,
    /// A gap over this is reported, µs (the tracer's resolution: whole microseconds).
    pub threshold_us: u64,
}

/// One window's report: its longest gap over the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct HwlatSample {
    /// The CPU it was measured on.
    pub cpu: usize,
    /// The tracer's sequence number.
    pub seq: u64,
    /// The longest gap between two clock reads inside the loop, µs.
    pub inner_us: u64,
    /// The longest gap between two iterations of the loop, µs.
    pub outer_us: u64,
    /// When the first gap over the threshold was seen (the tracer's `ts`: CLOCK_REALTIME), ns.
    pub realtime_ns: u64,
    /// Gaps over the threshold in the window (`None` before Linux 5.7, which did not count).
    pub count: Option<u64>,
    /// NMIs during the window's gaps, and their time (ns; the time is not reported where the
    /// kernel's sched_clock is not NMI-safe).
    pub nmi_count: u64,
    /// Their total time, ns.
    pub nmi_total_ns: Option<u64>,
}

impl HwlatSample {
    /// The longer of the inner and the outer gap, µs.
    pub fn max_us(&self) -> u64 {
        self.inner_us.max(self.outer_us)
    }
}

/// Why the hardware-only mode cannot run here ([`check`]): what is missing by `Display`, the
/// fix by [`HwlatUnsupported::hint`].
#[derive(Debug, thiserror::Error)]
pub enum HwlatUnsupported {
    /// No hwlat tracer (`CONFIG_HWLAT_TRACER`).
    #[error(
        "the kernel has no hwlat tracer (CONFIG_HWLAT_TRACER is not set; nor does rtscope find \
         another way to spin with interrupts off)"
    )]
    NoTracer,
    /// A hwlat tracer without the per-CPU mode (before Linux 5.15).
    #[error(
        "the kernel's hwlat tracer has no per-CPU mode ({} is missing: Linux before 5.15 moves \
         one thread round-robin across the CPUs, never measuring them at once)",
        .mode.display()
    )]
    NoPerCpuMode {
        /// The `hwlat_detector/mode` file looked for.
        mode: PathBuf,
    },
    /// The top-level buffer's tracer is in use.
    #[error(
        "the kernel's top-level tracer is in use (current_tracer is {current}): hwlat would \
         replace it"
    )]
    TracerInUse {
        /// The tracer set.
        current: String,
        /// The `current_tracer` file.
        file: PathBuf,
    },
    /// `current_tracer` could not be read.
    #[error(transparent)]
    Read(TraceError),
}

impl HwlatUnsupported {
    /// The fix (`None`: none to name).
    pub fn hint(&self) -> Option<String> {
        match self {
            HwlatUnsupported::NoTracer => Some(
                "use a kernel built with CONFIG_HWLAT_TRACER=y (Linux 5.15 or later, for its \
                 per-CPU mode), or leave out --irqs-off: the busy loop in user space measures \
                 the same CPUs with interrupts on"
                    .into(),
            ),
            HwlatUnsupported::NoPerCpuMode { .. } => Some(
                "use Linux 5.15 or later, or rt-tests' hwlatdetect for one CPU at a time".into(),
            ),
            HwlatUnsupported::TracerInUse { file, .. } => Some(format!(
                "stop the other tracing (echo nop > {})",
                file.display()
            )),
            HwlatUnsupported::Read(_) => None,
        }
    }
}

/// Why the hardware-only mode cannot run here; `Ok` when it can.
pub fn check(tfs: &Tracefs) -> Result<(), HwlatUnsupported> {
    if !tfs.tracers().iter().any(|t| t == "hwlat") {
        return Err(HwlatUnsupported::NoTracer);
    }
    let mode = tfs.root.join("hwlat_detector/mode");
    if !mode.exists() {
        return Err(HwlatUnsupported::NoPerCpuMode { mode });
    }
    let file = tfs.root.join("current_tracer");
    let current = read_bounded(&file)
        .map_err(HwlatUnsupported::Read)?
        .trim()
        .to_string();
    if current != "nop" {
        return Err(HwlatUnsupported::TracerInUse { current, file });
    }
    Ok(())
}

/// The settings the tracer changes, in the order they are written back: the tracer first, so
/// the others are restored with it stopped (and the width once more at the end).
const SETTINGS: [&str; 6] = [
    "current_tracer",
    "tracing_thresh",
    "tracing_cpumask",
    "hwlat_detector/mode",
    "hwlat_detector/width",
    "hwlat_detector/window",
];

/// A selector file's current value: the bracketed word (`none [round-robin] per-cpu`), or the
/// whole trimmed text.
fn current_of(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(text.trim())
        .to_string()
}

/// The hwlat tracer running on the chosen CPUs; its settings are written back when it is
/// dropped, and by the reaper if rtscope dies.
pub struct HwlatRun {
    tfs: Tracefs,
    saved: Vec<(PathBuf, String)>,
    _reaper: Option<Reaper>,
}

impl HwlatRun {
    /// Saves the settings, starts the reaper, and starts the tracer with `cfg` (after
    /// [`check`]). `reaper`: false in tests that run on a fake tracefs directory.
    pub fn start(tfs: &Tracefs, cfg: &HwlatConfig, reaper: bool) -> Result<HwlatRun, TraceError> {
        let mut saved = SETTINGS
            .iter()
            .map(|f| {
                let p = tfs.root.join(f);
                Ok((p.clone(), current_of(&read_bounded(&p)?)))
            })
            .collect::<Result<Vec<_>, TraceError>>()?;
        // The width once more after the window: the kernel keeps width <= window at every
        // write, and width, window, width reaches any valid pair from any other.
        saved.push(saved[4].clone());
        let reaper = match reaper {
            true => Some(Reaper::restoring(&saved)?),
            false => None,
        };
        let run = HwlatRun {
            tfs: tfs.clone(),
            saved,
            _reaper: reaper,
        };
        let root = &run.tfs.root;
        // The kernel keeps width <= window at every write: width (may fail), window, width
        // reaches the pair asked for from any other.
        let (width, window) = (cfg.width_us.to_string(), cfg.window_us.to_string());
        let _ = write_file(&root.join("hwlat_detector/width"), &width);
        write_file(&root.join("hwlat_detector/window"), &window)?;
        write_file(&root.join("hwlat_detector/width"), &width)?;
        write_file(&root.join("hwlat_detector/mode"), "per-cpu")?;
        write_file(&root.join("tracing_cpumask"), &cpumask(&cfg.cpus))?;
        write_file(&root.join("tracing_thresh"), &cfg.threshold_us.to_string())?;
        write_file(&root.join("trace"), "")?;
        write_file(&root.join("current_tracer"), "hwlat")?;
        Ok(run)
    }

    /// The samples reported so far (the buffer is read, not consumed).
    pub fn samples(&self) -> Result<Vec<HwlatSample>, TraceError> {
        Ok(parse(&read_trace(&self.tfs.root.join("trace"))?))
    }

    /// Stops the tracer, returns every sample and writes the settings back.
    pub fn finish(self) -> Result<Vec<HwlatSample>, TraceError> {
        // Stop recording first: switching the tracer back clears the buffer.
        let on = self.tfs.root.join("tracing_on");
        let was_on = read_bounded(&on).map(|s| s.trim().to_string());
        let _ = write_file(&on, "0");
        let samples = self.samples();
        self.saved_restore();
        if let Ok(v) = was_on {
            let _ = write_file(&on, &v);
        }
        samples
    }

    fn saved_restore(&self) {
        crate::timerlat::restore(&self.saved);
    }
}

impl Drop for HwlatRun {
    fn drop(&mut self) {
        self.saved_restore();
    }
}

/// Reads the `trace` file, at most 16 MiB (a sample line is about 120 bytes: 130,000 samples).
fn read_trace(path: &std::path::Path) -> Result<String, TraceError> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut text = String::new();
    f.take(16 << 20)
        .read_to_string(&mut text)
        .map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(text)
}

/// The samples in the text of the `trace` file (comment lines and others are skipped):
/// `<...>-1234 [001] d.... 123.456789: #12 inner/outer(us): 11/14 ts:1581527483.343962693
/// count:6 nmi-total:4 nmi-count:1`.
pub fn parse(text: &str) -> Vec<HwlatSample> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<HwlatSample> {
    let (head, rest) = line.split_once("inner/outer(us):")?;
    let cpu = head
        .split_once('[')?
        .1
        .split_once(']')?
        .0
        .trim()
        .parse()
        .ok()?;
    let seq = head.rsplit_once('#')?.1.trim().parse().ok()?;
    let mut words = rest.split_whitespace();
    let (inner, outer) = words.next()?.split_once('/')?;
    let mut s = HwlatSample {
        cpu,
        seq,
        inner_us: inner.parse().ok()?,
        outer_us: outer.parse().ok()?,
        realtime_ns: 0,
        count: None,
        nmi_count: 0,
        nmi_total_ns: None,
    };
    for w in words {
        let (key, value) = w.split_once(':')?;
        match key {
            "ts" => {
                let (sec, ns) = value.split_once('.')?;
                s.realtime_ns =
                    sec.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?;
            }
            "count" => s.count = value.parse().ok(),
            "nmi-total" => s.nmi_total_ns = value.parse().ok(),
            "nmi-count" => s.nmi_count = value.parse().ok()?,
            _ => {}
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
# tracer: hwlat
#
# entries-in-buffer/entries-written: 3/3   #P:2
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
           <...>-1729    [001] d....   678.473449: #1     inner/outer(us):   11/12    ts:1581527483.343962693 count:6
           <...>-1730    [000] dn...   679.000001: #2     inner/outer(us):    4/22    ts:1581527484.000000005 count:1 nmi-total:7 nmi-count:1
           <...>-1729    [001] d....   680.473449: #3     inner/outer(us):   19/3     ts:1581527485.1
";

    #[test]
    fn samples_are_read_from_the_trace_text_with_their_cpu_gaps_and_nmis() {
        let s = parse(TRACE);
        assert_eq!(s.len(), 3);
        assert_eq!(
            s[0],
            HwlatSample {
                cpu: 1,
                seq: 1,
                inner_us: 11,
                outer_us: 12,
                realtime_ns: 1_581_527_483_343_962_693,
                count: Some(6),
                nmi_count: 0,
                nmi_total_ns: None,
            }
        );
        assert_eq!((s[1].cpu, s[1].max_us(), s[1].nmi_count), (0, 22, 1));
        assert_eq!(s[1].nmi_total_ns, Some(7));
        // Before Linux 5.7 there is no count.
        assert_eq!((s[2].count, s[2].max_us()), (None, 19));
    }

    fn fake_tracefs(tracers: &str, current: &str) -> (Tracefs, PathBuf) {
        let root = std::env::temp_dir().join(format!(
            "rtscope-hwlat-{}-{}",
            std::process::id(),
            tracers.len() + current.len()
        ));
        std::fs::create_dir_all(root.join("hwlat_detector")).unwrap();
        std::fs::create_dir_all(root.join("instances")).unwrap();
        for (f, v) in [
            ("available_tracers", tracers),
            ("current_tracer", current),
            ("tracing_thresh", "0\n"),
            ("tracing_cpumask", "3\n"),
            ("tracing_on", "1\n"),
            ("hwlat_detector/mode", "none [round-robin] per-cpu\n"),
            ("hwlat_detector/width", "500000\n"),
            ("hwlat_detector/window", "1000000\n"),
            ("trace", TRACE),
        ] {
            std::fs::write(root.join(f), v).unwrap();
        }
        (Tracefs { root: root.clone() }, root)
    }

    #[test]
    fn a_kernel_without_the_tracer_or_with_the_top_level_tracer_busy_is_refused_by_name() {
        let (tfs, root) = fake_tracefs("function nop\n", "nop\n");
        let why = check(&tfs).unwrap_err();
        assert!(matches!(why, HwlatUnsupported::NoTracer));
        assert_eq!(
            why.to_string(),
            "the kernel has no hwlat tracer (CONFIG_HWLAT_TRACER is not set; nor does rtscope \
             find another way to spin with interrupts off)"
        );
        assert!(why
            .hint()
            .unwrap()
            .starts_with("use a kernel built with CONFIG_HWLAT_TRACER=y"));
        std::fs::write(root.join("available_tracers"), "hwlat nop\n").unwrap();
        assert!(check(&tfs).is_ok());
        std::fs::write(root.join("current_tracer"), "function\n").unwrap();
        let busy = check(&tfs).unwrap_err();
        assert_eq!(
            busy.to_string(),
            "the kernel's top-level tracer is in use (current_tracer is function): hwlat would \
             replace it"
        );
        assert_eq!(
            busy.hint().unwrap(),
            format!(
                "stop the other tracing (echo nop > {})",
                root.join("current_tracer").display()
            )
        );
        std::fs::write(root.join("current_tracer"), "nop\n").unwrap();
        std::fs::remove_file(root.join("hwlat_detector/mode")).unwrap();
        let old = check(&tfs).unwrap_err();
        assert!(old.to_string().contains("Linux before 5.15"), "{old}");
        assert_eq!(
            old.hint().unwrap(),
            "use Linux 5.15 or later, or rt-tests' hwlatdetect for one CPU at a time"
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_run_writes_its_settings_reads_the_samples_and_writes_every_setting_back() {
        let (tfs, root) = fake_tracefs("hwlat nop\n", "nop\n");
        let cfg = HwlatConfig {
            cpus: vec![1],
            width_us: 950_000,
            window_us: 1_000_000,
            threshold_us: 5,
        };
        let run = HwlatRun::start(&tfs, &cfg, false).unwrap();
        let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap();
        assert_eq!(read("current_tracer"), "hwlat");
        assert_eq!(read("hwlat_detector/mode"), "per-cpu");
        assert_eq!(read("hwlat_detector/width"), "950000");
        assert_eq!(read("tracing_cpumask"), "00000002");
        assert_eq!(read("tracing_thresh"), "5");
        // The buffer was cleared at the start; the kernel fills it.
        assert_eq!(read("trace"), "");
        std::fs::write(root.join("trace"), TRACE).unwrap();
        assert_eq!(run.finish().unwrap().len(), 3);
        assert_eq!(read("current_tracer"), "nop");
        assert_eq!(read("hwlat_detector/mode"), "round-robin");
        assert_eq!(read("hwlat_detector/width"), "500000");
        assert_eq!(read("tracing_cpumask"), "3");
        assert_eq!(read("tracing_thresh"), "0");
        assert_eq!(read("tracing_on"), "1");
        std::fs::remove_dir_all(root).unwrap();
    }
}
