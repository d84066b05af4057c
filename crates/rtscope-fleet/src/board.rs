//! One board's run of a job, step by step, over one ssh connection ([`crate::master`]):
//!
//! 1. `connect`: the board's master authenticates (the only connection);
//! 2. `prepare`: `uname -m` and the remote directory, in one remote command;
//! 3. `copy`: the binary (unless installed there) and the job's files;
//! 4. `run`: rtscope there, its output streaming back ([`crate::remote`]);
//! 5. `fetch`: the database, its WAL should one be left, and the directory removed, in one
//!    remote command (`cleanup` alone when nothing is recorded, or after a failure).
//!
//! Each step but the run is bounded by the board's step timeout, and each one's end is told to
//! [`BoardRun::on_progress`].

use crate::master::Master;
use crate::remote::{self, sh_quote, Binary, Job, RemoteError, RemoteOutcome, Ssh, Stop};
use crate::targets::Target;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a board has done, told as each step ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// Connected (authenticated), its architecture read and its directory made.
    Ready {
        /// `uname -m` there.
        arch: String,
        /// Since the board started.
        took: Duration,
    },
    /// The binary and the job's files copied.
    Copied {
        /// Their size.
        bytes: u64,
        /// How long the copies took.
        took: Duration,
    },
    /// Its rtscope started; its output follows.
    Running,
    /// Its database fetched and its directory removed.
    Fetched {
        /// The database's size (with its WAL).
        bytes: u64,
        /// How long the step took.
        took: Duration,
    },
    /// Its directory removed (nothing recorded to fetch).
    CleanedUp {
        /// How long the step took.
        took: Duration,
    },
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |d: &Duration| d.as_secs_f64();
        let mb = |b: &u64| *b as f64 / 1e6;
        match self {
            Progress::Ready { arch, took } => {
                write!(f, "connected ({arch}) in {:.2} s", s(took))
            }
            Progress::Copied { bytes, took } => {
                write!(f, "copied {:.1} MB in {:.2} s", mb(bytes), s(took))
            }
            Progress::Running => write!(f, "running"),
            Progress::Fetched { bytes, took } => write!(
                f,
                "fetched its database ({:.1} MB) and cleaned up in {:.2} s",
                mb(bytes),
                s(took)
            ),
            Progress::CleanedUp { took } => write!(f, "cleaned up in {:.2} s", s(took)),
        }
    }
}

/// One board's run of a job.
pub struct BoardRun<'a> {
    /// The ssh command.
    pub ssh: &'a Ssh,
    /// The board.
    pub target: &'a Target,
    /// What it runs.
    pub job: &'a Job,
    /// Where its database is fetched to.
    pub local_db: PathBuf,
    /// Its connection's control socket (in the fan-out's [`crate::master::ControlDir`]);
    /// `None`: every step connects on its own.
    pub control: Option<PathBuf>,
    /// The fan-out's stop switch.
    pub stop: &'a Stop,
    /// Sees each line the board's rtscope prints.
    pub on_line: &'a (dyn Fn(&str) + Sync),
    /// Sees each step's end.
    pub on_progress: &'a (dyn Fn(Progress) + Sync),
}

