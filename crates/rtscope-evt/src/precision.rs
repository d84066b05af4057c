//! Where one analysis stands against a wanted precision at one probability: the question a
//! campaign's `until_tail` asks after each step of a run (docs/worst-case.md, "Measuring until
//! the interval is narrow enough").
//!
//! Narrow means what `rtscope tail --precision` calls "already that precise": the upper
//! bound is at most `1 + precision` times the estimate ([`crate::longer_for`] ≤ 1). Of the
//! refusals only "too few exceedances" is cured by measuring longer; the others (a failed test,
//! no stable threshold) say the samples do not fit the model, and more of the same samples
//! only make the tests stricter.
//!
//! One look never settles a question ([`Standing::settles`]): a narrow interval from a few
//! thousand wake-ups can come from a shape that later data change (a heavy tail's first
//! 5,000 wake-ups fitted with ξ̂ < 0 and read as exponential: 6 % wide, then 33 % at 10,000),
//! and a sample that fits the model is refused by chance about 6 % of the time.

use crate::units::us;
use crate::{Analysis, Level, Refusal};

/// An analysis at one probability against a precision.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// The upper bound is within the precision of the estimate.
    Narrow(Level),
    /// Accepted, but the upper bound is further from the estimate, or unbounded.
    Wide(Level),
    /// No estimate yet for want of data: too few exceedances (the refusal), or the
    /// probability still lies within the data (`None`: no level that far out yet).
    Short(Option<Refusal>),
    /// Refused for a reason measuring longer does not remove.
    Refused(Vec<Refusal>),
}

impl Standing {
    /// Where `a` stands at `probability` against `precision` (0.1: within 10 %).
    pub fn of(a: &Analysis, probability: f64, precision: f64) -> Standing {
        if let Some(r) = a
            .refusals
            .iter()
            .find(|r| matches!(r, Refusal::TooFewExceedances { .. }))
        {
            return Standing::Short(Some(r.clone()));
        }
        if !a.accepted() {
            return Standing::Refused(a.refusals.clone());
        }
        let level = a
            .levels
            .iter()
            .find(|l| (l.probability / probability - 1.0).abs() < 1e-9);
        match level {
            None => Standing::Short(None),
            Some(l) if within(l, precision) => Standing::Narrow(l.clone()),
            Some(l) => Standing::Wide(l.clone()),
        }
    }

    /// Whether this standing, following `earlier` (the same thread's at the check before),
    /// makes measuring longer pointless: refused at both checks, or narrow now with the
    /// estimate inside the earlier check's interval (the estimate has stopped moving by more
    /// than its uncertainty). Never without an earlier check.
    pub fn settles(&self, earlier: Option<&Standing>) -> bool {
        match (earlier, self) {
            (Some(Standing::Refused(_)), Standing::Refused(_)) => true,
            (Some(Standing::Narrow(e) | Standing::Wide(e)), Standing::Narrow(now)) => {
                e.lower_ns <= now.estimate_ns && e.upper_ns.is_none_or(|u| now.estimate_ns <= u)
            }
            _ => false,
        }
    }

    /// One word: `narrow`, `wide`, `short` or `refused`.
    pub fn word(&self) -> &'static str {
        match self {
            Standing::Narrow(_) => "narrow",
            Standing::Wide(_) => "wide",
            Standing::Short(_) => "short",
            Standing::Refused(_) => "refused",
        }
    }

    /// For people: `narrow: 71.3 µs [64.0 µs .. 77.0 µs], upper bound +8.0 %`,
    /// `refused: failed: …`.
    pub fn describe(&self) -> String {
        match self {
            Standing::Narrow(l) | Standing::Wide(l) => {
                let over = match l.upper_ns {
                    Some(u) => format!("upper bound +{:.1} %", (u / l.estimate_ns - 1.0) * 100.0),
                    None => "upper bound unbounded".into(),
                };
                format!(
                    "{}: {} {}, {over}",
                    self.word(),
                    us(l.estimate_ns),
                    interval(l)
                )
            }
            Standing::Short(Some(r)) => format!("no estimate yet: {r}"),
            Standing::Short(None) => {
                "no estimate yet: the probability still lies within the measured data".into()
            }
            Standing::Refused(rs) => {
                let each: Vec<String> = rs.iter().map(ToString::to_string).collect();
                format!("refused: {}", each.join("; "))
            }
        }
    }
}

/// `[64.0 µs .. 77.0 µs]`, as `rtscope tail` prints a level's interval.
pub fn interval(l: &Level) -> String {
    let upper = l.upper_ns.map_or("unbounded".to_string(), us);
    format!("[{} .. {upper}]", us(l.lower_ns))
}

