//! Where a run's results go: the options `measure`, `noise` and `respond` share.

use clap::Args;
use rtscope_common::error::UsageError;
use rtscope_session::output::OutputFile;
use rtscope_session::record::RecordSpec;
use rtscope_session::{plan::RunPlan, preflight};
use rtscope_store::{RunKind, Store};
use std::path::PathBuf;

/// `--json`, `--quiet`, and where the run is recorded: `--db`, `--no-db`, `--label`, `--tag`.
/// A command words `--json` (and `--quiet`) for its own document with
/// [`crate::cli::values::reworded`].
#[derive(Debug, Clone, Default, Args)]
pub struct RecordArgs {
    /// Write the results as JSON
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// No progress output
    #[arg(long, short = 'q', help_heading = "Output")]
    pub quiet: bool,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH", help_heading = "Recording")]
    pub db: Option<PathBuf>,
    /// Do not record the run in the database
    #[arg(long, conflicts_with = "db", help_heading = "Recording")]
    pub no_db: bool,
    /// A name for the run, e.g. idle, hackbench or isolated
    #[arg(long, value_name = "NAME", help_heading = "Recording")]
    pub label: Option<String>,
    /// A free-form tag, e.g. --tag kernel=rt --tag board=rpi4 (repeatable)
    #[arg(long = "tag", value_name = "KEY=VALUE", help_heading = "Recording")]
    pub tags: Vec<String>,
}

impl RecordArgs {
    /// `--label` and every `--tag` checked before anything is measured.
    pub fn check(&self) -> Result<(), rtscope_common::error::UsageError> {
        rtscope_common::names::check_label_and_tags(self.label.as_deref(), &self.tags)
    }

    /// The database the run is recorded in (`--db`, else `$RTSCOPE_DB`, else ./rtscope.db);
    /// `None` with `--no-db`.
    pub fn open_store(
        &self,
    ) -> Result<Option<rtscope_store::Store>, rtscope_common::error::UsageError> {
        if self.no_db {
            return Ok(None);
        }
        rtscope_session::record::open_given(self.db.as_deref()).map(Some)
    }

    /// What a measuring command does before its session starts, in this order: the `--json`
    /// file prepared, the database opened (a bad one fails before anything starts) and the
    /// preflight audit of `plan`, before any setting is applied (its bad verdicts warned, its
    /// rows in the record of the run, of `kind`). Returns the `--json` file, the database
    /// (`None`: `--no-db`) and what the run is recorded as.
    pub fn prepare(
        &self,
        plan: &RunPlan,
        kind: RunKind,
        command_line: Vec<String>,
    ) -> Result<(Option<OutputFile>, Option<Store>, RecordSpec), UsageError> {
        let json_file = OutputFile::prepare_given(self.json.as_deref(), "--json")?;
        let store = self.open_store()?;
        let spec = RecordSpec {
            kind,
            label: self.label.clone(),
            tags: self.tags.clone(),
            command_line,
            config_json: String::new(),
            monitor_interval: None,
            checks: preflight::warned_rows(plan),
            raw: false,
        };
        Ok((json_file, store, spec))
    }
}
