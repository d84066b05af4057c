//! IPC event response latency: a sender thread timestamps (CLOCK_MONOTONIC) just before the
//! system call that signals an event, a real-time receiver thread reads the clock just after the
//! system call it waits in returns; the difference goes into the receiver's lossless histogram.
//!
//! ## Pacing: which interval is measured
//! Both pacings measure from the sender's clock read (then, for count-only mechanisms, two
//! stores into a preallocated slot, then the one send system call) to the receiver's clock read
//! right after its wait returns. They differ in what comes before:
//! * [`Pacing::Timer`] (default): the sender wakes on its own absolute timer every interval; the
//!   receiver has been blocked since the previous event, about one interval earlier, and on a
//!   shared CPU the CPU sat idle meanwhile. The sender runs one priority below the receiver, so
//!   on a shared CPU the receiver preempts it inside the send call: the interval ends with the
//!   wake-up, one context switch and the receiver's return to user space. This is the latency
//!   of an event that finds its real-time thread waiting, as a device or a timer would.
//! * [`Pacing::Handshake`]: the pattern of rt-tests' ptsematest, pmqtest, sigwaittest and
//!   svsematest. After each event the receiver sleeps the interval (relative), hands a ready
//!   token back to the sender through a second channel of the same mechanism and waits again;
//!   the sender, blocked on that token, reads the clock and sends at once. Both run at the same
//!   priority, so on a shared CPU the woken receiver does not preempt the sender: the interval
//!   holds the whole send call, the sender's bookkeeping and its entry into the wait for the
//!   next token, the switch, and the receiver's return. The receiver blocked only microseconds
//!   before the event, and the CPU never idled between the receiver's wake-up from its sleep
//!   and the event.
//!
//! See docs/respond.md for the rt-tests programs' intervals line by line.
//!
//! ## Accounting
//! Every event the sender attempts is either delivered or refused by a full queue (EAGAIN on a
//! POSIX queue, datagram socket, pipe or signal queue; ERANGE on a semaphore): refused events are
//! counted as `send_failed`. Messages (pipe, POSIX queue, datagram) carry a sequence number, so
//! the receiver counts gaps on its own and the two counts must agree. eventfd and the futex word
//! coalesce events that arrive before the receiver reads them: each still gets its own latency
//! (receiver time minus that event's send time), and `wakeups` counts the receives.
//!
//! Re-exports (a facade): `IpcRun`, `IpcResult` and `sysv_keys_of` (sysv's `keys_of`) are named
//! here; their modules are private, so `ipc::X` is their one path.

mod receiver;
mod sysv;
mod transport;

pub use sysv::keys_of as sysv_keys_of;

pub use receiver::{IpcResult, IpcRun};

use rtscope_core::Nanos;
use rtscope_engine::{CpuSet, Policy};

/// An IPC mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpcKind {
    /// `eventfd` write / read.
    Eventfd,
    /// A pipe: 16-byte write / read.
    Pipe,
    /// A futex word: increment and FUTEX_WAKE / FUTEX_WAIT.
    Futex,
    /// A POSIX message queue: `mq_send` / `mq_receive`.
    Mqueue,
    /// A real-time signal: `tgkill` / `sigwaitinfo`.
    Signal,
    /// A SysV semaphore: `semop(+1)` / `semop(-1)`.
    SysvSem,
    /// A UNIX datagram socket pair: `send` / `recv`.
    UnixDgram,
}

impl IpcKind {
    /// Every mechanism, in the order of the docs.
    pub const ALL: [IpcKind; 7] = [
        IpcKind::Eventfd,
        IpcKind::Pipe,
        IpcKind::Futex,
        IpcKind::Mqueue,
        IpcKind::Signal,
        IpcKind::SysvSem,
        IpcKind::UnixDgram,
    ];

