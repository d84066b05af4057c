//! Facts about the machine that results carry: uname, PREEMPT_RT state, times.

use rtscope_check::{LiveProbe, Probe};
use serde::Serialize;
use std::time::{SystemTime, UNIX_EPOCH};

/// `uname(2)` plus the real-time flag.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SysInfo {
    /// Kernel name (`Linux`).
    pub sysname: String,
    /// Host name.
    pub nodename: String,
    /// Kernel release.
    pub release: String,
    /// Kernel version string (`#1 SMP PREEMPT_RT ...`).
    pub version: String,
    /// Machine (`x86_64`, `aarch64`).
    pub machine: String,
    /// 1 when `/sys/kernel/realtime` says the kernel is PREEMPT_RT, else 0.
    pub realtime: u8,
}

impl SysInfo {
    /// Reads it from this machine (empty names where `uname(2)` failed).
    pub fn read() -> SysInfo {
        let u = LiveProbe.uname().unwrap_or_default();
        let realtime = std::fs::read_to_string("/sys/kernel/realtime")
            .map(|s| u8::from(s.trim() == "1"))
            .unwrap_or(0);
        SysInfo {
            sysname: u.sysname,
            nodename: u.nodename,
            release: u.release,
            version: u.version,
            machine: u.machine,
            realtime,
        }
    }
}

/// Seconds since the epoch as a `timespec` whose `tv_sec` is a C `time_t`: the libc crate
/// deprecates naming `libc::time_t` on musl targets (its width changed in musl 1.2), so the
/// type comes from the field. Saturates where `time_t` is 32 bits.
fn epoch_timespec(secs: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: secs.try_into().unwrap_or(i32::MAX as _),
        tv_nsec: 0,
    }
}

/// Formats a time with `strftime` in local time (`%a, %d %b %Y %H:%M:%S %z` is cyclictest's).
pub fn strftime_local(t: SystemTime, format: &str) -> String {
    let secs = epoch_timespec(t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()));
    // SAFETY: tm is plain data, filled by localtime_r.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    unsafe { libc::localtime_r(&secs.tv_sec, &mut tm) };
    let fmt = std::ffi::CString::new(format).unwrap_or_default();
    let mut buf = [0u8; 128];
    // SAFETY: buf has the length passed; fmt is NUL-terminated; tm is initialised.
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm) };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// `/proc/loadavg` without its newline.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_uname_and_formats_times() {
        let s = SysInfo::read();
        assert_eq!(s.sysname, "Linux");
        assert!(!s.release.is_empty());
        let t = UNIX_EPOCH + std::time::Duration::new(1_795_312_878, 5);
        assert!(strftime_local(t, "%Y").starts_with("2026"));
    }
}
