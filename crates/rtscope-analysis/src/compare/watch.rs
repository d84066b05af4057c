//! A period of an `rtscope watch` series as a group of compare operands (`watch:SERIES@FROM..TO`):
//! one operand per hour of all measured CPUs (rows older than `--keep-hours` are days, kept as
//! they are), so two periods — before and after an update — are compared as two groups of
//! repeats: per-statistic verdicts with the significance test over the hours (docs/compare.md).

use super::model::{RunData, RunSettings, Totals};
use rtscope_report::watch::cells::{self, Cell};
use rtscope_store::watch::{Level, WatchWindow};
use rtscope_store::RunStatus;

/// The level each operand is: an hour.
pub const OPERAND: Level = Level::Hour;

/// The operands of a period: its rows merged into hours (all CPUs), oldest first. Each is
/// named `SERIES hour 2026-11-24 13:00` (or `day`), its id the Unix second it starts at.
pub fn operands(series: &str, rows: &[WatchWindow]) -> Vec<RunData> {
    let shown = cells::at(rows, OPERAND);
    cells::all_cpus(&shown)
        .map(|c| operand(series, c))
        .collect()
}

/// How many operands are days (older than the series' `--keep-hours`): their maxima are a
/// day's, not an hour's.
pub fn days(runs: &[RunData]) -> usize {
    runs.iter()
        .filter(|r| r.case.as_deref() == Some("day"))
        .count()
}

fn operand(series: &str, c: &Cell) -> RunData {
    let start_s = c.start_ns.div_euclid(1_000_000_000);
    let kind = if c.level > OPERAND { "day" } else { "hour" };
    let when = rtscope_core::civil::utc_text(start_s);
    RunData {
        id: start_s,
        label: Some(format!("{series} {kind} {}", &when[..16])),
        status: RunStatus::Complete,
        tags: vec![("series".into(), series.to_string())],
        kernel: None,
        campaign: None,
        case: Some(kind.to_string()),
        scenario: None,
        started: when,
        totals: Totals::of_histogram(c.histogram.clone(), c.missed),
        run: RunSettings::default(),
        settings: Vec::new(),
        kind: rtscope_store::RunKind::Measure,
        noise: None,
        noises_only: false,
    }
}
