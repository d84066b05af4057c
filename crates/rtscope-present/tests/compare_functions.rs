//! `rtscope compare`'s text report of the comparison by kernel function, on synthetic
//! summaries: what is listed as changed, what is not, and runs without stacks named instead of
//! counted as zero (the text and the typed comparison it is rendered from; the summaries'
//! reading is tested in rtscope-analysis's compare/functions_tests.rs).

use rtscope_analysis::compare::analysis::Comparison;
use rtscope_analysis::compare::functions::{
    Exposure, FunctionRow, LeftOut, Outcome, Presence, RunStacks,
};
use rtscope_analysis::compare::group::Group;
use rtscope_analysis::compare::model::{RunData, Stat};
use rtscope_analysis::compare::verdict::Thresholds;
use rtscope_core::Histogram;
use rtscope_explain::stack::FunctionTime;
use rtscope_present::compare_text as text;
use rtscope_store::{RunId, RunKind};
use std::collections::HashMap;

mod support;

use support::run;

fn thresholds() -> Thresholds {
    Thresholds::parse(&[], "1us").unwrap()
}

/// A measure run of one million wake-ups.
fn measured(id: RunId) -> RunData {
    run(id, Histogram::new(), 1_000_000, Some(1_000))
}

fn stacks(functions: &[(&str, u64)]) -> RunStacks {
    RunStacks::Stacks {
        functions: functions
            .iter()
            .map(|&(f, ns)| FunctionTime {
                function: f.into(),
                ns,
                spikes: 1,
            })
            .collect(),
        traced_ns: functions.iter().map(|f| f.1).sum(),
        threshold_ns: 100_000,
    }
}

/// Groups A (runs 1..=n) and B (runs 101..=100+n), each run's functions from `a` and `b`
/// (given the run's index).
fn compare(n: i64, a: impl Fn(u64) -> RunStacks, b: impl Fn(u64) -> RunStacks) -> Comparison {
    let mut map = HashMap::new();
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    for i in 0..n {
        ra.push(measured(1 + i));
        rb.push(measured(101 + i));
        map.insert(1 + i, a(i as u64));
        map.insert(101 + i, b(i as u64));
    }
    let groups = vec![
        Group::new(0, "kernel=stock", ra),
        Group::new(1, "kernel=rt", rb),
    ];
    Comparison::new(groups, &[Stat::Max], thresholds(), Stat::Max, None).with_functions(&map)
}

fn row<'a>(c: &'a Comparison, f: &str) -> &'a FunctionRow {
    let fc = c.functions.as_ref().expect("the comparison by function");
    fc.candidates[0]
        .rows
        .iter()
        .find(|r| r.function == f)
        .unwrap_or_else(|| panic!("{f} listed: {:?}", fc.candidates[0].rows))
}

#[test]
fn a_function_ten_times_higher_in_b_is_listed_first_as_significantly_higher() {
    // Run-to-run variation in both functions; `grows` is 10× in every B run.
    let c = compare(
        5,
        |i| {
            stacks(&[
                ("grows", 100_000 + i * 7_000),
                ("steady", 500_000 + i * 9_000),
            ])
        },
        |i| {
            stacks(&[
                ("grows", 1_000_000 + i * 70_000),
                ("steady", 500_000 + (4 - i) * 9_000),
            ])
        },
    );
    let fc = c.functions.as_ref().unwrap();
    assert_eq!(fc.exposure, Exposure::Wakeups);
    assert!(fc.candidates[0].compared);
    assert_eq!(
        fc.candidates[0].rows[0].function, "grows",
        "ranked by absolute change"
    );
    let grows = row(&c, "grows");
    assert!(matches!(grows.outcome, Outcome::Higher(_)), "{grows:?}");
    assert_eq!(grows.presence, Presence::Both);
    assert!(grows.change > 0.0);
    // Equal across groups (the same per-run values, in another order): not significant.
    let steady = row(&c, "steady");
    assert!(
        matches!(steady.outcome, Outcome::NotSignificant(_)),
        "{steady:?}"
    );
    let text = text::render(&c);
    assert!(
        text.contains("changed significantly: grows (higher in B)"),
        "{text}"
    );
    assert!(!text.contains("steady (higher"), "{text}");
    // What compare's JSON document (rtscope-present) writes, on the typed comparison.
    let f = c.functions.as_ref().unwrap();
    let rows = &f.candidates[0].rows;
    assert_eq!(rows[0].function, "grows");
    assert_eq!(rows[0].outcome.word(), "higher");
    assert!(rows[0].outcome.significant());
    assert_eq!(rows[1].function, "steady");
    assert!(!rows[1].outcome.significant());
    assert_eq!(f.exposure.json_name(), "per_million_wakeups");
}

