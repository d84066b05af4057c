//! Runs on remote boards through the system `ssh` (so the user's keys, `~/.ssh/config` and
//! ProxyJump apply; always `BatchMode=yes`), over one connection per board (a ControlMaster of
//! rtscope's own, see the `master` module): detect the board's architecture and create the
//! remote directory (one step), copy the matching rtscope binary (and the files a run needs,
//! such as its campaign file) with `ssh host 'cat > …'` (no sftp subsystem needed), run
//! rtscope there into a remote temporary database while its output streams back, then fetch
//! the database and remove the directory (one step). Copies happen before and after the
//! measurement, never during it.
//!
//! The remote rtscope is tied to the ssh session by a watcher reading the session's stdin:
//! the line `stop` (sent by [`Stop::stop`] on a local Ctrl-C, SIGTERM or SIGHUP) sends it
//! SIGTERM, so it records its run as interrupted and the database is still fetched; an end of
//! input without `stop` (the local rtscope or its ssh killed, the connection lost) sends it
//! SIGTERM too and then removes the remote directory, so nothing is left running or lying on
//! the board. Every ssh runs in its own process group: a Ctrl-C at the terminal reaches only
//! the local rtscope, which decides.

use crate::targets::{Target, DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_STEP_TIMEOUT_S};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why one board's run failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// ssh could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The ssh program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// A step on the board failed.
    #[error("{step} failed: {why}")]
    Step {
        /// `connect`, `prepare` (`uname -m` and the remote directory), `copy`, `run`,
        /// `fetch`, `cleanup`.
        step: &'static str,
        /// ssh's or the remote command's message.
        why: String,
    },
    /// No binary for the board's architecture.
    #[error("no rtscope binary for its architecture {arch}: put one at {wanted}, or name one with `copy` in targets.toml")]
    NoBinary {
        /// `uname -m`.
        arch: String,
        /// Where it was looked for.
        wanted: String,
    },
    /// Stopped (Ctrl-C) before its run started.
    #[error("not run: interrupted before it started")]
    NotStarted,
    /// Stopped (Ctrl-C here) after its rtscope started, before it recorded anything.
    #[error("interrupted before it recorded a run")]
    Interrupted,
    /// Its rtscope ended without a database: it refused the job (a label or campaign name
    /// refused there) or failed before recording; `message` is its own.
    #[error("its rtscope exited {code} and recorded nothing: {message}")]
    NothingRecorded {
        /// The remote rtscope's exit code.
        code: i32,
        /// What it said last (its `error:` line and hints, escaped).
        message: String,
    },
    /// A local file operation.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What a board runs: rtscope's arguments there (its working directory is the remote
/// temporary directory, where `files` are copied), and whether the run records into a
/// database that is fetched (`--db` is added).
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// rtscope's arguments, without `--db`.
    pub args: Vec<String>,
    /// Local files copied into the remote directory, under these names.
    pub files: Vec<(PathBuf, String)>,
    /// Record into `run.db` there and fetch it.
    pub record: bool,
}

/// The ssh command: `$RTSCOPE_SSH` split on whitespace (e.g. `ssh -F lab_config`), else `ssh`;
/// with a control socket, every command a session of that socket's master.
#[derive(Debug, Clone)]
pub struct Ssh {
    argv: Vec<String>,
    control: Option<PathBuf>,
}

impl Ssh {
    /// From the environment.
    pub fn from_env() -> Ssh {
        let argv: Vec<String> = std::env::var("RTSCOPE_SSH")
            .ok()
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .filter(|v: &Vec<String>| !v.is_empty())
            .unwrap_or_else(|| vec!["ssh".into()]);
        Ssh::with_argv(argv)
    }

    /// This command line (its first word the program).
    pub fn with_argv(argv: Vec<String>) -> Ssh {
        Ssh {
            argv,
            control: None,
        }
    }

    /// The same ssh, its commands sessions of the master listening on `socket`. `-S` wins over
    /// a `ControlPath` of the user's configuration or `$RTSCOPE_SSH`, and `ControlMaster=no`
    /// over theirs (ssh keeps the first value of an option, command line first). Should the
    /// master be gone, ssh connects on its own: a step after a lost master still runs.
    pub fn through(&self, socket: &Path) -> Ssh {
        Ssh {
            argv: self.argv.clone(),
            control: Some(socket.to_path_buf()),
        }
    }

