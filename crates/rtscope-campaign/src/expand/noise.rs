//! A noise scenario's keys (`workload = "noise"`, `threshold`, `runtime`, `period`, and its
//! `limits` in noise's words: `max_single=20us`, `available=99.9%`), lowered into the plan's
//! workload; the plan checks them with the scenario's other settings, naming the keys.

use crate::file::{DurText, RawSettings};
use crate::pos::Source;
use rtscope_common::error::UsageError;
use rtscope_session::noise::{NoiseLimit, NoiseLimitError};
use rtscope_session::plan::NoiseSpec;
use toml::Spanned;

/// A noise scenario's workload (`workload = "noise"`) from its own keys; `None` for a timer
/// scenario, whose file must not give noise's keys.
pub(super) fn noise(src: &Source, s: &RawSettings) -> Result<Option<NoiseSpec>, UsageError> {
    let own = [&s.threshold, &s.runtime, &s.period];
    match s.workload.as_ref().map(|w| (w.get_ref().as_str(), w.span())) {
        None | Some(("timer", _)) => {
            if let Some(k) = own.iter().find_map(|k| k.as_ref()) {
                return Err(src
                    .error(k.span(), "threshold, runtime and period apply to noise scenarios only")
                    .hint("add workload = \"noise\""));
            }
            Ok(None)
        }
        Some(("noise", span)) => {
            if s.respond.is_some() {
                return Err(src
                    .error(span, "a scenario measures one workload: noise, or respond's events")
                    .hint("write one scenario per workload"));
            }
            let dur = |d: &Option<Spanned<DurText>>, key: &str| {
                d.as_ref()
                    .map(|d| super::duration(src, d, key, "us"))
                    .transpose()
            };
            Ok(Some(NoiseSpec {
                threshold: dur(&s.threshold, "threshold")?,
                runtime: dur(&s.runtime, "runtime")?,
                period: dur(&s.period, "period")?,
                ..NoiseSpec::default()
            }))
        }
        Some((other, span)) => Err(src
            .error(span, format!("unknown workload '{other}'"))
            .hint("use \"timer\" (the default) or \"noise\"; a respond scenario sets respond = \"eventfd\"")),
    }
}

/// One of a noise scenario's `limits`.
pub(super) fn limit(src: &Source, l: &Spanned<String>) -> Result<NoiseLimit, UsageError> {
    rtscope_session::noise::parse_limit(l.get_ref()).map_err(|e: NoiseLimitError| {
        src.error(
            l.span(),
            format!("invalid limit '{}': {}", l.get_ref(), e.why),
        )
        .hint(NoiseLimitError::HINT)
    })
}