    /// The name users type and the tables print.
    pub fn name(self) -> &'static str {
        match self {
            IpcKind::Eventfd => "eventfd",
            IpcKind::Pipe => "pipe",
            IpcKind::Futex => "futex",
            IpcKind::Mqueue => "mqueue",
            IpcKind::Signal => "signal",
            IpcKind::SysvSem => "sysvsem",
            IpcKind::UnixDgram => "unix-dgram",
        }
    }

    /// Parses a name (also `mq`, `posix-mq`, `sem`, `dgram`, `unix`).
    pub fn parse(text: &str) -> Option<IpcKind> {
        let t = text.trim().to_ascii_lowercase();
        let alias = match t.as_str() {
            "mq" | "posix-mq" | "pmq" => "mqueue",
            "sem" | "svsem" => "sysvsem",
            "dgram" | "unix" | "unix-datagram" => "unix-dgram",
            "sigwait" => "signal",
            other => other,
        };
        IpcKind::ALL.into_iter().find(|k| k.name() == alias)
    }

    /// The rt-tests program that measures the same mechanism, when there is one.
    pub fn rt_tests_peer(self) -> Option<&'static str> {
        match self {
            IpcKind::Futex => Some("ptsematest"),
            IpcKind::Mqueue => Some("pmqtest"),
            IpcKind::Signal => Some("sigwaittest"),
            IpcKind::SysvSem => Some("svsematest"),
            _ => None,
        }
    }
}

impl std::fmt::Display for IpcKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The most events per burst: half the receiver's send-time ring.
pub const MAX_BURST: u32 = (receiver::SLOTS / 2) as u32;

/// How the sender is paced, and so which interval is measured (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Pacing {
    /// The sender wakes on its own absolute timer every interval, one priority below the
    /// receiver.
    #[default]
    Timer,
    /// The receiver sleeps the interval after each event and hands a ready token back; the
    /// sender waits for it and sends at once, at the receiver's priority (rt-tests' pattern).
    Handshake,
}

impl Pacing {
    /// The name users type and the JSON shows.
    pub fn name(self) -> &'static str {
        match self {
            Pacing::Timer => "timer",
            Pacing::Handshake => "handshake",
        }
    }
}

/// Where the sender and the receiver run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The sender's CPU (`None`: not pinned).
    pub sender: Option<usize>,
    /// The receiver's CPU (`None`: not pinned).
    pub receiver: Option<usize>,
}

impl Placement {
    /// Both threads on `cpu`.
    pub fn same(cpu: usize) -> Self {
        Placement {
            sender: Some(cpu),
            receiver: Some(cpu),
        }
    }

    /// Sender on `sender`, receiver on `receiver`.
    pub fn cross(sender: usize, receiver: usize) -> Self {
        Placement {
            sender: Some(sender),
            receiver: Some(receiver),
        }
    }

    /// `same`, `cross` or `free` (unpinned).
    pub fn kind(&self) -> &'static str {
        match (self.sender, self.receiver) {
            (Some(a), Some(b)) if a == b => "same",
            (Some(_), Some(_)) => "cross",
            _ => "free",
        }
    }

    /// `0→1`, `1→1`, `*→*`.
    pub fn path(&self) -> String {
        let c = |x: Option<usize>| x.map_or("*".to_string(), |c| c.to_string());
        format!("{}→{}", c(self.sender), c(self.receiver))
    }
}

/// Everything that defines one IPC measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct IpcConfig {
    /// The mechanism.
    pub kind: IpcKind,
    /// The CPUs of the two threads.
    pub placement: Placement,
    /// The receiver's policy; the sender runs with the same policy, one priority lower with the
    /// timer pacing (on a shared CPU the receiver preempts it at once), at the same priority
    /// with the handshake (as rt-tests' pairs).
    pub policy: Policy,
    /// The receiver's priority (1..=99 for FIFO/RR).
    pub priority: i32,
    /// Time between the sender's bursts.
    pub interval: Nanos,
    /// Events sent back to back per interval (1: one event per interval; the handshake sends
    /// one).
    pub burst: u32,
    /// How the sender is paced.
    pub pacing: Pacing,
    /// Number of intervals (`None`: until `duration` or a stop).
    pub loops: Option<u64>,
    /// Length of the measurement (`None`: until `loops` or a stop).
    pub duration: Option<Nanos>,
    /// Samples above this are also kept as events (time and sequence number).
    pub event_threshold: Option<Nanos>,
    /// How many such events to keep.
    pub event_capacity: usize,
}

