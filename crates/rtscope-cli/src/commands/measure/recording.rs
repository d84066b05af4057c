//! `rtscope measure`'s database: opened before the run, so a bad file fails before anything
//! starts.

use crate::cli::MeasureArgs;
use crate::exit::UsageError;
use rtscope_session::record;
use rtscope_store::Store;

/// Opens the database unless `--no-db`.
pub fn open_store(a: &MeasureArgs) -> Result<Option<Store>, UsageError> {
    if a.rec.no_db {
        return Ok(None);
    }
    let path = a.rec.db.clone().unwrap_or_else(record::default_db);
    record::open(&path).map(Some)
}
