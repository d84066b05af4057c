//! Everything the checks read: files under a root directory (`/` on a live system, a fixture
//! tree in tests) and the few facts that need a system call, behind [`Probe`].

use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes read from one file (a /proc or /sys file is far smaller; a fixture or a
/// hostile file is cut here).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The most bytes a kernel configuration may decompress to (a distribution's is about 300 KB).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The most /proc entries (processes, or threads of one process) a scan looks at.
pub const MAX_PROC_ENTRIES: usize = 200_000;

/// `uname(2)`'s fields (the checks use release, version and machine; results carry all five).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Uname {
    /// Kernel name (`Linux`), as in `uname -s`.
    pub sysname: String,
    /// Host name, as in `uname -n`.
    pub nodename: String,
    /// Kernel release (`6.18.44-fc-v669`), as in `uname -r`.
    pub release: String,
    /// Kernel version (`#1 SMP PREEMPT_DYNAMIC ...`), as in `uname -v`.
    pub version: String,
    /// Machine (`x86_64`, `aarch64`), as in `uname -m`.
    pub machine: String,
}

/// A soft and a hard resource limit; `None` means unlimited (`RLIM_INFINITY`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rlimit {
    /// The soft limit (what applies now).
    pub soft: Option<u64>,
    /// The hard limit (how far an unprivileged process may raise the soft one).
    pub hard: Option<u64>,
}

/// The resource limits the checks read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// `RLIMIT_MEMLOCK`, in bytes.
    Memlock,
    /// `RLIMIT_RTPRIO`, a priority (0–99).
    Rtprio,
}

/// The facts that need a system call. [`LiveProbe`] asks the kernel; tests pass a
/// [`FixedProbe`].
pub trait Probe {
    /// `uname(2)`; `None` if it failed.
    fn uname(&self) -> Option<Uname>;
    /// `getrlimit(2)` of this process; `None` if it failed.
    fn rlimit(&self, resource: Resource) -> Option<Rlimit>;
}

/// The running kernel's answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct LiveProbe;

fn c_field(chars: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        // c_char is i8 on x86 and u8 on ARM: the byte itself, without a cast either way.
        .map(|&c| c.to_ne_bytes()[0])
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Probe for LiveProbe {
    fn uname(&self) -> Option<Uname> {
        // SAFETY: utsname is plain old data; all-zero bytes are a valid value.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        // SAFETY: `u` is a valid, writable utsname for the duration of the call.
        if unsafe { libc::uname(&mut u) } != 0 {
            return None;
        }
        Some(Uname {
            sysname: c_field(&u.sysname),
            nodename: c_field(&u.nodename),
            release: c_field(&u.release),
            version: c_field(&u.version),
            machine: c_field(&u.machine),
        })
    }

    fn rlimit(&self, resource: Resource) -> Option<Rlimit> {
        let which = match resource {
            Resource::Memlock => libc::RLIMIT_MEMLOCK,
            Resource::Rtprio => libc::RLIMIT_RTPRIO,
        };
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `lim` is a valid, writable rlimit for the duration of the call.
        if unsafe { libc::getrlimit(which, &mut lim) } != 0 {
            return None;
        }
        // rlim_t is 32 bits wide on 32-bit ARM (Raspberry Pi OS armhf), 64 elsewhere.
        #[allow(clippy::unnecessary_cast)]
        let value = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v as u64);
        Some(Rlimit {
            soft: value(lim.rlim_cur),
            hard: value(lim.rlim_max),
        })
    }
}

/// Fixed answers, for fixture trees.
#[derive(Clone, Debug, Default)]
pub struct FixedProbe {
    /// What [`Probe::uname`] returns.
    pub uname: Option<Uname>,
    /// What [`Probe::rlimit`] returns for [`Resource::Memlock`].
    pub memlock: Option<Rlimit>,
    /// What [`Probe::rlimit`] returns for [`Resource::Rtprio`].
    pub rtprio: Option<Rlimit>,
}

impl Probe for FixedProbe {
    fn uname(&self) -> Option<Uname> {
        self.uname.clone()
    }

    fn rlimit(&self, resource: Resource) -> Option<Rlimit> {
        match resource {
            Resource::Memlock => self.memlock,
            Resource::Rtprio => self.rtprio,
        }
    }
}

/// The system under audit: a root directory and a [`Probe`].
pub struct System<'a> {
    root: PathBuf,
    probe: &'a dyn Probe,
}

