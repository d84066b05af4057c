//! `rtscope measure --target [USER@]HOST[:PORT] …`: the same measurement on remote boards over
//! ssh (rtscope-fleet's `remote`), at most `--target-jobs` at a time; each board's database is
//! fetched and merged here tagged `board=HOST`. One board's failure does not stop the others;
//! it is reported with its reason. Exit: 2 when a board failed, else 1 when a board's limits
//! were exceeded, 3 when a board's run was interrupted, else 0.

use crate::cli::MeasureArgs;
use crate::exit::{ExitStatus, UsageError};
use rtscope_fleet::remote::{self, RemoteError, RemoteOutcome, Ssh, Target};
use rtscope_session::record;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Options that name local files or the fan-out: not passed to the boards.
const LOCAL_ONLY: [&str; 4] = ["--target", "--target-jobs", "--db", "--metrics-file"];

/// The arguments for the boards: the command line without the local-only options.
fn remote_args(command_line: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = command_line.iter().skip(1);
    while let Some(a) = it.next() {
        if LOCAL_ONLY.contains(&a.as_str()) {
            it.next();
        } else if !LOCAL_ONLY.iter().any(|o| a.starts_with(&format!("{o}="))) {
            out.push(a.clone());
        }
    }
    out
}

/// The local binary for a board's `uname -m`: this one for this architecture, else
/// `rtscope-ARCH` beside it (the static release binaries).
fn binary_for(arch: &str) -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    if arch == std::env::consts::ARCH {
        return Ok(me);
    }
    let other = me.with_file_name(format!("rtscope-{arch}"));
    if other.is_file() {
        Ok(other)
    } else {
        Err(other.display().to_string())
    }
}

/// Runs `rtscope measure --target …`.
pub fn run(
    a: &MeasureArgs,
    command_line: &[String],
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let targets = a
        .targets
        .iter()
        .map(|t| Target::parse(t).map_err(|e| UsageError::new(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    if a.metrics_file.is_some() {
        return Err(UsageError::new("--metrics-file cannot be used with --target")
            .hint("write the textfile on each board, or export the merged runs with `rtscope export RUN -f prometheus`")
            .into());
    }
    let db = a.db.clone().unwrap_or_else(record::default_db);
    let mut store = record::open(&db)?;
    let args = remote_args(command_line);
    let ssh = Ssh::from_env();
    let scratch = std::env::temp_dir().join(format!("rtscope-remote-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let mut results: Vec<(Target, Result<RemoteOutcome, RemoteError>)> = Vec::new();
    for chunk in targets.chunks(a.target_jobs.max(1)) {
        // The boards' output comes here through a channel and is written by this thread:
        // `out` (stdout, locked) is this thread's.
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::scope(|s| -> std::io::Result<()> {
            let handles: Vec<_> = chunk
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let (ssh, args, scratch, tx) = (&ssh, &args, &scratch, tx.clone());
                    s.spawn(move || {
                        let local = scratch.join(format!("{i}-{}.db", t.name));
                        let tx = std::sync::Mutex::new(tx);
                        let print = |line: &str| {
                            if let Ok(tx) = tx.lock() {
                                let _ = tx.send(format!("[{}] {line}", t.name));
                            }
                        };
                        remote::run_on(ssh, t, &binary_for, args, &local, &print)
                    })
                })
                .collect();
            drop(tx);
            for line in rx {
                writeln!(out, "{line}")?;
                out.flush()?;
            }
            for (t, h) in chunk.iter().zip(handles) {
                let r = h.join().unwrap_or_else(|_| {
                    Err(RemoteError::Io(std::io::Error::other(
                        "the board's thread panicked",
                    )))
                });
                results.push((t.clone(), r));
            }
            Ok(())
        })?;
    }
    let status = report(&mut store, &results, out)?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(status)
}

fn report(
    store: &mut rtscope_store::Store,
    results: &[(Target, Result<RemoteOutcome, RemoteError>)],
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let mut status = ExitStatus::Success;
    let mut worse = |s: ExitStatus| {
        let rank = |s: ExitStatus| match s {
            ExitStatus::Success => 0,
            ExitStatus::Interrupted => 1,
            ExitStatus::LimitExceeded => 2,
            _ => 3,
        };
        if rank(s) > rank(status) {
            status = s;
        }
    };
    for (t, r) in results {
        match r {
            Ok(o) => {
                let tags = [("board".to_string(), t.name.clone())];
                match store.merge_from(&o.database, &tags) {
                    Ok(m) => writeln!(
                        out,
                        "board {}: exit {}, {} run(s) merged into {}",
                        t.name,
                        o.exit_code,
                        m.added.len(),
                        store.path().display()
                    )?,
                    Err(e) => {
                        eprintln!("rtscope: board {}: cannot merge its runs: {e}", t.name);
                        worse(ExitStatus::Usage);
                    }
                }
                worse(match o.exit_code {
                    0 => ExitStatus::Success,
                    1 => ExitStatus::LimitExceeded,
                    3 => ExitStatus::Interrupted,
                    _ => ExitStatus::Usage,
                });
                remove_db(&o.database);
            }
            Err(e) => {
                eprintln!("rtscope: board {} failed: {e}", t.name);
                worse(ExitStatus::Usage);
            }
        }
    }
    Ok(status)
}

fn remove_db(path: &Path) {
    let _ = std::fs::remove_file(path);
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let _ = std::fs::remove_file(PathBuf::from(wal));
}

#[cfg(test)]
mod tests {
    #[test]
    fn local_only_options_stay_here() {
        let cl: Vec<String> = [
            "rtscope",
            "measure",
            "-l",
            "100",
            "--target",
            "a",
            "--target=b:22",
            "--db",
            "x.db",
            "--target-jobs",
            "2",
            "--label",
            "idle",
            "--db=y.db",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            super::remote_args(&cl),
            ["measure", "-l", "100", "--label", "idle"]
        );
    }
}
