//! One job on many boards: at most `jobs` boards at a time, each over one ssh connection (its
//! ControlMaster's socket in a private directory of the fan-out, removed on every way out),
//! their output streamed here line by line (`[BOARD] …`) and each step's end told on stderr,
//! a board's failure reported with its reason without stopping the others,
//! a local SIGINT/SIGTERM/SIGHUP stopping every board's run (recorded there as interrupted,
//! still fetched and merged), and the fetched databases merged into the local store tagged
//! `board=NAME` (and the board's tags of targets.toml).

use crate::board::{BoardRun, Progress};
use crate::master::ControlDir;
use crate::remote::{self, Job, RemoteError, RemoteOutcome, Ssh, Stop};
use crate::targets::{Target, Targets};
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_common::signals;
use rtscope_core::Nanos;
use rtscope_formats::missing::{BoardEnd, MissingBoard};
use rtscope_store::Store;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// One board's result.
#[derive(Debug)]
pub struct BoardResult {
    /// The board.
    pub target: Target,
    /// Its run, or why it failed.
    pub outcome: Result<RemoteOutcome, RemoteError>,
}

/// Boards run at the same time without `--target-jobs`: every board, at most this many (each
/// is an ssh process or two and a thread here; a bastion's sshd drops unauthenticated
/// connections beyond its `MaxStartups`, 10 by default).
pub const DEFAULT_MAX_JOBS: usize = 16;

/// `--target-jobs` for `boards` boards: the value given, else every board up to
/// [`DEFAULT_MAX_JOBS`].
pub fn jobs(given: Option<u16>, boards: usize) -> usize {
    given.map_or(boards.clamp(1, DEFAULT_MAX_JOBS), usize::from)
}

/// A line for the terminal: a board's output (stdout) or the end of one of its steps
/// (stderr).
enum Line {
    Output(String),
    Progress(String),
}

/// What every board's worker thread shares.
struct Workers<'a> {
    ssh: &'a Ssh,
    targets: &'a [Target],
    job: &'a Job,
    bare: bool,
    next: AtomicUsize,
    stop: Stop,
    scratch: PathBuf,
    control: ControlDir,
    slots: Vec<std::sync::Mutex<Option<BoardResult>>>,
}

impl Workers<'_> {
    /// One worker: takes the next board until none is left, sending its lines to `tx`.
    fn work(&self, tx: &mpsc::Sender<Line>) {
        loop {
            let i = self.next.fetch_add(1, Ordering::SeqCst);
            let Some(t) = self.targets.get(i) else { break };
            let tx = std::sync::Mutex::new(tx.clone());
            let send = |line: Line| {
                if let Ok(tx) = tx.lock() {
                    let _ = tx.send(line);
                }
            };
            let print = |line: &str| {
                // A board's text reaches this terminal: no escape sequence of its own.
                let line = printable(line);
                send(Line::Output(if self.bare {
                    line
                } else {
                    format!("[{}] {line}", t.name)
                }));
            };
            let progress = |p: Progress| {
                send(Line::Progress(format!("rtscope: [{}] {p}", t.name)));
            };
            let outcome = BoardRun {
                ssh: self.ssh,
                target: t,
                job: self.job,
                local_db: self.scratch.join(format!("{i}.db")),
                control: Some(self.control.socket(i)),
                stop: &self.stop,
                on_line: &print,
                on_progress: &progress,
            }
            .run();
            if let Ok(mut slot) = self.slots[i].lock() {
                *slot = Some(BoardResult {
                    target: t.clone(),
                    outcome,
                });
            }
        }
    }

    /// Every board's result, in the targets' order (a worker that panicked: an error).
    fn results(self) -> Vec<BoardResult> {
        self.slots
            .into_iter()
            .zip(self.targets)
            .map(|(slot, t)| {
                slot.into_inner()
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| BoardResult {
                        target: t.clone(),
                        outcome: Err(RemoteError::Io(io::Error::other(
                            "the board's thread panicked",
                        ))),
                    })
            })
            .collect()
    }
}

/// A board's line safe for a terminal: control characters escaped ([`rtscope_core::text::
/// escape`]), tabs kept (tables).
fn printable(line: &str) -> String {
    line.split('\t')
        .map(rtscope_core::text::escape)
        .collect::<Vec<_>>()
        .join("\t")
}

