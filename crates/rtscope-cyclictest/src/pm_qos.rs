//! The PM QoS request of the drop-in: like cyclictest, `rtscope cyclictest` holds
//! `/dev/cpu_dma_latency` at 0 µs for the whole run (so a "drop-in" baseline is measured in
//! the same condition), `--latency=N` at N, and not at all with `--default-system` or
//! `--laptop`. The request is an open file descriptor: the kernel drops it when the run's
//! [`SystemSettings`] are dropped, or when the process dies in any way.
//!
//! `rtscope measure` keeps its own default: no request unless `--latency` is given.

use super::args::CtOptions;
use rtscope_session::{plan::RunPlan, RunError, SystemSettings};

/// What the drop-in does with `/dev/cpu_dma_latency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaRequest {
    /// Hold it at `us` µs: 0 by default, `--latency=N` when `explicit`.
    Hold {
        /// The value, µs.
        us: i32,
        /// Whether `--latency` asked for it (a failure is then an error, not a warning).
        explicit: bool,
    },
    /// `--laptop`: leave it alone (checked first, as cyclictest does).
    Laptop,
    /// `--default-system`: leave it alone (it wins over `--latency`, as in cyclictest).
    DefaultSystem,
}

impl DmaRequest {
    /// The request for options `o`.
    pub fn of(o: &CtOptions) -> DmaRequest {
        if o.laptop {
            DmaRequest::Laptop
        } else if o.default_system {
            DmaRequest::DefaultSystem
        } else {
            DmaRequest::Hold {
                us: o.latency.unwrap_or(0),
                explicit: o.latency.is_some(),
            }
        }
    }

    /// The value to hold, µs.
    pub fn latency_us(self) -> Option<i32> {
        match self {
            DmaRequest::Hold { us, .. } => Some(us),
            DmaRequest::Laptop | DmaRequest::DefaultSystem => None,
        }
    }

    /// cyclictest's stderr line when it leaves the setting alone.
    pub fn notice(self) -> Option<&'static str> {
        match self {
            DmaRequest::Hold { .. } => None,
            DmaRequest::Laptop => Some("WARN: not setting cpu_dma_latency to save battery power"),
            DmaRequest::DefaultSystem => Some("WARN: not setting cpu_dma_latency from cyclictest"),
        }
    }
}

/// Applies `plan`'s settings. A default request that cannot be held (no such file, no
/// permission) is a warning, as in cyclictest, and the plan then records no request; one
/// asked for with `--latency` is an error.
pub fn apply(req: DmaRequest, plan: &mut RunPlan) -> Result<SystemSettings, RunError> {
    match SystemSettings::apply(plan) {
        Ok(s) => Ok(s),
        Err(e)
            if req
                == (DmaRequest::Hold {
                    us: 0,
                    explicit: false,
                }) =>
        {
            rtscope_common::error::warn(&format!(
                "rtscope: warning: {e}: /dev/cpu_dma_latency is not held at 0us as cyclictest \
                 holds it, so deeper idle states stay allowed during this run"
            ));
            plan.latency = None;
            Ok(SystemSettings::default())
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::args::parse;
    use super::*;

    fn req(v: &str) -> DmaRequest {
        DmaRequest::of(&parse(&v.split_whitespace().map(String::from).collect::<Vec<_>>()).unwrap())
    }

    #[test]
    fn zero_is_held_unless_default_system_or_laptop() {
        let zero = DmaRequest::Hold {
            us: 0,
            explicit: false,
        };
        assert_eq!(req("-q"), zero);
        assert_eq!(req("-q").latency_us(), Some(0));
        assert_eq!(req("-q").notice(), None);
        let five = req("--latency=5");
        assert_eq!(
            five,
            DmaRequest::Hold {
                us: 5,
                explicit: true
            }
        );
        assert_eq!(req("--default-system").latency_us(), None);
        assert_eq!(
            req("--default-system --latency=5"),
            DmaRequest::DefaultSystem
        );
        assert_eq!(
            req("--default-system").notice(),
            Some("WARN: not setting cpu_dma_latency from cyclictest")
        );
        assert_eq!(req("--laptop --default-system"), DmaRequest::Laptop);
        assert_eq!(req("--laptop").latency_us(), None);
    }
}
