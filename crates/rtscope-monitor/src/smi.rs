//! The System Management Interrupt counter: how often firmware took every CPU away from the
//! kernel, a time no kernel event and no tracer can see.
//!
//! Intel CPUs of family 6 count SMIs in `MSR_SMI_COUNT` (0x34, the low 32 bits). Linux exposes
//! model-specific registers through the `msr` driver as `/dev/cpu/<N>/msr`, read with
//! `pread(fd, 8 bytes, offset = register)`; that needs root (CAP_SYS_RAWIO). AMD has no such
//! counter (only a performance event, `ls_smi_rx`), and a hypervisor may not implement the
//! register (the read fails with EIO). [`SmiCounter::open`] says which of these holds, as a
//! [`SmiUnavailable`] with its fix, and never guesses a count.
//!
//! Everything is read below a root directory (`/` in production, a fixture tree in tests: a
//! regular file with the value at offset 0x34 stands for the device). The counter is read by
//! the thread that drives a run, never by a measuring thread: an SMI stops every CPU at once,
//! so a count per CPU over an interval is what tells whether firmware was there.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// `MSR_SMI_COUNT`.
pub const MSR_SMI_COUNT: u64 = 0x34;
/// The counter's width: the register's low 32 bits count.
const MASK: u64 = 0xffff_ffff;

/// Why there is no SMI count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmiUnavailable {
    /// `/proc/cpuinfo` names no x86 vendor (an ARM board: no SMM, nothing to count).
    NotX86,
    /// An x86 CPU whose vendor or family has no `MSR_SMI_COUNT`.
    NoCounter {
        /// `vendor_id` and `cpu family` as `/proc/cpuinfo` gives them.
        cpu: String,
    },
    /// No `/dev/cpu/<N>/msr`: the msr driver is not loaded.
    NoDriver {
        /// The missing path.
        path: PathBuf,
    },
    /// The device exists but may not be opened.
    Permission {
        /// The device.
        path: PathBuf,
    },
    /// The read failed: the CPU or the hypervisor does not implement the register (EIO), or
    /// another error.
    Unreadable {
        /// The device.
        path: PathBuf,
        /// What the read said.
        error: String,
    },
}

impl fmt::Display for SmiUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmiUnavailable::NotX86 => write!(
                f,
                "no SMI counter: not an x86 CPU (no vendor_id in /proc/cpuinfo); \
                 System Management Mode is an x86 feature"
            ),
            SmiUnavailable::NoCounter { cpu } => write!(
                f,
                "no SMI counter on this CPU ({cpu}): MSR_SMI_COUNT (0x34) exists on Intel \
                 family 6 only; AMD counts SMIs only as a performance event (ls_smi_rx)"
            ),
            SmiUnavailable::NoDriver { path } => write!(
                f,
                "no SMI counter: {} does not exist (load the msr driver: modprobe msr)",
                path.display()
            ),
            SmiUnavailable::Permission { path } => write!(
                f,
                "no SMI counter: {} may not be opened (run as root: reading an MSR needs \
                 CAP_SYS_RAWIO)",
                path.display()
            ),
            SmiUnavailable::Unreadable { path, error } => write!(
                f,
                "no SMI counter: reading MSR 0x34 through {} failed ({error}); the CPU or the \
                 hypervisor does not implement it",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SmiUnavailable {}

/// Open `msr` devices of some CPUs, read together.
#[derive(Debug)]
pub struct SmiCounter {
    cpus: Vec<(usize, PathBuf, File)>,
}

impl SmiCounter {
    /// Whether the CPU (`<root>/proc/cpuinfo`) has the counter, before any device is opened.
    pub fn check(root: &Path) -> Result<(), SmiUnavailable> {
        check_cpu(&std::fs::read_to_string(root.join("proc/cpuinfo")).unwrap_or_default())
    }

    /// Checks the CPU (`<root>/proc/cpuinfo`) and opens `<root>/dev/cpu/<N>/msr` for each of
    /// `cpus`, reading each once: a counter that opens is one that reads.
    pub fn open(root: &Path, cpus: &[usize]) -> Result<SmiCounter, SmiUnavailable> {
        SmiCounter::check(root)?;
        let open = cpus
            .iter()
            .map(|&cpu| open_one(root, cpu))
            .collect::<Result<_, _>>()?;
        Ok(SmiCounter { cpus: open })
    }

    /// Like [`SmiCounter::open`], but leaves out the CPUs whose device does not open or read
    /// (an offline CPU, one the driver refuses); `Err` only where the CPU has no counter.
    pub fn open_available(root: &Path, cpus: &[usize]) -> Result<SmiCounter, SmiUnavailable> {
        SmiCounter::check(root)?;
        let open = cpus.iter().filter_map(|&cpu| open_one(root, cpu).ok());
        Ok(SmiCounter {
            cpus: open.collect(),
        })
    }

    /// The CPUs, in the order [`SmiCounter::read`] returns their counts.
    pub fn cpus(&self) -> impl Iterator<Item = usize> + '_ {
        self.cpus.iter().map(|(cpu, _, _)| *cpu)
    }

    /// `cpu`'s count now (32 bits, wrapping); `None` where its counter is not open here or
    /// the read failed. Read from another CPU, the msr driver interrupts `cpu` for it (an IPI).
    pub fn read_cpu(&self, cpu: usize) -> Option<u64> {
        let (_, _, f) = self.cpus.iter().find(|(c, _, _)| *c == cpu)?;
        read_msr(f).ok()
    }

    /// Each CPU's count now (32 bits, wrapping); `None` where the read failed.
    pub fn read(&self) -> Vec<Option<u64>> {
        self.cpus.iter().map(|(_, _, f)| read_msr(f).ok()).collect()
    }
}

