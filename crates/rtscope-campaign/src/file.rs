//! The campaign file as written: serde structs that mirror the TOML tables one to one.
//!
//! Every table rejects unknown keys, and every value a later check may complain about is kept
//! with its position ([`Spanned`]) so the complaint can say `file:line:column`. The format is
//! documented key by key in docs/campaigns.md; the semantics live in `expand.rs`.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use toml::Spanned;

/// A whole campaign file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    /// `[campaign]`: name, description, tags, repeats, order, until_tail.
    #[serde(default)]
    pub campaign: RawCampaign,
    /// `[measure]`: settings every run starts from.
    #[serde(default)]
    pub measure: RawSettings,
    /// `[[scenario]]`: thread and CPU layouts, with overrides of `[measure]`.
    #[serde(default)]
    pub scenario: Vec<Spanned<RawSettings>>,
    /// `[[load_case]]`: what runs beside the measurement.
    #[serde(default)]
    pub load_case: Vec<RawCase>,
}

/// `[campaign]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCampaign {
    pub name: Option<Spanned<String>>,
    pub description: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, Spanned<String>>,
    pub repeats: Option<Spanned<u32>>,
    pub order: Option<Spanned<String>>,
    /// Measure each run until its tail estimate is precise enough (`until_tail.rs`): the
    /// `--until-tail` text, `probability=1e-9,precision=10%,max_duration=2h`.
    pub until_tail: Option<Spanned<String>>,
}

/// `[measure]` and `[[scenario]]` share these keys; `name` and `description` are only
/// accepted in a scenario.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSettings {
    pub name: Option<Spanned<String>>,
    pub description: Option<Spanned<String>>,
    pub threads: Option<Spanned<Threads>>,
    pub threads_per_cpu: Option<Spanned<u32>>,
    pub cpus: Option<Spanned<String>>,
    pub interval: Option<Spanned<DurText>>,
    pub distance: Option<Spanned<DurText>>,
    pub duration: Option<Spanned<DurText>>,
    pub loops: Option<Spanned<u64>>,
    pub policy: Option<Spanned<String>>,
    pub priority: Option<Spanned<i32>>,
    pub priospread: Option<bool>,
    pub dl_runtime: Option<Spanned<DurText>>,
    pub dl_deadline: Option<Spanned<DurText>>,
    pub dl_period: Option<Spanned<DurText>>,
    pub clock: Option<Spanned<String>>,
    pub relative: Option<bool>,
    pub mlock: Option<bool>,
    pub latency: Option<Spanned<i32>>,
    pub limits: Option<Vec<Spanned<String>>>,
    pub event_above: Option<Spanned<DurText>>,
    pub event_capacity: Option<usize>,
    pub explain: Option<Spanned<DurText>>,
    /// Where the flight recorder takes the spikes' events from: `tracefs`, `ebpf`, `auto`.
    pub explain_recorder: Option<Spanned<String>>,
    pub raw: Option<bool>,
    pub settle: Option<Spanned<DurText>>,
    /// The longest wait for a load to start working (`0`: none).
    pub load_start: Option<Spanned<DurText>>,
    /// An IPC mechanism: the scenario measures event response latency (`rtscope respond`)
    /// instead of timer latency.
    pub respond: Option<Spanned<String>>,
    /// Where a respond scenario's sender and receiver run: `same`, `cross` or `S:R`.
    pub placement: Option<Spanned<String>>,
    /// Events per interval of a respond scenario.
    pub burst: Option<Spanned<u32>>,
    /// What the scenario measures: `timer` (the default) or `noise` (`rtscope noise`'s busy
    /// loops; a respond scenario names its mechanism in `respond`).
    pub workload: Option<Spanned<String>>,
    /// A noise scenario's gap threshold.
    pub threshold: Option<Spanned<DurText>>,
    /// A noise scenario's time spun per period.
    pub runtime: Option<Spanned<DurText>>,
    /// A noise scenario's duty-cycle period.
    pub period: Option<Spanned<DurText>>,
}

impl RawSettings {
    /// These settings with every key `over` sets replacing ours. Setting either `duration` or
    /// `loops` in `over` replaces both: the more specific table chooses how a run ends.
    pub fn overlaid(&self, over: &RawSettings) -> RawSettings {
        let length_set = over.duration.is_some() || over.loops.is_some();
        let (duration, loops) = if length_set {
            (over.duration.clone(), over.loops.clone())
        } else {
            (self.duration.clone(), self.loops.clone())
        };
        let count_set = over.threads.is_some() || over.threads_per_cpu.is_some();
        let (threads, threads_per_cpu) = if count_set {
            (over.threads.clone(), over.threads_per_cpu.clone())
        } else {
            (self.threads.clone(), self.threads_per_cpu.clone())
        };
        macro_rules! pick {
            ($($f:ident),*) => {
                RawSettings {
                    duration,
                    loops,
                    threads,
                    threads_per_cpu,
                    $($f: over.$f.clone().or_else(|| self.$f.clone()),)*
                }
            };
        }
        pick!(
            name,
            description,
            cpus,
            interval,
            distance,
            policy,
            priority,
            priospread,
            dl_runtime,
            dl_deadline,
            dl_period,
            clock,
            relative,
            mlock,
            latency,
            limits,
            event_above,
            event_capacity,
            explain,
            explain_recorder,
            raw,
            settle,
            load_start,
            respond,
            placement,
            burst,
            workload,
            threshold,
            runtime,
            period
        )
    }
}

/// `[[load_case]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCase {
    pub name: Spanned<String>,
    /// Free text for the reader of the file (not used by the plan).
    #[serde(rename = "description")]
    pub _description: Option<String>,
    #[serde(default)]
    pub load: Vec<RawLoad>,
}

/// `[[load_case.load]]`: one load; which keys apply depends on `kind`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLoad {
    pub kind: Spanned<String>,
    pub groups: Option<Spanned<u32>>,
    pub fds: Option<Spanned<u32>>,
    pub size: Option<Spanned<u32>>,
    pub transport: Option<Spanned<String>>,
    pub mode: Option<Spanned<String>>,
    pub threads: Option<Spanned<u32>>,
    pub megabytes: Option<Spanned<u64>>,
    pub file_mb: Option<Spanned<u64>>,
    pub dir: Option<Spanned<String>>,
    pub program: Option<Spanned<String>>,
    pub args: Option<Spanned<Vec<String>>>,
}

/// `threads = 4` or `threads = "per-cpu"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Threads {
    /// A fixed number of threads.
    Count(u64),
    /// One thread per CPU of the scenario.
    PerCpu,
}

impl<'de> Deserialize<'de> for Threads {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Threads;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of threads or \"per-cpu\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Threads, E> {
                u64::try_from(v)
                    .map(Threads::Count)
                    .map_err(|_| E::custom(format!("{v} threads: use 1 or more, or \"per-cpu\"")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Threads, E> {
                match v {
                    "per-cpu" => Ok(Threads::PerCpu),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration as written: `"200us"`, `"10m"`, or a bare number in the key's default unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DurText(pub String);

impl<'de> Deserialize<'de> for DurText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = DurText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as \"200us\", \"30s\", \"10m\" or a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DurText, E> {
                Ok(DurText(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<DurText, E> {
                Ok(DurText(v.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DurText, E> {
                Ok(DurText(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}