    /// The master of a board: authenticates, listens on `socket`, runs nothing (`-N`) and
    /// stays in the foreground (`ControlPersist=no`) as rtscope's child.
    pub(crate) fn master_command(&self, t: &Target, socket: &Path) -> Command {
        let mut c = self.base(t);
        c.arg("-S").arg(socket);
        c.args(["-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-N"]);
        c.arg("--").arg(&t.host);
        c
    }

    pub(crate) fn command(&self, t: &Target, remote: &str) -> Command {
        let mut c = self.base(t);
        if let Some(s) = &self.control {
            c.arg("-S").arg(s).args(["-o", "ControlMaster=no"]);
        }
        c.arg("--").arg(&t.host).arg(remote);
        c
    }

    /// ssh with the board's options, without the host.
    fn base(&self, t: &Target) -> Command {
        let mut c = Command::new(&self.argv[0]);
        // Not with the fan-out's signals held (signals::hold_signals): ssh keeps the mask.
        rtscope_common::signals::unblocked_in_child(&mut c);
        c.args(&self.argv[1..]);
        c.args(["-o", "BatchMode=yes", "-o", "ServerAliveInterval=5"]);
        c.args(["-o", "ServerAliveCountMax=3"]);
        // A board that accepts TCP but never answers must not hang the fan-out (issue 26, N3).
        let connect = t.connect_timeout_s.unwrap_or(DEFAULT_CONNECT_TIMEOUT_S);
        c.args(["-o", &format!("ConnectTimeout={connect}")]);
        if let Some(p) = t.port {
            c.args(["-p", &p.to_string()]);
        }
        if let Some(u) = &t.user {
            c.args(["-l", u]);
        }
        if let Some(i) = &t.identity {
            c.arg("-i").arg(i).args(["-o", "IdentitiesOnly=yes"]);
        }
        // A terminal's Ctrl-C goes to the local rtscope only (see the module's doc).
        c.process_group(0);
        c
    }

    pub(crate) fn spawn_err(&self) -> impl Fn(std::io::Error) -> RemoteError + '_ {
        move |source| RemoteError::Spawn {
            program: self.argv[0].clone(),
            source,
        }
    }

    /// Runs `remote` with `input` as its stdin; its stdout, or the step's error. A step that
    /// takes longer than the board's step timeout is killed and fails naming the limit.
    pub(crate) fn output(
        &self,
        t: &Target,
        step: &'static str,
        remote: &str,
        input: Option<&Path>,
    ) -> Result<Vec<u8>, RemoteError> {
        let r = self.exchange(t, remote, input)?;
        match r.status {
            Some(st) if st.success() => Ok(r.out),
            _ => Err(r.error(step, t)),
        }
    }

    /// Runs `remote` with `input` as its stdin, within the board's step timeout.
    fn exchange(
        &self,
        t: &Target,
        remote: &str,
        input: Option<&Path>,
    ) -> Result<Reply, RemoteError> {
        let mut c = self.command(t, remote);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c.stdin(match input {
            Some(p) => Stdio::from(std::fs::File::open(p)?),
            None => Stdio::null(),
        });
        let mut child = c.spawn().map_err(self.spawn_err())?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let (status, out, err) = std::thread::scope(|s| {
            let out = s.spawn(|| read_all(stdout, u64::MAX));
            // Bounded: ssh's own messages.
            let err = s.spawn(|| read_all(stderr, 64 * 1024));
            let status = wait_within(&mut child, step_limit(t));
            (status, out.join(), err.join())
        });
        Ok(Reply {
            status: status?,
            out: out.unwrap_or_default(),
            err: err.unwrap_or_default(),
        })
    }
}

/// The limit of each step around the run on `t`.
fn step_limit(t: &Target) -> Duration {
    Duration::from_secs(u64::from(
        t.step_timeout_s.unwrap_or(DEFAULT_STEP_TIMEOUT_S),
    ))
}

