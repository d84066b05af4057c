//! Monitor plots (temperatures, frequencies, interrupt rates, CPU load) and the top-consumer
//! table data.

use crate::group::Grouping;
use crate::model::RunData;
use crate::plot::{Axis, Corner, Panel, Series};
use rtscope_store::MonitorSeries;

/// Most lines in one monitor plot (the busiest sources are kept).
pub const MAX_LINES: usize = 12;

type Named = (String, &'static str, Panel);

fn secs(points: &[(u64, f64)], scale: f64) -> Vec<(f64, f64)> {
    points
        .iter()
        .map(|&(t, v)| (t as f64 / 1e9, v * scale))
        .collect()
}

fn panel(title: &str, y: Axis, series: Vec<Series>) -> Panel {
    Panel {
        title: title.to_string(),
        x: Axis::time("time since start"),
        y,
        y2: None,
        legend: Corner::UpperRight,
        series,
    }
}

fn lines_of<'a>(it: impl Iterator<Item = &'a MonitorSeries>, scale: f64) -> Vec<Series> {
    it.take(MAX_LINES)
        .enumerate()
        .map(|(i, m)| Series::new(m.metric.clone(), i, secs(&m.points, scale)))
        .collect()
}

/// The monitor plots of one run, each as (file stem, caption, panel); only those with data.
pub fn monitor_panels(run: &RunData) -> Vec<Named> {
    let mut out = Vec::new();
    let temps = lines_of(run.monitors.iter().filter(|m| m.unit == "degC"), 1.0);
    if !temps.is_empty() {
        let p = panel("Temperatures", fitted("temperature (°C)", &temps), temps);
        out.push(("monitor-temperature".into(), TEMP, p));
    }
    let freqs = lines_of(run.monitors_with("freq."), 1e-3);
    if !freqs.is_empty() {
        let p = panel("CPU frequencies", fitted("frequency (MHz)", &freqs), freqs);
        out.push(("monitor-frequency".into(), FREQ, p));
    }
    let irqs = interrupt_lines(run);
    if !irqs.is_empty() {
        let p = panel(
            "Interrupt rates (all CPUs)",
            Axis::log("interrupts per second"),
            irqs,
        );
        out.push(("monitor-interrupts".into(), IRQ, p));
    }
    let busy = lines_of(run.monitors_with("cpu_busy."), 1.0);
    if !busy.is_empty() {
        let y = Axis {
            range: Some((0.0, 100.0)),
            ..Axis::linear("busy (% of the CPU)")
        };
        out.push(("monitor-cpu-busy".into(), BUSY, panel("CPU load", y, busy)));
    }
    out
}

const TEMP: &str = "Temperatures of the thermal zones and hardware sensors.";
const FREQ: &str =
    "CPU clock frequency per CPU; drops under load point at throttling or a power-saving governor.";
const IRQ: &str = "Interrupt and softirq rates summed over the CPUs, the busiest sources.";
const BUSY: &str = "How busy each CPU was (user, system, interrupt time).";

/// `irq_rate.SOURCE.cpuN` / `softirq_rate.NAME.cpuN` summed over CPUs, busiest first.
fn interrupt_lines(run: &RunData) -> Vec<Series> {
    let mut sums: Vec<(String, Vec<(u64, f64)>)> = Vec::new();
    for m in run
        .monitors_with("irq_rate.")
        .chain(run.monitors_with("softirq_rate."))
    {
        let (kind, rest) = m.metric.split_once('.').unwrap_or(("irq_rate", &m.metric));
        let source = rest.rsplit_once(".cpu").map_or(rest, |(s, _)| s);
        let name = format!("{} {source}", kind.trim_end_matches("_rate"));
        let entry = match sums.iter_mut().position(|(n, _)| *n == name) {
            Some(i) => &mut sums[i].1,
            None => {
                sums.push((name, Vec::new()));
                &mut sums.last_mut().expect("just pushed").1
            }
        };
        add_points(entry, &m.points);
    }
    let mean = |p: &[(u64, f64)]| p.iter().map(|x| x.1).sum::<f64>() / p.len().max(1) as f64;
    sums.sort_by(|a, b| mean(&b.1).total_cmp(&mean(&a.1)));
    sums.into_iter()
        .take(MAX_LINES)
        .enumerate()
        .map(|(i, (n, p))| Series {
            gaps_at_zero: true,
            ..Series::new(n, i, secs(&p, 1.0))
        })
        .collect()
}

