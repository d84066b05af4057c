//! From a campaign file (or preset) and the command line to a flat list of planned runs.
//!
//! Every check happens here, before anything starts: unknown keys and wrong types (by the
//! TOML layer), durations, CPU lists, policies, limits, loads that are not installed,
//! duplicate names and an empty matrix. Each run's [`RunConfig`] is built by
//! [`RunPlan::build`], so a campaign run is validated exactly like `rtscope measure`.

use super::file::{RawCase, RawFile, RawSettings, Threads};
use super::pos::Source;
use super::until_tail::{self, UntilTail, UntilTailRun, Written, WrittenRef};
use super::{loads, CampaignOptions};
use rtscope_common::error::UsageError;
use rtscope_common::limits;
use rtscope_core::Nanos;
use rtscope_engine::{ClockKind, CpuSet};
use rtscope_load::LoadSpec;
use rtscope_session::explain::RecorderChoice;
use rtscope_session::plan::WorkloadSpec;
use rtscope_session::{
    field::Naming, plan::PlanError, plan::PlanSpec, plan::PolicyChoice, plan::RunPlan,
};
use std::time::Duration;
use toml::Spanned;

mod noise;
mod read;
mod respond;
use read::read_source;
use respond::respond;

/// Warm-up of the loads before measuring starts, unless `settle` says otherwise.
pub const DEFAULT_SETTLE: Nanos = Nanos::from_secs(2);
/// The longest wait for a load to start working, unless `load_start` says otherwise: longer
/// than the 50 s a memory load took to start in the published five-case study's setting.
pub const DEFAULT_LOAD_START: Nanos = Nanos::from_secs(120);

/// Tag keys rtscope sets on every run of a campaign.
use rtscope_common::names::RESERVED_TAGS;

/// A campaign, expanded: everything needed to start its runs and record them.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// Its name (`--name`, else `[campaign] name`, else the file stem or preset name).
    pub name: String,
    /// `[campaign] description`.
    pub description: Option<String>,
    /// The file path as given, or the preset name.
    pub source: String,
    /// The TOML text it was read from (stored with the runs, for `--resume`).
    pub text: String,
    /// `[campaign.tags]` then `--tag`, in that order.
    pub tags: Vec<(String, String)>,
    /// The runs, in the order they are to be measured.
    pub runs: Vec<PlannedRun>,
    /// `[campaign] until_tail` or `--until-tail`: each timer run measured until its tail
    /// estimate is precise enough.
    pub until_tail: Option<UntilTail>,
}

/// One run of a campaign: one scenario under one load case, one repeat.
#[derive(Debug, Clone)]
pub struct PlannedRun {
    /// Position in the campaign, from 1.
    pub seq: usize,
    /// Scenario name, e.g. `N:N`.
    pub scenario: String,
    /// Load case name, e.g. `idle`.
    pub case: String,
    /// Repeat number, from 1.
    pub repeat: u32,
    /// Repeats of this scenario × case.
    pub repeats: u32,
    /// The measurement, checked exactly as `rtscope measure` checks its options; its workload
    /// says what it measures (timer wake-ups, or IPC events in a respond scenario).
    pub plan: RunPlan,
    /// Loads started before measuring (empty: idle).
    pub loads: Vec<LoadSpec>,
    /// Load warm-up before measuring starts (zero when there are no loads).
    pub settle: Nanos,
    /// The longest wait for each load to start working before the warm-up (`load_start`;
    /// zero: no wait).
    pub load_start: Nanos,
    /// `campaign/scenario/case/repeat`, e.g. `loadcases/N:N/hackbench/2`.
    pub label: String,
    /// `campaign`, `scenario`, `case`, `repeat`, then the campaign's tags and `--tag`s.
    pub tags: Vec<(String, String)>,
    /// Measured until its tail estimate is precise enough (the plan's duration is then the
    /// rule's `max_duration`, its first check the scenario's duration).
    pub until_tail: Option<UntilTailRun>,
}

/// Reads the campaign `a` names (file or `--preset`), applies the command-line overrides
/// (`--duration`, `--loops`, `--repeats`, `--name`, `--tag`) and expands it into runs.
pub fn load(a: &CampaignOptions, online: &CpuSet) -> Result<Campaign, UsageError> {
    let (source, where_, text) = read_source(a)?;
    from_text(source, &where_, text, a, online)
}

