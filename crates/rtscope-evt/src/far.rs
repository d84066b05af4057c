//! The rules that keep a number off the page: one decides whether a run's tail allows a level
//! beyond the data at all ([`not_estimable`]), the other whether a fit was tested for
//! stationarity ([`untested`]). `rtscope tail`, `compare --tail-level`, the report and the
//! gates all take their answer from [`crate::analyse`], which calls these.
//!
//! A heavy tail (fitted shape `ξ > 0.5`, [`MAX_XI`]) or one whose shape moves with the
//! threshold extrapolates without bound: on held-out runs of a loaded VM (issue 50), shapes of
//! 0.5–1.7 printed 1.4 s at 1e-9 and 665 s "once in ten years" where the observed maximum was
//! 120 ms. Such a level is not printed, not even with `--unreliable`: the run says only that
//! its tail is not one stable distribution, and what it saw.

use crate::threshold::Candidate;
use crate::{Diagnostic, Model, Outcome, Refusal};

/// The largest fitted shape from which a level beyond the data is estimated. Above it the
/// variance of the excesses is infinite (`ξ ≥ 0.5`) and the extrapolation is dominated by the
/// shape's uncertainty.
pub const MAX_XI: f64 = 0.5;

/// Why a far-tail level cannot be estimated from a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Why {
    /// The fitted shape is above [`MAX_XI`].
    Heavy,
    /// The shape estimate moves with the threshold (no stable threshold).
    Unstable,
}

/// The range of the fitted shapes across the candidate thresholds (`None`: none fitted).
pub fn xi_range(stability: &[Candidate]) -> Option<(f64, f64)> {
    stability
        .iter()
        .filter_map(|c| c.fit.map(|g| g.xi))
        .fold(None, |r, xi| match r {
            None => Some((xi, xi)),
            Some((lo, hi)) => Some((f64::min(lo, xi), f64::max(hi, xi))),
        })
}

/// Whether a level beyond the data can be estimated from this run: `None` when it can, else
/// the refusal [`Refusal::NotEstimable`] with the observed maximum and the shapes seen.
/// `stable` is whether the threshold rule found a stable threshold; `model` the fit used.
pub fn not_estimable(
    stability: &[Candidate],
    stable: bool,
    model: Option<&Model>,
    observed_max_ns: f64,
) -> Option<Refusal> {
    let why = if !stable {
        Why::Unstable
    } else if model.is_some_and(|m| m.gpd.xi > MAX_XI) {
        Why::Heavy
    } else {
        return None;
    };
    let (xi_low, xi_high) = xi_range(stability).unwrap_or((f64::NAN, f64::NAN));
    Some(Refusal::NotEstimable {
        why,
        observed_max_ns,
        xi: model.map(|m| m.gpd.xi),
        xi_low,
        xi_high,
    })
}

/// Whether some diagnostic could not run (a histogram keeps no time order): the refusal
/// [`Refusal::NotTested`] naming how many, `None` when every test ran.
pub fn untested(diagnostics: &[Diagnostic]) -> Option<Refusal> {
    let tests = diagnostics
        .iter()
        .filter(|d| matches!(d.outcome, Outcome::Untested { .. }))
        .count();
    (tests > 0).then_some(Refusal::NotTested { tests })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpd::Gpd;
    use crate::Shape;

    fn candidate(xi: Option<f64>) -> Candidate {
        Candidate {
            threshold: 1.0,
            exceedances: 200,
            clusters: 150,
            fit: xi.map(|xi| Gpd { sigma: 1.0, xi }),
            xi_se: xi.map(|_| 0.1),
            sigma_star: None,
        }
    }

    fn model(xi: f64) -> Model {
        Model {
            threshold_ns: 1.0,
            exceedances: 200,
            clusters: 150,
            extremal_index: 0.75,
            run_length: 3.0,
            wakeups_per_episode: 1.33,
            cluster_rate: 1e-3,
            gpd: Gpd { sigma: 1.0, xi },
            shape: Shape::Gpd,
            lr_exponential: 0.0,
            endpoint_ns: None,
        }
    }

    #[test]
    fn a_heavy_or_unstable_tail_is_not_estimable_and_says_what_was_seen() {
        let table = [candidate(None), candidate(Some(0.7)), candidate(Some(1.4))];
        assert_eq!(xi_range(&table), Some((0.7, 1.4)));
        assert_eq!(xi_range(&[candidate(None)]), None);
        // A stable threshold with a moderate shape: estimable.
        assert_eq!(not_estimable(&table, true, Some(&model(0.5)), 9e6), None);
        assert_eq!(not_estimable(&table, true, Some(&model(-0.2)), 9e6), None);
        // Heavy: refused with the numbers.
        let r = not_estimable(&table, true, Some(&model(0.7)), 120e6).unwrap();
        assert_eq!(
            r,
            Refusal::NotEstimable {
                why: Why::Heavy,
                observed_max_ns: 120e6,
                xi: Some(0.7),
                xi_low: 0.7,
                xi_high: 1.4
            }
        );
        let said = r.to_string();
        assert!(said.starts_with("not estimable from this run"), "{said}");
        assert!(said.contains("observed max 120.0 ms"), "{said}");
        assert!(
            said.contains("ξ +0.70 .. +1.40 across thresholds"),
            "{said}"
        );
        // Unstable, with or without a fit.
        let r = not_estimable(&table, false, None, 1e5).unwrap();
        assert!(matches!(
            r,
            Refusal::NotEstimable {
                why: Why::Unstable,
                xi: None,
                ..
            }
        ));
        assert!(r.to_string().contains("changes with the threshold"), "{r}");
    }

    #[test]
    fn untested_diagnostics_are_counted() {
        let d = |outcome| Diagnostic {
            test: crate::Test::Independence,
            outcome,
        };
        let pass = d(Outcome::Pass {
            statistic: 0.0,
            p: 0.5,
        });
        assert_eq!(untested(std::slice::from_ref(&pass)), None);
        let not = d(Outcome::Untested { why: "x".into() });
        assert_eq!(
            untested(&[pass, not.clone(), not]),
            Some(Refusal::NotTested { tests: 2 })
        );
        let said = Refusal::NotTested { tests: 4 }.to_string();
        assert!(
            said.starts_with("not tested for stationarity — no estimate"),
            "{said}"
        );
        assert!(said.contains("--raw"), "{said}");
    }
}