/// What a step gave: its exit status (`None`: killed past the step timeout), stdout, stderr.
struct Reply {
    status: Option<std::process::ExitStatus>,
    out: Vec<u8>,
    err: Vec<u8>,
}

impl Reply {
    /// The step's failure: the limit it passed, or the last line of its messages.
    fn error(&self, step: &'static str, t: &Target) -> RemoteError {
        let why = match self.status {
            None => format!(
                "no answer within {} s (raise step_timeout for this board in targets.toml if it is only slow)",
                step_limit(t).as_secs()
            ),
            Some(st) => last_line(&self.err, st),
        };
        RemoteError::Step { step, why }
    }
}

/// Everything `r` gives, at most `limit` bytes (none when there is no pipe).
fn read_all(r: Option<impl Read>, limit: u64) -> Vec<u8> {
    let mut v = Vec::new();
    if let Some(r) = r {
        let _ = r.take(limit).read_to_end(&mut v);
    }
    v
}

/// Waits for `child` at most `limit`; `None` (and the child killed and reaped) past it.
pub(crate) fn wait_within(
    child: &mut std::process::Child,
    limit: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + limit;
    // From 1 ms up: a short step is not kept waiting for a fixed poll.
    let mut nap = Duration::from_millis(1);
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(Some(st));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(50));
    }
}

pub(crate) fn last_line(stderr: &[u8], status: std::process::ExitStatus) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map_or_else(|| status.to_string(), |l| l.trim().to_string())
}

/// `text` as one single-quoted shell word.
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The stop switch of a fan-out: the running boards' sessions, told `stop` on a signal.
#[derive(Debug, Default)]
pub struct Stop {
    stopped: AtomicBool,
    sessions: Mutex<Vec<ChildStdin>>,
}

impl Stop {
    /// Stops every running board's rtscope (its run is recorded as interrupted and still
    /// fetched) and keeps boards not yet running from starting.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Ok(mut s) = self.sessions.lock() {
            for stdin in s.iter_mut() {
                // A session that already ended: nothing to stop.
                let _ = stdin.write_all(b"stop\n").and_then(|()| stdin.flush());
            }
        }
    }

    /// Whether [`Stop::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    pub(crate) fn attach(&self, mut stdin: ChildStdin) {
        if let Ok(mut s) = self.sessions.lock() {
            if self.is_stopped() {
                let _ = stdin.write_all(b"stop\n").and_then(|()| stdin.flush());
            }
            s.push(stdin);
        }
    }
}

/// What one board's run gave.
#[derive(Debug)]
pub struct RemoteOutcome {
    /// The remote rtscope's exit code (1: a limit exceeded; 3: interrupted).
    pub exit_code: i32,
    /// The fetched database (a local file), when the job records.
    pub database: Option<PathBuf>,
}

/// Where a board's rtscope comes from.
pub(crate) enum Binary {
    /// Installed there, at this path.
    Installed(String),
    /// This local file, copied.
    Copied(PathBuf),
}

/// The local rtscope for a board's `uname -m`: this one for this architecture, else
/// `rtscope-ARCH` beside it (the static release binaries).
pub fn local_binary(arch: &str) -> Result<PathBuf, RemoteError> {
    let me = std::env::current_exe()?;
    if arch == std::env::consts::ARCH {
        return Ok(me);
    }
    let other = me.with_file_name(format!("rtscope-{arch}"));
    if other.is_file() {
        Ok(other)
    } else {
        Err(RemoteError::NoBinary {
            arch: arch.to_string(),
            wanted: other.display().to_string(),
        })
    }
}

/// The binary for `t`, whose `uname -m` is `uname`: targets.toml's `binary` or `copy`, else
/// the local one for its `arch` or `uname -m`.
pub(crate) fn binary(t: &Target, uname: &str) -> Result<Binary, RemoteError> {
    if let Some(b) = &t.binary {
        return Ok(Binary::Installed(b.clone()));
    }
    if let Some(c) = &t.copy {
        return Ok(Binary::Copied(c.clone()));
    }
    local_binary(t.arch.as_deref().unwrap_or(uname)).map(Binary::Copied)
}