/// Like [`load`], for a text already read: `source` is what [`Campaign::source`] says,
/// `where_` the name errors are located under.
pub(crate) fn from_text(
    source: String,
    where_: &str,
    text: String,
    a: &CampaignOptions,
    online: &CpuSet,
) -> Result<Campaign, UsageError> {
    let src = Source {
        name: where_,
        text: &text,
    };
    let raw: RawFile = toml::from_str(&text).map_err(|e| src.toml_error(&e))?;
    let default_name = match (&a.preset, &a.file) {
        (Some(p), _) => p.clone(),
        (None, Some(f)) => f
            .file_stem()
            .map_or("campaign".into(), |s| s.to_string_lossy().into_owned()),
        (None, None) => "campaign".into(),
    };
    let until = until_tail::resolve(
        &src,
        raw.campaign.until_tail.as_ref(),
        a.until_tail.as_deref(),
    )?;
    let (name, tags, runs) = expand(&src, &raw, a, online, (&default_name, until.as_ref()))?;
    Ok(Campaign {
        name,
        description: raw.campaign.description.clone(),
        source,
        text,
        tags,
        runs,
        until_tail: until.map(|u| u.0),
    })
}

/// The largest campaign file read: 1 MiB (a campaign of hundreds of scenarios is a few KiB).
pub const MAX_CAMPAIGN_FILE_BYTES: u64 = 1 << 20;

type Expanded = (String, Vec<(String, String)>, Vec<PlannedRun>);

/// The campaign's `until_tail` rule and where the file set it.
type Until<'a> = Option<&'a Written>;

fn expand(
    src: &Source,
    raw: &RawFile,
    a: &CampaignOptions,
    online: &CpuSet,
    (default_name, until): (&str, Until),
) -> Result<Expanded, UsageError> {
    let name = match (&a.name, &raw.campaign.name) {
        (Some(n), _) => n.clone(),
        (None, Some(n)) => n.get_ref().clone(),
        (None, None) => default_name.to_string(),
    };
    if name.trim().is_empty() {
        return Err(UsageError::new("the campaign name is empty").hint("name it with --name"));
    }
    rtscope_common::names::check_name(
        &name,
        "campaign name",
        rtscope_common::names::MAX_NAME_BYTES,
    )?;
    if name.contains('/') {
        return Err(UsageError::new(format!(
            "invalid campaign name '{}': names have no '/' (run labels are campaign/scenario/case/repeat)",
            rtscope_core::text::escape(&name)
        )));
    }
    if let Some(k) = raw
        .measure
        .name
        .as_ref()
        .or(raw.measure.description.as_ref())
    {
        return Err(src
            .error(k.span(), "[measure] takes no name or description")
            .hint("name the campaign in [campaign], and scenarios in [[scenario]]"));
    }
    let repeats = repeats(src, raw, a)?;
    let interleaved = order(src, raw)?;
    let tags = tags(src, raw, a)?;
    let scenarios = scenarios(src, raw, a, online, until)?;
    let cases = cases(src, &raw.load_case, online.len())?;
    // The size of the plan is known before it is built: a huge one is refused, not built.
    let size = (scenarios.len() as u64)
        .saturating_mul(cases.len() as u64)
        .saturating_mul(u64::from(repeats));
    if size > MAX_PLANNED_RUNS {
        return Err(UsageError::new(format!(
            "the campaign has {} scenarios × {} load cases × {repeats} repeats = {size} runs; at most {MAX_PLANNED_RUNS}",
            scenarios.len(),
            cases.len()
        ))
        .hint("split it into several campaigns, or lower repeats"));
    }
    let mut cells = Vec::new();
    if interleaved {
        for r in 1..=repeats {
            for s in &scenarios {
                cells.extend(cases.iter().map(|c| (s, c, r)));
            }
        }
    } else {
        for s in &scenarios {
            for c in &cases {
                cells.extend((1..=repeats).map(|r| (s, c, r)));
            }
        }
    }
    let runs = cells
        .into_iter()
        .enumerate()
        .map(|(i, (s, c, r))| planned(i + 1, &name, &tags, s, c, r, repeats))
        .collect();
    Ok((name, tags, runs))
}

