//! `rtscope export RUN`: a recorded run as CSV, JSON and Parquet (rtscope-export), and as
//! Prometheus, LAVA, KCIDB and JUnit (rtscope-fleet, via `commands::fleet`).

use crate::cli::import_export::{ExportArgs, ExportFormat};
use crate::commands::{fleet, runs};
use rtscope_common::error::ExitStatus;
use rtscope_export::ExportFormat as Format;
use std::io::Write;

/// Runs `rtscope export`.
pub fn run(a: &ExportArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let store = super::open_db(a.db.as_deref())?;
    let id = runs::resolve(&store, &a.run)?;
    // `-o -`: the JSON document on standard output (one document, so JSON only).
    if a.output.as_os_str() == "-" {
        if a.format.iter().any(|f| !matches!(f, ExportFormat::Json)) {
            return Err(crate::usage(
                "'-o -' writes the JSON document to standard output: use it with --format json",
            ));
        }
        let data = rtscope_export::load_without_samples(&store, id)?;
        let tables = rtscope_export::tables::all(&data);
        rtscope_export::write_json_to(out, id, &tables, &store).map_err(crate::lift_export)?;
        return Ok(ExitStatus::Success);
    }
    rtscope_export::prepare_dir(&a.output)?;
    let mut tables = None;
    // Each format once, in the order given.
    for (i, &f) in a.format.iter().enumerate() {
        if a.format[..i].contains(&f) {
            continue;
        }
        let format = match f {
            ExportFormat::Csv => Format::Csv,
            ExportFormat::Json => Format::Json,
            ExportFormat::Parquet => Format::Parquet,
            ExportFormat::Prometheus
            | ExportFormat::Lava
            | ExportFormat::Kcidb
            | ExportFormat::Junit => {
                fleet::export(f, a, &store, id, out)?;
                continue;
            }
        };
        let tables = match &mut tables {
            Some(t) => t,
            None => tables.insert({
                let data = rtscope_export::load_without_samples(&store, id)?;
                let mut all = rtscope_export::tables::all(&data);
                if a.wide {
                    all.push(rtscope_export::wide::histogram_wide(&data));
                }
                all
            }),
        };
        rtscope_export::write_format_streamed(format, &a.output, id, tables, &store, out)
            .map_err(crate::lift_export)?;
    }
    Ok(ExitStatus::Success)
}
