//! The counter the noise loop reads: the vDSO clock, or the CPU's raw counter, calibrated.
//!
//! A gap is the loop's own cost plus what took the CPU away, so the cost of one clock read is
//! the loop's resolution. `clock_gettime` through the vDSO costs 20–60 ns on bare metal (it
//! reads the counter and converts it, and retries when the kernel updates its time data); the
//! raw counter is one instruction: the TSC on x86-64 (`lfence; rdtsc`, the `lfence` keeping the
//! read from running ahead of the loop's previous instructions, as the kernel's
//! `rdtsc_ordered`), CNTVCT_EL0 on arm64 (`isb; mrs`), as rt-tests' oslat reads them.
//!
//! Raw ticks are converted to nanoseconds with a rate **calibrated** on the loop's own CPU
//! against CLOCK_MONOTONIC over the pre-heat (at least [`MIN_CALIBRATION`]); durations use that
//! rate (a fixed-point multiply), and the start of each gap is placed on CLOCK_MONOTONIC through
//! an [`Anchor`] (a counter reading paired with a clock reading) taken before every stretch of
//! the loop, so the gaps' starts stay on the clock the tracer and the rest of rtscope use
//! whatever the rate's error (an error of 10 ppm moves a start by 0.1 µs over a 10 ms stretch).
//!
//! `--counter auto` reads the raw counter only where the kernel itself keeps time with it
//! (clocksource `tsc` with `constant_tsc` and `nonstop_tsc`; `arch_sys_counter` on arm64), the
//! vDSO clock elsewhere; `--counter raw` insists (and is refused where the counter does not
//! tick at a constant rate); `--counter clock` is the vDSO clock.

use crate::sys;
use rtscope_core::Nanos;
use std::path::Path;

/// The shortest span a raw counter is calibrated over: the pre-heat is stretched to it.
pub const MIN_CALIBRATION: Nanos = Nanos::from_ms(100);

/// The counter asked for (`--counter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CounterChoice {
    /// The raw counter where the kernel keeps time with it, else the vDSO clock.
    #[default]
    Auto,
    /// The raw counter, or a refusal naming why not.
    Raw,
    /// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO.
    Clock,
}

/// The counter a run reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterKind {
    /// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO, nanoseconds.
    Clock,
    /// x86-64's time-stamp counter, `lfence; rdtsc`.
    Tsc,
    /// arm64's virtual counter, `isb; mrs cntvct_el0`.
    Cntvct,
}

impl CounterKind {
    /// The counter's name as the JSON and the announcement give it.
    pub fn name(self) -> &'static str {
        match self {
            CounterKind::Clock => "CLOCK_MONOTONIC (vDSO clock_gettime)",
            CounterKind::Tsc => "TSC (lfence; rdtsc), calibrated against CLOCK_MONOTONIC",
            CounterKind::Cntvct => "CNTVCT_EL0 (isb; mrs), calibrated against CLOCK_MONOTONIC",
        }
    }

    /// A short name: `clock`, `tsc`, `cntvct`.
    pub fn short(self) -> &'static str {
        match self {
            CounterKind::Clock => "clock",
            CounterKind::Tsc => "tsc",
            CounterKind::Cntvct => "cntvct",
        }
    }
}

/// Why `--counter raw` was refused: the words after `raw: ` in the usage error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RawRefused {
    /// The raw counter cannot be trusted here ([`CounterProbe::unusable`]'s reason).
    #[error("{0}")]
    Unusable(String),
    /// This architecture has no raw counter rtscope reads.
    #[error("no raw counter")]
    NoRawCounter,
}

/// What the machine says about its raw counter (read from files under a root, so tests can
/// give their own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterProbe {
    /// The raw counter of this architecture, if rtscope can read one.
    pub raw: Option<CounterKind>,
    /// Why the raw counter cannot be trusted to tick at a constant rate (`None`: it can).
    pub unusable: Option<String>,
    /// The kernel's current clocksource.
    pub clocksource: Option<String>,
}

impl CounterProbe {
    /// Reads `/proc/cpuinfo` and the clocksource under `root` for this architecture.
    pub fn read(root: &Path) -> CounterProbe {
        let clocksource = std::fs::read_to_string(
            root.join("sys/devices/system/clocksource/clocksource0/current_clocksource"),
        )
        .ok()
        .map(|s| s.trim().to_string());
        let cpuinfo = std::fs::read_to_string(root.join("proc/cpuinfo")).unwrap_or_default();
        Self::of(native_raw(), &cpuinfo, clocksource)
    }