/// A linear axis fitted to the data with 10 % of its span as margin (not from 0: a swing of
/// 3 °C at 60 °C must be visible).
fn fitted(label: &str, series: &[Series]) -> Axis {
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), y| {
        (l.min(y), h.max(y))
    });
    if !lo.is_finite() {
        return Axis::linear(label);
    }
    let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.01).max(0.5);
    Axis {
        range: Some((lo - pad, hi + pad)),
        ..Axis::linear(label)
    }
}

/// Adds `points` into `acc` by timestamp (both sorted by time).
fn add_points(acc: &mut Vec<(u64, f64)>, points: &[(u64, f64)]) {
    for &(t, v) in points {
        match acc.binary_search_by_key(&t, |p| p.0) {
            Ok(i) => acc[i].1 += v,
            Err(i) => acc.insert(i, (t, v)),
        }
    }
}

/// Monitor plots of several runs, overlaid per group: one line per run in its group's colour
/// (named once per group): the hottest sensor and the first CPU's frequency on axes fitted to
/// the data, the whole machine's CPU load, and the interrupt + softirq rate of the CPUs the
/// run measured (log axis, zero rates as gaps).
pub fn campaign_monitor_panels(runs: &[RunData], g: &Grouping) -> Vec<Named> {
    let (mut temps, mut freqs, mut busy, mut irqs) = (vec![], vec![], vec![], vec![]);
    for (i, r) in runs.iter().enumerate() {
        let (colour, name) = group_line(runs, g, i);
        let line = |pts: Vec<(f64, f64)>| Series::new(name.clone(), colour, pts);
        let hottest = r
            .monitors
            .iter()
            .filter(|m| m.unit == "degC")
            .max_by(|a, b| peak(a).total_cmp(&peak(b)));
        if let Some(m) = hottest {
            temps.push(line(secs(&m.points, 1.0)));
        }
        if let Some(m) = r.monitors_with("freq.").next() {
            freqs.push(line(secs(&m.points, 1e-3)));
        }
        if let Some(m) = r.monitors.iter().find(|m| m.metric == "cpu_busy.all") {
            busy.push(line(secs(&m.points, 1.0)));
        }
        let rate = measured_cpu_interrupts(r);
        if !rate.is_empty() {
            irqs.push(Series {
                gaps_at_zero: true,
                ..line(secs(&rate, 1.0))
            });
        }
    }
    let mut out = Vec::new();
    if !temps.is_empty() {
        let y = fitted("temperature (°C)", &temps);
        let p = panel("Hottest sensor, per group", y, temps);
        out.push(("monitor-temperature".into(), TEMP, p));
    }
    if !freqs.is_empty() {
        let y = fitted("frequency (MHz)", &freqs);
        let p = panel("First CPU's frequency, per group", y, freqs);
        out.push(("monitor-frequency".into(), FREQ, p));
    }
    if !busy.is_empty() {
        let y = Axis {
            range: Some((0.0, 100.0)),
            ..Axis::linear("busy (% of all CPUs)")
        };
        let p = panel("CPU load of the machine, per group", y, busy);
        out.push(("monitor-cpu-busy".into(), BUSY_ALL, p));
    }
    if !irqs.is_empty() {
        let y = Axis::log("interrupts + softirqs per second");
        let p = panel("Interrupts on the measured CPUs, per group", y, irqs);
        out.push(("monitor-interrupts".into(), IRQ_MEASURED, p));
    }
    out
}

const BUSY_ALL: &str = "How busy the whole machine was during each run (user, system and interrupt time over all CPUs); one line per run in its group's colour.";
const IRQ_MEASURED: &str = "Hardware interrupts and softirqs per second on the CPUs each run measured on, summed; one line per run in its group's colour; a gap is a second without any.";

/// The colour (its group's index) and legend name (the group's, on its first run only) of
/// run `i`'s line.
fn group_line(runs: &[RunData], g: &Grouping, i: usize) -> (usize, String) {
    match g.groups.iter().position(|x| x.runs.contains(&i)) {
        Some(k) if !g.groups[k].name.is_empty() => {
            let first = g.groups[k].runs.first() == Some(&i);
            let name = if first {
                g.groups[k].name.clone()
            } else {
                String::new()
            };
            (k, name)
        }
        _ => (i, runs[i].name()),
    }
}

