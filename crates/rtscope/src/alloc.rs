//! The static (musl) build's memory allocator: dlmalloc instead of musl's own.
//!
//! musl's allocator hands each freed group of medium-sized blocks (a few KiB to 128 KiB) back
//! to the kernel at once (`munmap`), and the kernel answers every `munmap` of a process's
//! memory with a TLB flush on each CPU that runs one of its threads: an interrupt (IPI) on the
//! measured CPUs, caused by rtscope itself. `noise --explain` allocates and frees such blocks
//! for every gap it attributes, so its loop's CPU took up to 19,000 of these interrupts a
//! second (this project's VM, CPU 1, `ipi:ipi_send_cpu` with the kernel's stack:
//! `flush_tlb_mm_range < ... < __vm_munmap`), and in the emulated guests they were a third of
//! the interrupts rtscope counted against osnoise's. dlmalloc keeps freed memory for reuse and
//! returns it only past 2 MiB of free space at the top of its heap (`docs/noise.md`, "The
//! allocator"). The glibc build keeps its allocator, which keeps freed memory as well.

#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// Makes the allocator usable in a forked child (the trace reaper, forked while other threads
/// may allocate): its lock is taken around `fork`.
pub fn init() {
    // SAFETY: called first in `main`, while the process has a single thread; the handlers are
    // registered once.
    unsafe { dlmalloc::enable_alloc_after_fork() }
}