/// The most runs a campaign plans (scenarios × load cases × repeats): a year of 5-minute
/// runs is about 100,000.
pub const MAX_PLANNED_RUNS: u64 = 100_000;

/// One scenario, measured: its name and everything of a run that does not depend on the case.
struct Scenario {
    name: String,
    plan: RunPlan,
    settle: Nanos,
    load_start: Nanos,
    until_tail: Option<UntilTailRun>,
}

fn planned(
    seq: usize,
    campaign: &str,
    extra: &[(String, String)],
    s: &Scenario,
    c: &(String, Vec<LoadSpec>),
    repeat: u32,
    repeats: u32,
) -> PlannedRun {
    let mut tags = vec![
        ("campaign".to_string(), campaign.to_string()),
        ("scenario".to_string(), s.name.clone()),
        ("case".to_string(), c.0.clone()),
        ("repeat".to_string(), repeat.to_string()),
    ];
    tags.extend(extra.iter().cloned());
    PlannedRun {
        seq,
        scenario: s.name.clone(),
        case: c.0.clone(),
        repeat,
        repeats,
        plan: s.plan.clone(),
        loads: c.1.clone(),
        settle: if c.1.is_empty() {
            Nanos::ZERO
        } else {
            s.settle
        },
        load_start: s.load_start,
        label: format!("{campaign}/{}/{}/{repeat}", s.name, c.0),
        tags,
        until_tail: s.until_tail,
    }
}

fn repeats(src: &Source, raw: &RawFile, a: &CampaignOptions) -> Result<u32, UsageError> {
    if let Some(r) = a.repeats {
        if r == 0 {
            return Err(UsageError::new(
                "invalid value '0' for '--repeats': use 1 or more",
            ));
        }
        return Ok(r);
    }
    match &raw.campaign.repeats {
        Some(r) if *r.get_ref() == 0 => Err(src
            .error(r.span(), "repeats = 0 leaves the run matrix empty")
            .hint("use repeats = 1 or more")),
        Some(r) => Ok(*r.get_ref()),
        None => Ok(1),
    }
}

/// Whether runs are interleaved (repeat → scenario → case) rather than grouped.
fn order(src: &Source, raw: &RawFile) -> Result<bool, UsageError> {
    match raw.campaign.order.as_ref().map(|o| (o.get_ref().as_str(), o.span())) {
        None | Some(("grouped", _)) => Ok(false),
        Some(("interleaved", _)) => Ok(true),
        Some((other, span)) => Err(src
            .error(span, format!("invalid order '{other}'"))
            .hint("use \"grouped\" (each scenario × case's repeats back to back, the default) or \"interleaved\" (repeat 1 of everything, then repeat 2, …)")),
    }
}

fn tags(
    src: &Source,
    raw: &RawFile,
    a: &CampaignOptions,
) -> Result<Vec<(String, String)>, UsageError> {
    let mut out = Vec::new();
    for (k, v) in &raw.campaign.tags {
        if rtscope_common::names::is_reserved_tag(k) {
            return Err(src
                .error(
                    v.span(),
                    format!("tag '{k}' is set by rtscope on every run"),
                )
                .hint(format!("reserved tags: {}", RESERVED_TAGS.join(", "))));
        }
        out.push((k.clone(), v.get_ref().clone()));
    }
    for t in &a.tags {
        // The one check of a user's tag (bounded, no control characters, not reserved).
        out.push(rtscope_common::names::parse_user_tag(t)?);
    }
    Ok(out)
}