/// `irq_rate.*.cpuN` and `softirq_rate.*.cpuN` summed over the CPUs run `r` measured on.
fn measured_cpu_interrupts(r: &RunData) -> Vec<(u64, f64)> {
    let cpus: Vec<String> = r
        .detail
        .threads
        .iter()
        .filter_map(|t| t.cpu)
        .map(|c| format!(".cpu{c}"))
        .collect();
    let mut acc = Vec::new();
    for m in r
        .monitors_with("irq_rate.")
        .chain(r.monitors_with("softirq_rate."))
        .filter(|m| cpus.iter().any(|c| m.metric.ends_with(c.as_str())))
    {
        add_points(&mut acc, &m.points);
    }
    acc
}

fn peak(m: &MonitorSeries) -> f64 {
    m.points.iter().map(|p| p.1).fold(f64::MIN, f64::max)
}

/// Whose a busy thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The recording rtscope's process or one it started (a load's supervisor or workers).
    Own,
    /// Another program's (whatever its name: a second rtscope, a cyclictest).
    Other,
    /// Not recorded (runs of schema version 6 and older).
    Unknown,
}

impl Origin {
    fn of(own: Option<bool>) -> Origin {
        match own {
            Some(true) => Origin::Own,
            Some(false) => Origin::Other,
            None => Origin::Unknown,
        }
    }

    /// As the report shows it.
    pub fn text(self) -> &'static str {
        match self {
            Origin::Own => "rtscope (this run)",
            Origin::Other => "other program",
            Origin::Unknown => "unknown",
        }
    }
}

/// One of a run's busiest threads, over the monitor samples it appeared in.
#[derive(Debug, Clone, PartialEq)]
pub struct Consumer {
    /// Thread name, e.g. `irq/39-dwc_otg`.
    pub comm: String,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Whether it is rtscope's own.
    pub origin: Origin,
    /// Mean share of one CPU, %.
    pub mean: f64,
    /// Peak share of one CPU, %.
    pub peak: f64,
    /// Monitor samples it appeared in.
    pub samples: usize,
    /// The CPU it last ran on most often.
    pub cpu: u32,
    /// Whether it is a kernel thread (IRQ threads, ksoftirqd, …).
    pub kernel: bool,
}

/// The busiest threads over a run, busiest first: the first `n`, then up to `n` more of
/// rtscope's own below them; one per thread (PID, TID and name), so two programs' threads of
/// one name stay apart.
pub fn top_consumers(run: &RunData, n: usize) -> Vec<Consumer> {
    let mut acc: Vec<(Consumer, Vec<u32>)> = Vec::new();
    for t in &run.top {
        let same = |a: &Consumer| a.pid == t.pid && a.tid == t.tid && a.comm == t.comm;
        match acc.iter_mut().find(|a| same(&a.0)) {
            Some((a, cpus)) => {
                a.mean += t.cpu_percent;
                a.peak = a.peak.max(t.cpu_percent);
                a.samples += 1;
                cpus.push(t.last_cpu);
            }
            None => acc.push((
                Consumer {
                    comm: t.comm.clone(),
                    pid: t.pid,
                    tid: t.tid,
                    origin: Origin::of(t.own),
                    mean: t.cpu_percent,
                    peak: t.cpu_percent,
                    samples: 1,
                    cpu: t.last_cpu,
                    kernel: t.kernel,
                },
                vec![t.last_cpu],
            )),
        }
    }
    let mut out: Vec<Consumer> = acc
        .into_iter()
        .map(|(mut a, cpus)| {
            a.mean /= a.samples as f64;
            a.cpu = most_frequent(&cpus).unwrap_or(a.cpu);
            a
        })
        .collect();
    out.sort_by(|a, b| b.mean.total_cmp(&a.mean));
    // rtscope's own threads (and its loads') below the first `n` still get up to `n` rows:
    // under a heavier load than rtscope's their cost (the observer effect) stays in view.
    let mut own_below = 0;
    let mut i = 0;
    out.retain(|c| {
        i += 1;
        let keep = i <= n || (c.origin == Origin::Own && own_below < n);
        own_below += usize::from(i > n && keep);
        keep
    });
    out
}

fn most_frequent(v: &[u32]) -> Option<u32> {
    let mut best: Option<(u32, usize)> = None;
    for &x in v {
        let n = v.iter().filter(|&&y| y == x).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((x, n));
        }
    }
    best.map(|b| b.0)
}