/// Writes the boards' lines as they come: output to `out` (a closed stdout loses the text,
/// never the boards' runs: the first error is returned at the end), progress to `err` (best
/// effort: a closed stderr changes nothing).
fn write_lines(
    rx: mpsc::Receiver<Line>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    let mut write_error = None;
    for line in rx {
        match line {
            Line::Output(line) if write_error.is_none() => {
                if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
                    write_error = Some(e);
                }
            }
            Line::Output(_) => {}
            Line::Progress(line) => {
                let _ = writeln!(err, "{line}").and_then(|()| err.flush());
            }
        }
    }
    write_error.map_or(Ok(()), Err)
}

/// Runs `job` on `targets`, at most `jobs` at a time, writing the boards' output to `out`
/// (each line prefixed `[BOARD] ` unless `bare`) and their steps' ends to `err`. Blocks the
/// run signals in the calling thread for the rest of the process (a signal stops the boards'
/// runs instead of killing this one).
pub fn fan_out(
    ssh: &Ssh,
    targets: &[Target],
    job: &Job,
    jobs: usize,
    bare: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<Vec<BoardResult>> {
    signals::hold_signals();
    let scratch = std::env::temp_dir().join(format!("rtscope-remote-{}", std::process::id()));
    // The control directory is removed when `w` is dropped: on return, on a panic, and after
    // a Ctrl-C (which stops the boards, whose steps then end).
    let w = Workers {
        ssh,
        targets,
        job,
        bare,
        next: AtomicUsize::new(0),
        stop: Stop::default(),
        control: ControlDir::create()?,
        slots: targets
            .iter()
            .map(|_| std::sync::Mutex::new(None))
            .collect(),
        scratch,
    };
    std::fs::create_dir_all(&w.scratch)?;
    let done = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<Line>();
    let written = std::thread::scope(|s| -> io::Result<()> {
        s.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                if signals::wait_run_signal(Nanos::from_ms(100))
                    .is_some_and(signals::is_stop_signal)
                {
                    w.stop.stop();
                }
            }
        });
        let workers: Vec<_> = (0..jobs.clamp(1, targets.len().max(1)))
            .map(|_| {
                let tx = tx.clone();
                let w = &w;
                s.spawn(move || w.work(&tx))
            })
            .collect();
        drop(tx);
        // This thread writes: `out` (stdout, locked) is its own.
        let written = write_lines(rx, out, err);
        for worker in workers {
            let _ = worker.join();
        }
        done.store(true, Ordering::SeqCst);
        written
    });
    let scratch = w.scratch.clone();
    let results = w.results();
    // Removed by `merge` when the fetched databases are; empty when no board recorded.
    let _ = std::fs::remove_dir(&scratch);
    written.map(|()| results)
}

/// The exit status of a remote rtscope's code.
fn status_of(code: i32) -> ExitStatus {
    match code {
        0 => ExitStatus::Success,
        1 => ExitStatus::LimitExceeded,
        3 => ExitStatus::Interrupted,
        _ => ExitStatus::Usage,
    }
}