fn scenarios(
    src: &Source,
    raw: &RawFile,
    a: &CampaignOptions,
    online: &CpuSet,
    until: Until,
) -> Result<Vec<Scenario>, UsageError> {
    if raw.scenario.is_empty() {
        return Err(src
            .error(
                0..0,
                "the campaign has no [[scenario]]: the run matrix is empty",
            )
            .hint("add one, e.g.\n\n[[scenario]]\nname = \"N:N\"\nthreads = \"per-cpu\""));
    }
    let mut out: Vec<Scenario> = Vec::new();
    for s in &raw.scenario {
        let (table, s) = (s.span(), s.get_ref());
        let Some(name) = &s.name else {
            return Err(src
                .error(table, "a [[scenario]] has no name")
                .hint("add name = \"...\", e.g. name = \"N:N\""));
        };
        check_name(src, name, out.iter().map(|s| s.name.as_str()), "scenario")?;
        let merged = raw.measure.overlaid(s);
        let workload = match (respond(src, &merged, online)?, noise::noise(src, &merged)?) {
            (Some(r), _) => WorkloadSpec::Respond(r),
            (None, Some(n)) => WorkloadSpec::Noise(n),
            (None, None) => WorkloadSpec::Timer,
        };
        let until = until.map(|(rule, at)| (rule, at.as_ref()));
        let settings = settings(src, &merged, (a, until), online, workload);
        let (plan, (settle, load_start), first) = settings.map_err(|e| match e {
            Located::Yes(e) => e,
            Located::No(e) => {
                let mut u = src.error(
                    name.span(),
                    format!("scenario '{}': {}", name.get_ref(), e.message(Naming::Keys)),
                );
                u.hint = e.hint(Naming::Keys);
                u
            }
        })?;
        out.push(Scenario {
            name: name.get_ref().clone(),
            until_tail: until
                .zip(first)
                .map(|((&rule, _), first_check)| UntilTailRun { rule, first_check }),
            plan,
            settle,
            load_start,
        });
    }
    Ok(out)
}

fn check_name<'a>(
    src: &Source,
    name: &Spanned<String>,
    earlier: impl IntoIterator<Item = &'a str>,
    what: &str,
) -> Result<(), UsageError> {
    let n = name.get_ref();
    if n.trim().is_empty()
        || n.contains('/')
        || n.chars().any(char::is_control)
        || n.len() > rtscope_common::names::MAX_NAME_BYTES
    {
        return Err(src
            .error(
                name.span(),
                format!(
                    "invalid {what} name '{}'",
                    rtscope_core::text::escape(&rtscope_core::text::clip(n, 60))
                ),
            )
            .hint(
                "names are not empty, at most 256 bytes, without control characters or '/' (labels are campaign/scenario/case/repeat)",
            ));
    }
    if earlier.into_iter().any(|e| e == n) {
        return Err(src
            .error(name.span(), format!("duplicate {what} name '{n}'"))
            .hint(format!("every {what} needs its own name")));
    }
    Ok(())
}

fn cases(
    src: &Source,
    raw: &[RawCase],
    cpus: usize,
) -> Result<Vec<(String, Vec<LoadSpec>)>, UsageError> {
    if raw.is_empty() {
        return Err(src.error(0..0, "the campaign has no [[load_case]]: the run matrix is empty")
            .hint("add one, e.g.\n\n[[load_case]]\nname = \"idle\"\n\n(a load case without loads measures the idle system)"));
    }
    let mut out: Vec<(String, Vec<LoadSpec>)> = Vec::new();
    for c in raw {
        check_name(src, &c.name, out.iter().map(|c| c.0.as_str()), "load case")?;
        let specs = c
            .load
            .iter()
            .map(|l| loads::spec(src, l, cpus))
            .collect::<Result<Vec<_>, _>>()?;
        out.push((c.name.get_ref().clone(), specs));
    }
    Ok(out)
}

/// An error that already carries its position, or one to be located at the scenario.
enum Located {
    Yes(UsageError),
    No(PlanError),
}

/// A scenario's plan, its warm-up and longest wait for a load to work (`settle`,
/// `load_start`), and its first until-tail check.
type Settings = (RunPlan, (Nanos, Nanos), Option<Nanos>);

