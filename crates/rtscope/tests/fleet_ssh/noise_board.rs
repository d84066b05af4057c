//! `rtscope noise --target`: the noise run on a loopback board (a real sshd), its run merged
//! into the local database tagged with the board, nothing left on the board or here; the
//! options that only mean something locally are refused before any board is touched.

use super::boards::*;
use crate::common;

#[test]
fn noise_runs_on_a_named_board_and_its_run_is_merged_here_tagged_with_the_board() {
    let Some(b) = start("fleet-ssh-noise") else {
        return;
    };
    let _rt = common::rt_lock();
    let before = remote_dirs(&b);
    let conns = connections(&b);
    let db = b.dir.join("noise.db");
    let mut c = rtscope(&b);
    c.args(["noise", "-D", "1s", "--cpus", "0", "--explain", "off"])
        .args([
            "--no-mlock",
            "-q",
            "--label",
            "on-a-board",
            "--tag",
            "rig=7",
        ])
        .args(["--target", "b", "--targets-file"])
        .arg(targets_file(&b))
        .arg("--db")
        .arg(&db);
    let (pid, o) = pid_and_output(c);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(
        stdout.matches("1 run(s) merged into ").count(),
        1,
        "{stdout}"
    );
    // The board's own table streams back.
    assert!(stdout.contains("MAX SINGLE"), "{stdout}");
    let runs = runs_json(&db);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r = &runs[0];
    assert_eq!(r["kind"], "noise", "{r}");
    assert_eq!(r["label"], "on-a-board", "{r}");
    assert_eq!(r["tags"]["board"], "b", "{r}");
    assert_eq!(r["tags"]["rig"], "7", "{r}");
    one_connection_each(&b, &conns, &[1]);
    assert_eq!(local_leftovers(&b, pid), Vec::<String>::new());
    assert_eq!(remote_dirs(&b), before, "the copies were removed");
}

#[test]
fn noise_json_and_no_db_are_refused_with_a_target() {
    let dir = common::fresh_dir("fleet-noise-local-only");
    for extra in [["--json", "x.json"], ["--no-db", "--quiet"]] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_rtscope"))
            .args(["noise", "-D", "1s", "--target", "127.0.0.9"])
            .args(extra)
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(
            err.contains("cannot be used with --target"),
            "{extra:?}: {err}"
        );
        assert!(!dir.join("x.json").exists() && !dir.join("rtscope.db").exists());
    }
}
