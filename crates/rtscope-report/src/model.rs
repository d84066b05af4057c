//! What a report needs about one run, handed to it (read from the store by the caller).

use rtscope_core::Histogram;
use rtscope_store::{
    CampaignRun, CampaignSummary, LoadRow, MonitorSeries, MonitorState, RunBundle, RunDetail,
    RunId, RunKind, SeriesRow, TopThread,
};

/// An imported `--spike` line: (thread, latency ns, wake-up time µs on cyclictest's clock).
pub type Spike = (u32, u64, u64);

/// Everything about one run that a report shows.
#[derive(Debug, Clone)]
pub struct RunData {
    /// Summary, threads (with histograms), environment, command line and configuration.
    pub detail: RunDetail,
    /// Per-thread per-interval statistics (latencies in ns).
    pub series: Vec<SeriesRow>,
    /// Monitor metrics (`temp.*` °C, `freq.cpuN` kHz, `irq_rate.*` 1/s, `cpu_busy.cpuN` %, …).
    pub monitors: Vec<MonitorSeries>,
    /// Text states such as governors (changes only).
    pub states: Vec<MonitorState>,
    /// The busiest threads of each monitor sample.
    pub top: Vec<TopThread>,
    /// The loads the run was measured under.
    pub loads: Vec<LoadRow>,
    /// The campaign the run belongs to, with its place in it.
    pub campaign: Option<(CampaignSummary, CampaignRun)>,
    /// Exact CDF points of the raw samples, when asked for and stored (built in bounded
    /// memory by [`crate::raw::raw_cdf`]).
    pub raw: Option<crate::raw::RawCdf>,
    /// The per-sample scatter of the raw samples, decimated in bounded memory: per thread
    /// (index = thread), (ns from the start, latency ns) points ([`crate::raw::Decimator`]).
    pub scatter: Option<crate::raw::Scatter>,
    /// Samples recorded as events (above the run's `--event-above` threshold).
    pub events: Vec<rtscope_store::EventRow>,
    /// Why the worst wake-ups were late (`--explain`), with the run's clock start (ns).
    pub explain: Option<(rtscope_explain::book::ExplainSummary, u64)>,
    /// What the explanation observed with: its recorder, trace events and kernel stacks
    /// ([`rtscope_store::Recorded::None`]: not explained, no recorder ran).
    pub recorder: rtscope_store::Recorded,
    /// The preflight audit the run started with (`rtscope check`; empty if none was stored).
    pub checks: Vec<rtscope_store::CheckRow>,
    /// The tail beyond the measured maximum per thread (`--tail`; made by the caller, which
    /// reads the store; empty when not asked or not analysed).
    pub tails: Vec<ThreadTail>,
}

impl From<RunBundle> for RunData {
    /// A run read from the store ([`rtscope_store::Store::bundle`]); the report reads no
    /// database itself.
    fn from(b: RunBundle) -> RunData {
        let (raw, scatter) = if b.raw.is_empty() {
            (None, None)
        } else {
            let each = |t: u32, sink: &mut dyn FnMut(&[crate::raw::RawSample])| {
                sink(b.raw.get(t as usize).map_or(&[][..], |v| &v[..]));
                Ok::<(), std::convert::Infallible>(())
            };
            let threads: Vec<u32> = (0..b.raw.len() as u32).collect();
            let views = crate::raw::views(&threads, each);
            let views = views.unwrap_or_else(|e| match e {});
            (Some(views.0), Some(views.1))
        };
        RunData {
            scatter,
            events: b.events,
            detail: b.detail,
            series: b.series,
            monitors: b.monitors,
            states: b.states,
            top: b.top,
            loads: b.loads,
            campaign: b.campaign,
            raw,
            explain: b
                .spikes
                .and_then(|s| Some((serde_json::from_str(&s.summary).ok()?, s.clock_start_ns))),
            checks: b.checks,
            recorder: b.recorder,
            tails: Vec::new(),
        }
    }
}

impl RunData {
    /// The run's id.
    pub fn id(&self) -> RunId {
        self.detail.summary.id
    }

    /// A short name for legends: the load case of a campaign run, else the label, else
    /// `run N`.
    pub fn name(&self) -> String {
        // Control characters would make the SVG invalid XML and reach terminals raw.
        rtscope_core::text::escape(&self.raw_name()).into_owned()
    }

    fn raw_name(&self) -> String {
        if let Some((_, r)) = &self.campaign {
            let case = if r.scenario.is_empty() || r.scenario == "default" {
                r.load_case.clone()
            } else {
                format!("{}/{}", r.scenario, r.load_case)
            };
            if r.repeat > 1 {
                return format!("{case} #{}", r.repeat);
            }
            return case;
        }
        match &self.detail.summary.label {
            Some(l) if !l.is_empty() => l.clone(),
            _ => format!("run {}", self.id()),
        }
    }

    /// The load case: the campaign's, else the `case` tag, else empty.
    pub fn case(&self) -> String {
        let case = match &self.campaign {
            Some((_, r)) => r.load_case.clone(),
            None => self.tag("case").unwrap_or_default().to_string(),
        };
        rtscope_core::text::escape(&case).into_owned()
    }

