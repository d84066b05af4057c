//! The reaper: a forked child that removes the instance directory when rtscope dies, however it
//! dies (SIGKILL included). It is started before the directory is made, so a death during the
//! instance's set-up is covered too.
//!
//! It is an [`rtscope_common::keeper::Keeper`]: when rtscope exits for any reason the kernel
//! closes the keeper's pipe, and the child turns the instance's tracing off and removes the
//! directory (retrying while the dead process's `trace_pipe_raw` files are still being
//! released). A Ctrl-C on the terminal reaches only rtscope, whose normal path removes the
//! instance itself.
//!
//! The timerlat tier also changes two global osnoise settings (`osnoise/cpus`,
//! `osnoise/timerlat_period_us`); their previous values are handed to the reaper
//! ([`Reaper::spawn_restoring`]), which writes them back after removing the instance.

use crate::TraceError;
use rtscope_common::keeper::Keeper;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The running reaper; dropping it ends it (after the instance was removed normally).
#[derive(Debug)]
pub struct Reaper {
    keeper: Keeper,
}

fn cstr(p: &Path) -> Result<CString, TraceError> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| TraceError::Unavailable("path with NUL".into()))
}

impl Reaper {
    /// Starts a reaper for the instance directory `dir`.
    pub fn spawn(dir: &Path) -> Result<Reaper, TraceError> {
        Reaper::spawn_restoring(dir, &[])
    }

    /// Starts a reaper for `dir` that also writes each `(file, value)` of `restore` back once
    /// the instance is gone.
    pub fn spawn_restoring(
        dir: &Path,
        restore: &[(PathBuf, String)],
    ) -> Result<Reaper, TraceError> {
        Reaper::spawn_cleaning(dir, restore, &[], &[])
    }

    /// Starts a reaper for `dir` that first appends each `(file, line)` of `undo` (the `!`
    /// lines taking the late-only stacks' hist triggers back: the kernel refuses to remove an
    /// instance whose hist triggers hold variables), and once the instance is gone each of
    /// `appends` (the `!name` lines deleting their synthetic events, never truncating
    /// `synthetic_events`), then writes `restore` back.
    pub fn spawn_cleaning(
        dir: &Path,
        restore: &[(PathBuf, String)],
        undo: &[(PathBuf, String)],
        appends: &[(PathBuf, String)],
    ) -> Result<Reaper, TraceError> {
        let prepare = |v: &[(PathBuf, String)]| {
            v.iter()
                .map(|(p, v)| Ok((cstr(p)?, v.clone().into_bytes())))
                .collect::<Result<Vec<_>, TraceError>>()
        };
        let restore = prepare(restore)?;
        let appends = prepare(appends)?;
        let undo = prepare(undo)?;
        let dir_c = cstr(dir)?;
        let off_c = cstr(&dir.join("tracing_on"))?;
        // SAFETY: `clean_up` makes only system calls on memory prepared here, before the fork.
        let keeper = unsafe {
            Keeper::spawn(
                c"rtscope-reaper",
                None,
                || {},
                || clean_up(&dir_c, &off_c, [&undo, &appends], &restore),
            )
        }
        .map_err(|e| TraceError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other(format!("the reaper could not be started: {e}")),
        })?;
        Ok(Reaper { keeper })
    }

    /// A reaper with no instance of its own: it only writes `restore` back (the top-level
    /// tracer's settings of `rtscope noise --irqs-off`).
    pub fn restoring(restore: &[(PathBuf, String)]) -> Result<Reaper, TraceError> {
        // A directory that never exists: its `tracing_on` cannot be opened, its rmdir fails
        // at once, and only the settings are written back.
        let none = PathBuf::from(format!(
            "/proc/self/rtscope-no-instance-{}",
            std::process::id()
        ));
        Reaper::spawn_restoring(&none, restore)
    }

    /// The reaper's PID.
    pub fn pid(&self) -> i32 {
        self.keeper.pid()
    }
}