#[test]
fn a_function_that_appears_or_disappears_is_marked_new_or_gone() {
    let c = compare(
        5,
        |_| stacks(&[("only_in_a", 300_000), ("both", 10)]),
        |_| stacks(&[("only_in_b", 200_000), ("both", 10)]),
    );
    assert_eq!(row(&c, "only_in_a").presence, Presence::Gone);
    assert!(matches!(row(&c, "only_in_a").outcome, Outcome::Lower(_)));
    assert_eq!(row(&c, "only_in_b").presence, Presence::New);
    assert!(matches!(row(&c, "only_in_b").outcome, Outcome::Higher(_)));
    // The rate of a new function in A is shown as none, not as a measured 0 of time.
    let text = text::render(&c);
    assert!(text.contains("new; higher"), "{text}");
    assert!(text.contains("gone; lower"), "{text}");
}

#[test]
fn with_too_few_runs_a_tenfold_change_is_not_tested_rather_than_significant() {
    let c = compare(
        3,
        |_| stacks(&[("grows", 100_000)]),
        |_| stacks(&[("grows", 1_000_000)]),
    );
    let grows = row(&c, "grows");
    assert!(
        matches!(grows.outcome, Outcome::NotTested(Some(_))),
        "{grows:?}"
    );
    assert!(!grows.outcome.significant());
    let text = text::render(&c);
    assert!(
        text.contains("not tested: too few runs (n=3 per side)"),
        "{text}"
    );
    assert!(text.contains("changed significantly: none"), "{text}");
}

#[test]
fn a_group_without_stacks_is_one_line_never_a_block_nor_compared_as_zero() {
    let c = compare(
        4,
        |_| stacks(&[("grows", 100_000)]),
        |i| {
            if i % 2 == 0 {
                RunStacks::NotAsked
            } else {
                RunStacks::NoneTaken { traced: 3 }
            }
        },
    );
    let fc = c.functions.as_ref().unwrap();
    let b = &fc.coverage[1];
    assert!(b.with_stacks.is_empty() && !b.took_stacks());
    assert_eq!(b.left_out.len(), 4);
    assert!(
        b.askable,
        "measure runs outside a campaign can ask for stacks"
    );
    assert!(!fc.candidates[0].compared && !fc.compared());
    assert!(fc.candidates[0].rows.is_empty(), "no row of zeros for B");
    let text = text::render(&c);
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("kernel functions"))
        .collect();
    assert_eq!(
        said,
        ["kernel functions not compared: B ('kernel=rt') took no kernel stacks (explained without kernel stacks: runs 101, 103; stacks asked for, none taken: runs 102, 104); to compare them, measure with --explain DUR --explain-stacks on"],
        "{text}"
    );
    assert!(!text.contains("grows"), "no table: {text}");
    let kf = c.functions.as_ref().unwrap();
    assert!(!kf.candidates[0].compared);
    assert_eq!(kf.coverage[1].left_out[0].1.json_name(), "no_stacks");
}

/// A baseline without stacks: nothing is compared, one line for it; the candidates that took
/// stacks have nothing to be compared with and get no line.
#[test]
fn a_baseline_without_stacks_is_its_one_line() {
    let c = compare(2, |_| RunStacks::NotAsked, |_| stacks(&[("f", 1_000)]));
    let text = text::render(&c);
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("kernel functions"))
        .collect();
    assert_eq!(
        said,
        ["kernel functions not compared: A ('kernel=stock') took no kernel stacks (explained without kernel stacks: runs 1, 2); to compare them, measure with --explain DUR --explain-stacks on"],
        "{text}"
    );
}