impl Ssh {
    /// Runs `remote`; its exit code (`None`: killed past the step timeout), stdout and the
    /// step's error should it fail.
    pub(crate) fn step_status(
        &self,
        t: &Target,
        step: &'static str,
        remote: &str,
    ) -> Result<(Option<i32>, Vec<u8>, RemoteError), RemoteError> {
        let r = self.exchange(t, remote, None)?;
        let e = r.error(step, t);
        Ok((r.status.and_then(|s| s.code()), r.out, e))
    }
}

/// The remote shell script: rtscope in the background, a watcher on the session's stdin
/// (kept on fd 3: a background job's stdin is /dev/null).
fn script(dir: &str, job: &Job, bin: &Binary, prefix: &[String]) -> String {
    let d = sh_quote(dir);
    let mut words: Vec<String> = prefix.iter().map(|p| sh_quote(p)).collect();
    words.push(match bin {
        Binary::Installed(p) => sh_quote(p),
        Binary::Copied(_) => "./rtscope".into(),
    });
    words.extend(job.args.iter().map(|a| sh_quote(a)));
    if job.record {
        words.push(format!("--db {d}/run.db"));
    }
    format!(
        "cd {d} && exec 3<&0 && {{ {} </dev/null 2>&1 & p=$!; \
         {{ read -r l <&3; [ \"$l\" = stop ] || : > {d}/.lost; kill -TERM $p 2>/dev/null; }} & w=$!; \
         exec 3<&-; wait $p; rc=$?; kill $w 2>/dev/null; \
         if [ -e {d}/.lost ]; then cd / && rm -rf {d}; fi; exit $rc; }}",
        words.join(" ")
    )
}

/// The last lines a board's rtscope printed, bounded: where its own error message is.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    lines: std::collections::VecDeque<String>,
}

impl Tail {
    /// Lines kept, and bytes kept of each.
    const LINES: usize = 16;
    const BYTES: usize = 512;

    fn push(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        if self.lines.len() == Self::LINES {
            self.lines.pop_front();
        }
        let line = rtscope_core::text::clip(line.trim(), Self::BYTES);
        self.lines
            .push_back(rtscope_core::text::escape(&line).into_owned());
    }

    /// Its message: from its last `error:` line on (the hints after it), else its last line.
    pub(crate) fn message(&self) -> String {
        let from = self
            .lines
            .iter()
            .rposition(|l| l.starts_with("error:") || l.contains(": error:"))
            .unwrap_or(self.lines.len().saturating_sub(1));
        let text: Vec<&str> = self.lines.iter().skip(from).map(String::as_str).collect();
        if text.is_empty() {
            "it printed nothing".into()
        } else {
            text.join(" ")
        }
    }
}

/// The run step: `job` in `dir` of `t`, its output lines to `on_line`, `stop` able to stop
/// it; the remote rtscope's exit code and the last lines it printed.
pub(crate) fn measure(
    ssh: &Ssh,
    t: &Target,
    dir: &str,
    job: &Job,
    bin: &Binary,
    on_line: &(dyn Fn(&str) + Sync),
    stop: &Stop,
) -> Result<(i32, Tail), RemoteError> {
    let mut child = ssh
        .command(t, &script(dir, job, bin, &t.prefix))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(ssh.spawn_err())?;
    if let Some(stdin) = child.stdin.take() {
        stop.attach(stdin);
    }
    let mut err_text = String::new();
    let mut tail = Tail::default();
    std::thread::scope(|s| {
        let stderr = child.stderr.take();
        let reader = s.spawn(move || {
            let mut text = String::new();
            if let Some(e) = stderr {
                // Bounded: ssh's own messages, never the run's output.
                let _ = e.take(64 * 1024).read_to_string(&mut text);
            }
            text
        });
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                tail.push(&line);
                on_line(&line);
            }
        }
        err_text = reader.join().unwrap_or_default();
    });
    let status = child.wait()?;
    match status.code() {
        // 255: ssh's own failure (connection lost, killed server).
        Some(c) if c != 255 => Ok((c, tail)),
        _ => Err(RemoteError::Step {
            step: "run",
            why: last_line(err_text.as_bytes(), status),
        }),
    }
}

