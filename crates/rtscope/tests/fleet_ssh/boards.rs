//! The loopback "boards" of the fleet tests: an `sshd` each on 127.0.0.2, .3 and .4 in its own
//! mount namespace with a private /tmp, and what the tests read of them and of the local
//! rtscope (/proc, the sshd logs, the local $TMPDIR).

use crate::common;

use serde_json::Value;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

pub struct Boards {
    pub dir: PathBuf,
    pub servers: Vec<Child>,
    pub targets: Vec<String>,
}

impl Drop for Boards {
    fn drop(&mut self) {
        for s in &mut self.servers {
            let _ = s.kill();
            let _ = s.wait();
        }
    }
}

pub fn keygen(path: &Path) {
    let s = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap();
    assert!(s.success());
}

pub fn free_port(addr: &str) -> u16 {
    TcpListener::bind((addr, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn start(name: &str) -> Option<Boards> {
    rtscope_testkit::require!(
        Path::new(SSHD).exists() && Command::new("ssh").arg("-V").output().is_ok(),
        "{SSHD} or ssh is not installed (apt-get install openssh-server openssh-client; .ci/run installs them)"
    );
    rtscope_testkit::require!(
        rtscope_testkit::is_root(),
        "the boards' sshd needs root (a private /tmp in its own mount namespace)"
    );
    let dir = common::fresh_dir(name);
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // The local rtscope's $TMPDIR: its control sockets and fetched databases.
    std::fs::create_dir_all(dir.join("ltmp")).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    keygen(&dir.join("host_key"));
    keygen(&dir.join("id"));
    std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
    std::fs::create_dir_all("/run/sshd").unwrap();
    let d = dir.display();
    std::fs::write(
        dir.join("ssh_config"),
        format!("Host *\n  IdentityFile {d}/id\n  IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n"),
    )
    .unwrap();
    let mut b = Boards {
        dir: dir.clone(),
        servers: Vec::new(),
        targets: Vec::new(),
    };
    let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
    for addr in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
        let port = free_port(addr);
        let conf = dir.join(format!("sshd-{addr}.conf"));
        std::fs::write(
            &conf,
            format!("Port {port}\nListenAddress {addr}\nHostKey {d}/host_key\nPidFile {d}/sshd-{addr}.pid\nAuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nLogLevel VERBOSE\n"),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join(format!("sshd-{addr}.log"))).unwrap();
        // unshare(1) execs sh, which execs sshd: the child's pid is sshd's. The boards' /tmp
        // is `tmp` of this test, mounted over /tmp in sshd's namespace only; the test's
        // directory (keys, configuration) is mounted back at its own path inside it.
        let child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(concat!(
                r#"set -e; m="$2/${1##*/}"; mkdir -p "$m"; mount --bind "$1" "$m"; "#,
                r#"mount --rbind "$2" /tmp; exec "$3" -D -e -f "$4""#
            ))
            .arg("sh")
            .arg(&dir)
            .arg(&tmp)
            .arg(SSHD)
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        b.servers.push(child);
        let start = Instant::now();
        // Its log, not a probe connection: the tests count the connections sshd logs.
        let log = dir.join(format!("sshd-{addr}.log"));
        while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("Server listening on")) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "sshd on {addr}:{port} did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        b.targets.push(format!("{}@{addr}:{port}", user.trim()));
    }
    Some(b)
}

pub fn rtscope(b: &Boards) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtscope"));
    c.env(
        "RTSCOPE_SSH",
        format!("ssh -F {}", b.dir.join("ssh_config").display()),
    );
    c.env("TMPDIR", b.dir.join("ltmp"));
    c
}

/// The ssh connections each board accepted so far: (TCP connections, authentications), from
/// its sshd's log.
pub fn connections(b: &Boards) -> Vec<(usize, usize)> {
    sshd_logs(b)
        .iter()
        .map(|log| {
            (
                log.matches("Connection from ").count(),
                log.matches("Accepted publickey for ").count(),
            )
        })
        .collect()
}

/// The boards' sshd logs.
pub fn sshd_logs(b: &Boards) -> Vec<String> {
    b.targets
        .iter()
        .map(|t| {
            let addr = t.split_once('@').unwrap().1.split_once(':').unwrap().0;
            std::fs::read_to_string(b.dir.join(format!("sshd-{addr}.log"))).unwrap()
        })
        .collect()
}

/// The boards' connections since `before`: one new connection and authentication each, for the
/// boards `which` (indexes), none for the others.
pub fn one_connection_each(b: &Boards, before: &[(usize, usize)], which: &[usize]) {
    let now = connections(b);
    for (i, (n, w)) in now.iter().zip(before).enumerate() {
        let want = usize::from(which.contains(&i));
        assert_eq!(
            (n.0 - w.0, n.1 - w.1),
            (want, want),
            "board {}: (connections, authentications) of this command",
            b.targets[i]
        );
    }
}