/// Validates one scenario's merged settings (with the command-line overrides) into a
/// [`PlanSpec`] and builds its plan as `rtscope measure` does.
fn settings(
    src: &Source,
    s: &RawSettings,
    (a, until): (&CampaignOptions, Option<WrittenRef>),
    online: &CpuSet,
    workload: WorkloadSpec,
) -> Result<Settings, Located> {
    let mut m = PlanSpec {
        workload,
        ..PlanSpec::default()
    };
    let cpus = cpus(src, s, online).map_err(Located::Yes)?;
    m.threads = Some(threads(src, s, cpus.len()).map_err(Located::Yes)?);
    // Only a CPU list the file gives is passed on: deadline threads cannot be pinned, and
    // "all" means no restriction.
    let listed = s.cpus.as_ref().is_some_and(|c| c.get_ref().trim() != "all");
    m.cpus = listed.then_some(cpus);
    let dur = |v: &Option<Spanned<super::file::DurText>>, key: &str, unit: &str| {
        v.as_ref()
            .map(|d| duration(src, d, key, unit))
            .transpose()
            .map_err(Located::Yes)
    };
    if let Some(i) = dur(&s.interval, "interval", "us")? {
        m.interval = i;
    }
    if let Some(d) = dur(&s.distance, "distance", "us")? {
        m.distance = d;
    }
    m.dl_runtime = dur(&s.dl_runtime, "dl_runtime", "us")?;
    m.dl_deadline = dur(&s.dl_deadline, "dl_deadline", "us")?;
    m.dl_period = dur(&s.dl_period, "dl_period", "us")?;
    m.event_above = dur(&s.event_above, "event_above", "us")?;
    length(src, s, a, &mut m)?;
    if let Some(p) = &s.policy {
        let policies = PolicyChoice::ALL.map(|p| (p.name(), p));
        m.policy = choice(src, p, "policy", &policies).map_err(Located::Yes)?;
    } else if matches!(m.workload, WorkloadSpec::Noise(_)) {
        // The loops spin at SCHED_OTHER unless the file says otherwise, as `rtscope noise`.
        m.policy = PolicyChoice::Other;
    }
    if let Some(c) = &s.clock {
        m.clock = choice(src, c, "clock", &CLOCKS).map_err(Located::Yes)?;
    }
    priority(src, s, &mut m)?;
    m.priospread = s.priospread.unwrap_or(false);
    m.relative = s.relative.unwrap_or(false);
    m.mlock = s.mlock.unwrap_or(true);
    m.raw = s.raw.unwrap_or(false);
    if let Some(c) = s.event_capacity {
        m.event_capacity = c;
    }
    explain_settings(src, s, a, &mut m)?;
    if let Some(l) = s.latency.as_ref().filter(|l| *l.get_ref() < 0) {
        let msg = format!("latency {} is negative: use 0 or more µs", l.get_ref());
        return Err(Located::Yes(src.error(l.span(), msg)));
    }
    m.latency = s.latency.as_ref().map(|l| *l.get_ref());
    limits_of(src, s, &mut m)?;
    let settle = match &s.settle {
        Some(d) => duration(src, d, "settle", "s").map_err(Located::Yes)?,
        None => DEFAULT_SETTLE,
    };
    let load_start = match &s.load_start {
        Some(d) => duration(src, d, "load_start", "s").map_err(Located::Yes)?,
        None => DEFAULT_LOAD_START,
    };
    let first = until
        .map(|u| until_tail::lengthen(src, s, u, &mut m))
        .transpose()
        .map_err(Located::Yes)?;
    let plan = RunPlan::build(&m, online).map_err(Located::No)?;
    Ok((plan, (settle, load_start), first))
}

/// The scenario's `explain`, `explain_recorder` and, for noise, whether it explains by
/// default, with the command line's `--explain`/`--explain-recorder` over the file's.
fn explain_settings(
    src: &Source,
    s: &RawSettings,
    a: &CampaignOptions,
    m: &mut PlanSpec,
) -> Result<(), Located> {
    (m.explain, m.explain_off) = explain(src, s, a, &m.workload).map_err(Located::Yes)?;
    // `--explain-recorder` replaces the file's `explain_recorder`; tracefs without either.
    m.explain_recorder = match (a.explain_recorder, &s.explain_recorder) {
        (Some(r), _) => r,
        (None, Some(v)) => choice(src, v, "explain_recorder", &RECORDERS).map_err(Located::Yes)?,
        (None, None) => RecorderChoice::Tracefs,
    };
    if let WorkloadSpec::Noise(n) = &mut m.workload {
        // Unless the file or the command line says `explain`, the plan explains by default.
        n.explain_by_default = a.explain.is_none() && s.explain.is_none();
    }
    Ok(())
}

/// The scenario's `limits`: a noise scenario's in noise's words (`max_single=`, `available=`),
/// any other's in measure's.
fn limits_of(src: &Source, s: &RawSettings, m: &mut PlanSpec) -> Result<(), Located> {
    for l in s.limits.iter().flatten() {
        if let WorkloadSpec::Noise(n) = &mut m.workload {
            n.limits.push(noise::limit(src, l).map_err(Located::Yes)?);
            continue;
        }
        let lim = limits::parse(l.get_ref()).map_err(|e| {
            let mut u = src.error(l.span(), format!("invalid limit '{}'", l.get_ref()));
            u.hint = e.hint;
            Located::Yes(u)
        })?;
        m.limits.push(lim);
    }
    Ok(())
}

