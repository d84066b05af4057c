//! GPIO event response latency through the Linux GPIO character device (uAPI v2).
//!
//! The kernel timestamps every edge it detects on a requested input line (CLOCK_MONOTONIC by
//! default), so with jumper wires a board measures itself:
//!
//! * **loopback** (O → I): rtscope drives O; intervals *stimulus→timestamp* (clock read before
//!   the write to O, to the kernel's timestamp of the edge on I), *timestamp→wake-up* (to the
//!   responder's clock read after its wait returns) and, with a response line R,
//!   *wake-up→response* (to the clock read after the write to R returned);
//! * **scope-equivalent** (O → I, R → J): *response* = ts(J) − ts(I), both kernel timestamps —
//!   what an oscilloscope on I and R shows — for rtscope's responder or another program
//!   (`--responder-cmd`) whose output is watched on J;
//! * **external** (a generator on I, optionally R → J).
//!
//! Rising and falling edges are kept apart; lost edges are counted from the kernel's per-line
//! sequence numbers. The hardware is behind [`Gpio`], [`InputLine`] and [`OutputLine`];
//! [`cdev`] implements them on `/dev/gpiochipN`; rtscope-testkit's `gpio::MockGpio` in memory for
//! the tests (test support, not shipped).
//!
//! Re-exports (a facade): the session types (`GpioRun`, `GpioConfig`, …) are named here; their
//! module is private, so `gpio::X` is their one path.

pub mod cdev;
mod session;

pub use session::{
    GpioConfig, GpioResult, GpioRun, Interval, IntervalResult, LineCount, Mode, Responder,
};

use rtscope_core::Nanos;
use std::time::Duration;

/// An edge's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edge {
    /// Low to high.
    Rising,
    /// High to low.
    Falling,
}

impl Edge {
    /// `rising` or `falling`.
    pub fn name(self) -> &'static str {
        match self {
            Edge::Rising => "rising",
            Edge::Falling => "falling",
        }
    }

    /// The level after the edge (true: high).
    pub fn level(self) -> bool {
        self == Edge::Rising
    }
}

/// One edge event as the kernel reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeEvent {
    /// The line's offset on its chip.
    pub offset: u32,
    /// Rising or falling.
    pub edge: Edge,
    /// Kernel timestamp (ns) on the request's event clock.
    pub timestamp: Nanos,
    /// Sequence number among all lines of the request (from 1).
    pub seqno: u32,
    /// Sequence number on this line (from 1); a gap means the kernel dropped events.
    pub line_seqno: u32,
}

/// Line bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bias {
    /// Leave as configured.
    #[default]
    AsIs,
    /// Pull-up.
    PullUp,
    /// Pull-down.
    PullDown,
    /// No bias.
    Disabled,
}

/// Which edges an input reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EdgeSelect {
    /// Rising only.
    Rising,
    /// Falling only.
    Falling,
    /// Both (default).
    #[default]
    Both,
}

impl EdgeSelect {
    /// Whether `edge` is reported.
    pub fn includes(self, edge: Edge) -> bool {
        matches!(
            (self, edge),
            (EdgeSelect::Both, _)
                | (EdgeSelect::Rising, Edge::Rising)
                | (EdgeSelect::Falling, Edge::Falling)
        )
    }
}

/// The clock of the kernel's edge timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EventClock {
    /// CLOCK_MONOTONIC (default; compared with rtscope's own clock reads).
    #[default]
    Monotonic,
    /// CLOCK_REALTIME.
    Realtime,
    /// The hardware timestamp engine: only differences of two edge timestamps are meaningful.
    Hte,
}

impl EventClock {
    /// The clock rtscope reads to compare with edge timestamps (`None` for HTE).
    pub fn clock_id(self) -> Option<libc::clockid_t> {
        match self {
            EventClock::Monotonic => Some(libc::CLOCK_MONOTONIC),
            EventClock::Realtime => Some(libc::CLOCK_REALTIME),
            EventClock::Hte => None,
        }
    }
}

/// Options of an input request, as the uAPI offers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InputOptions {
    /// Bias.
    pub bias: Bias,
    /// Debounce period (`None`: off).
    pub debounce: Option<Nanos>,
    /// Timestamp clock.
    pub clock: EventClock,
    /// Edges reported.
    pub edges: EdgeSelect,
    /// Kernel event buffer size in events (`None`: the kernel's default, 16 per line).
    pub kernel_buffer: Option<u32>,
}