    /// The probe for a raw counter `raw`, from the text of `/proc/cpuinfo` and the clocksource.
    pub fn of(raw: Option<CounterKind>, cpuinfo: &str, clocksource: Option<String>) -> Self {
        let unusable = match raw {
            None => Some(format!(
                "rtscope reads no raw counter on {}: only x86-64 (TSC) and arm64 (CNTVCT_EL0)",
                std::env::consts::ARCH
            )),
            Some(CounterKind::Tsc) => {
                let flags = cpuinfo
                    .lines()
                    .find(|l| l.starts_with("flags"))
                    .and_then(|l| l.split_once(':'))
                    .map_or("", |(_, f)| f);
                let has = |f: &str| flags.split_whitespace().any(|x| x == f);
                let missing: Vec<&str> = ["constant_tsc", "nonstop_tsc"]
                    .into_iter()
                    .filter(|f| !has(f))
                    .collect();
                (!missing.is_empty()).then(|| {
                    format!(
                        "this CPU's TSC does not tick at a constant rate: /proc/cpuinfo lacks {}",
                        missing.join(" and ")
                    )
                })
            }
            Some(_) => None,
        };
        CounterProbe {
            raw,
            unusable,
            clocksource,
        }
    }

    /// The counter a run reads for `choice`, or why the raw counter was refused.
    pub fn choose(&self, choice: CounterChoice) -> Result<CounterKind, RawRefused> {
        match (choice, self.raw, &self.unusable) {
            (CounterChoice::Clock, _, _) => Ok(CounterKind::Clock),
            (CounterChoice::Raw, Some(raw), None) => Ok(raw),
            (CounterChoice::Raw, _, Some(why)) => Err(RawRefused::Unusable(why.clone())),
            (CounterChoice::Raw, None, None) => Err(RawRefused::NoRawCounter),
            (CounterChoice::Auto, Some(raw), None) if self.kernel_keeps_time_with(raw) => Ok(raw),
            (CounterChoice::Auto, _, _) => Ok(CounterKind::Clock),
        }
    }

    /// Why `--counter auto` chose the vDSO clock (`None` when it chose the raw counter).
    pub fn auto_note(&self) -> Option<String> {
        if let Some(why) = &self.unusable {
            return Some(why.clone());
        }
        let raw = self.raw?;
        (!self.kernel_keeps_time_with(raw)).then(|| {
            format!(
                "the kernel's clocksource is {}, not {}: it does not keep time with the raw counter here",
                self.clocksource.as_deref().unwrap_or("unknown"),
                kernel_clocksource(raw)
            )
        })
    }

    fn kernel_keeps_time_with(&self, raw: CounterKind) -> bool {
        self.clocksource.as_deref() == Some(kernel_clocksource(raw))
    }
}

fn kernel_clocksource(raw: CounterKind) -> &'static str {
    match raw {
        CounterKind::Tsc => "tsc",
        CounterKind::Cntvct => "arch_sys_counter",
        CounterKind::Clock => "",
    }
}

/// The raw counter of the architecture rtscope was built for.
pub(crate) fn native_raw() -> Option<CounterKind> {
    if cfg!(target_arch = "x86_64") {
        Some(CounterKind::Tsc)
    } else if cfg!(target_arch = "aarch64") {
        Some(CounterKind::Cntvct)
    } else {
        None
    }
}

/// Counter ticks to nanoseconds: `ns = ticks × mult / 2³²`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calibration {
    mult: u64,
}

impl Calibration {
    /// Nanoseconds per tick of exactly 1 (the vDSO clock, or a test's readings).
    pub const IDENTITY: Calibration = Calibration { mult: 1 << 32 };

    /// The rate between two anchors on one CPU; `None` when they are not apart.
    pub fn between(a: Anchor, b: Anchor) -> Option<Calibration> {
        let (ticks, ns) = (b.tick.checked_sub(a.tick)?, b.ns.checked_sub(a.ns)?);
        if ticks == 0 || ns == 0 {
            return None;
        }
        let mult = ((ns as u128) << 32) / ticks as u128;
        u64::try_from(mult).ok().map(|mult| Calibration { mult })
    }

    /// Nanoseconds of `ticks` ticks, rounded to the nearest.
    #[inline(always)]
    pub fn ns(self, ticks: u64) -> u64 {
        ((ticks as u128 * self.mult as u128 + (1 << 31)) >> 32) as u64
    }

    /// Ticks of `ns` nanoseconds (outside the loop: a division).
    pub fn ticks(self, ns: u64) -> u64 {
        u64::try_from(((ns as u128) << 32) / self.mult.max(1) as u128).unwrap_or(u64::MAX)
    }

    /// The counter's frequency, Hz.
    pub fn hz(self) -> f64 {
        1e9 * (1u64 << 32) as f64 / self.mult as f64
    }
}

