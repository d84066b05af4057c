//! One file per subcommand: each turns its clap arguments into a library call and prints.

pub mod check;
pub mod compare;
pub mod cyclictest;
pub mod export;
pub mod fleet;
pub mod import;
pub mod load;
pub mod measure;
pub mod merge;
pub mod noise;
pub mod noise_hwlat;
pub mod report;
pub mod report_watch;
pub mod respond;
pub mod run;
pub mod runs;
pub mod runs_explain;
pub mod tail;
pub mod watch;

/// Opens the run database of a command that only reads it (`--db PATH`, else the default):
/// rtscope-store's `Store::open_existing`, its error a usage error with the store's hint.
pub(crate) fn open_db(
    db: Option<&std::path::Path>,
) -> Result<rtscope_store::Store, rtscope_common::error::UsageError> {
    rtscope_store::Store::open_existing(db).map_err(|e| {
        let hint = e.hint();
        rtscope_common::error::UsageError::from_error(e).hint(hint)
    })
}
