//! `until_tail`: each timer run of a campaign measured until its tail estimate is precise
//! enough (docs/campaigns.md, docs/worst-case.md).
//!
//! The rule: the latency exceeded with `probability` per wake-up, estimated as `rtscope tail`
//! estimates it, must have an upper confidence bound within `precision` of the estimate on
//! every thread of the run. A run is measured for its scenario's duration, then checked, and
//! checked again each time its length has doubled, until every thread is settled
//! ([`Standing::settles`]: narrow with its estimate inside the previous check's interval, or
//! refused at two checks in a row for a reason measuring longer does not remove; never on one
//! look), or until `max_duration`, where it ends by itself. The checks run on the housekeeping
//! side, on what the run's checkpoints have recorded; nothing is added to the measuring
//! threads. After the run the whole recorded run is analysed once more: that analysis, the one
//! `rtscope tail` prints for the run, is what is recorded (the `until_tail` tag and the
//! `rtscope.until_tail.*` facts of its environment). This module is the rule and its record,
//! pure; `watch` runs it beside a session.

use super::file::RawSettings;
use super::pos::Source;
use rtscope_common::error::UsageError;
use rtscope_core::Nanos;
use rtscope_evt::precision::Standing;
use rtscope_session::{plan::PlanSpec, plan::WorkloadSpec};
use std::fmt::Write as _;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

pub(crate) mod watch;

/// The tag every run measured under `until_tail` gets: `narrow`, `wide`, `refused` or
/// `interrupted` ([`outcome`]).
pub const TAG: &str = "until_tail";

/// A rule as written, for hints.
const EXAMPLE: &str = "probability=1e-9,precision=10%,max_duration=2h";

/// The stopping rule (`[campaign] until_tail`, `--until-tail`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UntilTail {
    /// Exceedance probability per wake-up of the level watched.
    pub probability: f64,
    /// The upper bound wanted within this fraction of the estimate (0.1: 10 %).
    pub precision: f64,
    /// The longest a run is measured.
    pub max_duration: Nanos,
}

/// The rule as applied to one run: its first check after the scenario's duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UntilTailRun {
    /// The rule.
    pub rule: UntilTail,
    /// When the first check is made: the scenario's duration.
    pub first_check: Nanos,
}

impl UntilTail {
    /// `probability=1e-9,precision=10%,max_duration=7200s`: the flag's form.
    pub fn text(&self) -> String {
        format!(
            "probability={:e},precision={}%,max_duration={}",
            self.probability,
            percent(self.precision),
            rtscope_core::text::short(self.max_duration)
        )
    }

    /// The value of `--until-tail`: `probability=P,precision=PCT%,max_duration=DUR`, or
    /// `off` (`None`: the campaign file's rule is dropped).
    pub fn parse_flag(text: &str) -> Result<Option<UntilTail>, UsageError> {
        UntilTail::parse(text).map_err(|why| {
            UsageError::new(format!("invalid value '{text}' for '--until-tail': {why}"))
                .hint(format!("e.g. --until-tail {EXAMPLE} (or off)"))
        })
    }

    /// `probability=P,precision=PCT%,max_duration=DUR` (every key once, any order) or `off`;
    /// the error says what is wrong.
    pub fn parse(text: &str) -> Result<Option<UntilTail>, RuleError> {
        if text.trim() == "off" {
            return Ok(None);
        }
        let (mut p, mut r, mut m) = (None, None, None);
        for part in text.split(',') {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let slot = match k.trim() {
                "probability" => &mut p,
                "precision" => &mut r,
                "max_duration" => &mut m,
                other => return Err(RuleError::UnknownKey(other.into())),
            };
            if slot.replace(v.trim()).is_some() {
                return Err(RuleError::Twice(k.trim().into()));
            }
        }
        let p = p.ok_or(RuleError::Missing("probability"))?;
        let probability = p
            .parse()
            .map_err(|_| RuleError::NotANumber(p.into()))
            .and_then(probability)?;
        let r = r.ok_or(RuleError::Missing("precision"))?;
        let m = m.ok_or(RuleError::Missing("max_duration"))?;
        Ok(Some(UntilTail {
            probability,
            precision: precision(r)?,
            max_duration: max_duration(m)?,
        }))
    }
}

