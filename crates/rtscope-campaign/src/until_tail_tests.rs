//! `until_tail`: the rule as written (file and flag), the plan it makes, the schedule of the
//! checks, and the stopping rule on runs of known tails (synthetic GPD tails, seeds fixed,
//! checked as a running run would be: each check on the samples measured by then).

use crate::expand::{from_text, Campaign};
use crate::until_tail::*;
use crate::CampaignOptions;
use rtscope_core::Nanos;
use rtscope_engine::CpuSet;
use rtscope_evt::gpd::Gpd;
use rtscope_evt::precision::Standing;
use rtscope_evt::{analyse, Options, Refusal, Tail};

/// Wake-ups per second of the synthetic runs.
const RATE: f64 = 1000.0;

fn rule(probability: f64, precision: f64, max_s: u64) -> UntilTail {
    UntilTail {
        probability,
        precision,
        max_duration: Nanos::from_secs(max_s),
    }
}

/// A synthetic run of one thread at [`RATE`] with the analyses of its prefixes made so far
/// (a prefix is analysed once, whatever precision it is then held against).
struct Synthetic {
    values: Vec<f64>,
    analysed: std::collections::BTreeMap<usize, rtscope_evt::Analysis>,
}

impl Synthetic {
    fn new(values: Vec<f64>) -> Synthetic {
        Synthetic {
            values,
            analysed: Default::default(),
        }
    }

    /// Where the wake-ups measured `t` into the run stand, as a check analyses them.
    fn stand(&mut self, t: Nanos, rule: &UntilTail) -> ThreadStanding {
        let n = ((t.0 as f64 / 1e9 * RATE) as usize).min(self.values.len());
        let o = Options {
            probabilities: vec![rule.probability],
            ..Options::default()
        };
        let values = &self.values[..n];
        let a = self
            .analysed
            .entry(n)
            .or_insert_with(|| analyse(&Tail::ordered(values, Some(RATE)), &o, false));
        ThreadStanding {
            title: "CPU 0".into(),
            thread: 0,
            standing: Standing::of(a, rule.probability, rule.precision),
            settled: false,
        }
    }

    /// The run under `rule`, its first check after `first`: every check due is made on the
    /// wake-ups measured by then, until one settles the run or none is due before
    /// `max_duration`; then the whole run (up to the settling check, or `max_duration`).
    fn simulate(&mut self, rule: UntilTail, first: Nanos) -> (Checks, ThreadStanding) {
        let mut c = Checks::new(UntilTailRun {
            rule,
            first_check: first,
        });
        while let Some(next) = c.next() {
            assert!(c.due(next) && !c.due(Nanos(next.0 - 1)));
            let threads = vec![self.stand(next, &rule)];
            if c.add(Check { at: next, threads }) {
                break;
            }
        }
        let end = c.settled_by.map_or(rule.max_duration, |k| c.made[k - 1].at);
        let whole = self.stand(end, &rule);
        (c, whole)
    }
}

/// 40 s at 1 kHz of 5 µs plus a heavy GPD excess (ξ = 0.1, σ = 800 ns).
fn heavy_run() -> Synthetic {
    let g = Gpd {
        sigma: 800.0,
        xi: 0.1,
    };
    let t = Tail::with_gpd_tail(5_000.0, g, 40_000, 17);
    Synthetic::new(t.points.iter().map(|p| p.value).collect())
}

/// The upper bound's distance from the estimate, as a fraction.
fn width(s: &Standing) -> f64 {
    match s {
        Standing::Narrow(l) | Standing::Wide(l) => l
            .upper_ns
            .map_or(f64::INFINITY, |u| u / l.estimate_ns - 1.0),
        other => panic!("no level: {other:?}"),
    }
}

fn words(c: &Checks) -> Vec<(&'static str, bool)> {
    let t = |k: &Check| (k.threads[0].standing.word(), k.threads[0].settled);
    c.made.iter().map(t).collect()
}

