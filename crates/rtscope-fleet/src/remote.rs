//! Runs on remote boards through the system `ssh` (so the user's keys, `~/.ssh/config`,
//! ProxyJump and ControlMaster apply; always `BatchMode=yes`): detect the board's architecture,
//! copy the matching rtscope binary (and the files a run needs, such as its campaign file)
//! with `ssh host 'cat > …'` (no sftp subsystem needed), run rtscope there into a remote
//! temporary database while its output streams back, fetch the database, and remove what was
//! copied. Copies happen before and after the measurement, never during it.
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
        /// `uname -m`, `copy`, `run`, `fetch`, `cleanup`.
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

/// The ssh command: `$RTSCOPE_SSH` split on whitespace (e.g. `ssh -F lab_config`), else `ssh`.
#[derive(Debug, Clone)]
pub struct Ssh {
    argv: Vec<String>,
}

impl Ssh {
    /// From the environment.
    pub fn from_env() -> Ssh {
        let argv: Vec<String> = std::env::var("RTSCOPE_SSH")
            .ok()
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .filter(|v: &Vec<String>| !v.is_empty())
            .unwrap_or_else(|| vec!["ssh".into()]);
        Ssh { argv }
    }

    fn command(&self, t: &Target, remote: &str) -> Command {
        let mut c = Command::new(&self.argv[0]);
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
        c.arg("--").arg(&t.host).arg(remote);
        // A terminal's Ctrl-C goes to the local rtscope only (see the module's doc).
        c.process_group(0);
        c
    }

