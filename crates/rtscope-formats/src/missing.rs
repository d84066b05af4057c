//! Boards asked for that have no run to report — not reached, failed, or interrupted before
//! they recorded one — and the random identity of one invocation.
//!
//! A CI system reads the files, not the exit status: a board that did not run must be in them
//! as a failed (or error) test case with its reason, and counted in their totals, or a fleet
//! whose every board is unreachable reads as green (issue 48). Every format writes these
//! beside the runs: JUnit an `<error>` case, KCIDB an `ERROR` (failed) or `FAIL`
//! (interrupted) test, LAVA a `fail` case in the board's own test set.

use std::io::Read;

/// How a board ended without a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoardEnd {
    /// It could not be reached, a step failed, or its rtscope refused the job.
    Failed,
    /// A Ctrl-C (SIGTERM, SIGHUP) here stopped it before it recorded a run.
    Interrupted,
}

impl BoardEnd {
    /// `failed`, `interrupted`: the JUnit error type and the word in messages.
    pub fn word(self) -> &'static str {
        match self {
            BoardEnd::Failed => "failed",
            BoardEnd::Interrupted => "interrupted",
        }
    }
}

/// A board of the command that has no run in the outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingBoard {
    /// The board's name (targets.toml's, or the host of `[user@]host[:port]`).
    pub board: String,
    /// How it ended.
    pub end: BoardEnd,
    /// Why, for people: the step that failed and ssh's or the remote rtscope's message.
    pub reason: String,
}

impl MissingBoard {
    /// The text every format carries: `board NAME failed: REASON`.
    pub fn message(&self) -> String {
        format!("board {} {}: {}", self.board, self.end.word(), self.reason)
    }
}

/// A random (version 4) UUID, from the kernel's generator (`/dev/urandom`); should it be
/// unreadable, from the clock and the process id (still distinct per invocation).
pub fn random_uuid() -> String {
    let mut b = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|f| f.take(16).read_exact(&mut b));
    if read.is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut g =
            rtscope_core::rng::XorShift64::new(nanos ^ (u64::from(std::process::id()) << 40));
        b[..8].copy_from_slice(&g.next_u64().to_le_bytes());
        b[8..].copy_from_slice(&g.next_u64().to_le_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_version_4_and_differ() {
        let (a, b) = (random_uuid(), random_uuid());
        assert_ne!(a, b);
        for u in [&a, &b] {
            let parts: Vec<&str> = u.split('-').collect();
            assert_eq!(
                parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12],
                "{u}"
            );
            assert!(parts[2].starts_with('4'), "{u}");
            assert!("89ab".contains(&parts[3][..1]), "{u}");
            assert!(u.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        }
    }

    #[test]
    fn a_missing_board_says_who_how_and_why() {
        let m = MissingBoard {
            board: "rpi4".into(),
            end: BoardEnd::Failed,
            reason: "connect failed: Connection refused".into(),
        };
        assert_eq!(
            m.message(),
            "board rpi4 failed: connect failed: Connection refused"
        );
    }
}