/// A counter reading and the CLOCK_MONOTONIC time of the same instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// The counter.
    pub tick: u64,
    /// CLOCK_MONOTONIC, ns.
    pub ns: u64,
    /// How far apart the two clock reads around the counter read were: `ns` is within half
    /// of it of the counter read's true time (0 for the vDSO clock, which is its own anchor).
    pub width: u64,
}

impl Anchor {
    /// The CLOCK_MONOTONIC time of the counter reading `tick`, through this anchor.
    #[inline]
    pub fn at(self, cal: Calibration, tick: u64) -> u64 {
        if tick >= self.tick {
            self.ns.saturating_add(cal.ns(tick - self.tick))
        } else {
            self.ns.saturating_sub(cal.ns(self.tick - tick))
        }
    }

    /// The counter reading at the CLOCK_MONOTONIC time `ns` (at or after the anchor).
    pub fn tick_at(self, cal: Calibration, ns: u64) -> u64 {
        self.tick
            .saturating_add(cal.ticks(ns.saturating_sub(self.ns)))
    }
}

/// Reads `kind` once: the vDSO clock in ns, a raw counter in ticks.
#[inline(always)]
pub fn read(kind: CounterKind) -> u64 {
    match kind {
        CounterKind::Clock => sys::now(libc::CLOCK_MONOTONIC).0,
        CounterKind::Tsc => read_tsc(),
        CounterKind::Cntvct => read_cntvct(),
    }
}

/// Tries an [`anchor`] takes, keeping the tightest: one preempted between its clock reads is
/// as wide as the preemption.
const ANCHOR_TRIES: usize = 3;

