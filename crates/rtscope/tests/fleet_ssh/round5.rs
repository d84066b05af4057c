//! Issue 67 over the loopback boards: a CI document on standard output is the document alone
//! (the boards' lines go to stderr), and the directory a local rtscope SIGKILLed during the
//! copy leaves on a board is removed by the next fan-out.

use super::boards::*;
use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

/// Item 8: `--ci-output junit=- --target …`: stdout is the XML from its first byte; the
/// board's `[…]` lines and the merge summary are on stderr.
#[test]
fn a_ci_output_on_stdout_is_the_document_alone() {
    let Some(b) = start("fleet-r5-ci") else {
        return;
    };
    let _rt = common::rt_lock();
    let db = b.dir.join("ci.db");
    let mut c = rtscope(&b);
    c.args(common::SHORT_MEASURE).arg("--db").arg(&db).args([
        "--target",
        &b.targets[0],
        "--ci-output",
        "junit=-",
    ]);
    let (_, o) = pid_and_output(c);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.starts_with("<?xml"), "{stdout}");
    assert!(stdout.trim_end().ends_with("</testsuites>"), "{stdout}");
    assert!(!stdout.contains("[127.0.0.2]"), "{stdout}");
    assert!(stderr.contains("[127.0.0.2] "), "{stderr}");
    assert!(stderr.contains("run(s) merged into"), "{stderr}");
}

/// Item 10: a local rtscope SIGKILLed while its board is set up (the binary being copied)
/// leaves its directory there, with a partial binary; the next fan-out to that board removes
/// it, and leaves nothing of its own.
#[test]
fn the_next_fan_out_removes_what_a_killed_set_up_left() {
    let Some(b) = start("fleet-r5-litter") else {
        return;
    };
    let _rt = common::rt_lock();
    let before = remote_dirs(&b);
    // A copy that takes a while: a sparse 1 GiB "binary" (never run: the rtscope is killed
    // during its copy), from a targets.toml of the first board.
    let big = b.dir.join("big-binary");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let (user, rest) = b.targets[0].split_once('@').unwrap();
    let (host, port) = rest.split_once(':').unwrap();
    let targets = b.dir.join("slow.toml");
    std::fs::write(
        &targets,
        format!(
            "[boards.slow]\nhost = \"{host}\"\nport = {port}\nuser = \"{user}\"\nidentity = \"{}\"\ncopy = \"{}\"\n",
            b.dir.join("id").display(),
            big.display()
        ),
    )
    .unwrap();
    let mut local = rtscope(&b)
        .args(common::SHORT_MEASURE)
        .arg("--db")
        .arg(b.dir.join("l.db"))
        .arg("--targets-file")
        .arg(&targets)
        .args(["--target", "slow"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its directory on the board, once the copy has begun.
    let tmp = b.dir.join("tmp");
    let start = Instant::now();
    let dir = loop {
        let copying = remote_dirs(&b)
            .into_iter()
            .filter(|d| !before.contains(d))
            .map(|d| tmp.join(d))
            .find(|d| d.join("rtscope").exists());
        if let Some(d) = copying {
            break d;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the copy never began"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    local.kill().unwrap();
    local.wait().unwrap();
    let size = std::fs::metadata(dir.join("rtscope")).unwrap().len();
    assert!(size < 1 << 30, "killed during the copy: {size} bytes");
    // Its owner, the board's sshd process of the killed connection, ends with its master.
    let owner = std::fs::read_to_string(dir.join(".owner")).unwrap();
    let pid: u32 = owner.split(' ').next().unwrap().parse().unwrap();
    let start = Instant::now();
    while stat(pid).is_some() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the killed connection's sshd {pid} lives on"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(dir.is_dir(), "the litter: {}", dir.display());
    // The next fan-out (a check: nothing recorded) removes it.
    let o = rtscope(&b)
        .args(["check", "--target", &b.targets[0]])
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!dir.exists(), "left on the board: {}", dir.display());
    assert_eq!(remote_dirs(&b), before);
}
