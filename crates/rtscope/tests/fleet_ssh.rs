//! `rtscope measure --target` against three real `sshd` "boards" (Debian's openssh-server)
//! started by the test on 127.0.0.2, .3 and .4 with private host keys and a private authorized
//! key (BatchMode): fan-out, merge tagged board=…, a board that cannot be reached failing
//! alone with its reason, nothing left in the boards' /tmp, and a killed ssh leaving no remote
//! rtscope running (checked in /proc). Skipped, with the reason, only when sshd is not
//! installed (.ci/run installs openssh-server).

use crate::common;

use serde_json::Value;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

struct Boards {
    dir: PathBuf,
    servers: Vec<Child>,
    targets: Vec<String>,
}

impl Drop for Boards {
    fn drop(&mut self) {
        for s in &mut self.servers {
            let _ = s.kill();
            let _ = s.wait();
        }
    }
}

fn keygen(path: &Path) {
    let s = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap();
    assert!(s.success());
}

fn free_port(addr: &str) -> u16 {
    TcpListener::bind((addr, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(name: &str) -> Option<Boards> {
    if !Path::new(SSHD).exists() || Command::new("ssh").arg("-V").output().is_err() {
        eprintln!(
            "SKIP: {SSHD} or ssh is not installed (Debian openssh-server; .ci/run installs it)"
        );
        return None;
    }
    let dir = common::fresh_dir(name);
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
            format!("Port {port}\nListenAddress {addr}\nHostKey {d}/host_key\nPidFile {d}/sshd-{addr}.pid\nAuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n"),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join(format!("sshd-{addr}.log"))).unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        b.servers.push(child);
        let start = Instant::now();
        while TcpStream::connect((addr, port)).is_err() {
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

fn rtscope(b: &Boards) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtscope"));
    c.env(
        "RTSCOPE_SSH",
        format!("ssh -F {}", b.dir.join("ssh_config").display()),
    );
    c
}

/// Directories the remote runs left in /tmp.
fn remote_dirs() -> Vec<String> {
    std::fs::read_dir("/tmp")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rtscope.") && n.len() == "rtscope.XXXXXX".len())
        .collect()
}

#[test]
fn three_boards_measure_merge_and_one_unreachable_board_fails_alone() {
    let Some(b) = start("fleet-ssh") else { return };
    let before = remote_dirs();
    let db = b.dir.join("lab.db");
    let dead = format!("root@127.0.0.5:{}", free_port("127.0.0.5"));
    let mut c = rtscope(&b);
    c.args([
        "measure", "-l", "300", "-i", "200us", "-q", "--label", "idle", "--db",
    ])
    .arg(&db);
    for t in b.targets.iter().chain([&dead]) {
        c.args(["--target", t]);
    }
    let o = {
        let _rt = common::rt_lock();
        c.output().unwrap()
    };
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(2), "{stdout}{stderr}");
    eprintln!("{stdout}{stderr}");
    assert!(stderr.contains("board 127.0.0.5 failed"), "{stderr}");
    assert_eq!(
        stdout.matches(" run(s) merged into ").count(),
        3,
        "{stdout}"
    );
    assert!(
        stdout.contains("[127.0.0.3] "),
        "the boards' output streams back: {stdout}"
    );
    let list = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(["runs", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let runs: Value = serde_json::from_slice(&list.stdout).unwrap();
    let mut boards: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tags"]["board"].as_str().unwrap())
        .collect();
    boards.sort_unstable();
    assert_eq!(boards, ["127.0.0.2", "127.0.0.3", "127.0.0.4"]);
    let cmp = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(["compare", "board=127.0.0.2", "board=127.0.0.4", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    // Exit 1 is a regression verdict between two boards (load on this machine decides it).
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        matches!(cmp.status.code(), Some(0 | 1)),
        "{text}{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    assert!(text.contains("board=127.0.0.4: 1 run"), "{text}");
    assert_eq!(
        remote_dirs(),
        before,
        "the copies were removed from the boards"
    );
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

fn stat(pid: u32) -> Option<(String, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (l, r) = (s.find('(')?, s.rfind(')')?);
    let ppid = s[r + 2..].split(' ').nth(1)?.parse().ok()?;
    Some((s[l + 1..r].to_string(), ppid))
}

/// The remote rtscope: a process named rtscope working in /tmp/rtscope.XXXXXX.
fn remote_rtscope() -> Option<u32> {
    pids().into_iter().find(|&p| {
        stat(p).is_some_and(|(comm, _)| comm == "rtscope")
            && std::fs::read_link(format!("/proc/{p}/cwd"))
                .is_ok_and(|c| c.to_string_lossy().starts_with("/tmp/rtscope."))
    })
}

#[test]
fn a_killed_ssh_leaves_no_remote_process() {
    let Some(b) = start("fleet-ssh-kill") else {
        return;
    };
    let _rt = common::rt_lock();
    let local = rtscope(&b)
        .args(["measure", "-D", "60s", "-i", "1ms", "-q", "--db"])
        .arg(b.dir.join("k.db"))
        .args(["--target", &b.targets[0]])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let remote = loop {
        if let Some(p) = remote_rtscope() {
            break p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the remote run did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // The ssh that runs it: a child of the local rtscope.
    let ssh = pids()
        .into_iter()
        .find(|&p| stat(p).is_some_and(|(comm, ppid)| comm == "ssh" && ppid == local.id()))
        .expect("the local ssh");
    assert!(Command::new("kill")
        .args(["-KILL", &ssh.to_string()])
        .status()
        .unwrap()
        .success());
    let start = Instant::now();
    // Gone, or its pid reused by another program.
    while stat(remote).is_some_and(|(comm, _)| comm == "rtscope") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "remote rtscope {remote} still runs"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = local.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("board 127.0.0.2 failed"), "{stderr}");
    assert!(remote_rtscope().is_none());
}