#[test]
fn a_run_is_measured_on_while_wide_and_stops_at_the_first_settled_narrow_check() {
    let mut run = heavy_run();
    let secs = |c: &Checks| -> Vec<u64> { c.made.iter().map(|k| k.at.0 / 1_000_000_000).collect() };
    // Never that precise: checked at 5, 10 and 20 s, none at 40 s, where the run ends.
    let (c, whole) = run.simulate(rule(1e-6, 1e-4, 40), Nanos::from_secs(5));
    assert_eq!(secs(&c), [5, 10, 20]);
    assert_eq!(words(&c), [("wide", false); 3]);
    assert_eq!(
        (c.settled_by, outcome(std::slice::from_ref(&whole))),
        (None, "wide")
    );
    assert_eq!(stop_text(&c, false), "max_duration 40s reached");
    let widths: Vec<f64> = c
        .made
        .iter()
        .map(|k| width(&k.threads[0].standing))
        .collect();
    // The first 5,000 wake-ups of this heavy tail fit ξ̂ < 0, read as exponential: a
    // narrow interval that the next 5,000 widen (docs/worst-case.md).
    assert!(
        widths[0] < 0.1 && widths[1] > 0.3 && widths[2] < widths[1],
        "{widths:?}"
    );
    // Within 30 %: narrow at 5 s, but one look settles nothing; wide at 10 s; narrow at
    // 20 s inside the 10 s interval: settled, the run stops there.
    let (c, whole) = run.simulate(rule(1e-6, 0.3, 40), Nanos::from_secs(5));
    assert_eq!(secs(&c), [5, 10, 20]);
    assert_eq!(
        words(&c),
        [("narrow", false), ("wide", false), ("narrow", true)]
    );
    assert_eq!(c.settled_by, Some(3));
    assert_eq!(outcome(std::slice::from_ref(&whole)), "narrow");
    assert_eq!(stop_text(&c, false), "check 3 at 20s: every thread narrow");
    assert!(
        check_line(&c).contains("every thread narrow: the run stops"),
        "{}",
        check_line(&c)
    );
}

/// 20 s at 1 kHz of an exponential base with a spike every 500th wake-up (a periodic load).
fn periodic_run() -> Synthetic {
    Synthetic::new(rtscope_evt::diag::periodic_sample(20_000))
}

#[test]
fn a_refused_tail_stops_the_run_at_the_second_refusing_check() {
    let mut run = periodic_run();
    let (c, whole) = run.simulate(rule(1e-6, 0.5, 3600), Nanos::from_secs(5));
    assert_eq!(words(&c), [("refused", false), ("refused", true)]);
    assert_eq!(c.settled_by, Some(2), "never measured on to the hour");
    assert_eq!(outcome(std::slice::from_ref(&whole)), "refused");
    assert_eq!(stop_text(&c, false), "check 2 at 10s: every thread refused");
}

#[test]
fn too_few_exceedances_measure_on() {
    let mut run = heavy_run();
    let r = rule(1e-6, 0.5, 40);
    let mut c = Checks::new(UntilTailRun {
        rule: r,
        first_check: Nanos::from_ms(500),
    });
    let first = run.stand(Nanos::from_ms(500), &r);
    assert!(matches!(
        first.standing,
        Standing::Short(Some(Refusal::TooFewExceedances { .. }))
    ));
    assert!(!c.add(Check {
        at: Nanos::from_ms(500),
        threads: vec![first],
    }));
    assert_eq!(c.next(), Some(Nanos::from_secs(1)));
    assert!(check_line(&c).contains("no estimate yet: too few exceedances"));
}

#[test]
fn checks_are_due_after_the_first_length_then_at_each_doubling_never_at_the_max() {
    let mut c = Checks::new(UntilTailRun {
        rule: rule(1e-9, 0.1, 100),
        first_check: Nanos::from_secs(10),
    });
    assert!(!c.due(Nanos::from_secs(9)) && c.due(Nanos::from_secs(10)));
    // A check begun late (at 13 s) puts the next at twice its own data: 26 s.
    let wide = |at| Check {
        at,
        threads: Vec::new(),
    };
    assert!(!c.add(wide(Nanos::from_secs(13))));
    assert_eq!(c.next(), Some(Nanos::from_secs(26)));
    // A check that could not be made is skipped the same way.
    c.skip(Nanos::from_secs(26));
    assert_eq!(c.next(), Some(Nanos::from_secs(52)));
    assert!(!c.add(wide(Nanos::from_secs(52))));
    // 104 s is past the max: no further check, the run ends at 100 s by itself.
    assert_eq!(c.next(), None);
    assert!(!c.due(Nanos::from_secs(200)));
    assert!(check_line(&c).contains("no further check: the run ends at its max_duration 1m 40s"));
}

