//! Refusals in words a user acts on (issue 51): each names the assumption that failed in plain
//! words, with the test's p-value in parentheses, and the fix — measure with `--raw`, measure
//! about N minutes more (computed from the run's length), isolate the CPU, measure under one
//! condition. [`hints`] merges the fixes of many threads into one line each (the CPUs of every
//! "isolate" listed once).

use crate::{Analysis, Outcome, Refusal, Test};

/// Whose analysis: the run and the thread, for the heading and the fixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Who {
    /// The run's id as the user names it.
    pub run: String,
    /// The thread's number in the run.
    pub thread: u32,
    /// Its CPU, when pinned.
    pub cpu: Option<u32>,
    /// Whether other threads of the run share its CPU (M:N): then it is named by thread.
    pub shared_cpu: bool,
}

impl Who {
    /// `run 12, CPU 2`; `run 12, thread 3 (CPU 1)` when threads share the CPU; `run 12,
    /// thread 3` unpinned.
    pub fn title(&self) -> String {
        match (self.cpu, self.shared_cpu) {
            (Some(c), false) => format!("run {}, CPU {c}", self.run),
            (Some(c), true) => format!("run {}, thread {} (CPU {c})", self.run, self.thread),
            (None, _) => format!("run {}, thread {}", self.run, self.thread),
        }
    }
}

/// What to do about a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fix {
    /// Measure with `--raw`: the wake-ups in time order, so the tests can run.
    Raw,
    /// Measure longer: about `minutes` more (`None`: the run's length is unknown), `times` as
    /// long in all.
    Longer {
        /// Minutes more.
        minutes: Option<u64>,
        /// As long in all, in tenths.
        tenths: u64,
    },
    /// Keep other work off the CPU (`None`: not pinned).
    Isolate {
        /// The CPU.
        cpu: Option<u32>,
    },
    /// Measure under one condition; `answers`: the run has the answers that do not assume one
    /// (raw samples in time order), which the fix then names.
    OneCondition {
        /// Whether the segment, envelope and block-maxima answers exist for this run.
        answers: bool,
    },
    /// A histogram that holds the tail.
    LargerHistogram,
    /// The tail mixes sources of latency: find them and measure one condition (more of the same
    /// data does not make a mixture one distribution).
    Sources,
    /// Finer values: the largest latencies took too few distinct values to have a tail.
    Finer,
}

impl Fix {
    /// The fix for people.
    pub fn text(self) -> String {
        match self {
            Fix::Raw => "measure with `rtscope measure --raw` (every wake-up in time order, so the stationarity tests can run)".to_string(),
            Fix::Longer { minutes: Some(m), tenths } => format!(
                "measure about {m} minute{} more ({:.1} × this run's length in all)",
                if m == 1 { "" } else { "s" },
                tenths as f64 / 10.0
            ),
            Fix::Longer { minutes: None, tenths } => {
                format!("measure {:.1} × as long at least", tenths as f64 / 10.0)
            }
            Fix::Isolate { cpu } => format!(
                "isolate {} from other work (isolcpus= and nohz_full= on the kernel command line, interrupts moved away; `rtscope check` lists what to change), or find the disturbance with `rtscope measure --explain`",
                cpu.map_or("the measured CPU".to_string(), |c| format!("CPU {c}"))
            ),
            Fix::OneCondition { answers: true } => "measure under one condition (nothing started or stopped during the run), or read the segment, envelope and block-maxima answers below, which do not assume one, where they give a level".to_string(),
            Fix::OneCondition { answers: false } => "measure under one condition (nothing started or stopped during the run), with `rtscope measure --raw` for the answers that do not assume one (segments, worst-segment envelope, block maxima)".to_string(),
            Fix::LargerHistogram => "a larger cyclictest -h, or rtscope measure --raw".to_string(),
            Fix::Sources => "the largest latencies mix several sources: find them with `rtscope measure --explain`, isolate the CPU or measure under one condition (measuring longer does not make a mixture one tail)".to_string(),
            Fix::Finer => "nothing beyond the observed maximum can be estimated from these values: the observed maximum is the answer (rtscope measure --raw keeps every latency to the nanosecond, if the bins hid a tail)".to_string(),
        }
    }
}

