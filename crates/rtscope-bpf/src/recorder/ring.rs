//! The rings' map and its read-only mapping: each CPU's head and records read as memory.

use super::record::{self, Record, RECORD};
use super::HEADER;
use crate::sys::{self, MapType};
use crate::BpfError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// The map's name.
pub(crate) const NAME: &str = "rtscope_rec";

/// The rings: the map, its mapping, their shape.
pub(crate) struct Ring {
    map: OwnedFd,
    addr: *mut libc::c_void,
    len: usize,
    records: u32,
    cpus: u32,
}

// SAFETY: the mapping is only read (atomically for the heads, by volatile copies for the
// records), never written through, and unmapped only on drop.
unsafe impl Send for Ring {}
// SAFETY: as above: every access through `&self` is a read.
unsafe impl Sync for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `addr`/`len` are the mapping this value made and nothing else unmaps.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

impl Ring {
    /// Each CPU's value (bytes): the header and the records.
    pub(crate) fn value_size(records: u32) -> usize {
        HEADER + records as usize * RECORD
    }

    /// The map of `cpus` rings of `records` each, mapped read-only.
    pub(crate) fn new(records: u32, cpus: u32) -> Result<Ring, BpfError> {
        if !records.is_power_of_two() || records < 2 {
            return Err(BpfError::Setting(format!(
                "{records} records per CPU: not a power of two"
            )));
        }
        let size = Ring::value_size(records);
        let map =
            sys::create_map_flags(NAME, MapType::Array, 4, size as u32, cpus, sys::F_MMAPABLE)?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let len = (size * cpus as usize).div_ceil(page) * page;
        // SAFETY: a shared read-only mapping of the whole array (the kernel maps its values
        // from offset 0, `len` rounded to pages as it allows); the result is checked.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                map.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(BpfError::Mmap {
                name: NAME.into(),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(Ring {
            map,
            addr,
            len,
            records,
            cpus,
        })
    }

    /// The map's file descriptor, for the programs.
    pub(crate) fn fd(&self) -> i32 {
        self.map.as_raw_fd()
    }

    /// The map, for the tests' updates.
    #[cfg(test)]
    pub(crate) fn map(&self) -> &OwnedFd {
        &self.map
    }

    /// The ring's length.
    #[cfg(test)]
    pub(crate) fn records(&self) -> u32 {
        self.records
    }

    fn base(&self, cpu: u32) -> Option<*const u8> {
        (cpu < self.cpus).then(|| {
            (self.addr as *const u8).wrapping_add(cpu as usize * Ring::value_size(self.records))
        })
    }

    /// How many records `cpu`'s programs reserved (0 for a CPU beyond the map).
    pub(crate) fn head(&self, cpu: u32) -> u64 {
        let Some(base) = self.base(cpu) else {
            return 0;
        };
        // SAFETY: `base` is the start of this CPU's value inside the mapping, 64-byte aligned
        // (the mapping is page aligned, each value a multiple of 64 bytes); its first 8 bytes
        // are the head the programs change only by atomic adds.
        let head = unsafe { &*(base as *const AtomicU64) };
        head.load(Ordering::Acquire)
    }

