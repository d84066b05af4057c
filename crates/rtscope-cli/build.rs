//! Build information for `rtscope --version`: the target triple and the git commit.
//!
//! The commit comes from `$RTSCOPE_GIT_COMMIT` when set (a packager building from a tarball can
//! pass it), else from `git rev-parse` in the source tree, else it is `unknown` (a tarball
//! without `.git`, or no git installed). Never fails the build.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=RTSCOPE_GIT_COMMIT");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=RTSCOPE_TARGET={target}");
    let dir = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = match std::env::var("RTSCOPE_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_owned(),
        _ => git(&dir, &["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into()),
    };
    // Only printable ASCII reaches the version string.
    let commit: String = commit
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(64)
        .collect();
    println!("cargo:rustc-env=RTSCOPE_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (a branch switch) and the branch's ref (a commit).
    for rel in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&dir, &["rev-parse", "--git-path", rel]) {
            rerun_if_exists(&dir, &p);
        }
    }
    if let Some(r) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&dir, &["rev-parse", "--git-path", &r]) {
            rerun_if_exists(&dir, &p);
        }
    }
}

fn rerun_if_exists(dir: &Path, p: &str) {
    let path = dir.join(p);
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