/// What is wrong with an `until_tail` rule.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    /// A key the rule does not have.
    #[error("unknown key '{0}'")]
    UnknownKey(String),
    /// A key given twice.
    #[error("{0} is given twice")]
    Twice(String),
    /// A key left out.
    #[error("{0} is missing")]
    Missing(&'static str),
    /// A probability that is not a number.
    #[error("probability '{0}' is not a number")]
    NotANumber(String),
    /// A probability not strictly between 0 and 1.
    #[error("probability {0} is not between 0 and 1 (per wake-up, e.g. 1e-9)")]
    Probability(f64),
    /// A precision that is not a percentage above 0.
    #[error("precision '{0}' is not a percentage above 0 such as \"10%\"")]
    Precision(String),
    /// A maximum duration that is not a duration above 0.
    #[error("max_duration '{0}' is not a duration above 0 such as \"2h\"")]
    MaxDuration(String),
}

/// A rule and where the file wrote it (`None`: given by `--until-tail`).
pub(crate) type Written = (UntilTail, Option<Range<usize>>);

/// [`Written`], borrowed.
pub(crate) type WrittenRef<'a> = (&'a UntilTail, Option<&'a Range<usize>>);

/// The campaign's rule and where the file set it: `--until-tail` (`flag`) replaces the
/// file's `[campaign] until_tail` (`off` drops it).
pub(crate) fn resolve(
    src: &Source,
    file: Option<&Spanned<String>>,
    flag: Option<&str>,
) -> Result<Option<Written>, UsageError> {
    if let Some(f) = flag {
        return Ok(UntilTail::parse_flag(f)?.map(|r| (r, None)));
    }
    let Some(t) = file else { return Ok(None) };
    let rule = UntilTail::parse(t.get_ref()).map_err(|why| {
        src.error(t.span(), format!("invalid until_tail: {why}"))
            .hint(format!(
                "until_tail = \"{EXAMPLE}\" (the --until-tail value)"
            ))
    })?;
    Ok(rule.map(|r| (r, Some(t.span()))))
}

/// A fraction as a percentage for people and the record: 0.1 → `10`.
pub(crate) fn percent(fraction: f64) -> String {
    format!("{}", (fraction * 100.0 * 1e6).round() / 1e6)
}

/// A probability strictly between 0 and 1.
pub(crate) fn probability(p: f64) -> Result<f64, RuleError> {
    if p > 0.0 && p < 1.0 {
        Ok(p)
    } else {
        Err(RuleError::Probability(p))
    }
}

/// `10%` → 0.1; the `%` is required (a bare 0.1 could mean either).
pub(crate) fn precision(text: &str) -> Result<f64, RuleError> {
    let value = text
        .trim()
        .strip_suffix('%')
        .map(|v| v.trim().parse::<f64>());
    match value {
        Some(Ok(v)) if v > 0.0 && v.is_finite() => Ok(v / 100.0),
        _ => Err(RuleError::Precision(text.into())),
    }
}

/// A duration with its unit (a bare number is seconds), above zero.
pub(crate) fn max_duration(text: &str) -> Result<Nanos, RuleError> {
    match Nanos::parse_with_default_unit(text, "s") {
        Ok(n) if n.0 > 0 => Ok(n),
        _ => Err(RuleError::MaxDuration(text.into())),
    }
}

/// Lengthens scenario `s`'s run spec `m` for `rule` (located at `at` when the file set it):
/// measured up to `max_duration`, with every sample kept (`raw`: the tests of the fit need
/// their time order); returns when the first check is made, the scenario's duration. A
/// respond scenario, or one that ends by loops, cannot be checked by time: refused.
pub(crate) fn lengthen(
    src: &Source,
    s: &RawSettings,
    (rule, at): WrittenRef,
    m: &mut PlanSpec,
) -> Result<Nanos, UsageError> {
    let locate = |span: Option<Range<usize>>, msg: String| match span.or(at.cloned()) {
        Some(span) => src.error(span, msg),
        None => UsageError::new(msg),
    };
    if matches!(m.workload, WorkloadSpec::Respond(_)) {
        return Err(locate(
            s.respond.as_ref().map(|r| r.span()),
            "until_tail measures timer wake-ups; this is a respond scenario".into(),
        )
        .hint("measure respond scenarios in a campaign of their own, without until_tail"));
    }
    if matches!(m.workload, WorkloadSpec::Noise(_)) {
        return Err(locate(
            s.workload.as_ref().map(|w| w.span()),
            "until_tail measures timer wake-ups; this is a noise scenario".into(),
        )
        .hint("measure noise scenarios in a campaign of their own, without until_tail"));
    }
    if m.loops.is_some() {
        return Err(locate(
            s.loops.as_ref().map(|l| l.span()),
            "until_tail measures for a time: a run that ends after its loops has no first check"
                .into(),
        )
        .hint("give the scenario a duration (its first check) instead of loops"));
    }
    let first = m
        .duration
        .unwrap_or(rtscope_session::plan::DEFAULT_DURATION);
    if first >= rule.max_duration {
        return Err(locate(
            s.duration.as_ref().map(|d| d.span()),
            format!(
                "until_tail's max_duration {} is not longer than the run's duration {}, its first check",
                rtscope_core::text::short(rule.max_duration),
                rtscope_core::text::short(first)
            ),
        )
        .hint("a longer max_duration, or a shorter duration"));
    }
    m.duration = Some(rule.max_duration);
    m.raw = true;
    Ok(first)
}