fn campaign(text: &str, flag: Option<&str>) -> Result<Campaign, String> {
    let a = CampaignOptions {
        until_tail: flag.map(Into::into),
        ..CampaignOptions::default()
    };
    from_text(
        "t.toml".into(),
        "t.toml",
        text.into(),
        &a,
        &CpuSet::from_cpus(0..4),
    )
    .map_err(|e| e.to_string())
}

const FILE: &str = r#"[campaign]
until_tail = "probability=1e-9,precision=10%,max_duration=2h"

[measure]
duration = "30s"

[[scenario]]
name = "N:N"

[[load_case]]
name = "idle"
"#;

#[test]
fn the_file_s_rule_lengthens_each_run_to_its_max_and_records_every_sample() {
    let c = campaign(FILE, None).unwrap();
    let r = rule(1e-9, 0.1, 7200);
    assert_eq!(c.until_tail, Some(r));
    let p = &c.runs[0];
    assert_eq!(
        p.until_tail,
        Some(UntilTailRun {
            rule: r,
            first_check: Nanos::from_secs(30)
        })
    );
    assert_eq!(p.plan.config.duration, Some(Nanos::from_secs(7200)));
    assert!(
        p.plan.config.sample_ring.is_some(),
        "raw: the checks need the time order"
    );
    let dry = crate::dryrun::render(&c);
    assert!(
        dry.contains("30s..7200s") && dry.contains("until_tail: each run"),
        "{dry}"
    );
    // The flag replaces the file's rule whole; `off` drops it; --duration is the first check.
    let flag = "probability=1e-6,precision=2.5%,max_duration=10m";
    let c = campaign(FILE, Some(flag)).unwrap();
    assert_eq!(c.until_tail, Some(rule(1e-6, 0.025, 600)));
    assert_eq!(
        UntilTail::parse_flag(&rule(1e-6, 0.025, 600).text()).unwrap(),
        c.until_tail
    );
    let c = campaign(FILE, Some("off")).unwrap();
    assert_eq!((c.until_tail, c.runs[0].until_tail), (None, None));
    assert_eq!(c.runs[0].plan.config.duration, Some(Nanos::from_secs(30)));
}