/// What the reaper does once rtscope is gone: tracing off, the directory removed (retried
/// while the dead process's `trace_pipe_raw` files are still being released), the saved
/// settings written back. Runs in the forked keeper: system calls only.
fn clean_up(
    dir: &CString,
    tracing_on: &CString,
    [undo, appends]: [&[(CString, Vec<u8>)]; 2],
    restore: &[(CString, Vec<u8>)],
) {
    // SAFETY: only async-signal-safe system calls on memory allocated before the fork.
    unsafe {
        let fd = libc::open(tracing_on.as_ptr(), libc::O_WRONLY | libc::O_NOFOLLOW);
        if fd >= 0 {
            libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
        }
        append_each(undo);
        for _ in 0..250 {
            if libc::rmdir(dir.as_ptr()) == 0 || *libc::__errno_location() != libc::EBUSY {
                break;
            }
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 20_000_000,
            };
            libc::nanosleep(&ts, std::ptr::null_mut());
        }
        append_each(appends);
        for (path, value) in restore {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_TRUNC | libc::O_NOFOLLOW,
            );
            if fd >= 0 {
                libc::write(fd, value.as_ptr().cast(), value.len());
                libc::close(fd);
            }
        }
    }
}

/// Appends each line to its file (one write each, as the kernel takes a trigger or a
/// synthetic event). Runs in the forked keeper: system calls only.
fn append_each(lines: &[(CString, Vec<u8>)]) {
    for (path, value) in lines {
        // SAFETY: only async-signal-safe system calls on memory allocated before the fork.
        unsafe {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_APPEND | libc::O_NOFOLLOW,
            );
            if fd >= 0 {
                libc::write(fd, value.as_ptr().cast(), value.len());
                libc::close(fd);
            }
        }
    }
}

#[cfg(test)]
mod restore_tests {
    use super::*;

    #[test]
    fn a_reaper_without_an_instance_writes_the_settings_back_when_rtscope_dies() {
        let base = std::env::temp_dir().join(format!("rtscope-reaper-top-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let tracer = base.join("current_tracer");
        std::fs::write(&tracer, "hwlat").unwrap();
        drop(Reaper::restoring(&[(tracer.clone(), "nop".into())]).unwrap());
        assert_eq!(std::fs::read_to_string(&tracer).unwrap(), "nop");
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn the_reaper_deletes_synthetic_events_and_writes_saved_settings_back_after_removing_the_directory(
    ) {
        let base = std::env::temp_dir().join(format!("rtscope-reaper-{}", std::process::id()));
        let dir = base.join("instance");
        std::fs::create_dir_all(&dir).unwrap();
        let setting = base.join("cpus");
        std::fs::write(&setting, "1").unwrap();
        let defs = base.join("synthetic_events");
        std::fs::write(&defs, "rtscope_1_0_switch pid_t pid; u64 lat\n").unwrap();
        // A file inside the instance stands for its trigger files: the directory can be
        // removed only once the reaper took the trigger back (here: removed the file).
        let trigger = dir.join("trigger");
        std::fs::write(&trigger, "").unwrap();
        let r = Reaper::spawn_cleaning(
            &dir,
            &[(setting.clone(), "0-3".into())],
            &[(trigger.clone(), "!hist:keys=pid".into())],
            &[(defs.clone(), "!rtscope_1_0_switch".into())],
        )
        .unwrap();
        drop(r); // as if rtscope had died: the pipe closes, the child cleans up
        assert!(dir.exists(), "a directory with a file is not removed");
        assert_eq!(std::fs::read_to_string(&trigger).unwrap(), "!hist:keys=pid");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "0-3");
        // Appended, never truncated: the other synthetic events stay.
        assert_eq!(
            std::fs::read_to_string(&defs).unwrap(),
            "rtscope_1_0_switch pid_t pid; u64 lat\n!rtscope_1_0_switch"
        );
        std::fs::remove_dir_all(base).unwrap();
    }
}
