//! SQLite's allocations go through Rust's global allocator once `use_global_allocator` ran
//! before SQLite initialized (its own process: this test binary's only test).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting what it is asked for.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout, as given.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `alloc` with `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCATED.fetch_add(n, Ordering::Relaxed);
        // SAFETY: `p` came from this allocator with `l`.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn sqlite_allocates_through_the_global_allocator_and_its_statements_work() {
    assert!(rtscope_store::sqlite_alloc::use_global_allocator());
    let before = ALLOCATED.load(Ordering::Relaxed);
    let db = rusqlite::Connection::open_in_memory().unwrap();
    db.execute_batch(
        "CREATE TABLE t (a INTEGER PRIMARY KEY, b BLOB);
         BEGIN;",
    )
    .unwrap();
    // Statements that open a statement journal (a multi-row insert in a transaction), with
    // blobs large enough to make SQLite grow and shrink its buffers.
    for i in 0..200 {
        db.execute(
            "INSERT INTO t (b) VALUES (zeroblob(?1)), (zeroblob(?1))",
            [1000 + i * 300],
        )
        .unwrap();
    }
    db.execute_batch("COMMIT;").unwrap();
    let n: i64 = db
        .query_row("SELECT count(*) FROM t WHERE length(b) >= 1000", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 400);
    let grown = ALLOCATED.load(Ordering::Relaxed) - before;
    // The blobs alone were ~24 MB through SQLite's allocator: far more than Rust's side of it.
    assert!(
        grown > 10_000_000,
        "{grown} bytes through the global allocator"
    );
    drop(db);
    // Too late once SQLite is initialized: refused, nothing changed.
    assert!(!rtscope_store::sqlite_alloc::use_global_allocator());
}
