//! Synthetic runs written through the store's API, for tests, benchmarks and demonstrations of
//! the report without a real-time kernel. Latencies come from a fixed-seed generator, so the
//! same spec always gives the same data.

use rtscope_core::{Histogram, Nanos};
use rtscope_store::{
    Checkpoint, LoadMetric, LoadRow, MonitorBatch, MonitorValue, NewRun, RunId, RunKind, RunStatus,
    SeriesPoint, Store, StoreError, ThreadInfo, ThreadStats, TopThread,
};

/// What to generate.
#[derive(Debug, Clone)]
pub struct SyntheticRun {
    /// Label of the run.
    pub label: String,
    /// Measured CPUs (one thread each).
    pub cpus: u32,
    /// Samples per CPU.
    pub samples: u64,
    /// Period, ns (the run lasts `samples × period`).
    pub period_ns: u64,
    /// Typical latency, ns.
    pub base_ns: u64,
    /// Generator seed.
    pub seed: u64,
    /// Whether to write monitor data (temperature, frequency, interrupt rates, CPU load, top
    /// threads) and a load.
    pub monitors: bool,
    /// Tags of the run (`kernel=rt` unless set).
    pub tags: Vec<(String, String)>,
}

impl Default for SyntheticRun {
    fn default() -> Self {
        SyntheticRun {
            label: "synthetic".into(),
            cpus: 2,
            samples: 100_000,
            period_ns: 1_000_000,
            base_ns: 5_000,
            seed: 1,
            monitors: true,
            tags: vec![("kernel".into(), "rt".into())],
        }
    }
}

use rtscope_core::rng::XorShift64 as Rng;

/// One latency: the base plus an exponential tail, and now and then a spike.
fn latency(rng: &mut Rng, base: u64) -> u64 {
    let tail = -(rng.unit().ln()) * base as f64 * 0.3;
    let spike = if rng.next_u64() % 20_000 == 0 {
        base as f64 * (2.0 + 6.0 * rng.unit())
    } else {
        0.0
    };
    base / 2 + (base as f64 * 0.5 * rng.unit() + tail + spike) as u64
}