/// One thread at one check: how it is titled (`CPU 0`, as `rtscope tail` titles it), its
/// index and where its estimate stands.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadStanding {
    /// `CPU 2`, or `thread 3` when unpinned.
    pub title: String,
    /// The thread's index in the run.
    pub thread: u32,
    /// Where it stands.
    pub standing: Standing,
    /// Whether this check settled it, after the check before ([`Standing::settles`]; set by
    /// [`Checks::add`]).
    pub settled: bool,
}

impl ThreadStanding {
    /// `CPU 0 narrow: 71.3 µs [64.0 µs .. 77.0 µs], upper bound +8.0 %`, and whether a check
    /// settled it or its narrow interval waits for the next.
    fn text(&self) -> String {
        let why = match (&self.standing, self.settled) {
            (Standing::Narrow(_), false) => {
                " (not settled yet: the next check must be narrow with its estimate in this interval)"
            }
            (Standing::Refused(_), false) => {
                " (not settled yet: the next check must refuse too)"
            }
            (_, true) => " (settled)",
            _ => "",
        };
        format!("{} {}{why}", self.title, self.standing.describe())
    }
}

/// One check of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// How far into the run the analysed data reach.
    pub at: Nanos,
    /// Per thread.
    pub threads: Vec<ThreadStanding>,
}

impl Check {
    /// Whether every thread is settled: measuring on is pointless.
    pub fn settled(&self) -> bool {
        !self.threads.is_empty() && self.threads.iter().all(|t| t.settled)
    }
}

/// The checks of one run: when the next is due, what each found, which one settled it.
#[derive(Debug, Clone)]
pub struct Checks {
    /// The rule.
    pub run: UntilTailRun,
    next: Nanos,
    /// The checks made, in order.
    pub made: Vec<Check>,
    /// The check (1-based) that found every thread settled.
    pub settled_by: Option<usize>,
}

impl Checks {
    /// No check made yet; the first is due after `run.first_check`.
    pub fn new(run: UntilTailRun) -> Checks {
        Checks {
            run,
            next: run.first_check,
            made: Vec::new(),
            settled_by: None,
        }
    }

    /// Whether a check is due `elapsed` into the run: at the first check's time, then each
    /// time the run has doubled; none at or after `max_duration` (the run ends there by
    /// itself, and the whole run is analysed) nor once settled.
    pub fn due(&self, elapsed: Nanos) -> bool {
        self.settled_by.is_none() && elapsed >= self.next && self.next < self.run.rule.max_duration
    }

    /// When the next check is due (`None`: no further check before `max_duration`).
    pub fn next(&self) -> Option<Nanos> {
        (self.settled_by.is_none() && self.next < self.run.rule.max_duration).then_some(self.next)
    }

    /// Records `c`, the check of the data up to `c.at` (each thread settled or not after the
    /// check before), and schedules the next at twice that; returns whether the run is
    /// settled (to be stopped).
    pub fn add(&mut self, mut c: Check) -> bool {
        self.skip(c.at);
        let before = self.made.last().map_or(&[][..], |b| &b.threads[..]);
        for t in &mut c.threads {
            let earlier = before.iter().find(|b| b.thread == t.thread);
            t.settled = t.standing.settles(earlier.map(|b| &b.standing));
        }
        let settled = c.settled();
        self.made.push(c);
        if settled {
            self.settled_by = Some(self.made.len());
        }
        settled
    }

    /// A check begun `at` into the run that could not be made (the store could not be read):
    /// the next one as if it had been.
    pub fn skip(&mut self, at: Nanos) {
        self.next = Nanos(at.0.saturating_mul(2)).max(Nanos(self.next.0 + 1));
    }
}

/// A run's outcome from the analysis of the whole recorded run: `narrow` when every thread
/// is, `refused` when some thread's estimate is refused, `wide` otherwise (some interval is
/// still wider than wanted, or there is no estimate yet for want of data).
pub fn outcome(whole: &[ThreadStanding]) -> &'static str {
    let all = |w: &str| whole.iter().all(|t| t.standing.word() == w);
    if !whole.is_empty() && all("narrow") {
        "narrow"
    } else if whole.iter().any(|t| t.standing.word() == "refused") {
        "refused"
    } else {
        "wide"
    }
}