    /// A tag's value.
    pub fn tag(&self, key: &str) -> Option<&str> {
        let tags = &self.detail.summary.tags;
        tags.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// `figures include the recorder's cost (tracefs, 23 events[, stacks: …])` for a run
    /// measured with a trace recorder on (`--explain`'s tracefs instance; the eBPF rings say
    /// their cost is not yet measured); `None` without one.
    pub fn recorder_cost(&self) -> Option<String> {
        let cost = self.recorder.row()?.cost()?;
        Some(format!("figures include the recorder's cost ({cost})"))
    }

    /// An environment fact's value.
    pub fn env(&self, key: &str) -> Option<&str> {
        let env = &self.detail.environment;
        env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// CPU of thread `t` as a legend name (`CPU 3`; `thread 5 (CPU 1)` when several threads
    /// share the CPU, as in M:N; `thread 3` when unpinned). A respond run's "thread" is a
    /// mechanism on a placement: `eventfd 0→1 cross (CPU 1)` ([`RunData::role`]).
    pub fn cpu_name(&self, thread: u32) -> String {
        let threads = &self.detail.threads;
        if let Some(role) = self.role(thread) {
            let cpu = threads
                .iter()
                .find(|t| t.thread == thread)
                .and_then(|t| t.cpu);
            let name = match cpu {
                Some(c) => format!("{role} (CPU {c})"),
                None => role,
            };
            return rtscope_core::text::escape(&name).into_owned();
        }
        match threads.iter().find(|t| t.thread == thread) {
            Some(t) => match t.cpu {
                Some(c) if threads.iter().filter(|o| o.cpu == Some(c)).count() > 1 => {
                    format!("thread {} (CPU {c})", t.thread)
                }
                Some(c) => format!("CPU {c}"),
                None => format!("thread {}", t.thread),
            },
            None => format!("thread {thread}"),
        }
    }

    /// What thread `t` of a respond run measured (`eventfd 0→1 cross`, `rising`), from the
    /// `rows` its configuration records; `None` for other runs.
    pub fn role(&self, thread: u32) -> Option<String> {
        if self.detail.summary.kind != RunKind::Respond {
            return None;
        }
        respond_role(&self.detail.config_json, thread)
    }

    /// Whether the run's missed periods are known: an import's source never says how many
    /// deadlines were missed (cyclictest's output does not print them), so its 0 is unknown.
    pub fn missed_known(&self) -> bool {
        self.missed().is_some()
    }

    /// Missed periods over all threads, `None` when unknown ([`RunData::missed_known`]).
    pub fn missed(&self) -> Option<u64> {
        self.detail.summary.missed_periods()
    }

    /// Whether the run has a latency histogram: an import of a summary (`-q`, a live status,
    /// `--spike` output) has statistics but no histogram.
    pub fn has_histogram(&self) -> bool {
        self.merged().count() > 0
    }

    /// The `--spike` lines of an imported cyclictest summary (`config.source.spikes`), in the
    /// order printed: (thread, latency ns, wake-up time µs on cyclictest's clock).
    pub fn imported_spikes(&self) -> Vec<Spike> {
        let Ok(config) = serde_json::from_str::<serde_json::Value>(&self.detail.config_json) else {
            return Vec::new();
        };
        let Some(list) = config["source"]["spikes"].as_array() else {
            return Vec::new();
        };
        list.iter()
            .filter_map(|s| {
                let n = |k: &str| s[k].as_u64();
                let thread = u32::try_from(n("thread")?).ok()?;
                Some((thread, n("latency_us")?.saturating_mul(1000), n("ts_us")?))
            })
            .collect()
    }

    /// All threads' histograms merged.
    pub fn merged(&self) -> &Histogram {
        &self.detail.summary.histogram
    }

    /// The monitor series whose metric starts with `prefix`.
    pub fn monitors_with<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a MonitorSeries> {
        self.monitors
            .iter()
            .filter(move |m| m.metric.starts_with(prefix))
    }

    /// The command line as one shell-like string.
    pub fn command_line(&self) -> String {
        let argv: Vec<String> =
            serde_json::from_str(&self.detail.command_line_json).unwrap_or_default();
        argv.join(" ")
    }
}

/// What thread `thread` of a respond run measured (`eventfd 1->1 same`), from the `rows` of
/// its configuration (`config_json`); `None` when it does not say.
pub fn respond_role(config_json: &str, thread: u32) -> Option<String> {
    let config: serde_json::Value = serde_json::from_str(config_json).ok()?;
    let row = config["rows"]
        .as_array()?
        .iter()
        .find(|r| r["thread"].as_u64() == Some(u64::from(thread)))?;
    let source = row["source"].as_str().filter(|s| !s.is_empty())?;
    // `1→1 same`: the plots' embedded font has no arrow.
    Some(match row["path"].as_str().filter(|p| !p.is_empty()) {
        Some(path) => format!("{source} {}", path.replace('→', "->")),
        None => source.to_string(),
    })
}

/// One thread's tail beyond the measured time (`report --tail`, the `worst` module).
#[derive(Debug, Clone)]
pub struct ThreadTail {
    /// The thread.
    pub thread: u32,
    /// Its CPU, when pinned.
    pub cpu: Option<u32>,
    /// What `rtscope tail` reports.
    pub analysis: rtscope_evt::Analysis,
    /// What the plots draw ([`rtscope_evt::figure::figures`]).
    pub figures: rtscope_evt::figure::Figures,
}

impl ThreadTail {
    /// `CPU 2`, or `thread 0` when unpinned.
    pub fn title(&self) -> String {
        self.cpu
            .map_or(format!("thread {}", self.thread), |c| format!("CPU {c}"))
    }

    /// The file name of its figure (`worst-case-run3-cpu1`).
    pub(crate) fn file_name(&self, run: &RunData) -> String {
        let who = self
            .cpu
            .map_or(format!("thread{}", self.thread), |c| format!("cpu{c}"));
        format!("worst-case-run{}-{who}", run.id())
    }
}