/// The `--explain` threshold: on by default where tracefs is usable (docs/explain.md);
/// "off" turns it off; `--explain` replaces the file's `explain`. With it, why the default
/// could not be on here (the reason and the fix), which each run says and records.
fn explain(
    src: &Source,
    s: &RawSettings,
    a: &CampaignOptions,
    workload: &WorkloadSpec,
) -> Result<(Option<Nanos>, Option<String>), UsageError> {
    Ok(match (&a.explain, &s.explain) {
        (Some(t), _) if t.trim() == "off" => (None, None),
        (Some(t), _) => (
            Some(Nanos::parse_with_default_unit(t, "us").map_err(|e| {
                UsageError::new(format!("invalid value for '--explain': {e}"))
                    .hint("a latency such as 100us, or off")
            })?),
            None,
        ),
        (None, Some(d)) if d.get_ref().0.trim() == "off" => (None, None),
        (None, Some(d)) => (Some(duration(src, d, "explain", "us")?), None),
        // A noise scenario's plan explains by default from its gap threshold.
        (None, None) if matches!(workload, WorkloadSpec::Noise(_)) => (None, None),
        (None, None) => match rtscope_session::explain::default_choice() {
            Ok(t) => (Some(t), None),
            Err(why) => (None, Some(why.to_string())),
        },
    })
}

const RECORDERS: [(&str, RecorderChoice); 3] = [
    ("tracefs", RecorderChoice::Tracefs),
    ("ebpf", RecorderChoice::Bpf),
    ("auto", RecorderChoice::Auto),
];

const CLOCKS: [(&str, ClockKind); 2] = [
    ("monotonic", ClockKind::Monotonic),
    ("realtime", ClockKind::Realtime),
];

/// The priority: 1..99 for fifo and rr; a nice value (default 0) for the others.
fn priority(src: &Source, s: &RawSettings, m: &mut PlanSpec) -> Result<(), Located> {
    let rt = m.policy.is_realtime();
    match &s.priority {
        Some(p) if rt && !(1..=99).contains(p.get_ref()) => {
            let msg = format!(
                "priority {} is out of range: fifo and rr need 1..99",
                p.get_ref()
            );
            Err(Located::Yes(src.error(p.span(), msg)))
        }
        Some(p) => {
            m.priority = *p.get_ref();
            Ok(())
        }
        None if !rt => {
            m.priority = 0;
            Ok(())
        }
        None => Ok(()),
    }
}

/// Sets the run length: `--duration`/`--loops` win over the file; a length of zero is refused.
fn length(
    src: &Source,
    s: &RawSettings,
    a: &CampaignOptions,
    m: &mut PlanSpec,
) -> Result<(), Located> {
    if a.duration.is_some() || a.loops.is_some() {
        if let Some(d) = &a.duration {
            let n = Nanos::parse_with_default_unit(d, "s").map_err(|e| {
                Located::Yes(UsageError::new(format!(
                    "invalid value for '--duration': {e}"
                )))
            })?;
            if n.0 == 0 {
                return Err(Located::Yes(UsageError::new(
                    "invalid value '0' for '--duration': a campaign run needs a length",
                )));
            }
            m.duration = Some(n);
        }
        if a.loops == Some(0) {
            return Err(Located::Yes(UsageError::new(
                "invalid value '0' for '--loops': use 1 or more",
            )));
        }
        m.loops = a.loops;
        return Ok(());
    }
    if let (Some(d), Some(l)) = (&s.duration, &s.loops) {
        let later = if d.span().start > l.span().start {
            d.span()
        } else {
            l.span()
        };
        return Err(Located::Yes(src.error(later, "set either 'duration' or 'loops', not both")
            .hint("a run ends after its duration or after its loops; a scenario's choice replaces [measure]'s")));
    }
    if let Some(d) = &s.duration {
        let n = duration(src, d, "duration", "s").map_err(Located::Yes)?;
        if n.0 == 0 {
            return Err(Located::Yes(
                src.error(
                    d.span(),
                    "duration 0 never ends: a campaign run needs a length",
                )
                .hint("e.g. duration = \"30s\", or loops = 100000"),
            ));
        }
        m.duration = Some(n);
    }
    if let Some(l) = &s.loops {
        if *l.get_ref() == 0 {
            return Err(Located::Yes(
                src.error(l.span(), "loops = 0 measures nothing")
                    .hint("use 1 or more"),
            ));
        }
        m.loops = Some(*l.get_ref());
    }
    Ok(())
}