/// Campaign runs cannot ask for stacks (a campaign file has no `--explain-stacks`): their line
/// gives no advice; nor does one of runs that asked and got none.
#[test]
fn no_advice_that_cannot_be_followed() {
    let mut map = HashMap::new();
    let a: Vec<RunData> = (1..=2).map(measured).collect();
    let mut b: Vec<RunData> = (11..=12).map(measured).collect();
    for r in &mut b {
        r.campaign = Some("nightly".into());
    }
    let taken: Vec<RunData> = (21..=22).map(measured).collect();
    for id in [1, 2] {
        map.insert(id, stacks(&[("f", 1_000)]));
    }
    for id in [11, 12] {
        map.insert(id, RunStacks::NotAsked);
    }
    for id in [21, 22] {
        map.insert(id, RunStacks::NoneTaken { traced: 4 });
    }
    let groups = vec![
        Group::new(0, "a", a),
        Group::new(1, "campaign:nightly", b),
        Group::new(2, "c", taken),
    ];
    let c =
        Comparison::new(groups, &[Stat::Max], thresholds(), Stat::Max, None).with_functions(&map);
    let text = text::render(&c);
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("kernel functions"))
        .collect();
    assert_eq!(
        said,
        [
            "kernel functions not compared: B ('campaign:nightly') took no kernel stacks (explained without kernel stacks: runs 11, 12)",
            "kernel functions not compared: C ('c') took no kernel stacks (stacks asked for, none taken: runs 21, 22)",
        ],
        "{text}"
    );
}

/// Both groups explained, neither took stacks (a campaign explained by default, whose function
/// rows name timer callbacks only): nothing both sides measured, nothing said.
#[test]
fn no_section_when_no_group_took_stacks() {
    let c = compare(2, |_| RunStacks::NotAsked, |_| RunStacks::NotAsked);
    assert!(c.functions.is_none());
    let text = text::render(&c);
    assert!(!text.contains("kernel functions"), "{text}");
    assert!(!text.contains("kernel stacks"), "{text}");
    assert!(c.functions.is_none());
}

#[test]
fn runs_without_stacks_are_left_out_of_a_group_not_averaged_in_as_zero() {
    // B: two runs with stacks at 10× A's rate, two not explained (absent from the map).
    let mut map = HashMap::new();
    let a: Vec<RunData> = (1..=2).map(measured).collect();
    let b: Vec<RunData> = (11..=14).map(measured).collect();
    for id in 1..=2 {
        map.insert(id, stacks(&[("f", 1_000)]));
    }
    for id in 11..=12 {
        map.insert(id, stacks(&[("f", 10_000)]));
    }
    let groups = vec![Group::new(0, "a", a), Group::new(1, "b", b)];
    let c =
        Comparison::new(groups, &[Stat::Max], thresholds(), Stat::Max, None).with_functions(&map);
    let f = row(&c, "f");
    // 10 µs per million wake-ups, over the two runs with stacks only.
    assert_eq!(f.cand.rate, 10_000.0);
    assert_eq!(f.base.rate, 1_000.0);
    let text = text::render(&c);
    assert!(text.contains("B: 2 of 4 runs with kernel stacks"), "{text}");
    assert!(
        text.contains("left out (not counted as zero): run 13 not explained, run 14 not explained"),
        "{text}"
    );
}

#[test]
fn no_section_when_no_run_was_explained() {
    let groups = vec![
        Group::new(0, "a", vec![measured(1)]),
        Group::new(1, "b", vec![measured(2)]),
    ];
    let plain = Comparison::new(groups, &[Stat::Max], thresholds(), Stat::Max, None)
        .with_functions(&HashMap::new());
    assert!(plain.functions.is_none());
    assert!(!text::render(&plain).contains("kernel functions"));
    assert!(plain.functions.is_none());
}

#[test]
fn function_names_are_escaped_and_the_listing_is_bounded_with_the_rest_summed() {
    let many = |scale: u64| {
        let mut v: Vec<(String, u64)> = (0..20)
            .map(|i| (format!("fn_{i:02}"), (i + 1) * 1_000 * scale))
            .collect();
        v.push(("evil\u{1b}[2J\nname".into(), 500_000 * scale));
        v
    };
    let to_stacks = |v: Vec<(String, u64)>| {
        let refs: Vec<(&str, u64)> = v.iter().map(|(f, n)| (f.as_str(), *n)).collect();
        stacks(&refs)
    };
    let c = compare(2, |_| to_stacks(many(1)), |_| to_stacks(many(3)));
    let text = text::render(&c);
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(text.contains("evil\\x1b[2J\\nname"), "{text}");
    assert!(text.contains("… 6 more functions:"), "{text}");
    assert!(
        !text.contains("fn_00 "),
        "the smallest change is in the summed row: {text}"
    );
    // All 21 rows, none summed in a rest (compare's JSON document writes up to 200).
    let cand = &c.functions.as_ref().unwrap().candidates[0];
    assert_eq!(cand.rows.len(), 21);
}

