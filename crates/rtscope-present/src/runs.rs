//! The stored runs as `rtscope runs` lists and shows them: the list table, the watch series
//! after it, a run's detail (its table, campaign, loads and monitors) and the same as JSON.

use crate::table;
use rtscope_core::text::escape;
use rtscope_core::{Nanos, Stats};
use rtscope_store::{
    CampaignRun, CampaignSummary, LoadRow, MonitorSource, Recorded, RunDetail, RunId, RunStatus,
    RunSummary, Store, ThreadRow,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn us(v: Option<u64>) -> String {
    rtscope_core::text::us_or_dash(v.map(Nanos))
}

fn tags_text(t: &[(String, String)]) -> String {
    t.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The table of `rtscope runs`: one row per run.
pub fn list_text(runs: &[RunSummary]) -> String {
    let mut rows = vec![[
        "id", "started", "label", "kind", "status", "length", "threads", "samples", "p99.99",
        "max", "missed", "tags",
    ]
    .map(String::from)
    .to_vec()];
    for r in runs {
        rows.push(vec![
            r.id.to_string(),
            r.started.get(..19).unwrap_or(&r.started).replace('T', " "),
            r.label.clone().unwrap_or_else(|| "-".into()),
            r.kind.to_string(),
            r.status.to_string(),
            format!("{:.1}s", Nanos(r.progress_ns).as_secs_f64()),
            r.threads.to_string(),
            r.samples.to_string(),
            rtscope_core::text::percentile(&r.percentiles()[4]),
            us(r.max_ns),
            // An import's source never says: unknown, not 0.
            r.missed_periods()
                .map_or_else(|| "-".into(), |m| m.to_string()),
            tags_text(&r.tags),
        ]);
    }
    let mut s = table::columns(&rows, 5);
    s.push_str("started in UTC; latencies in us; length = time measured\n");
    s
}

/// The `rtscope watch` series of the database, after the runs.
pub fn watch_text(series: &[rtscope_store::watch::SeriesSummary]) -> String {
    let time = |ns: i64| {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns.max(0) as u64);
        let s = rtscope_core::civil::rfc3339(t);
        s.get(..19).unwrap_or(&s).replace('T', " ")
    };
    let mut rows = vec![[
        "series",
        "name",
        "host",
        "from",
        "to",
        "windows/hours/days",
        "max",
        "alerts",
        "resumed",
    ]
    .map(String::from)
    .to_vec()];
    for s in series {
        let (from, to) = s
            .span_ns
            .map_or(("-".into(), "-".into()), |(a, b)| (time(a), time(b)));
        rows.push(vec![
            s.id.to_string(),
            rtscope_core::text::escape(&s.name).into_owned(),
            rtscope_core::text::escape(s.host.as_deref().unwrap_or("-")).into_owned(),
            from,
            to,
            format!("{}/{}/{}", s.windows[0], s.windows[1], s.windows[2]),
            us(s.max_ns),
            s.alerts.to_string(),
            s.resumed.to_string(),
        ]);
    }
    format!(
        "\nwatch series (rtscope watch; docs/watch.md):\n{}",
        table::columns(&rows, 6)
    )
}

fn stats_of(t: &ThreadRow) -> Stats {
    Stats {
        count: t.figures.samples,
        min: Nanos(t.figures.min_ns.unwrap_or(0)),
        max: Nanos(t.figures.max_ns.unwrap_or(0)),
        sum_ns: (t.figures.mean_ns.unwrap_or(0.0) * t.figures.samples as f64).round() as u128,
        max_cycle: t.figures.max_cycle.unwrap_or(0),
        max_time: Nanos(t.figures.max_offset_ns.unwrap_or(0)),
        missed: t.missed,
    }
}

/// The text of `rtscope runs show`: the run's header, its table and its environment.
pub fn detail_text(d: &RunDetail) -> String {
    let s = &d.summary;
    let mut out = format!(
        "run {}  {}  {}\nlabel:    {}\ntags:     {}\nstarted:  {}\nended:    {}\nmeasured: {:.3}s\nexit:     {}\ncommand:  {}\nsamples:  {}\n\n",
        s.id,
        s.kind,
        s.status,
        escape(s.label.as_deref().unwrap_or("-")),
        escape(&tags_text(&s.tags)),
        s.started,
        s.ended.as_deref().unwrap_or("-"),
        Nanos(s.progress_ns).as_secs_f64(),
        s.exit_code.map_or("-".into(), |c| c.to_string()),
        escape(&serde_json::from_str::<Vec<String>>(&d.command_line_json).map(|v| v.join(" ")).unwrap_or_default()),
        d.sample_rule().describe(),
    );
    let stats: Vec<Stats> = d.threads.iter().map(stats_of).collect();
    let total_max = d.threads.iter().filter_map(|t| t.figures.max_ns).max();
    let total = stats.iter().fold(Stats::default(), |a, b| a.merge(b));
    let mut rows: Vec<table::Row> = d
        .threads
        .iter()
        .zip(&stats)
        .map(|(t, st)| table::Row {
            label: t.thread.to_string(),
            cpu: t.cpu.map_or("-".into(), |c| c.to_string()),
            stats: st,
            hist: &t.histogram,
            over: d.overflow(t),
            max_at: t.figures.max_offset_ns.map(Nanos),
        })
        .collect();
    rows.push(table::Row {
        label: "all".into(),
        cpu: "-".into(),
        stats: &total,
        hist: &s.histogram,
        over: s.overflow(),
        max_at: d
            .threads
            .iter()
            .filter(|t| t.figures.max_ns == total_max)
            .find_map(|t| t.figures.max_offset_ns)
            .map(Nanos),
    });
    out.push_str(&table::render(&rows));
    out.push_str(&format!(
        "\n{} time-series points, {} events",
        d.series_points, d.events
    ));
    if d.raw_samples > 0 {
        let dropped: u64 = d.threads.iter().map(|t| t.raw_dropped).sum();
        let per = d.raw_bytes as f64 / d.raw_samples as f64;
        out.push_str(&format!(
            ", {} raw samples in {} bytes ({per:.2} bytes/sample), {dropped} not kept",
            d.raw_samples, d.raw_bytes
        ));
    }
    out.push_str("\n\nenvironment:\n");
    for (k, v) in &d.environment {
        out.push_str(&format!("  {}: {}\n", escape(k), escape(v)));
    }
    out
}

/// What `runs show` adds to a run's detail: its campaign, loads and monitors.
pub struct Extras {
    campaign: Option<(CampaignSummary, CampaignRun)>,
    loads: Vec<LoadRow>,
    sources: Vec<MonitorSource>,
    metrics: usize,
    top: Vec<(String, f64)>,
    recorder: Recorded,
}

impl Extras {
    /// Reads what the store holds of the run beside its samples.
    pub fn read(store: &Store, id: RunId) -> rtscope_store::Result<Extras> {
        let mut top: Vec<(String, f64)> = Vec::new();
        for t in store.monitor_top(id)? {
            match top.iter_mut().find(|(c, _)| *c == t.comm) {
                Some(e) => e.1 = e.1.max(t.cpu_percent),
                None => top.push((t.comm, t.cpu_percent)),
            }
        }
        top.sort_by(|a, b| b.1.total_cmp(&a.1));
        top.truncate(5);
        Ok(Extras {
            campaign: store.campaign_of(id)?,
            loads: store.loads(id)?,
            sources: store.monitor_sources(id)?,
            metrics: store.monitor_series(id)?.len(),
            top,
            recorder: store.recorder(id)?,
        })
    }

    /// The sections after the table of `runs show`.
    pub fn text(&self) -> String {
        let mut out = recorder_text(&self.recorder);
        if let Some((c, r)) = &self.campaign {
            out.push_str(&format!(
                "\ncampaign: {} (run {} of {}: scenario {}, case {}, repeat {})\n",
                c.name, r.seq, c.planned_runs, r.scenario, r.load_case, r.repeat
            ));
        }
        if !self.loads.is_empty() {
            out.push_str("\nloads:\n");
        }
        for l in &self.loads {
            let did: Vec<String> = l
                .metrics
                .iter()
                .map(|m| format!("{} {} {}", m.name, table::count(m.value), m.unit))
                .collect();
            out.push_str(&format!(
                "  {} {} ({:.1}s): {}\n    {}\n",
                l.name,
                l.status,
                Nanos(l.ran_ns).as_secs_f64(),
                did.join(", "),
                l.command_line.join(" ")
            ));
            if let Some(e) = &l.error {
                out.push_str(&format!("    error: {e}\n"));
            }
        }
        if !self.sources.is_empty() {
            out.push_str(&format!("\nmonitors: {} metrics recorded\n", self.metrics));
            for s in &self.sources {
                let state = if s.available { "yes" } else { "no " };
                out.push_str(&format!("  {state} {}: {}\n", s.source, s.why));
            }
            let top: Vec<String> = self
                .top
                .iter()
                .map(|(c, p)| format!("{c} {p:.1}%"))
                .collect();
            if !top.is_empty() {
                out.push_str(&format!(
                    "  busiest threads (peak % of a CPU): {}\n",
                    top.join(", ")
                ));
            }
        }
        out
    }

    /// The same sections as members of the run's JSON object.
    pub fn add_json(&self, v: &mut Value) {
        let Some(obj) = v.as_object_mut() else {
            return;
        };
        obj.insert(
            "campaign".into(),
            self.campaign.as_ref().map_or(Value::Null, |(c, r)| {
                json!({"name": c.name, "id": c.id, "seq": r.seq, "scenario": r.scenario, "case": r.load_case, "repeat": r.repeat})
            }),
        );
        obj.insert(
            "loads".into(),
            Value::Array(
                self.loads
                    .iter()
                    .map(|l| {
                        json!({"name": l.name, "status": l.status.as_str(), "error": l.error, "ran_ns": l.ran_ns,
                               "command_line": l.command_line, "metrics": l.metrics})
                    })
                    .collect(),
            ),
        );
        obj.insert(
            "monitor_sources".into(),
            Value::Array(
                self.sources
                    .iter()
                    .map(|s| json!({"source": s.source, "available": s.available, "why": s.why}))
                    .collect(),
            ),
        );
        obj.insert("monitor_metrics".into(), json!(self.metrics));
        obj.insert("recorder".into(), recorder_json(&self.recorder));
    }
}

/// What a run observed with, as `runs show` prints it: the recorder, its trace events and
/// the kernel stacks taken; `none` for a run not explained (no recorder ran).
pub fn recorder_text(r: &Recorded) -> String {
    let (recorder, events, stacks) = match r {
        Recorded::None => ("none".to_string(), "none".to_string(), "none".to_string()),
        Recorded::NotRecorded(tier) => (
            format!("not recorded (tier {tier}, explained by an rtscope before schema 11)"),
            "not recorded".into(),
            "not recorded".into(),
        ),
        Recorded::Ran(tier, row) => (
            format!("{} (tier {tier})", row.recorder),
            row.events_words(),
            row.stacks.clone(),
        ),
    };
    format!("\nrecorder: {recorder}\n  events: {events}\n  stacks: {stacks}\n")
}

/// The same as a JSON member: `null` for a run not explained; `recorder` null where an older
/// rtscope did not record it.
pub fn recorder_json(r: &Recorded) -> Value {
    match r {
        Recorded::None => Value::Null,
        Recorded::NotRecorded(tier) => json!({"tier": tier, "recorder": null}),
        Recorded::Ran(tier, row) => json!({"tier": tier, "recorder": row.recorder,
            "events": row.events, "stacks": row.stacks}),
    }
}

/// One run of `rtscope runs --json`.
pub fn summary_json(s: &RunSummary) -> Value {
    json!({
        "id": s.id, "kind": s.kind, "label": s.label, "status": s.status,
        "complete": s.status == RunStatus::Complete, "started": s.started, "ended": s.ended,
        "measured_ns": s.progress_ns, "exit_code": s.exit_code,
        "tags": s.tags.iter().cloned().collect::<BTreeMap<_, _>>(),
        "threads": s.threads, "samples": s.samples, "max_ns": s.max_ns, "missed_periods": s.missed_periods(),
        "percentiles_ns": pct_json(&s.percentiles(), false), "percentiles_lower_bound_ns": pct_json(&s.percentiles(), true),
    })
}

/// Exact percentiles by label (`null` where only a lower bound is known), or with `bounds` the
/// lower bounds alone: a parser that ignores them never takes a bound for a value.
fn pct_json(ps: &[rtscope_core::Percentile], bounds: bool) -> Value {
    let pick =
        |p: &rtscope_core::Percentile| (p.lower_bound == bounds).then_some(p.value).flatten();
    let m = ps.iter().filter(|p| !bounds || p.lower_bound);
    Value::Object(
        m.map(|p| (p.label.into(), json!(pick(p).map(|v| v.0))))
            .collect(),
    )
}

/// `rtscope runs show --json`: the summary with the configuration, environment and threads.
pub fn detail_json(d: &RunDetail) -> Value {
    let mut v = summary_json(&d.summary);
    let threads: Vec<Value> = d
        .threads
        .iter()
        .map(|t| {
            json!({
                "thread": t.thread, "tid": t.tid, "cpu": t.cpu, "policy": t.policy, "priority": t.priority,
                "interval_ns": t.interval_ns, "samples": t.figures.samples, "min_ns": t.figures.min_ns, "mean_ns": t.figures.mean_ns,
                "max_ns": t.figures.max_ns, "max_cycle": t.figures.max_cycle, "max_offset_ns": t.figures.max_offset_ns, "missed_periods": t.missed,
                "miss_ratio": stats_of(t).miss_ratio(),
                "percentiles_ns": pct_json(&d.percentiles(t), false), "percentiles_lower_bound_ns": pct_json(&d.percentiles(t), true),
            })
        })
        .collect();
    let obj = v.as_object_mut().expect("summary is an object");
    obj.insert("tool_version".into(), json!(d.tool_version));
    obj.insert(
        "command_line".into(),
        serde_json::from_str(&d.command_line_json).unwrap_or(Value::Null),
    );
    obj.insert(
        "config".into(),
        serde_json::from_str(&d.config_json).unwrap_or(Value::Null),
    );
    obj.insert(
        "environment".into(),
        json!(d.environment.iter().cloned().collect::<BTreeMap<_, _>>()),
    );
    obj.insert("sample_rule".into(), json!(d.sample_rule().as_str()));
    obj.insert("thread_stats".into(), Value::Array(threads));
    obj.insert("series_points".into(), json!(d.series_points));
    obj.insert("events".into(), json!(d.events));
    obj.insert("raw_samples".into(), json!(d.raw_samples));
    obj.insert("raw_bytes".into(), json!(d.raw_bytes));
    obj.insert(
        "raw_dropped".into(),
        json!(d.threads.iter().map(|t| t.raw_dropped).sum::<u64>()),
    );
    v
}