impl IpcConfig {
    /// A measurement of `kind` with the defaults: SCHED_FIFO 95 receiver, 1 ms interval, one
    /// event per interval, unpinned.
    pub fn new(kind: IpcKind) -> Self {
        IpcConfig {
            kind,
            placement: Placement {
                sender: None,
                receiver: None,
            },
            policy: Policy::Fifo,
            priority: 95,
            interval: Nanos::from_ms(1),
            burst: 1,
            pacing: Pacing::Timer,
            loops: None,
            duration: None,
            event_threshold: None,
            event_capacity: 0,
        }
    }

    /// Checks the settings (the front ends call it before anything starts; [`IpcRun::start`]
    /// checks again).
    pub fn validate(&self) -> Result<(), crate::RespondError> {
        let bad = |m: String| Err(crate::RespondError::Invalid(m));
        if self.interval.0 == 0 {
            return bad("the interval must be greater than 0".into());
        }
        if self.pacing == Pacing::Handshake && self.burst != 1 {
            return bad(
                "the handshake pacing sends one event per ready token: drop --burst".into(),
            );
        }
        if self.burst == 0 || self.burst > MAX_BURST {
            return bad(format!("the burst must be 1..={MAX_BURST} events"));
        }
        if self.policy.is_realtime_priority() && !(1..=99).contains(&self.priority) {
            return bad(format!(
                "priority {} is outside 1..=99 for {}",
                self.priority,
                self.policy.name()
            ));
        }
        Ok(())
    }

    fn affinity(cpu: Option<usize>) -> Option<CpuSet> {
        cpu.map(|c| CpuSet::from_cpus([c]))
    }
}

/// Why a placement list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// `cross` where this process may use one CPU only.
    #[error("placement cross needs two CPUs; this process may use one")]
    CrossNeedsTwoCpus,
    /// Neither `same`, `cross` nor `SENDER:RECEIVER` (the text given).
    #[error("invalid placement '{0}': use same, cross or SENDER:RECEIVER CPUs such as 0:1")]
    Invalid(String),
}

/// Parses a placement list (`same`, `cross`, `S:R`, comma-separated) for a receiver on
/// `receiver` (default: the last of `allowed`, the CPUs this process may use).
pub fn parse_placements(
    text: &str,
    receiver: Option<usize>,
    allowed: &[usize],
) -> Result<Vec<Placement>, PlacementError> {
    let receiver = receiver.or(allowed.last().copied()).unwrap_or(0);
    text.split(',')
        .map(str::trim)
        .map(|p| match p {
            "same" => Ok(Placement::same(receiver)),
            "cross" => allowed
                .iter()
                .find(|&&c| c != receiver)
                .map(|&s| Placement::cross(s, receiver))
                .ok_or(PlacementError::CrossNeedsTwoCpus),
            other => other
                .split_once(':')
                .and_then(|(s, r)| Some(Placement::cross(s.parse().ok()?, r.parse().ok()?)))
                .ok_or_else(|| PlacementError::Invalid(other.to_string())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_parse_and_each_refusal_says_what_to_write() {
        assert_eq!(
            parse_placements("same, cross, 2:3", Some(1), &[0, 1]),
            Ok(vec![
                Placement::same(1),
                Placement::cross(0, 1),
                Placement::cross(2, 3)
            ])
        );
        let one = parse_placements("cross", None, &[4]).unwrap_err();
        assert_eq!(one, PlacementError::CrossNeedsTwoCpus);
        assert_eq!(
            one.to_string(),
            "placement cross needs two CPUs; this process may use one"
        );
        let bad = parse_placements("same,1-2", None, &[0, 1]).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "invalid placement '1-2': use same, cross or SENDER:RECEIVER CPUs such as 0:1"
        );
    }
}