/// SMIs between two readings of the 32-bit counter (it wraps).
pub fn smis_between(before: u64, after: u64) -> u64 {
    after.wrapping_sub(before) & MASK
}

/// `<root>/dev/cpu/<cpu>/msr`, opened and read once.
fn open_one(root: &Path, cpu: usize) -> Result<(usize, PathBuf, File), SmiUnavailable> {
    let path = root.join(format!("dev/cpu/{cpu}/msr"));
    let file = File::open(&path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => SmiUnavailable::NoDriver { path: path.clone() },
        io::ErrorKind::PermissionDenied => SmiUnavailable::Permission { path: path.clone() },
        _ => SmiUnavailable::Unreadable {
            path: path.clone(),
            error: e.to_string(),
        },
    })?;
    read_msr(&file).map_err(|e| SmiUnavailable::Unreadable {
        path: path.clone(),
        error: e.to_string(),
    })?;
    Ok((cpu, path, file))
}

fn read_msr(f: &File) -> io::Result<u64> {
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, MSR_SMI_COUNT)?;
    Ok(u64::from_le_bytes(b) & MASK)
}

/// An Intel CPU of family 6 (every Core, Xeon and Atom since 2006) has the counter.
fn check_cpu(cpuinfo: &str) -> Result<(), SmiUnavailable> {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_owned())
        })
    };
    let Some(vendor) = field("vendor_id") else {
        return Err(SmiUnavailable::NotX86);
    };
    let family = field("cpu family").unwrap_or_default();
    if vendor == "GenuineIntel" && family == "6" {
        Ok(())
    } else {
        Err(SmiUnavailable::NoCounter {
            cpu: format!("{vendor}, family {family}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTEL: &str =
        "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n";

    /// A fixture directory, removed when dropped.
    struct Tree(PathBuf);

    impl Tree {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A fixture tree: cpuinfo and one fake `msr` file per CPU holding `counts`.
    fn tree(cpuinfo: &str, counts: &[(usize, u64)]) -> Tree {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = Tree(std::env::temp_dir().join(format!(
            "rtscope-smi-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        )));
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        std::fs::write(d.path().join("proc/cpuinfo"), cpuinfo).unwrap();
        for &(cpu, v) in counts {
            set(d.path(), cpu, v);
        }
        d
    }

    fn set(root: &Path, cpu: usize, v: u64) {
        let dir = root.join(format!("dev/cpu/{cpu}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut b = vec![0u8; MSR_SMI_COUNT as usize];
        b.extend_from_slice(&v.to_le_bytes());
        std::fs::write(dir.join("msr"), b).unwrap();
    }

    #[test]
    fn counts_are_read_per_cpu_and_masked_to_32_bits() {
        let d = tree(INTEL, &[(0, 7), (3, 0xdead_0000_0005)]);
        let c = SmiCounter::open(d.path(), &[0, 3]).unwrap();
        assert_eq!(c.cpus().collect::<Vec<_>>(), [0, 3]);
        assert_eq!(c.read(), [Some(7), Some(5)]);
        set(d.path(), 0, 9); // the counter moves: each read is a new pread of the open file
        assert_eq!(c.read(), [Some(9), Some(5)]);
        assert_eq!(smis_between(7, 9), 2);
    }

    #[test]
    fn the_difference_wraps_at_32_bits() {
        assert_eq!(smis_between(10, 13), 3);
        assert_eq!(smis_between(0xffff_fffe, 1), 3);
        assert_eq!(smis_between(5, 5), 0);
    }

    #[test]
    fn every_reason_for_no_count_is_named_with_its_fix() {
        let arm = tree(
            "processor\t: 0\nBogoMIPS\t: 108.00\nCPU implementer\t: 0x41\n",
            &[],
        );
        let e = SmiCounter::open(arm.path(), &[0]).unwrap_err();
        assert_eq!(e, SmiUnavailable::NotX86);
        assert!(e.to_string().contains("not an x86 CPU"), "{e}");

        let amd = tree("vendor_id\t: AuthenticAMD\ncpu family\t: 25\n", &[(0, 1)]);
        let e = SmiCounter::open(amd.path(), &[0]).unwrap_err();
        assert!(
            e.to_string().contains("AuthenticAMD, family 25")
                && e.to_string().contains("ls_smi_rx"),
            "{e}"
        );

        let old = tree("vendor_id\t: GenuineIntel\ncpu family\t: 15\n", &[(0, 1)]);
        assert!(matches!(
            SmiCounter::open(old.path(), &[0]),
            Err(SmiUnavailable::NoCounter { .. })
        ));

        let nodrv = tree(INTEL, &[(0, 1)]);
        let e = SmiCounter::open(nodrv.path(), &[0, 1]).unwrap_err();
        assert!(matches!(&e, SmiUnavailable::NoDriver { path } if path.ends_with("dev/cpu/1/msr")));
        assert!(e.to_string().contains("modprobe msr"), "{e}");
    }

    #[test]
    fn a_register_that_cannot_be_read_is_refused_at_open() {
        let d = tree(INTEL, &[]);
        let dir = d.path().join("dev/cpu/0");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("msr"), [0u8; 16]).unwrap(); // shorter than 0x34 + 8
        let e = SmiCounter::open(d.path(), &[0]).unwrap_err();
        assert!(matches!(e, SmiUnavailable::Unreadable { .. }), "{e:?}");
        assert!(e.to_string().contains("does not implement"), "{e}");
    }
}