/// A line: a chip (`gpiochip0`, `/dev/gpiochip0`, or a chip label) and an offset or name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineId {
    /// The chip as given (`None`: found by line name on any chip).
    pub chip: Option<String>,
    /// The line.
    pub line: LineSel,
}

/// A line on its chip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineSel {
    /// By offset.
    Offset(u32),
    /// By name (`GPIO17`).
    Name(String),
}

impl LineId {
    /// Parses `CHIP:LINE` (`gpiochip0:17`, `gpiochip0:GPIO17`) or a bare line name (`GPIO17`);
    /// a bare number is an offset on `default_chip`.
    pub fn parse(text: &str, default_chip: Option<&str>) -> Result<LineId, GpioError> {
        let t = text.trim();
        let sel = |s: &str| match s.parse::<u32>() {
            Ok(n) => LineSel::Offset(n),
            Err(_) => LineSel::Name(s.to_string()),
        };
        if t.is_empty() || t.len() > 256 {
            return Err(GpioError::Invalid(format!("invalid line '{t}'")));
        }
        Ok(match t.rsplit_once(':') {
            Some((chip, line)) if !chip.is_empty() && !line.is_empty() => LineId {
                chip: Some(chip.to_string()),
                line: sel(line),
            },
            _ => LineId {
                chip: default_chip.map(str::to_string),
                line: sel(t),
            },
        })
    }
}

impl std::fmt::Display for LineId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(c) = &self.chip {
            write!(f, "{c}:")?;
        }
        match &self.line {
            LineSel::Offset(n) => write!(f, "{n}"),
            LineSel::Name(n) => write!(f, "{n}"),
        }
    }
}

/// Why a GPIO line could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GpioError {
    /// The chip does not exist.
    #[error("GPIO chip '{chip}' does not exist\n\navailable chips:\n{available}")]
    NoChip {
        /// The chip as given.
        chip: String,
        /// The chips found, one a line.
        available: String,
    },
    /// The line does not exist on the chip.
    #[error("GPIO line '{line}' does not exist\n\n{lines}")]
    NoLine {
        /// The line as given.
        line: String,
        /// The `gpioinfo`-style list of lines.
        lines: String,
    },
    /// Another user holds the line.
    #[error("GPIO line '{line}' is busy (used by '{consumer}')\n\n{lines}")]
    Busy {
        /// The line as given.
        line: String,
        /// Its current consumer.
        consumer: String,
        /// The `gpioinfo`-style list of lines.
        lines: String,
    },
    /// No permission on the chip's device file.
    #[error("no permission to open {chip}: {reason}\n\nhint: run as root or join the group owning /dev/gpiochip* (often `gpio`)")]
    Permission {
        /// The chip.
        chip: String,
        /// The OS error text.
        reason: String,
    },
    /// A bad line or option.
    #[error("{0}")]
    Invalid(String),
    /// A uAPI call failed.
    #[error("GPIO: {0}")]
    Io(String),
}

/// The hardware: requests lines.
pub trait Gpio {
    /// An input request.
    type Input: InputLine + Send + 'static;
    /// An output request.
    type Output: OutputLine + Send + 'static;
    /// Requests `lines` (all on one chip) as inputs with edge detection.
    fn request_input(
        &mut self,
        lines: &[LineId],
        options: &InputOptions,
    ) -> Result<Self::Input, GpioError>;
    /// Requests `line` as an output at `level` (true: high).
    fn request_output(&mut self, line: &LineId, level: bool) -> Result<Self::Output, GpioError>;
}

/// A requested input (one or more lines of one chip).
pub trait InputLine {
    /// Waits up to `timeout` for an edge event; `true` when one can be read.
    fn wait(&mut self, timeout: Duration) -> Result<bool, GpioError>;
    /// Reads the next edge event (call after [`InputLine::wait`] returned `true`).
    fn read(&mut self) -> Result<EdgeEvent, GpioError>;
    /// The offsets of the requested lines, in request order.
    fn offsets(&self) -> Vec<u32>;
}

/// A requested output line.
pub trait OutputLine {
    /// Drives the line (true: high).
    fn set(&mut self, level: bool) -> Result<(), GpioError>;
}