/// A reading of `kind` paired with CLOCK_MONOTONIC: the counter read between two clock reads,
/// placed at their midpoint, the tightest of [`ANCHOR_TRIES`] (for the vDSO clock, one reading:
/// its own anchor). Never called inside the loop.
pub fn anchor(kind: CounterKind) -> Anchor {
    if kind == CounterKind::Clock {
        let t = read(kind);
        return Anchor {
            tick: t,
            ns: t,
            width: 0,
        };
    }
    let once = || {
        let before = sys::now(libc::CLOCK_MONOTONIC).0;
        let tick = read(kind);
        let after = sys::now(libc::CLOCK_MONOTONIC).0;
        Anchor {
            tick,
            ns: before + (after - before) / 2,
            width: after - before,
        }
    };
    (1..ANCHOR_TRIES).map(|_| once()).fold(
        once(),
        |best, a| if a.width < best.width { a } else { best },
    )
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_tsc() -> u64 {
    // SAFETY: LFENCE and RDTSC are part of x86-64's baseline (SSE2) and read no memory; Linux
    // lets user space run RDTSC unless a process asked for PR_SET_TSC, which rtscope never does.
    unsafe {
        std::arch::x86_64::_mm_lfence();
        std::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn read_tsc() -> u64 {
    unreachable!("the TSC is only chosen on x86-64")
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn read_cntvct() -> u64 {
    let v: u64;
    // SAFETY: ISB and a read of CNTVCT_EL0 touch no memory; Linux gives EL0 access to the
    // virtual counter (CNTKCTL_EL1.EL0VCTEN) and emulates the read where an erratum traps it.
    unsafe {
        std::arch::asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v, options(nostack, nomem));
    }
    v
}

#[cfg(not(target_arch = "aarch64"))]
fn read_cntvct() -> u64 {
    unreachable!("CNTVCT_EL0 is only chosen on arm64")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAGS: &str = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc rdtscp nonstop_tsc\n";

    #[test]
    fn auto_takes_the_raw_counter_only_where_the_kernel_keeps_time_with_it() {
        let tsc = CounterProbe::of(Some(CounterKind::Tsc), FLAGS, Some("tsc".into()));
        assert_eq!(tsc.choose(CounterChoice::Auto), Ok(CounterKind::Tsc));
        assert_eq!(tsc.auto_note(), None);
        let kvm = CounterProbe::of(Some(CounterKind::Tsc), FLAGS, Some("kvm-clock".into()));
        assert_eq!(kvm.choose(CounterChoice::Auto), Ok(CounterKind::Clock));
        assert!(kvm
            .auto_note()
            .unwrap()
            .contains("clocksource is kvm-clock, not tsc"));
        // Asked for, a constant TSC is read even when the kernel keeps time with another.
        assert_eq!(kvm.choose(CounterChoice::Raw), Ok(CounterKind::Tsc));
        assert_eq!(kvm.choose(CounterChoice::Clock), Ok(CounterKind::Clock));
        let arm = CounterProbe::of(
            Some(CounterKind::Cntvct),
            "",
            Some("arch_sys_counter".into()),
        );
        assert_eq!(arm.choose(CounterChoice::Auto), Ok(CounterKind::Cntvct));
    }

    #[test]
    fn a_tsc_that_does_not_tick_at_a_constant_rate_is_refused_and_named() {
        let old = "flags\t\t: fpu tsc constant_tsc\n";
        let p = CounterProbe::of(Some(CounterKind::Tsc), old, Some("tsc".into()));
        let why = p.choose(CounterChoice::Raw).unwrap_err().to_string();
        assert_eq!(
            why,
            "this CPU's TSC does not tick at a constant rate: /proc/cpuinfo lacks nonstop_tsc"
        );
        assert_eq!(p.choose(CounterChoice::Auto), Ok(CounterKind::Clock));
        assert_eq!(p.auto_note().as_deref(), Some(why.as_str()));
        let none = CounterProbe::of(None, FLAGS, None);
        assert!(none
            .choose(CounterChoice::Raw)
            .unwrap_err()
            .to_string()
            .contains("only x86-64"));
        // A probe that names no reason but has no counter either.
        let bare = CounterProbe {
            raw: None,
            unusable: None,
            clocksource: None,
        };
        assert_eq!(
            bare.choose(CounterChoice::Raw).unwrap_err().to_string(),
            "no raw counter"
        );
    }

    #[test]
    fn the_probe_reads_the_machines_files_under_a_root() {
        let dir = std::env::temp_dir().join(format!("rtscope-counter-{}", std::process::id()));
        let cs = dir.join("sys/devices/system/clocksource/clocksource0");
        std::fs::create_dir_all(&cs).unwrap();
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        std::fs::write(cs.join("current_clocksource"), "hpet\n").unwrap();
        std::fs::write(dir.join("proc/cpuinfo"), FLAGS).unwrap();
        let p = CounterProbe::read(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(p.clocksource.as_deref(), Some("hpet"));
        assert_eq!(p.choose(CounterChoice::Auto), Ok(CounterKind::Clock));
    }

    #[test]
    fn a_calibration_converts_ticks_both_ways_and_anchors_place_them_on_the_clock() {
        // A 2.5 GHz counter: 250,000,000 ticks in 100 ms.
        let a = Anchor {
            tick: 1_000,
            ns: 5_000_000_000,
            width: 0,
        };
        let b = Anchor {
            tick: 250_001_000,
            ns: 5_100_000_000,
            width: 0,
        };
        let cal = Calibration::between(a, b).unwrap();
        assert!((cal.hz() - 2.5e9).abs() < 1.0, "{}", cal.hz());
        assert_eq!(cal.ns(2_500), 1_000);
        assert_eq!(cal.ns(250_000_000), 100_000_000);
        assert_eq!(cal.ticks(1_000), 2_500);
        assert_eq!(a.at(cal, 1_000 + 2_500), 5_000_001_000);
        assert_eq!(b.at(cal, 250_001_000 - 25_000), 5_099_990_000);
        assert_eq!(a.tick_at(cal, 5_000_000_400), 2_000);
        assert_eq!(Calibration::between(b, a), None);
        assert_eq!(Calibration::between(a, a), None);
        assert_eq!(Calibration::IDENTITY.ns(123_456_789), 123_456_789);
        assert_eq!(Calibration::IDENTITY.ticks(123_456_789), 123_456_789);
    }

    #[test]
    fn the_native_counter_calibrated_over_the_minimum_span_ticks_with_the_clock() {
        // The architecture's raw counter whatever the clocksource (under qemu-user the host's
        // files say `tsc` while the code reads CNTVCT_EL0), else the clock.
        let kind = native_raw().unwrap_or(CounterKind::Clock);
        let a = anchor(kind);
        sys::sleep_for(libc::CLOCK_MONOTONIC, MIN_CALIBRATION);
        let b = anchor(kind);
        let cal = Calibration::between(a, b).unwrap();
        sys::sleep_for(libc::CLOCK_MONOTONIC, Nanos::from_ms(5));
        let c = anchor(kind);
        // The third anchor, placed through the first and the rate, is where the clock says,
        // within what the anchors themselves can tell: half of each one's width, and the
        // rate's error (the first two anchors' widths over their span, and the most the kernel
        // slews CLOCK_MONOTONIC against the counter: 500 ppm) over the distance.
        let placed = a.at(cal, c.tick);
        let span = (b.ns - a.ns) as f64;
        let rate_error = (a.width + b.width) as f64 / span + 500e-6;
        let bound = (a.width + c.width) as f64 / 2.0 + rate_error * (c.ns - a.ns) as f64 + 2.0;
        let off = placed.abs_diff(c.ns) as f64;
        assert!(
            off <= bound,
            "{placed} vs {}: {off} ns off, bound {bound}",
            c.ns
        );
    }
}
