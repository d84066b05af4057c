//! The user side of a `BPF_MAP_TYPE_RINGBUF` (Linux 5.8; the kernel's
//! `kernel/bpf/ringbuf.c`): the consumer position page mapped writable, the producer
//! position page and the data mapped read-only, the data twice in a row so that a record
//! that wraps reads as one slice.

use crate::BpfError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A record still being written.
const BUSY: u32 = 1 << 31;
/// A record the program discarded.
const DISCARD: u32 = 1 << 30;
/// Each record's header: its length and flags, and the kernel's page offset.
const HEADER: usize = 8;

/// One mapping, unmapped on drop.
struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `addr`/`len` are a mapping this value made and nothing else unmaps.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// A ring buffer map and its mappings.
pub struct RingBuf {
    _map: OwnedFd,
    consumer: Mapping,
    producer: Mapping,
    page: usize,
    size: usize,
}

// SAFETY: the mappings are only read and written through atomics and copies in `drain`, which
// takes `&mut self`: one thread at a time.
unsafe impl Send for RingBuf {}

fn map(fd: &OwnedFd, len: usize, prot: i32, offset: usize) -> std::io::Result<Mapping> {
    // SAFETY: a shared mapping of the ring buffer's file descriptor at the offsets the kernel
    // defines for it; the result is checked.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            offset as libc::off_t,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Mapping { addr, len })
}

impl RingBuf {
    /// Maps the ring buffer `map` of `size` bytes (a power of two, a multiple of the page).
    pub fn new(map: OwnedFd, size: usize) -> Result<RingBuf, BpfError> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let err = |source| BpfError::Map {
            name: "ring buffer mapping".into(),
            source,
        };
        let consumer = map_rw(&map, page).map_err(err)?;
        let producer = self::map(&map, page + 2 * size, libc::PROT_READ, page).map_err(err)?;
        Ok(RingBuf {
            _map: map,
            consumer,
            producer,
            page,
            size,
        })
    }

    /// Hands every complete record to `each` (its bytes, without the header) and frees its
    /// space; returns how many.
    pub fn drain(&mut self, mut each: impl FnMut(&[u8])) -> usize {
        // SAFETY: both positions are u64s at the start of their pages, which stay mapped while
        // `self` lives; the kernel writes the producer's, this consumer alone its own.
        let (cons_pos, prod_pos) = unsafe {
            (
                &*(self.consumer.addr as *const AtomicU64),
                &*(self.producer.addr as *const AtomicU64),
            )
        };
        let data = self.producer.addr as usize + self.page;
        let mask = self.size as u64 - 1;
        let mut cons = cons_pos.load(Ordering::Acquire);
        let prod = prod_pos.load(Ordering::Acquire);
        let mut n = 0;
        while cons < prod {
            let at = data + (cons & mask) as usize;
            // SAFETY: `at` is inside the first copy of the data; the header is 8-aligned.
            let len = unsafe { &*(at as *const AtomicU32) }.load(Ordering::Acquire);
            if len & BUSY != 0 {
                break;
            }
            let body = (len & !(BUSY | DISCARD)) as usize;
            if len & DISCARD == 0 && body <= self.size {
                // SAFETY: the record's bytes follow its header; the data is mapped twice in a
                // row, so a record that wraps is contiguous, and `body` is at most the size.
                each(unsafe { std::slice::from_raw_parts((at + HEADER) as *const u8, body) });
                n += 1;
            }
            cons += ((body + HEADER + 7) & !7) as u64;
            cons_pos.store(cons, Ordering::Release);
        }
        n
    }
}

fn map_rw(fd: &OwnedFd, page: usize) -> std::io::Result<Mapping> {
    map(fd, page, libc::PROT_READ | libc::PROT_WRITE, 0)
}
