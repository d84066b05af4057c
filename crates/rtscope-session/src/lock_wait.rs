//! Waiting out another process's database lock, one way for every write a run makes outside
//! its checkpoints: the run's row, the audit's verdicts, its restated start, its end. A lock
//! held for seconds by another process (a `runs tag`, a long report, a `sqlite3` shell) is
//! waited out for at most [`LOCK_WAIT`], said once on stderr, and never taken as a failure
//! that loses the run. Checkpoints do not wait here: they keep their data in memory and retry
//! at the next tick (the control thread must keep draining the measuring threads).

use rtscope_store::{Store, StoreError};
use std::time::{Duration, Instant};

/// How long a write keeps retrying while another process holds the lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(120);

/// SQLite's own wait per try while retrying.
const TRY_WAIT: Duration = Duration::from_secs(1);

/// Runs `write` (one transaction) until another process's lock no longer refuses it, for at
/// most [`LOCK_WAIT`], saying once on stderr that it waits; then sets the store's busy timeout
/// to `after`. Errors other than a lock end it at once.
pub fn wait_out_lock<T>(
    store: &mut Store,
    after: Duration,
    mut write: impl FnMut(&mut Store) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let _ = store.set_busy_timeout(TRY_WAIT);
    let start = Instant::now();
    let mut said = false;
    let result = loop {
        match write(store) {
            Err(e) if e.is_busy() && start.elapsed() < LOCK_WAIT => {
                if !said {
                    said = true;
                    rtscope_common::error::warn(&format!(
                        "rtscope: {} is locked by another process: waiting for it (at most {} s)",
                        store.path().display(),
                        LOCK_WAIT.as_secs()
                    ));
                }
                // Some busy cases come back at once, without SQLite's busy handler (another
                // connection's snapshot): a short sleep keeps the retry from spinning a CPU.
                std::thread::sleep(Duration::from_millis(20));
            }
            other => break other,
        }
    };
    let _ = store.set_busy_timeout(after);
    result
}

#[cfg(test)]
mod tests {
    use super::wait_out_lock;
    use rtscope_store::Store;
    use std::time::Duration;

    /// A write refused by another connection's lock is retried until the lock goes, and
    /// another error ends the wait at its first try.
    #[test]
    fn a_lock_held_by_another_connection_is_waited_out_and_other_errors_end_the_wait() {
        let dir = std::env::temp_dir().join(format!("rtscope-lock-wait-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("l.db");
        let mut store = Store::open(&path).unwrap();
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            // The lock is let go only once the write was refused at least once.
            held.recv().unwrap();
            other.execute_batch("COMMIT").unwrap();
        });
        let mut tries = 0;
        let r = wait_out_lock(&mut store, Duration::from_millis(200), |s| {
            tries += 1;
            let r = s.set_checks(1, &[]);
            if tries == 1 {
                assert!(r.as_ref().is_err_and(|e| e.is_busy()), "{r:?}");
                release.send(()).unwrap();
            }
            r
        });
        holder.join().unwrap();
        assert!(tries >= 2, "retried: {tries}");
        assert!(r.as_ref().err().is_none_or(|e| !e.is_busy()), "{r:?}");
        let mut tries = 0;
        let missing = dir.join("no-such-dir").join("x.db");
        let mut gone = Store::open(&path).unwrap();
        let r = wait_out_lock(&mut gone, Duration::from_millis(200), |s| {
            tries += 1;
            s.set_checks(1, &[])?;
            Store::open(&missing).map(|_| ())
        });
        assert!(r.is_err() && tries == 1, "{r:?} after {tries} tries");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