/// The fixes of many refusals, each once: the longest "measure longer", every CPU to isolate in
/// one line.
pub fn hints(fixes: &[Fix]) -> Vec<String> {
    let mut fixes = fixes.to_vec();
    fixes.sort();
    fixes.dedup();
    let longest = fixes
        .iter()
        .filter(|f| matches!(f, Fix::Longer { .. }))
        .max_by_key(|f| match f {
            Fix::Longer { minutes, tenths } => (minutes.unwrap_or(0), *tenths),
            _ => (0, 0),
        })
        .copied();
    let cpus: Vec<String> = fixes
        .iter()
        .filter_map(|f| match f {
            Fix::Isolate { cpu: Some(c) } => Some(c.to_string()),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for f in &fixes {
        match f {
            Fix::Longer { .. } if Some(*f) != longest => {}
            Fix::Isolate { cpu: Some(c) } => {
                if cpus.first() == Some(&c.to_string()) {
                    let many = cpus.len() > 1;
                    let t = f.text();
                    let named = format!("CPU{} {}", if many { "s" } else { "" }, cpus.join(", "));
                    out.push(t.replacen(&format!("CPU {c}"), &named, 1));
                }
            }
            f => out.push(f.text()),
        }
    }
    out
}

/// The run's length, s (`None`: its rate unknown).
fn seconds(a: &Analysis) -> Option<f64> {
    a.rate_hz
        .filter(|&h| h > 0.0)
        .map(|h| a.observations as f64 / h)
}

/// Measure `times` as long in all.
fn longer(a: &Analysis, times: f64) -> Fix {
    Fix::Longer {
        minutes: seconds(a).map(|s| (s * (times - 1.0) / 60.0).ceil().max(1.0) as u64),
        tenths: (times * 10.0).ceil() as u64,
    }
}

fn p_of(a: &Analysis, test: Test) -> String {
    a.diagnostics
        .iter()
        .find(|d| d.test == test)
        .and_then(|d| match d.outcome {
            Outcome::Fail { p, .. } | Outcome::Pass { p, .. } => Some(format!("p = {p:.3}")),
            Outcome::Untested { .. } => None,
        })
        .unwrap_or_default()
}

/// Whether a refusal is of one stationary tail for the whole run (the tests of time order or
/// a shape that moves with the threshold): the regimes' answers stand where it stands.
pub fn of_stationarity(r: &Refusal) -> bool {
    matches!(
        r,
        Refusal::NoStableThreshold
            | Refusal::Failed {
                test: Test::Independence | Test::Arrivals | Test::SameTail | Test::SameRate
            }
    )
}

/// The assumption that failed, in plain words, and its fix, for the thread on `cpu`.
pub fn refusal(r: &Refusal, a: &Analysis, cpu: Option<u32>) -> (String, Fix) {
    let isolate = Fix::Isolate { cpu };
    let one = Fix::OneCondition {
        answers: a.regimes.is_some(),
    };
    match r {
        Refusal::TooFewExceedances { have, need } => (
            format!("too few large latencies to fit a tail: {have} episodes above the lowest threshold tried, {need} needed"),
            longer(a, if *have == 0 { 10.0 } else { (*need as f64 / *have as f64).max(1.1) }),
        ),
        Refusal::Failed { test: t @ (Test::FitKs | Test::FitAd) } => (
            format!(
                "the largest latencies do not follow the fitted tail ({}, {})",
                if *t == Test::FitKs { "Kolmogorov-Smirnov" } else { "Anderson-Darling" },
                p_of(a, *t)
            ),
            Fix::Sources,
        ),
        Refusal::Failed { test: Test::Independence } => (
            format!("large latencies come in bursts: one episode's size predicts the next, a disturbance lasting longer than an episode (Ljung-Box, {})", p_of(a, Test::Independence)),
            isolate,
        ),
        Refusal::Failed { test: Test::Arrivals } => (
            format!("large latencies come on a schedule, not at random: the episodes (bursts counted once, extremal index {}) start periodically, so something periodic (a timer, a housekeeping thread, an interrupt) disturbs the CPU (gap test, {})", a.model.as_ref().map_or("-".to_string(), |m| format!("{:.2}", m.extremal_index)), p_of(a, Test::Arrivals)),
            isolate,
        ),
        Refusal::Failed { test: Test::SameTail } => (
            format!("the largest latencies of the run's first and second halves differ: conditions changed during the run (two-sample KS, {})", p_of(a, Test::SameTail)),
            one,
        ),
        Refusal::Failed { test: Test::SameRate } => (same_rate(a), one),
        Refusal::NoStableThreshold => (
            "the largest latencies do not settle into one tail: its shape keeps changing with the threshold".to_string(),
            one,
        ),
        Refusal::NotEstimable { why, .. } => (
            r.to_string(),
            match why {
                crate::far::Why::Heavy => isolate,
                crate::far::Why::Unstable => one,
            },
        ),
        Refusal::NotTested { tests } => (
            format!("not tested for stationarity — no estimate: {tests} tests need the wake-ups in time order, which a histogram does not keep, so nothing shows the tail stayed the same while the run ran (--assume-stationary prints the estimate labelled UNTESTED, and no --limit passes on it)"),
            Fix::Raw,
        ),
        Refusal::BeyondHistogram { .. } => (r.to_string(), Fix::LargerHistogram),
        Refusal::NoDistribution => (r.to_string(), Fix::Raw),
        Refusal::NoTail { .. } => (r.to_string(), Fix::Finer),
    }
}

/// "large latencies came 3.2 × as often in the first half of the run as in the second".
fn same_rate(a: &Analysis) -> String {
    let d = a.diagnostics.iter().find(|d| d.test == Test::SameRate);
    let first = match d.map(|d| &d.outcome) {
        Some(Outcome::Fail { statistic, .. } | Outcome::Pass { statistic, .. }) => *statistic,
        _ => f64::NAN,
    };
    let all = a.model.as_ref().map_or(f64::NAN, |m| m.clusters as f64);
    let second = all - first;
    let p = p_of(a, Test::SameRate);
    if !(first > 0.0 && second > 0.0) {
        return format!("large latencies came in one half of the run only: conditions changed during the run ({p})");
    }
    let (ratio, more, less) = if first >= second {
        (first / second, "first", "second")
    } else {
        (second / first, "second", "first")
    };
    format!("large latencies came {ratio:.1} × as often in the {more} half of the run as in the {less}: conditions changed during the run ({p})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixes_of_many_threads_are_listed_once_each() {
        let fixes = [
            Fix::Isolate { cpu: Some(3) },
            Fix::Isolate { cpu: Some(1) },
            Fix::Isolate { cpu: Some(1) },
            Fix::Raw,
            Fix::Raw,
            Fix::Longer {
                minutes: Some(5),
                tenths: 15,
            },
            Fix::Longer {
                minutes: Some(12),
                tenths: 22,
            },
        ];
        let h = hints(&fixes);
        assert_eq!(h.len(), 3, "{h:?}");
        assert!(h[0].starts_with("measure with `rtscope measure --raw`"));
        assert!(h[1].starts_with("measure about 12 minutes more (2.2 × this run's length"));
        assert!(
            h[2].starts_with("isolate CPUs 1, 3 from other work"),
            "{}",
            h[2]
        );
        let one = hints(&[Fix::Isolate { cpu: Some(2) }]);
        assert!(one[0].starts_with("isolate CPU 2 from"), "{one:?}");
    }

    #[test]
    fn a_refusal_names_the_assumption_the_fix_the_run_and_the_cpu() {
        // A spike every 500th wake-up: clusters on a schedule (the gap test fails).
        let v = crate::diag::periodic_sample(200_000);
        let a = crate::analyse(
            &crate::Tail::ordered(&v, Some(1000.0)),
            &crate::Options::default(),
            false,
        );
        assert!(
            a.refusals.contains(&Refusal::Failed {
                test: Test::Arrivals
            }),
            "{:?}",
            a.refusals
        );
        let who = Who {
            run: "7".into(),
            thread: 1,
            cpu: Some(2),
            shared_cpu: false,
        };
        let text = crate::render::text(&who, &a);
        assert!(text.starts_with("run 7, CPU 2: 200000 wake-ups"), "{text}");
        assert!(
            text.contains("REFUSED: one stationary tail for the whole run"),
            "{text}"
        );
        assert!(
            text.contains("- large latencies come on a schedule, not at random"),
            "{text}"
        );
        assert!(
            text.contains("fix: isolate CPU 2 from other work"),
            "{text}"
        );
        // The statistical question stays in the diagnostics table, not in the refusal.
        let refused = &text[text.find("REFUSED").unwrap()..];
        assert!(!refused.contains("episodes (declustered"), "{text}");
        assert!(render_fixes(&who, &a).contains(&Fix::Isolate { cpu: Some(2) }));
        // Too few: the minutes more computed from the run's length (200 s at 1 kHz).
        let few = Refusal::TooFewExceedances {
            have: 40,
            need: 100,
        };
        let (said, fix) = refusal(&few, &a, Some(2));
        assert!(said.contains("40 episodes above the lowest threshold tried, 100 needed"));
        // 2.5 × 200 s in all: 300 s more.
        assert_eq!(
            fix,
            Fix::Longer {
                minutes: Some(5),
                tenths: 25
            }
        );
        assert_eq!(
            fix.text(),
            "measure about 5 minutes more (2.5 × this run's length in all)"
        );
        // A histogram: measure with --raw.
        let (_, fix) = refusal(&Refusal::NotTested { tests: 4 }, &a, Some(2));
        assert_eq!(fix, Fix::Raw);
    }

    fn render_fixes(who: &Who, a: &Analysis) -> Vec<Fix> {
        crate::render::fixes(who, a)
    }

    #[test]
    fn threads_sharing_a_cpu_are_named_by_thread() {
        let who = |cpu, shared_cpu| Who {
            run: "12".into(),
            thread: 3,
            cpu,
            shared_cpu,
        };
        assert_eq!(who(Some(1), false).title(), "run 12, CPU 1");
        assert_eq!(who(Some(1), true).title(), "run 12, thread 3 (CPU 1)");
        assert_eq!(who(None, false).title(), "run 12, thread 3");
    }
}