/// `PATH-wal`.
pub fn wal_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting_survives_quotes() {
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
        let o = Command::new("sh")
            .args([
                "-c",
                &format!("printf %s {}", sh_quote("x'; echo $HOME \"y")),
            ])
            .output()
            .unwrap();
        assert_eq!(o.stdout, b"x'; echo $HOME \"y");
    }

    /// The script's watcher, run by a local `sh` in place of ssh: `stop` keeps the directory
    /// (its database is fetched), an end of input removes it; both stop the program.
    #[test]
    fn the_watcher_stops_the_run_and_removes_the_directory_only_when_the_session_is_lost() {
        for (input, kept) in [(&b"stop\n"[..], true), (&b""[..], false)] {
            let dir = std::env::temp_dir().join(format!(
                "rtscope-watcher-test-{}-{}",
                std::process::id(),
                u8::from(kept)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let job = Job {
                args: vec!["60".into()],
                ..Job::default()
            };
            let s = script(
                &dir.to_string_lossy(),
                &job,
                &Binary::Installed("sleep".into()),
                &[],
            );
            let mut c = Command::new("sh")
                .args(["-c", &s])
                .stdin(Stdio::piped())
                .spawn()
                .unwrap();
            let started = std::time::Instant::now();
            let mut stdin = c.stdin.take().unwrap();
            stdin.write_all(input).unwrap();
            drop(stdin);
            let st = c.wait().unwrap();
            assert_eq!(
                st.code(),
                Some(128 + libc_sigterm()),
                "sleep was stopped by SIGTERM"
            );
            assert!(started.elapsed() < std::time::Duration::from_secs(50));
            assert_eq!(dir.exists(), kept, "{}", String::from_utf8_lossy(input));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    fn libc_sigterm() -> i32 {
        15
    }

    /// N3: a board that never answers fails its step after the board's step timeout, naming
    /// the limit, instead of hanging the fan-out (an "ssh" that never ends stands in for it).
    #[test]
    fn a_step_that_never_answers_fails_after_its_timeout() {
        let dir = std::env::temp_dir().join(format!("rtscope-mute-ssh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("ssh");
        std::fs::write(&fake, "#!/bin/sh\nexec sleep 600\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let ssh = Ssh::with_argv(vec![fake.to_string_lossy().into_owned()]);
        let t = Target {
            name: "mute".into(),
            host: "mute".into(),
            step_timeout_s: Some(1),
            ..Target::default()
        };
        let e = ssh.output(&t, "uname -m", "uname -m", None).unwrap_err();
        assert!(
            e.to_string().contains("no answer within 1 s")
                && e.to_string().contains("step_timeout"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 49: a board's rtscope that refuses the job is reported in its own words (its
    /// `error:` line and hints), escaped, not as a fetch that found no database.
    #[test]
    fn a_refusal_is_told_in_the_remote_rtscope_s_own_words() {
        let mut t = Tail::default();
        for l in [
            "[progress] starting",
            "error: invalid value 'x\u{1b}' for '--label': control characters are not allowed",
            "",
            "hint: give a printable label",
        ] {
            t.push(l);
        }
        assert_eq!(
            t.message(),
            "error: invalid value 'x\\x1b' for '--label': control characters are not allowed hint: give a printable label"
        );
        let mut quiet = Tail::default();
        assert_eq!(quiet.message(), "it printed nothing");
        for i in 0..100 {
            quiet.push(&format!("line {i}"));
        }
        assert_eq!(quiet.message(), "line 99");
        assert_eq!(quiet.lines.len(), Tail::LINES);
    }

    #[test]
    fn ssh_gets_a_connect_timeout() {
        let ssh = Ssh::with_argv(vec!["ssh".into()]);
        let mut t = Target {
            host: "b".into(),
            ..Target::default()
        };
        let args = |t: &Target| -> Vec<String> {
            ssh.command(t, "true")
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        assert!(args(&t).contains(&format!("ConnectTimeout={DEFAULT_CONNECT_TIMEOUT_S}")));
        t.connect_timeout_s = Some(4);
        assert!(args(&t).contains(&"ConnectTimeout=4".to_string()));
    }
}