    /// The record of index `i` on `cpu`, copied: the word holding its sequence number first,
    /// by an acquire load (a seqlock's reader: the fields read after it are no older than the
    /// sequence number says on a CPU that reorders loads), then the others.
    fn copy(&self, base: *const u8, i: u64) -> [u8; RECORD] {
        let at = HEADER + (i % u64::from(self.records)) as usize * RECORD;
        // SAFETY: `at + RECORD` is within the CPU's value, inside the mapping, and 8-byte
        // aligned (records are 32-byte aligned in a 64-byte aligned value). The memory may
        // change under the copy (a program writing), which the sequence check detects: the
        // word with the sequence number is read atomically, the others volatile.
        let words: [u64; RECORD / 8] = unsafe {
            let word = |w: usize| base.add(at + w * 8) as *const u64;
            let seq = (*(word(1) as *const AtomicU64)).load(Ordering::Acquire);
            [
                std::ptr::read_volatile(word(0)),
                seq,
                std::ptr::read_volatile(word(2)),
                std::ptr::read_volatile(word(3)),
            ]
        };
        let mut out = [0u8; RECORD];
        for (o, w) in out.chunks_exact_mut(8).zip(words) {
            o.copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// `cpu`'s records from `from` to `to` (ns, inclusive), oldest first, and how many were
    /// dropped as torn. `between` runs after the copy, before the head is read again (the
    /// tests' writer).
    pub(crate) fn window(
        &self,
        cpu: u32,
        from: u64,
        to: u64,
        between: &mut dyn FnMut(),
    ) -> (Vec<Record>, u64) {
        let Some(base) = self.base(cpu) else {
            return (Vec::new(), 0);
        };
        let head = self.head(cpu);
        let first = head.saturating_sub(u64::from(self.records));
        let copies: Vec<(u64, [u8; RECORD])> =
            (first..head).map(|i| (i, self.copy(base, i))).collect();
        between();
        fence(Ordering::Acquire);
        let again = self.head(cpu);
        let reused = again.saturating_sub(u64::from(self.records));
        let mut torn = 0;
        let mut out = Vec::new();
        for (i, bytes) in copies {
            let whole = record::seq(&bytes) == (i + 1) as u32 && i >= reused;
            match whole.then(|| record::decode(&bytes, cpu, i)).flatten() {
                Some(r) if (from..=to).contains(&r.ts) => out.push(r),
                Some(_) => {}
                None => torn += 1,
            }
        }
        out.sort_by_key(|r| (r.ts, r.index));
        (out, torn)
    }

    /// `cpu`'s records from index `next` on, in index order ([`super::Recorder::since`]):
    /// those overwritten before or while they were copied are counted lost; a record still
    /// being written near the head ends the batch there (read next time); one left
    /// unpublished with more than [`NESTED`] records after it is counted lost. `between` runs
    /// after the copy, before the head is read again (the tests' writer).
    pub(crate) fn since(&self, cpu: u32, next: u64, between: &mut dyn FnMut()) -> Since {
        let Some(base) = self.base(cpu) else {
            return Since::default();
        };
        let head = self.head(cpu);
        let start = next.max(head.saturating_sub(u64::from(self.records)));
        let copies: Vec<(u64, [u8; RECORD])> =
            (start..head).map(|i| (i, self.copy(base, i))).collect();
        between();
        fence(Ordering::Acquire);
        let reused = self.head(cpu).saturating_sub(u64::from(self.records));
        let mut out = Since {
            records: Vec::new(),
            next: head.max(next),
            lost: start.saturating_sub(next),
            lost_upto: start,
        };
        for (i, bytes) in copies {
            let published = record::seq(&bytes) == (i + 1) as u32;
            let whole = published && i >= reused;
            match whole.then(|| record::decode(&bytes, cpu, i)).flatten() {
                Some(r) => out.records.push(r),
                None if !published && i >= reused && head - i <= NESTED => {
                    out.next = i;
                    break;
                }
                None => {
                    out.lost += 1;
                    out.lost_upto = i + 1;
                }
            }
        }
        out
    }
}

/// How many records programs interrupting another on the same CPU may publish after the one
/// it is still writing ([`Ring::since`]): beyond, an unpublished record is taken as lost.
pub(crate) const NESTED: u64 = 16;

/// What [`super::Recorder::since`] read of one CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Since {
    /// The records read, in index order (not always in time order: a program interrupted
    /// before its reservation takes a later slot with an earlier time).
    pub records: Vec<Record>,
    /// The index to read from next time.
    pub next: u64,
    /// Records lost between the `next` asked for and this one: overwritten before they were
    /// read, or while, or never published.
    pub lost: u64,
    /// One past the index of the last record lost (the records from here on are whole).
    pub lost_upto: u64,
}
