//! SQLite's memory from the process's global allocator (`sqlite3_config(SQLITE_CONFIG_MALLOC)`).
//!
//! The bundled SQLite is C: it calls the C library's `malloc`, not Rust's global allocator. In
//! the static (musl) build that is musl's own allocator, which hands each freed group back to
//! the kernel at once (`munmap`), and every `munmap` makes the kernel flush the TLB of each CPU
//! running one of rtscope's threads — an interrupt on the measured CPUs, caused by rtscope
//! (crates/rtscope/src/alloc.rs). A run's checkpoints did it hundreds of times a second: each
//! statement's in-memory journal (`memjrnlFreeChunks` under `sqlite3VdbeCloseStatement`, a
//! 68 KiB chunk) was freed with a `munmap` of its own (a 4 s campaign on this project's VM:
//! 3,678 `munmap` calls, 2,623 of them that chunk; gdb on the musl build, 29 Nov 2026).
//! Through the global allocator (dlmalloc in that build) freed memory is kept for reuse.
//!
//! [`use_global_allocator`] must run before SQLite initializes (before the first connection
//! opens); `rtscope`'s `main` calls it first thing.

use rusqlite::ffi;
use std::alloc::{alloc, dealloc, realloc, Layout};
use std::os::raw::{c_int, c_void};

/// Each block starts with its size (the payload's bytes), so `xFree` and `xSize` find it;
/// 16 bytes keep the payload aligned for any type SQLite stores.
const HEADER: usize = 16;

fn layout(payload: usize) -> Option<Layout> {
    Layout::from_size_align(payload.checked_add(HEADER)?, HEADER).ok()
}

unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
    let Some(l) = usize::try_from(n).ok().and_then(layout) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `l` has a non-zero size (the header).
    let p = unsafe { alloc(l) };
    if p.is_null() {
        return p.cast();
    }
    // SAFETY: `p` holds at least HEADER bytes, aligned for a usize.
    unsafe {
        p.cast::<usize>().write(l.size() - HEADER);
        p.add(HEADER).cast()
    }
}

/// The block's start and layout from a payload pointer [`x_malloc`] returned.
///
/// # Safety
/// `p` is a non-null pointer [`x_malloc`] or [`x_realloc`] returned and not yet freed.
unsafe fn block(p: *mut c_void) -> (*mut u8, Layout) {
    // SAFETY: per the contract, the header sits HEADER bytes before `p`.
    unsafe {
        let start = p.cast::<u8>().sub(HEADER);
        let size = start.cast::<usize>().read();
        (
            start,
            Layout::from_size_align_unchecked(size + HEADER, HEADER),
        )
    }
}

unsafe extern "C" fn x_free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    // SAFETY: SQLite frees only what xMalloc/xRealloc gave it, once.
    unsafe {
        let (start, l) = block(p);
        dealloc(start, l);
    }
}

unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    if p.is_null() {
        // SAFETY: a plain allocation.
        return unsafe { x_malloc(n) };
    }
    let Some(new) = usize::try_from(n).ok().and_then(layout) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `p` is a live block of ours; `new` has its alignment and a non-zero size.
    unsafe {
        let (start, l) = block(p);
        let q = realloc(start, l, new.size());
        if q.is_null() {
            return q.cast();
        }
        q.cast::<usize>().write(new.size() - HEADER);
        q.add(HEADER).cast()
    }
}

unsafe extern "C" fn x_size(p: *mut c_void) -> c_int {
    if p.is_null() {
        return 0;
    }
    // SAFETY: SQLite asks the size of live blocks of ours only.
    let size = unsafe { block(p).1.size() - HEADER };
    c_int::try_from(size).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn x_roundup(n: c_int) -> c_int {
    // Multiples of 8, as SQLite's own allocator rounds.
    n.saturating_add(7) & !7
}

unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shutdown(_: *mut c_void) {}

/// Routes SQLite's allocations to Rust's global allocator. Returns false (and changes nothing)
/// when SQLite was already initialized in this process: the caller was too late.
pub fn use_global_allocator() -> bool {
    let methods = ffi::sqlite3_mem_methods {
        xMalloc: Some(x_malloc),
        xFree: Some(x_free),
        xRealloc: Some(x_realloc),
        xSize: Some(x_size),
        xRoundup: Some(x_roundup),
        xInit: Some(x_init),
        xShutdown: Some(x_shutdown),
        pAppData: std::ptr::null_mut(),
    };
    // SAFETY: SQLITE_CONFIG_MALLOC takes a pointer to a sqlite3_mem_methods, which SQLite
    // copies before returning; the functions above keep its contract (null on failure, blocks
    // aligned to 16 bytes, sizes as given).
    let rc = unsafe {
        ffi::sqlite3_config(
            ffi::SQLITE_CONFIG_MALLOC,
            &methods as *const ffi::sqlite3_mem_methods,
        )
    };
    rc == ffi::SQLITE_OK
}