/// `25s`, `1m 40s`: a time into a run.
fn when(n: Nanos) -> String {
    super::progress::human(Duration::from_nanos(n.0))
}

/// One indented line per thread: `      CPU 0 narrow: 71.3 µs [64.0 µs .. 77.0 µs], …`, said
/// of a check (whether it settled each thread) or of the whole run.
fn threads_text(threads: &[ThreadStanding], check: bool) -> String {
    let mut s = String::new();
    for t in threads {
        if check {
            let _ = write!(s, "\n      {}", t.text());
        } else {
            let _ = write!(s, "\n      {} {}", t.title, t.standing.describe());
        }
    }
    s
}

/// `p 1e-9, within 10 %`: the rule's target.
fn target(rule: &UntilTail) -> String {
    format!(
        "p {:e}, upper bound within {} % of the estimate",
        rule.probability,
        percent(rule.precision)
    )
}

/// What a check said after the last one, with a line per thread: `tail check 2 at 50s (p
/// 1e-9, …): next check at 1m 40s`.
pub fn check_line(c: &Checks) -> String {
    let Some(last) = c.made.last() else {
        return String::new();
    };
    let rule = &c.run.rule;
    let then = match (c.settled_by, c.next()) {
        (Some(_), _) => format!("{}: the run stops", settled_text(last)),
        (None, Some(n)) => format!("next check at {}", when(n)),
        (None, None) => format!(
            "no further check: the run ends at its max_duration {}",
            when(rule.max_duration)
        ),
    };
    format!(
        "tail check {} at {} ({}): {then}{}",
        c.made.len(),
        when(last.at),
        target(rule),
        threads_text(&last.threads, true)
    )
}

/// `every thread narrow`, `every thread refused`, `every thread narrow or refused`.
fn settled_text(c: &Check) -> &'static str {
    let all = |w: &str| c.threads.iter().all(|t| t.standing.word() == w);
    if all("narrow") {
        "every thread narrow"
    } else if all("refused") {
        "every thread refused"
    } else {
        "every thread narrow or refused"
    }
}

/// Why measuring ended: `check 3 at 1m 40s: every thread narrow`, `max_duration 2h
/// reached`, `interrupted after 2 check(s)`.
pub fn stop_text(c: &Checks, interrupted: bool) -> String {
    match c.settled_by {
        _ if interrupted => format!("interrupted after {} check(s)", c.made.len()),
        Some(k) => format!(
            "check {k} at {}: {}",
            when(c.made[k - 1].at),
            settled_text(&c.made[k - 1])
        ),
        None => format!("max_duration {} reached", when(c.run.rule.max_duration)),
    }
}

/// The run's last line and a line per thread: `until_tail NARROW (check 3 at 1m 40s: every
/// thread narrow; p 1e-9, …); run 12 as rtscope tail analyses it:`.
pub fn final_line(c: &Checks, id: i64, whole: &[ThreadStanding], interrupted: bool) -> String {
    if interrupted {
        return format!(
            "until_tail: interrupted after {} check(s); not analysed (--resume measures the run again)",
            c.made.len()
        );
    }
    format!(
        "until_tail {} ({}; {}); run {id} as `rtscope tail {id} -p {:e}` analyses it:{}",
        outcome(whole).to_uppercase(),
        stop_text(c, false),
        target(&c.run.rule),
        c.run.rule.probability,
        threads_text(whole, false)
    )
}

/// The facts recorded in the run's environment: the rule, why measuring ended, every check
/// and each thread's standing on the whole run.
pub fn facts(c: &Checks, whole: &[ThreadStanding], interrupted: bool) -> Vec<(String, String)> {
    let key = |k: &str| format!("rtscope.{TAG}.{k}");
    let mut checks = String::new();
    for (i, k) in c.made.iter().enumerate() {
        let each: Vec<String> = k
            .threads
            .iter()
            .map(|t| format!("{} {}", t.title, t.standing.word()))
            .collect();
        let sep = if i == 0 { "" } else { "; " };
        let _ = write!(
            checks,
            "{sep}{} at {}: {}",
            i + 1,
            when(k.at),
            each.join(", ")
        );
    }
    let mut v = vec![
        (
            key("rule"),
            format!(
                "{},first_check={}",
                c.run.rule.text(),
                rtscope_core::text::short(c.run.first_check)
            ),
        ),
        (key("stop"), stop_text(c, interrupted)),
        (
            key("checks"),
            if checks.is_empty() {
                "none".into()
            } else {
                checks
            },
        ),
    ];
    for t in whole {
        v.push((
            key(&format!("thread.{}", t.thread)),
            format!("{} {}", t.title, t.standing.describe()),
        ));
    }
    v
}