impl BoardRun<'_> {
    /// Runs the job; the board's connection is closed and its remote directory removed on
    /// every way out.
    pub fn run(&self) -> Result<RemoteOutcome, RemoteError> {
        let t = self.target;
        if self.stop.is_stopped() {
            return Err(RemoteError::NotStarted);
        }
        let started = Instant::now();
        let master = match &self.control {
            Some(socket) => Some(Master::open(self.ssh, t, socket.clone(), self.stop)?),
            None => None,
        };
        let ssh = master
            .as_ref()
            .map_or_else(|| self.ssh.clone(), |m| self.ssh.through(m.socket()));
        let (arch, dir) = prepare(&ssh, t)?;
        (self.on_progress)(Progress::Ready {
            arch: arch.clone(),
            took: started.elapsed(),
        });
        let outcome = match self.copy_and_run(&ssh, &arch, &dir) {
            Ok((code, tail)) => self.finish(&ssh, &dir, code, &tail),
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            // Also after a failed fetch: `rm -rf` of a directory already gone does nothing.
            let _ = cleanup(&ssh, t, &dir);
        }
        // The connection closed (SIGTERM to its master) before the result is told.
        drop(master);
        outcome
    }

    /// Copies what the job needs and runs it; the remote rtscope's exit code and last lines.
    fn copy_and_run(
        &self,
        ssh: &Ssh,
        arch: &str,
        dir: &str,
    ) -> Result<(i32, remote::Tail), RemoteError> {
        let (t, job) = (self.target, self.job);
        let bin = remote::binary(t, arch)?;
        let started = Instant::now();
        let mut copies: Vec<(&Path, &str, &str)> = Vec::new();
        if let Binary::Copied(local) = &bin {
            copies.push((local, "rtscope", "700"));
        }
        copies.extend(
            job.files
                .iter()
                .map(|(p, n)| (p.as_path(), n.as_str(), "600")),
        );
        let mut bytes = 0;
        for (local, name, mode) in copies {
            bytes += std::fs::metadata(local)?.len();
            let dest = sh_quote(&format!("{dir}/{name}"));
            let cmd = format!("umask 077; cat > {dest} && chmod {mode} {dest}");
            ssh.output(t, "copy", &cmd, Some(local))?;
        }
        if bytes > 0 {
            (self.on_progress)(Progress::Copied {
                bytes,
                took: started.elapsed(),
            });
        }
        if self.stop.is_stopped() {
            return Err(RemoteError::NotStarted);
        }
        (self.on_progress)(Progress::Running);
        remote::measure(ssh, t, dir, job, &bin, self.on_line, self.stop)
    }

    /// Fetches the database (when the job records) and removes the remote directory. A run
    /// that ended by the SIGTERM of a local Ctrl-C is interrupted (3), whatever it managed to
    /// say; one that left no database failed in its own words, or was interrupted.
    fn finish(
        &self,
        ssh: &Ssh,
        dir: &str,
        code: i32,
        tail: &remote::Tail,
    ) -> Result<RemoteOutcome, RemoteError> {
        let started = Instant::now();
        // The shell's code for an rtscope killed by the stop's SIGTERM before it could handle
        // it (right after it started).
        let stopped = self.stop.is_stopped();
        let code = if stopped && code == 128 + libc::SIGTERM {
            3
        } else {
            code
        };
        let database = if self.job.record {
            let Some(bytes) = fetch_and_clean(ssh, self.target, dir, &self.local_db)? else {
                return Err(if stopped {
                    RemoteError::Interrupted
                } else {
                    RemoteError::NothingRecorded {
                        code,
                        message: tail.message(),
                    }
                });
            };
            (self.on_progress)(Progress::Fetched {
                bytes,
                took: started.elapsed(),
            });
            Some(self.local_db.clone())
        } else {
            cleanup(ssh, self.target, dir)?;
            (self.on_progress)(Progress::CleanedUp {
                took: started.elapsed(),
            });
            None
        };
        Ok(RemoteOutcome {
            exit_code: code,
            database,
        })
    }
}

/// The start time (clock ticks after boot) of process `$1` on the board, from its
/// `/proc/PID/stat` (field 22, the 20th after the command name, which may hold spaces).
const START_OF: &str = "sed 's/.*) //' \"/proc/$1/stat\" 2>/dev/null | cut -d' ' -f20";

/// Removes the board's directories that no fan-out owns any more, this user's only: each
/// directory's `.owner` names the process that owns it — the sshd process of its fan-out's
/// connection, `PID START` — and a directory whose owner is gone (a local rtscope SIGKILLed
/// during the copy: its connection closed) is removed. A directory without an owner (made by
/// an older rtscope) is removed once a day old. A running board's directory is its watcher's
/// to remove, and its connection lives, so it is kept.
fn sweep_script() -> String {
    format!(
        "start_of() {{ {START_OF}; }}; \
         for d in /tmp/rtscope.??????; do \
         [ -d \"$d\" ] && [ ! -L \"$d\" ] && [ -O \"$d\" ] || continue; \
         if [ -f \"$d/.owner\" ]; then read p s < \"$d/.owner\" || continue; \
         case \"$p\" in ''|*[!0-9]*) continue;; esac; \
         [ \"$(start_of \"$p\")\" = \"$s\" ] && continue; \
         elif [ -z \"$(find \"$d\" -maxdepth 0 -mmin +1440 2>/dev/null)\" ]; then continue; fi; \
         rm -rf \"$d\"; done"
    )
}