/// Writes one synthetic run (status `complete`) and returns its id.
pub fn write_run(store: &mut Store, spec: &SyntheticRun) -> Result<RunId, StoreError> {
    let threads = (0..spec.cpus)
        .map(|c| ThreadInfo {
            thread: c,
            cpu: Some(c),
            policy: "fifo".into(),
            priority: 95,
            interval_ns: spec.period_ns,
        })
        .collect();
    let run = store.begin_run(&NewRun {
        kind: RunKind::Measure,
        label: Some(spec.label.clone()),
        tags: spec.tags.clone(),
        started: "2026-11-22T03:00:00Z".into(),
        started_unix_ns: 1_795_316_400_000_000_000 + spec.seed as i64,
        pid: std::process::id(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line_json: serde_json::to_string(&["rtscope", "measure", "--label", &spec.label])
            .unwrap_or_default(),
        config_json: "{}".into(),
        environment: environment(),
        threads,
    })?;
    let mut rng = Rng::new(spec.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let per_interval = (1_000_000_000 / spec.period_ns.max(1)).max(1);
    let mut hists = Vec::new();
    let mut series = Vec::new();
    let mut maxima = Vec::new();
    for cpu in 0..spec.cpus {
        let (h, s, max_at) = thread_data(&mut rng, spec, cpu, per_interval);
        hists.push(h);
        series.extend(s);
        maxima.push(max_at);
    }
    let stats = hists
        .iter()
        .zip(&maxima)
        .enumerate()
        .map(|(i, (h, &(cycle, sum)))| ThreadStats {
            thread: i as u32,
            tid: 1000 + i as i32,
            figures: rtscope_store::SampleFigures {
                samples: h.count(),
                min_ns: h.min().map(|v| v.0),
                mean_ns: Some(sum as f64 / h.count().max(1) as f64),
                max_ns: h.max().map(|v| v.0),
                max_cycle: Some(cycle),
                max_offset_ns: Some(cycle * spec.period_ns),
            },
            missed: 0,
            raw_dropped: 0,
            histogram: h,
        })
        .collect();
    let length = spec.samples * spec.period_ns;
    let last = Checkpoint {
        progress_ns: length,
        at_unix_ns: 1_795_316_400_000_000_000 + length as i64,
        threads: stats,
        series,
        events: Vec::new(),
        samples: Vec::new(),
        monitor: if spec.monitors {
            monitors(spec, length)
        } else {
            MonitorBatch::default()
        },
    };
    store.finish_run(run, &last, RunStatus::Complete, "2026-11-22T03:20:00Z", 0)?;
    if spec.monitors {
        store.set_loads(run, &[load()])?;
    }
    Ok(run)
}

/// One thread's histogram, per-second series and (cycle of the max, sum of latencies).
fn thread_data(
    rng: &mut Rng,
    spec: &SyntheticRun,
    cpu: u32,
    per_interval: u64,
) -> (Histogram, Vec<SeriesPoint>, (u64, u128)) {
    let mut h = Histogram::new();
    let mut interval = Histogram::new();
    let mut series = Vec::new();
    let (mut max, mut max_cycle, mut sum) = (0u64, 0u64, 0u128);
    for cycle in 0..spec.samples {
        let v = latency(rng, spec.base_ns);
        h.record(Nanos(v));
        interval.record(Nanos(v));
        sum += u128::from(v);
        if v > max {
            (max, max_cycle) = (v, cycle);
        }
        if (cycle + 1) % per_interval == 0 || cycle + 1 == spec.samples {
            let n = interval.count();
            series.push(SeriesPoint {
                thread: cpu,
                offset_ns: (cycle + 1) * spec.period_ns,
                length_ns: n * spec.period_ns,
                samples: n,
                min_ns: interval.min().map(|x| x.0),
                max_ns: interval.max().map(|x| x.0),
                mean_ns: None,
                p99_ns: interval.value_at_quantile(0.99).map(|x| x.0),
                missed: 0,
            });
            interval = Histogram::new();
        }
    }
    (h, series, (max_cycle, sum))
}

fn environment() -> Vec<(String, String)> {
    [
        ("uname.nodename", "board-1"),
        ("uname.release", "6.12.0-rt5"),
        ("kernel.realtime", "1"),
        ("kernel.cmdline", "console=ttyS0 isolcpus=1"),
        ("kernel.cmdline.isolcpus", "1"),
        ("cpu.governors", "performance"),
        ("rtscope.sample_rule", "wake-up"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn monitors(spec: &SyntheticRun, length: u64) -> MonitorBatch {
    let mut b = MonitorBatch::default();
    let seconds = (length / 1_000_000_000).max(2);
    let mut v = |metric: &str, unit: &str, t: u64, value: f64| {
        b.values.push(MonitorValue {
            metric: metric.into(),
            unit: unit.into(),
            offset_ns: t * 1_000_000_000,
            value,
        })
    };
    for t in 0..=seconds {
        let warm = t as f64 / seconds as f64;
        let base = 40.0 + (spec.seed % 5) as f64 * 3.0;
        v("temp.cpu-thermal", "degC", t, base + 15.0 * warm);
        for c in 0..spec.cpus {
            v(
                &format!("freq.cpu{c}"),
                "kHz",
                t,
                if t % 7 == 3 { 1_200_000.0 } else { 1_800_000.0 },
            );
            v(
                &format!("irq_rate.LOC.cpu{c}"),
                "1/s",
                t,
                1000.0 + 10.0 * c as f64,
            );
            v(&format!("softirq_rate.TIMER.cpu{c}"), "1/s", t, 250.0);
            v(&format!("cpu_busy.cpu{c}"), "%", t, 40.0 + 30.0 * warm);
        }
    }
    for t in 0..=seconds.min(20) {
        for (rank, comm) in ["stress-ng-cpu", "ksoftirqd/0", "rtscope"]
            .iter()
            .enumerate()
        {
            b.top.push(TopThread {
                offset_ns: t * 1_000_000_000,
                rank: rank as u32,
                pid: 100 + rank as u32,
                tid: 100 + rank as u32,
                comm: comm.to_string(),
                cpu_percent: 90.0 / (rank + 1) as f64,
                last_cpu: rank as u32 % spec.cpus.max(1),
                kernel: rank == 1,
                own: Some(rank == 2),
            });
        }
    }
    b
}

fn load() -> LoadRow {
    LoadRow {
        name: "messaging".into(),
        spec_json: "{}".into(),
        command_line: vec!["hackbench".into(), "-l".into(), "1000".into()],
        status: rtscope_core::LoadStatus::Ok,
        error: None,
        ran_ns: 10_000_000_000,
        metrics: vec![LoadMetric {
            name: "messages".into(),
            value: 1_000_000.0,
            unit: "messages".into(),
        }],
    }
}