impl<'a> System<'a> {
    /// The system whose /proc and /sys are under `root`, asking `probe` for the rest.
    pub fn new(root: &Path, probe: &'a dyn Probe) -> Self {
        System {
            root: root.to_owned(),
            probe,
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The probe.
    pub fn probe(&self) -> &dyn Probe {
        self.probe
    }

    /// `rel` (an absolute path such as `/proc/cmdline`) under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// The bytes of `rel`, at most [`MAX_FILE_BYTES`]; `None` if it cannot be read.
    pub fn read_bytes(&self, rel: &str) -> Option<Vec<u8>> {
        let f = std::fs::File::open(self.path(rel)).ok()?;
        let mut out = Vec::new();
        f.take(MAX_FILE_BYTES).read_to_end(&mut out).ok()?;
        Some(out)
    }

    /// The text of `rel` (invalid UTF-8 replaced), trimmed; `None` if it cannot be read or is
    /// empty.
    pub fn read(&self, rel: &str) -> Option<String> {
        let bytes = self.read_bytes(rel)?;
        let text = String::from_utf8_lossy(&bytes);
        let t = text.trim();
        (!t.is_empty()).then(|| t.to_owned())
    }

    /// `rel` parsed as an integer (first token).
    pub fn read_i64(&self, rel: &str) -> Option<i64> {
        self.read(rel)?.split_whitespace().next()?.parse().ok()
    }

    /// Whether `rel` exists (without following a final symlink's target).
    pub fn exists(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.path(rel)).is_ok()
    }

    /// The names in directory `rel`, sorted; empty if it cannot be read. At most
    /// [`MAX_PROC_ENTRIES`] names.
    pub fn list(&self, rel: &str) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.path(rel)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .take(MAX_PROC_ENTRIES)
            .collect();
        names.sort();
        names
    }

    /// The entries of `rel` named `<prefix><N>`, as N ascending.
    pub fn numbered(&self, rel: &str, prefix: &str) -> Vec<u32> {
        let mut out: Vec<u32> = self
            .list(rel)
            .iter()
            .filter_map(|n| {
                let rest = n.strip_prefix(prefix)?;
                if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                rest.parse().ok()
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// The process IDs under /proc, ascending.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self
            .list("/proc")
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        pids.sort_unstable();
        pids
    }

    /// The online CPUs (`/sys/devices/system/cpu/online`, else the `cpuN` directories).
    pub fn online_cpus(&self) -> Vec<u32> {
        match self
            .read("/sys/devices/system/cpu/online")
            .and_then(|s| parse_cpulist(&s))
        {
            Some(list) if !list.is_empty() => list,
            _ => self.numbered("/sys/devices/system/cpu", "cpu"),
        }
    }

    /// The kernel command line.
    pub fn cmdline(&self) -> Option<String> {
        self.read("/proc/cmdline")
    }

    /// The running kernel's build configuration, from `/proc/config.gz` or
    /// `/boot/config-<release>`.
    pub fn kernel_config(&self) -> Option<KernelConfig> {
        if let Ok(f) = std::fs::File::open(self.path("/proc/config.gz")) {
            let mut text = String::new();
            let gz = flate2::read::GzDecoder::new(f);
            if gz.take(MAX_CONFIG_BYTES).read_to_string(&mut text).is_ok() {
                return Some(KernelConfig {
                    source: "/proc/config.gz".to_owned(),
                    text,
                });
            }
        }
        let release = self.probe.uname()?.release;
        if release.contains('/') || release.contains("..") {
            return None;
        }
        let rel = format!("/boot/config-{release}");
        let bytes = self.read_bytes(&rel)?;
        Some(KernelConfig {
            source: rel,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }
}

/// A kernel build configuration (`CONFIG_X=y` lines).
#[derive(Clone, Debug)]
pub struct KernelConfig {
    /// Where it was read: `/proc/config.gz` or `/boot/config-<release>`.
    pub source: String,
    /// The text.
    pub text: String,
}

impl KernelConfig {
    /// The value of `key` (`CONFIG_PREEMPT_RT`): `Some("y")`, `Some("1000")`, or `None` when
    /// it is not set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k == key).then(|| v.trim_matches('"'))
        })
    }

    /// Whether `key` is `y`.
    pub fn is_y(&self, key: &str) -> bool {
        self.get(key) == Some("y")
    }
}

pub(crate) use rtscope_core::cpulist::{format as format_cpulist, parse as parse_cpulist};

/// The value of `key` on a kernel command line: `Some("2-3")` for `key=2-3`, `Some("")` for a
/// bare `key`, `None` when absent. The last occurrence wins, as in the kernel.
pub fn cmdline_value<'c>(cmdline: &'c str, key: &str) -> Option<&'c str> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter_map(|w| match w.split_once('=') {
            Some((k, v)) if k == key => Some(v),
            None if w == key => Some(""),
            _ => None,
        })
        .last()
}

/// The CPU list of an `isolcpus=` value, after its flags (`nohz,domain,managed_irq,2-3`).
pub fn isolcpus_list(value: &str) -> Option<Vec<u32>> {
    let cpus: Vec<&str> = value
        .split(',')
        .filter(|p| p.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    parse_cpulist(&cpus.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_values() {
        let c = "ro isolcpus=nohz,domain,managed_irq,2-3 threadirqs preempt=full -- preempt=none";
        assert_eq!(cmdline_value(c, "preempt"), Some("full"));
        assert_eq!(cmdline_value(c, "threadirqs"), Some(""));
        assert_eq!(cmdline_value(c, "nohz_full"), None);
        let iso = cmdline_value(c, "isolcpus").unwrap();
        assert_eq!(isolcpus_list(iso), Some(vec![2, 3]));
        assert_eq!(isolcpus_list("1,3-4"), Some(vec![1, 3, 4]));
    }

    #[test]
    fn live_probe_answers() {
        let u = LiveProbe.uname().expect("uname");
        assert!(!u.release.is_empty());
        assert!(LiveProbe.rlimit(Resource::Memlock).is_some());
    }
}