/// The `prepare` step: the board's `uname -m` and a new private remote directory, owned by
/// this connection's sshd process (`.owner`, see [`sweep_script`]); the directories of
/// fan-outs that are gone are removed first.
fn prepare(ssh: &Ssh, t: &Target) -> Result<(String, String), RemoteError> {
    let out = ssh.output(t, "prepare", &prepare_script(), None)?;
    let text = String::from_utf8_lossy(&out);
    let mut lines = text.lines().map(str::trim);
    let (arch, dir) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    if !dir.starts_with("/tmp/rtscope.")
        || dir.contains(|c: char| !c.is_ascii_alphanumeric() && c != '/' && c != '.')
    {
        return Err(RemoteError::Step {
            step: "prepare",
            why: format!("unexpected remote directory '{dir}'"),
        });
    }
    Ok((arch.to_string(), dir.to_string()))
}

/// The `prepare` step's remote command (run by the shell sshd starts, whose parent is the
/// connection's sshd process: `$PPID`).
fn prepare_script() -> String {
    format!(
        "umask 077; {}; uname -m && d=$(mktemp -d /tmp/rtscope.XXXXXX) && \
         echo \"$PPID $(start_of \"$PPID\")\" > \"$d/.owner\" && echo \"$d\"",
        sweep_script()
    )
}

fn cleanup(ssh: &Ssh, t: &Target, dir: &str) -> Result<(), RemoteError> {
    let cmd = format!("cd / && rm -rf {}", sh_quote(dir));
    ssh.output(t, "cleanup", &cmd, None).map(drop)
}

/// The exit code of [`fetch_script`] when the directory cannot be removed.
const CLEANUP_FAILED: i32 = 4;

/// The exit code of [`fetch_script`] when the run left no database (the directory is
/// removed all the same).
const NO_DATABASE: i32 = 5;

/// Prints the size of `dir/run.db` on a line, the database, then its WAL when one is left,
/// and removes `dir`: exit 0, else the failing command's code ([`CLEANUP_FAILED`] for the
/// removal, [`NO_DATABASE`] when there is none).
fn fetch_script(dir: &str) -> String {
    format!(
        "cd / || exit 1; d={}; db=\"$d/run.db\"; \
         if [ -f \"$db\" ]; then wc -c < \"$db\" && cat \"$db\" && \
         {{ [ ! -s \"$db-wal\" ] || cat \"$db-wal\"; }}; rc=$?; \
         else echo \"no database $db\" >&2; rc={NO_DATABASE}; fi; \
         rm -rf \"$d\" || {{ echo \"cannot remove $d\" >&2; exit {CLEANUP_FAILED}; }}; exit $rc",
        sh_quote(dir)
    )
}

/// What is wrong with the output of [`fetch_script`].
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum FetchedError {
    #[error("no size line")]
    NoSizeLine,
    #[error("'{0}' is not a size")]
    NotASize(String),
    #[error("{got} of the {size} bytes of run.db arrived")]
    Short { got: usize, size: usize },
}

/// The database and its WAL in the output of [`fetch_script`].
fn split_fetched(out: &[u8]) -> Result<(&[u8], &[u8]), FetchedError> {
    let nl = out
        .iter()
        .position(|&b| b == b'\n')
        .ok_or(FetchedError::NoSizeLine)?;
    let size: usize = std::str::from_utf8(&out[..nl])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| {
            FetchedError::NotASize(String::from_utf8_lossy(&out[..nl.min(40)]).into_owned())
        })?;
    let rest = &out[nl + 1..];
    if rest.len() < size {
        return Err(FetchedError::Short {
            got: rest.len(),
            size,
        });
    }
    Ok(rest.split_at(size))
}

/// The `fetch` step: `dir/run.db` (and its WAL, should the remote rtscope have left one) to
/// `local_db`, and `dir` removed; the bytes fetched, `None` when the run left no database.
fn fetch_and_clean(
    ssh: &Ssh,
    t: &Target,
    dir: &str,
    local_db: &Path,
) -> Result<Option<u64>, RemoteError> {
    let (code, out, failed) = ssh.step_status(t, "fetch", &fetch_script(dir))?;
    match code {
        Some(0) => {}
        Some(NO_DATABASE) => return Ok(None),
        Some(CLEANUP_FAILED) => {
            return Err(match failed {
                RemoteError::Step { why, .. } => RemoteError::Step {
                    step: "cleanup",
                    why,
                },
                e => e,
            })
        }
        _ => return Err(failed),
    }
    let (db, wal) = split_fetched(&out).map_err(|e| RemoteError::Step {
        step: "fetch",
        why: e.to_string(),
    })?;
    std::fs::write(local_db, db)?;
    if !wal.is_empty() {
        std::fs::write(remote::wal_of(local_db), wal)?;
    }
    Ok(Some((db.len() + wal.len()) as u64))
}

