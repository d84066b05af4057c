//! `until_tail` beside a running session: on the control thread's ticks a due check is started
//! in a thread of its own (SCHED_OTHER: the control thread's real-time policy is reset on
//! fork, and it keeps the housekeeping CPUs), which reads the run as its checkpoints have
//! recorded it, through a connection of its own, and analyses each thread as `rtscope tail`
//! does; a later tick collects it, and stops the run (as a Ctrl-C would, but recorded
//! complete) when every thread is settled. After the run, the whole recorded run is analysed
//! and the outcome recorded. The measuring threads never see any of it.

use super::{Check, Checks, ThreadStanding, UntilTail, UntilTailRun};
use rtscope_core::Nanos;
use rtscope_engine::{sys, Run};
use rtscope_evt::precision::Standing;
use rtscope_evt::request::{self, Request};
use rtscope_evt::Options;
use rtscope_store::{RunId, Store};
use std::path::PathBuf;
use std::thread::JoinHandle;

/// A check in progress: what it read up to, and the thread analysing.
type Pending = (Nanos, JoinHandle<Result<Vec<ThreadStanding>, CheckError>>);

/// Why a run could not be analysed: the database's error or the tail analysis's, in their
/// own words.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckError {
    /// The database could not be opened or read.
    #[error(transparent)]
    Store(#[from] rtscope_store::StoreError),
    /// A thread's samples could not be read or analysed (`rtscope tail`'s own error).
    #[error(transparent)]
    Tail(#[from] rtscope_evt::request::TailError),
}

/// The checks of one running run.
pub(crate) struct Watch {
    db: PathBuf,
    id: RunId,
    checks: Checks,
    pending: Option<Pending>,
}

impl Watch {
    /// Watches run `id` of database `db` by `run`'s rule.
    pub(crate) fn new(db: PathBuf, id: RunId, run: UntilTailRun) -> Watch {
        Watch {
            db,
            id,
            checks: Checks::new(run),
            pending: None,
        }
    }

    /// On a tick of the control thread (after its checkpoint): collects a finished check
    /// (stopping `run` when it settled it) and returns its line; starts a due one.
    pub(crate) fn tick(&mut self, run: &Run) -> Option<String> {
        if run.is_finished() {
            // Ended by itself (max_duration) or by a signal: the whole run is analysed next.
            return None;
        }
        let line = self.collect();
        if self.checks.settled_by.is_some() {
            run.stop();
        }
        let clock = sys::clock_id(run.config().clock);
        let elapsed = Nanos(sys::now(clock).0.saturating_sub(run.clock_start().0));
        if self.pending.is_none() && self.checks.due(elapsed) {
            let (db, id, rule) = (self.db.clone(), self.id, self.checks.run.rule);
            let spawned = std::thread::Builder::new()
                .name("until-tail".into())
                .spawn(move || {
                    // SCHED_RESET_ON_FORK already made it SCHED_OTHER; said here too, so the
                    // analysis never competes with the housekeeping threads at their priority.
                    rtscope_session::housekeeping::reset_current();
                    let store = Store::open(&db)?;
                    analyse_run(&store, id, &rule)
                });
            match spawned {
                Ok(h) => self.pending = Some((elapsed, h)),
                Err(e) => self.failed(elapsed, &e.to_string()),
            }
        }
        line
    }

    /// The finished check's line, if one finished.
    fn collect(&mut self) -> Option<String> {
        let (at, h) = self.pending.take_if(|(_, h)| h.is_finished())?;
        match h.join() {
            Ok(Ok(threads)) => {
                self.checks.add(Check { at, threads });
                Some(super::check_line(&self.checks))
            }
            Ok(Err(e)) => {
                self.failed(at, &e.to_string());
                None
            }
            Err(_) => {
                self.failed(at, "the analysis panicked");
                None
            }
        }
    }

    fn failed(&mut self, at: Nanos, why: &str) {
        self.checks.skip(at);
        rtscope_common::error::warn(&format!(
            "rtscope: warning: the tail check of run {} at {} could not be made: {why}",
            self.id,
            super::when(at)
        ));
    }

    /// After the run's end was recorded: waits for a check still running (its answer is
    /// superseded), analyses the whole recorded run (unless `interrupted`), records the
    /// outcome with the run and returns the run's last line.
    pub(crate) fn finish(mut self, store: &mut Store, interrupted: bool) -> String {
        if let Some((_, h)) = self.pending.take() {
            let _ = h.join();
        }
        let whole = if interrupted {
            Ok(Vec::new())
        } else {
            analyse_run(store, self.id, &self.checks.run.rule)
        };
        let whole = match whole {
            Ok(w) => w,
            Err(e) => return format!("until_tail: the run could not be analysed: {e}"),
        };
        let tag = if interrupted {
            "interrupted"
        } else {
            super::outcome(&whole)
        };
        let facts = super::facts(&self.checks, &whole, interrupted);
        let recorded = store
            .set_tag(self.id, super::TAG, Some(tag))
            .and_then(|()| store.set_environment(self.id, &facts));
        if let Err(e) = recorded {
            rtscope_common::error::warn(&format!(
                "error: the until_tail outcome of run {} could not be recorded: {e}",
                self.id
            ));
        }
        super::final_line(&self.checks, self.id, &whole, interrupted)
    }
}

/// Each thread of run `id` analysed as `rtscope tail RUN --probability P` analyses it, and
/// where it stands against `rule`'s precision.
pub(crate) fn analyse_run(
    store: &Store,
    id: RunId,
    rule: &UntilTail,
) -> Result<Vec<ThreadStanding>, CheckError> {
    let o = Options {
        probabilities: vec![rule.probability],
        ..Options::default()
    };
    let r = Request::new(id, None, o, Vec::new(), false);
    let outcome = request::run(store, &r)?;
    let standings = (outcome.threads.iter())
        .map(|t| ThreadStanding {
            title: (t.who.cpu).map_or(format!("thread {}", t.who.thread), |c| format!("CPU {c}")),
            thread: t.who.thread,
            standing: Standing::of(&t.analysis, rule.probability, rule.precision),
            settled: false,
        })
        .collect();
    Ok(standings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_missing_from_the_database_fails_its_check_in_the_stores_words() {
        let dir = std::env::temp_dir().join(format!("rtscope-until-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = Store::open(&dir.join("t.db")).unwrap();
        let rule = UntilTail {
            probability: 1e-6,
            precision: 0.1,
            max_duration: Nanos::from_secs(60),
        };
        let e = analyse_run(&store, 42, &rule).unwrap_err();
        let expected = store.run(42).unwrap_err().to_string();
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
        use rtscope_evt::request::TailError;
        assert!(matches!(e, CheckError::Tail(TailError::Store(_))), "{e:?}");
        assert_eq!(e.to_string(), expected);
    }
}
