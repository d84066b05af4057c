//! The comparison by kernel function's reading of stored summaries: stacks only where stacks
//! were taken, handler names that are no stacks, and the bound on the rows read. What is listed
//! as changed, what is not, and runs without stacks named instead of counted as zero are tested
//! with the text report they are rendered in, in rtscope-present's tests/compare_functions.rs.

use super::*;
use rtscope_store::SpikeSummaryRow;

fn explained(summary: &str, command_line: &[&str]) -> ExplainedRun {
    ExplainedRun {
        run: 7,
        summary: SpikeSummaryRow {
            tier: "flight_recorder".into(),
            tier_reason: None,
            threshold_ns: 100_000,
            clock_start_ns: 0,
            summary: summary.into(),
        },
        command_line_json: serde_json::to_string(command_line).unwrap(),
    }
}

#[test]
fn a_stored_summary_reads_as_stacks_only_when_stacks_were_taken() {
    let with = r#"{"counts":{"traced":2,"traced_ns":900},"functions":[{"function":"f","ns":800,"spikes":2}],"worst":[]}"#;
    let none = r#"{"counts":{"traced":2,"traced_ns":900},"worst":[]}"#;
    let quiet = r#"{"counts":{"traced":0,"traced_ns":0}}"#;
    let on = [
        "rtscope",
        "measure",
        "--explain",
        "100us",
        "--explain-stacks",
        "on",
    ];
    let off = ["rtscope", "measure", "--explain", "100us"];
    let m = RunKind::Measure;
    let is_stacks = |r: RunStacks| matches!(r, RunStacks::Stacks { ref functions, traced_ns: 900, threshold_ns: 100_000 } if functions.len() == 1);
    assert!(is_stacks(RunStacks::of(&explained(with, &on), m)));
    assert!(is_stacks(RunStacks::of(
        &explained(with, &["rtscope", "measure", "--explain-stacks=auto"]),
        m
    )));
    assert_eq!(
        RunStacks::of(&explained(none, &off), m),
        RunStacks::NotAsked
    );
    assert_eq!(
        RunStacks::of(&explained(none, &on), m),
        RunStacks::NoneTaken { traced: 2 }
    );
    assert_eq!(
        RunStacks::of(
            &explained(none, &["rtscope", "measure", "--explain-stacks=on"]),
            m
        ),
        RunStacks::NoneTaken { traced: 2 }
    );
    // The last --explain-stacks given counts.
    let on_then_off = [
        "rtscope",
        "measure",
        "--explain-stacks",
        "on",
        "--explain-stacks=off",
    ];
    assert_eq!(
        RunStacks::of(&explained(with, &on_then_off), m),
        RunStacks::NotAsked
    );
    // Stacks on and nothing traced: every function's time is a real 0.
    assert_eq!(
        RunStacks::of(&explained(quiet, &on), m),
        RunStacks::Stacks {
            functions: vec![],
            traced_ns: 0,
            threshold_ns: 100_000,
        }
    );
    // noise takes stacks whenever it explains.
    assert_eq!(
        RunStacks::of(&explained(none, &["rtscope", "noise"]), RunKind::Noise),
        RunStacks::NoneTaken { traced: 2 }
    );
    assert!(matches!(
        RunStacks::of(&explained("{not json", &on), m),
        RunStacks::Unreadable(_)
    ));
}

/// Function rows of a run that did not ask for stacks name the handlers that led its spikes
/// (timer callbacks, tasklets): no kernel stack, so the run is explained without stacks — unless
/// a kept spike carries a stack (stored before stacks were off by default).
#[test]
fn handler_names_without_stacks_are_no_kernel_stacks() {
    let handlers = r#"{"counts":{"traced":2,"traced_ns":900},"functions":[{"function":"tcp_delack_timer","ns":115800,"spikes":2}],"worst":[{"tier":"traced","handler":{"function":"tcp_delack_timer"}},{"tier":"coarse"}]}"#;
    let off = ["rtscope", "measure", "--explain", "100us"];
    let m = RunKind::Measure;
    assert_eq!(
        RunStacks::of(&explained(handlers, &off), m),
        RunStacks::NotAsked
    );
    let kept = r#"{"counts":{"traced":2,"traced_ns":900},"functions":[{"function":"f","ns":800,"spikes":2}],"worst":[{"tier":"traced","stack":{"task":{"comm":"x","pid":1,"prio":120},"frames":["f"]}}]}"#;
    assert!(matches!(
        RunStacks::of(&explained(kept, &off), m),
        RunStacks::Stacks { ref functions, .. } if functions[0].function == "f"
    ));
}

#[test]
fn more_stored_rows_than_the_bound_are_summed_not_dropped() {
    let rows: Vec<FunctionTime> = (0..MAX_READ as u64 + 10)
        .map(|i| FunctionTime {
            function: format!("f{i}"),
            ns: 1,
            spikes: 1,
        })
        .collect();
    let b = bounded(rows);
    assert_eq!(b.len(), MAX_READ);
    assert_eq!(b[MAX_READ - 1].function, OTHER_FUNCTIONS);
    assert_eq!(b.iter().map(|r| r.ns).sum::<u64>(), MAX_READ as u64 + 10);
}
