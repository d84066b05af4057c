//! Runs on remote boards through the system `ssh` (so the user's keys, `~/.ssh/config`,
//! ProxyJump and ControlMaster apply; always `BatchMode=yes`): detect the board's architecture,
//! copy the matching rtscope binary with `ssh host 'cat > …'` (no sftp subsystem needed), run
//! it into a remote temporary database while its output streams back, fetch the database, and
//! remove what was copied. Copies happen before and after the measurement, never during it.
//!
//! The remote rtscope is tied to the ssh session: a watcher reads the session's stdin and
//! sends SIGTERM to rtscope when it closes, so Ctrl-C here, a killed `ssh` or a dropped
//! connection stops the remote run (which records it as interrupted) and leaves nothing
//! running there.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Why one board's run failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// `--target` text that is not `[user@]host[:port]`.
    #[error("invalid target '{0}': expected [user@]host[:port]")]
    BadTarget(String),
    /// ssh could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The ssh program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// A step on the board failed.
    #[error("{step} on {board} failed: {why}")]
    Step {
        /// The board.
        board: String,
        /// `uname -m`, `copy`, `run`, `fetch`.
        step: &'static str,
        /// ssh's or the remote command's message.
        why: String,
    },
    /// No binary for the board's architecture.
    #[error("no rtscope binary for {board}'s architecture {arch}: put one at {wanted}")]
    NoBinary {
        /// The board.
        board: String,
        /// `uname -m`.
        arch: String,
        /// Where it was looked for.
        wanted: String,
    },
    /// A local file operation.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// One board to run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The board's name (tag `board=`): the host part.
    pub name: String,
    /// `[user@]host` for ssh.
    pub destination: String,
    /// ssh port.
    pub port: Option<u16>,
}

impl Target {
    /// Parses `[user@]host[:port]`.
    pub fn parse(text: &str) -> Result<Target, RemoteError> {
        let bad = || RemoteError::BadTarget(text.to_string());
        let (dest, port) = match text.rsplit_once(':') {
            Some((d, p)) => (d, Some(p.parse::<u16>().map_err(|_| bad())?)),
            None => (text, None),
        };
        let host = dest.rsplit('@').next().unwrap_or(dest);
        let ok = |s: &str| {
            !s.is_empty()
                && !s.starts_with('-')
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        };
        let user_ok = dest.split_once('@').is_none_or(|(u, _)| ok(u));
        if !ok(host) || !user_ok || dest.matches('@').count() > 1 {
            return Err(bad());
        }
        Ok(Target {
            name: host.to_string(),
            destination: dest.to_string(),
            port,
        })
    }
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
        if let Some(p) = t.port {
            c.args(["-p", &p.to_string()]);
        }
        c.arg("--").arg(&t.destination).arg(remote);
        c
    }

    fn spawn_err(&self) -> impl Fn(std::io::Error) -> RemoteError + '_ {
        move |source| RemoteError::Spawn {
            program: self.argv[0].clone(),
            source,
        }
    }

    /// Runs `remote` with `input` as its stdin; its stdout, or the step's error.
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
        let o = c.output().map_err(self.spawn_err())?;
        if o.status.success() {
            Ok(o.stdout)
        } else {
            Err(RemoteError::Step {
                board: t.name.clone(),
                step,
                why: last_line(&o.stderr, o.status),
            })
        }
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

/// What one board's run gave.
#[derive(Debug)]
pub struct RemoteOutcome {
    /// The remote rtscope's exit code (1: a limit exceeded; 3: interrupted).
    pub exit_code: i32,
    /// The fetched database (a local file).
    pub database: PathBuf,
}