fn duration(
    src: &Source,
    d: &Spanned<super::file::DurText>,
    key: &str,
    unit: &str,
) -> Result<Nanos, UsageError> {
    Nanos::parse_with_default_unit(&d.get_ref().0, unit).map_err(|_| {
        src.error(d.span(), format!("invalid duration '{}' for '{key}'", d.get_ref().0))
            .hint(format!("write a number with a unit: ns, us, ms, s, m, h, d (e.g. \"200us\", \"500ms\", \"30s\", \"10m\", \"2h\"); a bare number is {unit}"))
    })
}

fn choice<T: Copy>(
    src: &Source,
    v: &Spanned<String>,
    key: &str,
    names: &[(&str, T)],
) -> Result<T, UsageError> {
    let text = v.get_ref().trim().to_ascii_lowercase();
    names
        .iter()
        .find(|(n, _)| *n == text)
        .map(|&(_, t)| t)
        .ok_or_else(|| {
            let all: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            src.error(v.span(), format!("invalid {key} '{}'", v.get_ref()))
                .hint(format!("{key}: {}", all.join(", ")))
        })
}

fn cpus(src: &Source, s: &RawSettings, online: &CpuSet) -> Result<CpuSet, UsageError> {
    let Some(c) = &s.cpus else {
        return Ok(online.clone());
    };
    let text = c.get_ref().trim();
    if text == "all" {
        return Ok(online.clone());
    }
    let set = CpuSet::parse(text, online).map_err(|e| {
        src.error(c.span(), format!("invalid CPU list '{text}': {e}"))
            .hint("e.g. cpus = \"0-3\", \"1,3\", \"!0\" or \"all\"")
    })?;
    let offline = set.iter().find(|c| !online.contains(*c));
    match offline {
        Some(bad) => Err(src
            .error(
                c.span(),
                format!("CPU {bad} is not online (online: {online})"),
            )
            .hint(format!("use CPUs of {online}, or cpus = \"all\""))),
        None => Ok(set),
    }
}

fn threads(src: &Source, s: &RawSettings, cpus: usize) -> Result<usize, UsageError> {
    if let (Some(_), Some(k)) = (&s.threads, &s.threads_per_cpu) {
        return Err(src
            .error(
                k.span(),
                "set either 'threads' or 'threads_per_cpu', not both",
            )
            .hint("threads_per_cpu = K starts K threads on every CPU of 'cpus'"));
    }
    if let Some(k) = &s.threads_per_cpu {
        if *k.get_ref() == 0 {
            return Err(src.error(k.span(), "threads_per_cpu must be at least 1"));
        }
        return Ok(*k.get_ref() as usize * cpus);
    }
    match s.threads.as_ref().map(|t| (*t.get_ref(), t.span())) {
        None | Some((Threads::PerCpu, _)) => Ok(cpus),
        Some((Threads::Count(0), span)) => Err(src
            .error(span, "threads must be at least 1")
            .hint("use a number, or \"per-cpu\"")),
        Some((Threads::Count(n), _)) => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
    }
}

/// How long a run takes: its length (the duration, or loops × the slowest thread's interval
/// when it ends by loops; the shorter when it has both) plus the load warm-up.
pub fn estimate(r: &PlannedRun) -> Duration {
    let slowest = r
        .plan
        .config
        .threads
        .iter()
        .map(|t| t.interval.0)
        .max()
        .unwrap_or(0);
    let by_loops = r.plan.config.loops.map(|l| l.saturating_mul(slowest));
    let ns = match (r.plan.config.duration.map(|d| d.0), by_loops) {
        (Some(d), Some(l)) => d.min(l),
        (Some(d), None) => d,
        (None, Some(l)) => l,
        (None, None) => 0,
    };
    Duration::from_nanos(ns.saturating_add(r.settle.0))
}