    fn spawn_err(&self) -> impl Fn(std::io::Error) -> RemoteError + '_ {
        move |source| RemoteError::Spawn {
            program: self.argv[0].clone(),
            source,
        }
    }

    /// Runs `remote` with `input` as its stdin; its stdout, or the step's error. A step that
    /// takes longer than the board's step timeout is killed and fails naming the limit.
    fn output(
        &self,
        t: &Target,
        step: &'static str,
        remote: &str,
        input: Option<&Path>,
    ) -> Result<Vec<u8>, RemoteError> {
        let mut c = self.command(t, remote);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c.stdin(match input {
            Some(p) => Stdio::from(std::fs::File::open(p)?),
            None => Stdio::null(),
        });
        let mut child = c.spawn().map_err(self.spawn_err())?;
        let limit_s = t.step_timeout_s.unwrap_or(DEFAULT_STEP_TIMEOUT_S);
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let (status, out, err) = std::thread::scope(|s| {
            let out = s.spawn(|| read_all(stdout, u64::MAX));
            // Bounded: ssh's own messages.
            let err = s.spawn(|| read_all(stderr, 64 * 1024));
            let status = wait_within(&mut child, Duration::from_secs(u64::from(limit_s)));
            (status, out.join(), err.join())
        });
        let (out, err) = (out.unwrap_or_default(), err.unwrap_or_default());
        match status? {
            None => Err(RemoteError::Step {
                step,
                why: format!(
                    "no answer within {limit_s} s (raise step_timeout for this board in targets.toml if it is only slow)"
                ),
            }),
            Some(st) if st.success() => Ok(out),
            Some(st) => Err(RemoteError::Step {
                step,
                why: last_line(&err, st),
            }),
        }
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
fn wait_within(
    child: &mut std::process::Child,
    limit: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(Some(st));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn last_line(stderr: &[u8], status: std::process::ExitStatus) -> String {
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

    fn attach(&self, mut stdin: ChildStdin) {
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
enum Binary {
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

fn binary(ssh: &Ssh, t: &Target) -> Result<Binary, RemoteError> {
    if let Some(b) = &t.binary {
        return Ok(Binary::Installed(b.clone()));
    }
    if let Some(c) = &t.copy {
        return Ok(Binary::Copied(c.clone()));
    }
    let arch = match &t.arch {
        Some(a) => a.clone(),
        None => String::from_utf8_lossy(&ssh.output(t, "uname -m", "uname -m", None)?)
            .trim()
            .to_string(),
    };
    local_binary(&arch).map(Binary::Copied)
}

/// Creates the remote directory and copies the binary and the job's files into it.
fn prepare(ssh: &Ssh, t: &Target, job: &Job, bin: &Binary) -> Result<String, RemoteError> {
    let mk = "umask 077; mktemp -d /tmp/rtscope.XXXXXX";
    let dir = String::from_utf8_lossy(&ssh.output(t, "copy", mk, None)?)
        .trim()
        .to_string();
    if !dir.starts_with("/tmp/rtscope.")
        || dir.contains(|c: char| !c.is_ascii_alphanumeric() && c != '/' && c != '.')
    {
        return Err(RemoteError::Step {
            step: "copy",
            why: format!("unexpected remote directory '{dir}'"),
        });
    }
    let copy = |local: &Path, name: &str, mode: &str| {
        let dest = sh_quote(&format!("{dir}/{name}"));
        let cmd = format!("umask 077; cat > {dest} && chmod {mode} {dest}");
        ssh.output(t, "copy", &cmd, Some(local)).map(drop)
    };
    if let Binary::Copied(local) = bin {
        copy(local, "rtscope", "700")?;
    }
    for (local, name) in &job.files {
        copy(local, name, "600")?;
    }
    Ok(dir)
}

/// One remote run of `job` on `t`. `on_line` sees each output line; `local_db` is where the
/// board's database is fetched to; `stop` stops it.
pub fn run_on(
    ssh: &Ssh,
    t: &Target,
    job: &Job,
    local_db: &Path,
    on_line: &(dyn Fn(&str) + Sync),
    stop: &Stop,
) -> Result<RemoteOutcome, RemoteError> {
    if stop.is_stopped() {
        return Err(RemoteError::NotStarted);
    }
    let bin = binary(ssh, t)?;
    let dir = prepare(ssh, t, job, &bin)?;
    let result = if stop.is_stopped() {
        Err(RemoteError::NotStarted)
    } else {
        measure_and_fetch(ssh, t, &dir, job, &bin, local_db, on_line, stop)
    };
    let cleanup = ssh.output(t, "cleanup", &format!("rm -rf {}", sh_quote(&dir)), None);
    let outcome = result?;
    cleanup?;
    Ok(outcome)
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

#[allow(clippy::too_many_arguments)]
fn measure_and_fetch(
    ssh: &Ssh,
    t: &Target,
    dir: &str,
    job: &Job,
    bin: &Binary,
    local_db: &Path,
    on_line: &(dyn Fn(&str) + Sync),
    stop: &Stop,
) -> Result<RemoteOutcome, RemoteError> {
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
                on_line(&line);
            }
        }
        err_text = reader.join().unwrap_or_default();
    });
    let status = child.wait()?;
    let code = match status.code() {
        // 255: ssh's own failure (connection lost, killed server).
        Some(c) if c != 255 => c,
        _ => {
            return Err(RemoteError::Step {
                step: "run",
                why: last_line(err_text.as_bytes(), status),
            })
        }
    };
    let database = if job.record {
        fetch(ssh, t, dir, local_db)?;
        Some(local_db.to_path_buf())
    } else {
        None
    };
    Ok(RemoteOutcome {
        exit_code: code,
        database,
    })
}

/// Fetches `dir/run.db` (and its WAL, should the remote rtscope have left one).
fn fetch(ssh: &Ssh, t: &Target, dir: &str, local_db: &Path) -> Result<(), RemoteError> {
    let db = format!("{dir}/run.db");
    let bytes = ssh.output(t, "fetch", &format!("cat {}", sh_quote(&db)), None)?;
    std::fs::write(local_db, bytes)?;
    let wal = format!("{db}-wal");
    let probe = format!("if [ -s {0} ]; then cat {0}; fi", sh_quote(&wal));
    let bytes = ssh.output(t, "fetch", &probe, None)?;
    if !bytes.is_empty() {
        std::fs::File::create(wal_of(local_db))?.write_all(&bytes)?;
    }
    Ok(())
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
        let ssh = Ssh {
            argv: vec![fake.to_string_lossy().into_owned()],
        };
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

    #[test]
    fn ssh_gets_a_connect_timeout() {
        let ssh = Ssh {
            argv: vec!["ssh".into()],
        };
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