/// What the local rtscope `pid` left: anything in its $TMPDIR (control sockets, fetched
/// databases), and a control directory of its in /tmp (where a long $TMPDIR sends them).
pub fn local_leftovers(b: &Boards, pid: u32) -> Vec<String> {
    let mine = format!("rtscope-ssh.{pid}.");
    let names = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d)
            .map(|r| {
                r.filter_map(|e| e.ok())
                    .map(|e| e.path().display().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut left = names(&b.dir.join("ltmp"));
    left.extend(names(Path::new("/tmp")).into_iter().filter(|p| {
        Path::new(p)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(&mine))
    }));
    left
}

/// `c` run to its end: its pid and output.
pub fn pid_and_output(mut c: Command) -> (u32, std::process::Output) {
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child.id(), child.wait_with_output().unwrap())
}

/// Directories the remote runs left in the boards' /tmp.
pub fn remote_dirs(b: &Boards) -> Vec<String> {
    std::fs::read_dir(b.dir.join("tmp"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rtscope.") && n.len() == "rtscope.XXXXXX".len())
        .collect()
}

pub fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

pub fn stat(pid: u32) -> Option<(String, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (l, r) = (s.find('(')?, s.rfind(')')?);
    let ppid = s[r + 2..].split(' ').nth(1)?.parse().ok()?;
    Some((s[l + 1..r].to_string(), ppid))
}

/// Whether `pid` is one of `roots` or a descendant of one.
pub fn descends_from(mut pid: u32, roots: &[u32]) -> bool {
    for _ in 0..64 {
        if roots.contains(&pid) {
            return true;
        }
        match stat(pid) {
            Some((_, ppid)) if ppid > 1 => pid = ppid,
            _ => return false,
        }
    }
    false
}

/// The remote rtscope of `b`'s boards: a process named rtscope under one of their sshd, working
/// in /tmp/rtscope.XXXXXX (their private /tmp).
pub fn remote_rtscope(b: &Boards) -> Option<u32> {
    let servers: Vec<u32> = b.servers.iter().map(Child::id).collect();
    pids().into_iter().find(|&p| {
        stat(p).is_some_and(|(comm, _)| comm == "rtscope")
            && descends_from(p, &servers)
            && std::fs::read_link(format!("/proc/{p}/cwd"))
                .is_ok_and(|c| c.to_string_lossy().starts_with("/tmp/rtscope."))
    })
}

/// The local ssh of `local` that runs the board's session (`master`: false) or holds its
/// connection (`master`: true), told apart by their ControlMaster option.
pub fn local_ssh(local: u32, master: bool) -> Option<u32> {
    let want = if master {
        "ControlMaster=yes"
    } else {
        "ControlMaster=no"
    };
    pids().into_iter().find(|&p| {
        stat(p).is_some_and(|(comm, ppid)| comm == "ssh" && ppid == local)
            && std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == want.as_bytes()))
    })
}

/// A targets.toml naming the three boards a, b and c. They get a copy of this rtscope without
/// its debug information (`copy`): a sixth of the bytes through ssh, as a release binary.
pub fn targets_file(b: &Boards) -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_rtscope"));
    let small = b.dir.join("rtscope-stripped");
    let stripped = Command::new("strip")
        .arg("-o")
        .arg(&small)
        .arg(&exe)
        .status()
        .is_ok_and(|s| s.success());
    let copy = if stripped { small } else { exe };
    let mut text = format!(
        "[defaults]\nidentity = \"{}\"\ncopy = \"{}\"\ntags = {{ lab = \"loopback\" }}\n",
        b.dir.join("id").display(),
        copy.display()
    );
    for (name, t) in ["a", "b", "c"].iter().zip(&b.targets) {
        let (user, rest) = t.split_once('@').unwrap();
        let (host, port) = rest.split_once(':').unwrap();
        text.push_str(&format!(
            "\n[boards.{name}]\nhost = \"{host}\"\nport = {port}\nuser = \"{user}\"\n"
        ));
    }
    let path = b.dir.join("targets.toml");
    std::fs::write(&path, text).unwrap();
    path
}

pub fn runs_json(db: &Path) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(["runs", "--json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    // None yet (a database still being created) reads as no runs.
    serde_json::from_slice::<Value>(&o.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// Starts a 60 s measurement on board 127.0.0.3; the local rtscope and the remote one's pid,
/// once the remote rtscope measures (it has started threads: its run's signals are held, so a
/// stop is taken by its control loop). A stop sent the instant its process appears (before its
/// `main`) is the early case, checked by `a_ctrl_c_right_after_a_board_started_is_an_interruption`.
pub fn long_remote_run(b: &Boards, db: &Path) -> (Child, u32) {
    let local = rtscope(b)
        .args(["measure", "-D", "60s", "-i", "1ms", "-q", "--db"])
        .arg(db)
        .args(["--target", &b.targets[1]])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut local = local;
    loop {
        if let Some(p) = remote_rtscope(b).filter(|&p| threads(p) > 1) {
            return (local, p);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = local.kill();
            let _ = local.wait();
            panic!("the remote run did not start");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How many threads process `pid` has (0 once it is gone).
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

pub fn kill(signal: &str, pid: u32) {
    assert!(Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap()
        .success());
}
