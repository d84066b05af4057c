//! What a report needs about one run, handed to it (read from the store by the caller).

use rtscope_core::Histogram;
use rtscope_store::{
    CampaignRun, CampaignSummary, LoadRow, MonitorSeries, MonitorState, RunBundle, RunDetail,
    RunId, SeriesRow, TopThread,
};

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
    pub explain: Option<(rtscope_trace::book::ExplainSummary, u64)>,
    /// The preflight audit the run started with (`rtscope check`; empty if none was stored).
    pub checks: Vec<rtscope_store::CheckRow>,
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

    /// An environment fact's value.
    pub fn env(&self, key: &str) -> Option<&str> {
        let env = &self.detail.environment;
        env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// CPU of thread `t` as a legend name (`CPU 3`; `thread 5 (CPU 1)` when several threads
    /// share the CPU, as in M:N; `thread 3` when unpinned).
    pub fn cpu_name(&self, thread: u32) -> String {
        let threads = &self.detail.threads;
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