#[test]
fn a_bad_rule_in_the_file_is_refused_where_it_is_written_with_the_fix() {
    let with = |rule: &str| FILE.replace("probability=1e-9,precision=10%,max_duration=2h", rule);
    let e = campaign(&with("probability=1e-9,precision=10%"), None).unwrap_err();
    assert!(
        e.starts_with("t.toml:2:14: invalid until_tail: max_duration is missing"),
        "{e}"
    );
    assert!(
        e.contains("hint: until_tail = \"probability=1e-9,precision=10%,max_duration=2h\""),
        "{e}"
    );
    for (rule, why) in [
        (
            "probability=1e-9,precision=0.1,max_duration=2h",
            "precision '0.1' is not a percentage",
        ),
        (
            "probability=2,precision=10%,max_duration=2h",
            "probability 2 is not between 0 and 1",
        ),
        (
            "probability=1e-9,precision=10%,max_duration=2h,step=2",
            "unknown key 'step'",
        ),
    ] {
        let e = campaign(&with(rule), None).unwrap_err();
        assert!(
            e.starts_with(&format!("t.toml:2:14: invalid until_tail: {why}")),
            "{e}"
        );
    }
    let e = campaign(
        &with("probability=1e-9,precision=10%,max_duration=20s"),
        None,
    )
    .unwrap_err();
    assert!(
        e.starts_with(
            "t.toml:5:12: until_tail's max_duration 20s is not longer than the run's duration 30s"
        ),
        "{e}"
    );
    let e = campaign(&FILE.replace(r#"duration = "30s""#, "loops = 1000"), None).unwrap_err();
    assert!(
        e.starts_with("t.toml:5:9: until_tail measures for a time"),
        "{e}"
    );
    let respond = FILE.replace("name = \"N:N\"", "name = \"ipc\"\nrespond = \"eventfd\"");
    let e = campaign(&respond, None).unwrap_err();
    assert!(
        e.contains("until_tail measures timer wake-ups; this is a respond scenario"),
        "{e}"
    );
}

#[test]
fn a_bad_until_tail_flag_names_what_is_wrong() {
    for (flag, why) in [
        ("probability=1e-9,precision=10%", "max_duration is missing"),
        (
            "probability=1e-9,precision=10,max_duration=2h",
            "is not a percentage",
        ),
        ("p=1e-9,precision=10%,max_duration=2h", "unknown key 'p'"),
        (
            "probability=1e-9,precision=1%,precision=10%,max_duration=2h",
            "precision is given twice",
        ),
        (
            "probability=x,precision=10%,max_duration=2h",
            "probability 'x' is not a number",
        ),
        (
            "probability=1e-9,precision=10%,max_duration=0",
            "not a duration above 0",
        ),
    ] {
        let e = campaign(FILE, Some(flag)).unwrap_err();
        assert!(
            e.starts_with(&format!("invalid value '{flag}' for '--until-tail': "))
                && e.contains(why)
                && e.contains("hint: e.g. --until-tail"),
            "{flag}: {e}"
        );
    }
}

#[test]
fn the_record_says_the_rule_why_it_stopped_every_check_and_each_thread_on_the_whole_run() {
    let level = |e: f64, lo: f64, hi: f64| rtscope_evt::Level {
        probability: 1e-9,
        once_per_s: None,
        estimate_ns: e,
        lower_ns: lo,
        upper_ns: Some(hi),
        extrapolation: 1e4,
        longer: None,
    };
    let thread = |thread: u32, standing| ThreadStanding {
        title: format!("CPU {thread}"),
        thread,
        standing,
        settled: false,
    };
    let mut c = Checks::new(UntilTailRun {
        rule: rule(1e-9, 0.1, 7200),
        first_check: Nanos::from_secs(60),
    });
    let refused = Standing::Refused(vec![Refusal::NoStableThreshold]);
    let check = |at, a: Standing, b: Standing| Check {
        at: Nanos::from_secs(at),
        threads: vec![thread(0, a), thread(1, b)],
    };
    let wide = Standing::Wide(level(70e3, 60e3, 90e3));
    assert!(!c.add(check(60, wide.clone(), refused.clone())));
    let narrow = Standing::Narrow(level(71e3, 66e3, 76e3));
    assert!(c.add(check(120, narrow.clone(), refused.clone())));
    let line = check_line(&c);
    assert!(line.starts_with("tail check 2 at 2m 00s (p 1e-9, upper bound within 10 % of the estimate): every thread narrow or refused: the run stops"), "{line}");
    assert!(
        line.contains(
            "\n      CPU 0 narrow: 71.0 µs [66.0 µs .. 76.0 µs], upper bound +7.0 % (settled)"
        ),
        "{line}"
    );
    let whole = vec![thread(0, narrow), thread(1, refused)];
    let last = final_line(&c, 12, &whole, false);
    assert!(last.starts_with("until_tail REFUSED (check 2 at 2m 00s: every thread narrow or refused; p 1e-9, upper bound within 10 % of the estimate); run 12 as `rtscope tail 12 -p 1e-9` analyses it:\n      CPU 0 narrow: 71.0 µs"), "{last}");
    let facts = facts(&c, &whole, false);
    let fact = |k: &str| {
        facts
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        fact("rtscope.until_tail.rule"),
        Some("probability=1e-9,precision=10%,max_duration=7200s,first_check=60s")
    );
    assert_eq!(
        fact("rtscope.until_tail.stop"),
        Some("check 2 at 2m 00s: every thread narrow or refused")
    );
    assert_eq!(
        fact("rtscope.until_tail.checks"),
        Some("1 at 1m 00s: CPU 0 wide, CPU 1 refused; 2 at 2m 00s: CPU 0 narrow, CPU 1 refused")
    );
    assert_eq!(fact("rtscope.until_tail.thread.1"), Some("CPU 1 refused: no stable threshold: the shape estimate keeps changing with the threshold (the tail is not one distribution)"));
    // Interrupted: nothing analysed, the run is measured again on --resume.
    assert!(final_line(&c, 12, &[], true).contains("interrupted after 2 check(s)"));
    assert_eq!(stop_text(&c, true), "interrupted after 2 check(s)");
}