#[cfg(test)]
mod tests {
    /// Issue 67 item 10: the prepare step's directory names its owner (the shell's parent,
    /// here this test), and the next prepare removes the directories whose owner is gone —
    /// a partial binary left by a SIGKILLed rtscope — but keeps a living owner's and a fresh
    /// one without an owner.
    #[test]
    fn prepare_removes_the_directories_of_gone_owners_only() {
        use std::process::Command;
        let sh = |script: &str| {
            let o = Command::new("sh").arg("-c").arg(script).output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8(o.stdout).unwrap()
        };
        let out = sh(&super::prepare_script());
        let mut lines = out.lines();
        assert!(lines.next().is_some_and(|arch| !arch.is_empty()));
        let live = std::path::PathBuf::from(lines.next().unwrap());
        let owner = std::fs::read_to_string(live.join(".owner")).unwrap();
        assert!(
            owner.starts_with(&format!("{} ", std::process::id())),
            "{owner}"
        );
        // A directory whose owner is gone (a PID with another start time), with the partial
        // binary a killed copy leaves; and one made by an older rtscope, without an owner.
        let gone = std::path::PathBuf::from(sh("mktemp -d /tmp/rtscope.XXXXXX").trim());
        let (pid, start) = owner.trim().split_once(' ').unwrap();
        std::fs::write(gone.join(".owner"), format!("{pid} 1{start}\n")).unwrap();
        std::fs::write(gone.join("rtscope"), b"\x7fELF partial").unwrap();
        let old = std::path::PathBuf::from(sh("mktemp -d /tmp/rtscope.XXXXXX").trim());
        let again = sh(&super::prepare_script());
        let newer = std::path::PathBuf::from(again.lines().nth(1).unwrap());
        assert!(!gone.exists(), "{} was left", gone.display());
        assert!(live.is_dir() && old.is_dir() && newer.is_dir());
        for d in [live, old, newer] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    use super::*;
    use std::process::Command;

    /// The fetch script, run by a local `sh`: the size line, the database and the WAL, the
    /// directory removed; without a database it fails and still removes the directory.
    #[test]
    fn the_fetch_script_sends_database_and_wal_then_removes_the_directory() {
        let base = std::env::temp_dir().join(format!("rtscope-fetch-test-{}", std::process::id()));
        for wal in [&b""[..], &b"wal\n\x00bytes"[..]] {
            std::fs::create_dir_all(&base).unwrap();
            let db = b"SQLite format 3\x00\n\nrest";
            std::fs::write(base.join("run.db"), db).unwrap();
            if !wal.is_empty() {
                std::fs::write(base.join("run.db-wal"), wal).unwrap();
            }
            let o = Command::new("sh")
                .args(["-c", &fetch_script(&base.to_string_lossy())])
                .output()
                .unwrap();
            assert!(o.status.success(), "{o:?}");
            assert_eq!(split_fetched(&o.stdout).unwrap(), (&db[..], wal));
            assert!(!base.exists());
        }
        std::fs::create_dir_all(&base).unwrap();
        let o = Command::new("sh")
            .args(["-c", &fetch_script(&base.to_string_lossy())])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(NO_DATABASE));
        assert!(String::from_utf8_lossy(&o.stderr).contains("no database"));
        assert!(!base.exists());
    }

    #[test]
    fn a_short_fetch_is_an_error() {
        assert_eq!(
            split_fetched(b"10\nabc").unwrap_err().to_string(),
            "3 of the 10 bytes of run.db arrived"
        );
        assert_eq!(
            split_fetched(b"x\nabc").unwrap_err(),
            FetchedError::NotASize("x".into())
        );
        assert_eq!(split_fetched(b"").unwrap_err(), FetchedError::NoSizeLine);
        // wc's padding (busybox, BSD) is read.
        assert_eq!(
            split_fetched(b"   3\nabcW").unwrap(),
            (&b"abc"[..], &b"W"[..])
        );
    }

    #[test]
    fn progress_reads_as_a_sentence() {
        let p = Progress::Copied {
            bytes: 4_128_456,
            took: Duration::from_millis(250),
        };
        assert_eq!(p.to_string(), "copied 4.1 MB in 0.25 s");
    }
}
