//! Exit codes, in one place. Every front end uses these:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success: the run completed and no limit was exceeded |
//! | 1 | a limit was exceeded (`--limit`, or cyclictest's `-b` break); `compare`: a regression |
//! | 2 | usage or setup error: bad option or value, no RT privilege, unreadable file |
//! | 3 | interrupted: SIGINT/SIGTERM ended a run before its length (results are still written) |

pub use rtscope_session::{ExitStatus, UsageError};

/// Whether an error chain ends in a closed pipe (`rtscope ... | head`), which is not an error.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