/// One remote run: `binary_for(arch)` names the local binary for the board's `uname -m`,
/// `args` are rtscope's arguments (without `--db`), `on_line` sees each output line, and
/// `local_db` is where the board's database is fetched to.
pub fn run_on(
    ssh: &Ssh,
    t: &Target,
    binary_for: &dyn Fn(&str) -> Result<PathBuf, String>,
    args: &[String],
    local_db: &Path,
    on_line: &(dyn Fn(&str) + Sync),
) -> Result<RemoteOutcome, RemoteError> {
    let arch = String::from_utf8_lossy(&ssh.output(t, "uname -m", "uname -m", None)?)
        .trim()
        .to_string();
    let binary = binary_for(&arch).map_err(|wanted| RemoteError::NoBinary {
        board: t.name.clone(),
        arch: arch.clone(),
        wanted,
    })?;
    let copy = "umask 077; d=$(mktemp -d /tmp/rtscope.XXXXXX) && cat > \"$d/rtscope\" && chmod 700 \"$d/rtscope\" && echo \"$d\"";
    let dir = String::from_utf8_lossy(&ssh.output(t, "copy", copy, Some(&binary))?)
        .trim()
        .to_string();
    if !dir.starts_with("/tmp/rtscope.") || dir.contains(char::is_whitespace) {
        return Err(RemoteError::Step {
            board: t.name.clone(),
            step: "copy",
            why: format!("unexpected remote directory '{dir}'"),
        });
    }
    let result = measure_and_fetch(ssh, t, &dir, args, local_db, on_line);
    let cleanup = ssh.output(t, "cleanup", &format!("rm -rf {}", sh_quote(&dir)), None);
    let outcome = result?;
    cleanup?;
    Ok(outcome)
}

fn measure_and_fetch(
    ssh: &Ssh,
    t: &Target,
    dir: &str,
    args: &[String],
    local_db: &Path,
    on_line: &(dyn Fn(&str) + Sync),
) -> Result<RemoteOutcome, RemoteError> {
    let d = sh_quote(dir);
    let words: Vec<String> = args.iter().map(|a| sh_quote(a)).collect();
    // rtscope in the background, a watcher on the session's stdin (kept on fd 3: a background
    // job's stdin is /dev/null): when the session goes (Ctrl-C, killed ssh, lost connection),
    // the watcher's `cat` sees EOF and stops rtscope.
    let script = format!(
        "cd {d} && exec 3<&0 && {{ ./rtscope {} --db {d}/run.db </dev/null 2>&1 & p=$!; {{ cat <&3 >/dev/null 2>&1; kill -TERM $p 2>/dev/null; }} & w=$!; exec 3<&-; wait $p; rc=$?; kill $w 2>/dev/null; exit $rc; }}",
        words.join(" ")
    );
    let mut child = ssh
        .command(t, &script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(ssh.spawn_err())?;
    let stdin = child.stdin.take();
    let mut err_text = String::new();
    std::thread::scope(|s| {
        let stderr = child.stderr.take();
        let reader = s.spawn(move || {
            let mut text = String::new();
            if let Some(mut e) = stderr {
                let _ = e.read_to_string(&mut text);
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
    drop(stdin);
    let status = child.wait()?;
    let code = match status.code() {
        // 255: ssh's own failure (connection lost, killed server).
        Some(c) if c != 255 => c,
        _ => {
            return Err(RemoteError::Step {
                board: t.name.clone(),
                step: "run",
                why: last_line(err_text.as_bytes(), status),
            })
        }
    };
    fetch(ssh, t, dir, local_db)?;
    Ok(RemoteOutcome {
        exit_code: code,
        database: local_db.to_path_buf(),
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
        let mut name = local_db.as_os_str().to_owned();
        name.push("-wal");
        std::fs::File::create(PathBuf::from(name))?.write_all(&bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_refuse_option_injection() {
        let t = Target::parse("root@127.0.0.2:2222").unwrap();
        assert_eq!(
            (t.name.as_str(), t.destination.as_str(), t.port),
            ("127.0.0.2", "root@127.0.0.2", Some(2222))
        );
        assert_eq!(Target::parse("rpi4").unwrap().port, None);
        for bad in [
            "",
            "-oProxyCommand=x",
            "a@-b",
            "a@b@c",
            "h:port",
            "h:70000",
            "a b",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

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
}