/// The worse of two statuses: a failed board (2) over a limit exceeded (1) over an
/// interruption (3) over success.
pub fn worse(a: ExitStatus, b: ExitStatus) -> ExitStatus {
    let rank = |s: ExitStatus| match s {
        ExitStatus::Success => 0,
        ExitStatus::Interrupted => 1,
        ExitStatus::LimitExceeded => 2,
        ExitStatus::Usage => 3,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// What merging the boards' results gave.
#[derive(Debug)]
pub struct Merged {
    /// The fan-out's exit status (see [`merge`]).
    pub status: ExitStatus,
    /// The boards that recorded no run here, with why (for the CI outputs).
    pub missing: Vec<MissingBoard>,
}

/// A board with no run: `end` and `reason` (escaped: it holds ssh's or the board's text).
fn missing(name: &str, end: BoardEnd, reason: &str) -> MissingBoard {
    MissingBoard {
        board: name.to_string(),
        end,
        reason: rtscope_core::text::escape(&rtscope_core::text::clip(reason, 1024)).into_owned(),
    }
}

/// Merges each board's fetched database into `store` (when there is one) tagged
/// `board=NAME` and the board's tags, writing a line per board to `out` and a failed board's
/// reason to `err`; removes the fetched files. The fan-out's exit status: 2 when a board
/// failed, else 1 when a board's limits were exceeded, 3 when a board's run was interrupted.
/// Every board that added no run is in [`Merged::missing`].
pub fn merge(
    mut store: Option<&mut Store>,
    results: Vec<BoardResult>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<Merged> {
    let mut status = ExitStatus::Success;
    let mut lost = Vec::new();
    for r in results {
        let name = &r.target.name;
        let o = match r.outcome {
            Ok(o) => o,
            Err(e @ (RemoteError::NotStarted | RemoteError::Interrupted)) => {
                writeln!(err, "rtscope: board {name}: {e}")?;
                status = worse(status, ExitStatus::Interrupted);
                lost.push(missing(name, BoardEnd::Interrupted, &e.to_string()));
                continue;
            }
            Err(e) => {
                writeln!(err, "rtscope: board {name} failed: {e}")?;
                status = worse(status, ExitStatus::Usage);
                lost.push(missing(name, BoardEnd::Failed, &e.to_string()));
                continue;
            }
        };
        status = worse(status, status_of(o.exit_code));
        let (Some(db), Some(store)) = (&o.database, store.as_deref_mut()) else {
            // A status line, not output: stdout stays what the boards printed (one JSON
            // document of `check --target B --json`, issue 26 N6).
            writeln!(err, "rtscope: board {name}: exit {}", o.exit_code)?;
            continue;
        };
        let mut tags = vec![("board".to_string(), name.clone())];
        tags.extend(r.target.tags.iter().cloned());
        // The remote rtscope has ended: a run it left `running` (killed) is incomplete.
        let merged = store.merge_from(db, &tags).and_then(|m| {
            m.added
                .iter()
                .try_for_each(|(here, _, _)| store.mark_writer_gone(*here).map(drop))
                .map(|()| m)
        });
        match merged {
            Ok(m) => {
                writeln!(
                    out,
                    "board {name}: exit {}, {} run(s) merged into {}",
                    o.exit_code,
                    m.added.len(),
                    store.path().display()
                )?;
                if m.added.is_empty() {
                    let end = match status_of(o.exit_code) {
                        ExitStatus::Interrupted => BoardEnd::Interrupted,
                        _ => BoardEnd::Failed,
                    };
                    let why = format!("its rtscope exited {} and recorded no run", o.exit_code);
                    lost.push(missing(name, end, &why));
                }
            }
            Err(e) => {
                writeln!(err, "rtscope: board {name}: cannot merge its runs: {e}")?;
                status = worse(status, ExitStatus::Usage);
                let why = format!("cannot merge its runs: {e}");
                lost.push(missing(name, BoardEnd::Failed, &why));
            }
        }
        let _ = std::fs::remove_file(db);
        let _ = std::fs::remove_file(remote::wal_of(db));
        // The fan-out's scratch directory, once its last database is gone.
        let _ = db.parent().map(std::fs::remove_dir);
    }
    Ok(Merged {
        status,
        missing: lost,
    })
}

/// Options that name local files or the fan-out: not passed to the boards.
pub const LOCAL_ONLY: [&str; 6] = [
    "--target",
    "--targets-file",
    "--target-jobs",
    "--db",
    "--metrics-file",
    "--ci-output",
];

/// What `--target` runs: the boards named by `texts` (with `targets_file`, else its default
/// place: [`Targets::load`]) and the job for them: `argv` without [`LOCAL_ONLY`]'s options,
/// `file` (a campaign) copied there, recorded and fetched unless the command is `check`. Every
/// local input is checked here, before any board is touched (nothing to clean up there).
pub fn plan(
    targets_file: Option<&Path>,
    texts: &[String],
    argv: &[String],
    file: Option<&Path>,
) -> Result<(Vec<Target>, Job), UsageError> {
    let usage = |e: &dyn std::fmt::Display| UsageError::new(e.to_string());
    let targets = Targets::load(targets_file)
        .and_then(|t| t.resolve(texts))
        .map_err(|e| usage(&e))?;
    for t in &targets {
        t.check_local_files()
            .map_err(|e| usage(&e).hint("fix the board's entry in targets.toml"))?;
    }
    if let Some(p) = file {
        crate::targets::regular_file(p)
            .map_err(|why| usage(&format!("campaign file {}: {why}", p.display())))?;
    }
    let (files, rename): (Vec<_>, Vec<_>) = file
        .map(|p| file_arg(p, "campaign.toml"))
        .into_iter()
        .unzip();
    let job = Job {
        args: remote_args(argv, &LOCAL_ONLY, &rename),
        files,
        record: argv.get(1).is_some_and(|c| c != "check"),
    };
    Ok((targets, job))
}

/// The arguments for the boards: `command_line` (argv, its first word dropped) without the
/// options in `local_only` (each taking a value: `--db X`, `--db=X`), and with `rename`'s
/// words replaced (a local file by its name in the remote directory).
pub fn remote_args(
    command_line: &[String],
    local_only: &[&str],
    rename: &[(String, String)],
) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = command_line.iter().skip(1);
    while let Some(a) = it.next() {
        if local_only.contains(&a.as_str()) {
            it.next();
        } else if !local_only.iter().any(|o| a.starts_with(&format!("{o}="))) {
            let renamed = rename.iter().find(|(from, _)| from == a);
            out.push(renamed.map_or_else(|| a.clone(), |(_, to)| to.clone()));
        }
    }
    out
}

/// The local file of a job: `path` copied as `name`, and the rename of its argument.
pub fn file_arg(path: &std::path::Path, name: &str) -> ((PathBuf, String), (String, String)) {
    (
        (path.to_path_buf(), name.to_string()),
        (path.to_string_lossy().into_owned(), name.to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    /// A targets file with no boards (so neither `$RTSCOPE_TARGETS` nor ./targets.toml counts).
    fn no_boards(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("rtscope-plan-{}-{name}", std::process::id()));
        std::fs::write(&p, "").unwrap();
        p
    }

    #[test]
    fn a_plan_resolves_the_boards_and_records_every_command_but_check() {
        let t = no_boards("resolve");
        let argv = words(&[
            "rtscope", "measure", "--target", "root@b1", "--db", "x.db", "-d", "1s",
        ]);
        let (targets, job) = plan(Some(&t), &words(&["root@b1"]), &argv, None).unwrap();
        assert_eq!(targets.len(), 1);
        assert_eq!(job.args, words(&["measure", "-d", "1s"]));
        assert!(job.record && job.files.is_empty());
        let check = words(&["rtscope", "check", "--target", "root@b1"]);
        let (_, job) = plan(Some(&t), &words(&["root@b1"]), &check, None).unwrap();
        assert!(!job.record);
        let _ = std::fs::remove_file(t);
    }

    #[test]
    fn a_plan_refuses_a_campaign_file_that_is_not_a_regular_file_before_any_board() {
        let t = no_boards("dir");
        let dir = std::env::temp_dir();
        let argv = words(&["rtscope", "run", "c.toml", "--target", "root@b1"]);
        let e = plan(Some(&t), &words(&["root@b1"]), &argv, Some(&dir)).unwrap_err();
        assert!(e.to_string().starts_with("campaign file "), "{e}");
        let _ = std::fs::remove_file(t);
    }

    #[test]
    fn local_only_options_stay_here_and_files_are_renamed() {
        let cl: Vec<String> = [
            "rtscope",
            "run",
            "lab/quick.toml",
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
        let (_, rename) = file_arg(std::path::Path::new("lab/quick.toml"), "campaign.toml");
        assert_eq!(
            remote_args(&cl, &["--target", "--target-jobs", "--db"], &[rename]),
            ["run", "campaign.toml", "--label", "idle"]
        );
    }

    #[test]
    fn boards_run_all_at_once_by_default_up_to_the_bound() {
        assert_eq!(jobs(None, 3), 3);
        assert_eq!(jobs(None, 40), DEFAULT_MAX_JOBS);
        assert_eq!(jobs(None, 0), 1);
        assert_eq!(jobs(Some(2), 40), 2);
        assert_eq!(jobs(Some(64), 40), 64);
    }

    #[test]
    fn a_board_s_lines_reach_the_terminal_without_escape_sequences() {
        assert_eq!(printable("max\t12 us"), "max\t12 us");
        assert_eq!(
            printable("label \u{1b}]0;owned\u{7}\r"),
            "label \\x1b]0;owned\\x07\\r"
        );
    }

    #[test]
    fn a_failed_board_outranks_limits_and_interruptions() {
        use ExitStatus::*;
        assert_eq!(worse(Interrupted, LimitExceeded), LimitExceeded);
        assert_eq!(worse(Usage, LimitExceeded), Usage);
        assert_eq!(worse(Success, Interrupted), Interrupted);
    }
}