#[test]
fn noise_runs_are_compared_per_second_of_runtime_and_a_run_without_runtime_is_left_out() {
    let noise = |id: RunId, runtime_ns: Option<u64>| {
        let mut r = measured(id);
        r.kind = RunKind::Noise;
        r.noise = runtime_ns.map(|runtime_ns| rtscope_analysis::compare::model::NoiseTime {
            noise_ns: 0,
            runtime_ns,
        });
        r
    };
    let mut map = HashMap::new();
    for id in [1, 2, 11, 12] {
        map.insert(id, stacks(&[("f", 4_000)]));
    }
    let groups = vec![
        Group::new(0, "a", vec![noise(1, Some(2_000_000_000))]),
        Group::new(
            1,
            "b",
            vec![noise(11, Some(1_000_000_000)), noise(12, None)],
        ),
    ];
    let c =
        Comparison::new(groups, &[Stat::Max], thresholds(), Stat::Max, None).with_functions(&map);
    let fc = c.functions.as_ref().unwrap();
    assert_eq!(fc.exposure, Exposure::Runtime);
    assert_eq!(fc.coverage[1].left_out, vec![(12, LeftOut::NoExposure)]);
    let f = row(&c, "f");
    assert_eq!((f.base.rate, f.cand.rate), (2_000.0, 4_000.0));
    let text = text::render(&c);
    assert!(text.contains("per s of runtime"), "{text}");
    assert!(
        text.contains("run 12 nothing to divide by (no wake-ups or runtime recorded)"),
        "{text}"
    );
}

#[test]
fn runs_explained_at_different_thresholds_are_warned_about() {
    let at = |threshold_ns| RunStacks::Stacks {
        functions: vec![FunctionTime {
            function: "f".into(),
            ns: 5_000_000,
            spikes: 2,
        }],
        traced_ns: 5_000_000,
        threshold_ns,
    };
    let same = compare(2, |_| at(1_500_000), |_| at(1_500_000));
    assert!(!same.functions.as_ref().unwrap().thresholds_differ());
    assert!(!text::render(&same).contains("thresholds differ"));
    let c = compare(2, |_| at(1_500_000), |_| at(100_000));
    assert!(c.functions.as_ref().unwrap().thresholds_differ());
    let text = text::render(&c);
    assert!(
        text.contains(
            "note: the runs were explained at different thresholds (A 1.50ms, B 100.0us)"
        ),
        "{text}"
    );
    assert_eq!(
        serde_json::json!(c.functions.as_ref().unwrap().coverage[1].thresholds_ns),
        serde_json::json!([100_000])
    );
}

#[test]
fn p_values_are_adjusted_over_the_functions_tested_so_many_borderline_changes_are_not_called_significant(
) {
    // 4 runs per side fully separated: p = 2/70 ≈ 0.029 for each function. Alone, significant;
    // one of three, Holm's adjustment (×3) puts it above 0.05.
    let one = compare(
        4,
        |i| stacks(&[("f", 100 + i)]),
        |i| stacks(&[("f", 1_000 + i)]),
    );
    let f = row(&one, "f");
    assert!(matches!(f.outcome, Outcome::Higher(_)), "{f:?}");
    assert_eq!(f.outcome.holm_p(), f.outcome.test().map(|t| t.p));
    let three = compare(
        4,
        |i| stacks(&[("f", 100 + i), ("g", 200 + i), ("h", 300 + i)]),
        |i| stacks(&[("f", 1_000 + i), ("g", 2_000 + i), ("h", 3_000 + i)]),
    );
    for name in ["f", "g", "h"] {
        let r = row(&three, name);
        let (p, holm) = (r.outcome.test().unwrap().p, r.outcome.holm_p().unwrap());
        assert!(p < 0.05 && holm > 0.05, "{r:?}");
        assert!(matches!(r.outcome, Outcome::NotSignificant(_)), "{r:?}");
    }
    let text = text::render(&three);
    assert!(
        text.contains("no significant difference (p=0.029, Holm 0.086)"),
        "{text}"
    );
    assert!(text.contains("changed significantly: none"), "{text}");
}