/// Whether `l`'s upper bound is at most `1 + precision` times its estimate.
fn within(l: &Level, precision: f64) -> bool {
    l.upper_ns
        .is_some_and(|u| u <= l.estimate_ns * (1.0 + precision))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpd::Gpd;
    use crate::{analyse, Options, Tail};

    fn analysis(tail: &Tail, p: f64) -> Analysis {
        let o = Options {
            probabilities: vec![p],
            ..Options::default()
        };
        analyse(tail, &o, false)
    }

    fn standing(tail: &Tail, p: f64, precision: f64) -> Standing {
        Standing::of(&analysis(tail, p), p, precision)
    }

    #[test]
    fn a_known_tail_is_narrow_or_wide_by_the_precision_asked_for() {
        // An exponential tail (ξ = 0) of 200,000 wake-ups, 1e-6 a factor 5 beyond the run.
        let g = Gpd {
            sigma: 500.0,
            xi: 0.0,
        };
        let a = analysis(&Tail::with_gpd_tail(5_000.0, g, 200_000, 3), 1e-6);
        let loose = Standing::of(&a, 1e-6, 0.5);
        let Standing::Narrow(l) = &loose else {
            panic!("{loose:?}")
        };
        let upper = l.upper_ns.unwrap();
        assert!(upper <= 1.5 * l.estimate_ns);
        assert!(
            loose.describe().contains(&interval(l)),
            "{}",
            loose.describe()
        );
        // The same interval is wide against a precision it does not reach.
        let tight = Standing::of(&a, 1e-6, (upper / l.estimate_ns - 1.0) / 2.0);
        assert_eq!(tight, Standing::Wide(l.clone()));
        // One look settles nothing; a narrow look after one whose interval holds its
        // estimate does, a wide one does not.
        assert!(!loose.settles(None));
        assert!(loose.settles(Some(&tight)) && loose.settles(Some(&loose)));
        assert!(!tight.settles(Some(&loose)));
    }

    /// A level of `estimate` with the interval `[lower, upper]` (µs).
    fn level(estimate: f64, lower: f64, upper: Option<f64>) -> Level {
        Level {
            probability: 1e-9,
            once_per_s: None,
            estimate_ns: estimate * 1e3,
            lower_ns: lower * 1e3,
            upper_ns: upper.map(|u| u * 1e3),
            extrapolation: 1e4,
            longer: None,
        }
    }

    #[test]
    fn a_narrow_estimate_settles_only_inside_the_interval_of_the_check_before() {
        let now = Standing::Narrow(level(70.0, 66.0, Some(75.0)));
        let wide_around = Standing::Wide(level(72.0, 60.0, Some(95.0)));
        let unbounded = Standing::Wide(level(72.0, 60.0, None));
        let below = Standing::Wide(level(50.0, 45.0, Some(65.0)));
        assert!(now.settles(Some(&wide_around)) && now.settles(Some(&unbounded)));
        // The estimate jumped past the earlier interval: the tail is still changing.
        assert!(!now.settles(Some(&below)));
        let refused = Standing::Refused(vec![Refusal::NoStableThreshold]);
        assert!(!now.settles(Some(&refused)) && !now.settles(Some(&Standing::Short(None))));
    }

    #[test]
    fn too_few_exceedances_and_a_probability_within_the_data_are_short() {
        let g = Gpd {
            sigma: 500.0,
            xi: 0.0,
        };
        let short = standing(&Tail::with_gpd_tail(5_000.0, g, 900, 1), 1e-9, 0.1);
        assert!(matches!(
            short,
            Standing::Short(Some(Refusal::TooFewExceedances { .. }))
        ));
        assert!(!short.settles(Some(&short)));
        // Every other wake-up is no extrapolation (the threshold is exceeded more often than
        // that): no level, measure on.
        let within = standing(&Tail::with_gpd_tail(5_000.0, g, 20_000, 1), 0.5, 0.1);
        assert_eq!(within, Standing::Short(None));
        assert!(within.describe().contains("within the measured data"));
    }

    #[test]
    fn a_refusal_other_than_too_few_exceedances_settles_when_the_check_before_refused_too() {
        let a = Analysis::refused(10, 1.0, Refusal::NoStableThreshold, &Options::default());
        let s = Standing::of(&a, 1e-9, 0.1);
        assert_eq!(s, Standing::Refused(vec![Refusal::NoStableThreshold]));
        assert!(!s.settles(None) && s.settles(Some(&s)));
        let wide = Standing::Wide(level(72.0, 60.0, Some(95.0)));
        assert!(!s.settles(Some(&wide)));
        assert!(s.describe().starts_with("refused: no stable threshold"));
    }
}
