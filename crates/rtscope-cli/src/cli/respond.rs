//! The options of `rtscope respond`.

use crate::cli::sched::{self, ThreadArgs};
use crate::cli::values::{one_of, reworded, Named};
use clap::Args;
use rtscope_respond::gpio::{Bias, EdgeSelect, EventClock};
use rtscope_respond::ipc::Pacing;
use rtscope_session::plan::PolicyChoice::{Fifo, Other, Rr};

/// `--policy`'s help.
const POLICY_HELP: &str = "Scheduling policy of the receiver / responder (a timer-paced sender \
                           or the stimulus runs one priority lower)";

/// Options of `rtscope respond`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  rtscope respond --ipc eventfd -D 5s\n  rtscope respond --ipc all --placement same,cross -D 10s --json ipc.json\n  rtscope respond --chip gpiochip0 --stimulus 17 --input 27 --response 22 --watch 23 -l 500\n  rtscope respond --list-lines gpiochip0\n\nSee docs/respond.md for the wiring and what each interval means.",
    mut_args(sched::narrowed(&[Fifo, Rr, Other], POLICY_HELP)),
    mut_args(reworded(&[("json", "Write the results as JSON (schema rtscope.respond/1)")]))
)]
pub struct RespondArgs {
    /// IPC mechanisms, comma-separated: eventfd, pipe, futex, mqueue, signal, sysvsem,
    /// unix-dgram, or all
    #[arg(long, value_name = "LIST", help_heading = "IPC")]
    pub ipc: Option<String>,
    /// Where sender and receiver run, comma-separated: same (one CPU), cross (two CPUs) or S:R
    #[arg(
        long,
        value_name = "LIST",
        default_value = "same",
        help_heading = "IPC"
    )]
    pub placement: String,
    /// The receiver's CPU for same/cross [default: the last CPU this process may use]
    #[arg(long, value_name = "N", help_heading = "IPC")]
    pub cpu: Option<usize>,
    /// Events sent back to back per interval (checks the lost-event accounting)
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = "IPC")]
    pub burst: u32,
    /// How the sender is paced: timer (its own timer every interval, one priority below the
    /// receiver) or handshake (the receiver sleeps the interval and hands a ready token back;
    /// the interval ptsematest, pmqtest, sigwaittest and svsematest measure; docs/respond.md)
    #[arg(
        long,
        value_parser = one_of(PACINGS),
        default_value = "timer",
        value_name = "PACING",
        help_heading = "IPC"
    )]
    pub pacing: Pacing,
    /// Print the lines of a GPIO chip (gpioinfo style) and exit
    #[arg(long, value_name = "CHIP", help_heading = "GPIO")]
    pub list_lines: Option<String>,
    /// Chip for bare line offsets: gpiochip0, /dev/gpiochip0 or a chip label
    #[arg(long, value_name = "CHIP", help_heading = "GPIO")]
    pub chip: Option<String>,
    /// O: the output rtscope drives as the stimulus (without it: an external stimulus on I)
    #[arg(long, value_name = "LINE", help_heading = "GPIO")]
    pub stimulus: Option<String>,
    /// I: the input the responder waits on
    #[arg(long, value_name = "LINE", help_heading = "GPIO")]
    pub input: Option<String>,
    /// R: the output rtscope's responder drives to the level of I
    #[arg(long, value_name = "LINE", help_heading = "GPIO")]
    pub response: Option<String>,
    /// J: the input wired to R (response = ts(J) − ts(I), both kernel timestamps)
    #[arg(long, value_name = "LINE", help_heading = "GPIO")]
    pub watch: Option<String>,
    /// K: an input wired to O, for ts(I) when another program responds
    #[arg(long, value_name = "LINE", help_heading = "GPIO")]
    pub stimulus_watch: Option<String>,
    /// Another program answers on I → R (run with `sh -c`; stopped at the end)
    #[arg(long, value_name = "CMD", help_heading = "GPIO")]
    pub responder_cmd: Option<String>,
    /// Edges the inputs report
    #[arg(long, value_parser = one_of(EDGES), default_value = "both", help_heading = "GPIO")]
    pub edges: EdgeSelect,
    /// Bias of the inputs
    #[arg(long, value_parser = one_of(BIASES), default_value = "as-is", help_heading = "GPIO")]
    pub bias: Bias,
    /// Debounce period of the inputs, e.g. 10us
    #[arg(long, value_name = "DUR", help_heading = "GPIO")]
    pub debounce: Option<String>,
    /// Clock of the kernel's edge timestamps
    #[arg(
        long,
        value_parser = one_of(EVENT_CLOCKS),
        default_value = "monotonic",
        help_heading = "GPIO"
    )]
    pub event_clock: EventClock,
    /// Kernel event buffer per request, in events [default: the kernel's, 16 per line]
    #[arg(long, value_name = "N", help_heading = "GPIO")]
    pub event_buffer: Option<u32>,
    /// Time between events (IPC) or stimulus periods (GPIO); a bare number is us
    /// [default: 1ms for IPC, 10ms for GPIO]
    #[arg(long, short = 'i', value_name = "DUR", help_heading = "Timing")]
    pub interval: Option<String>,
    /// Length of each measurement: 30 (seconds), 500ms, 10m [default: 10s unless --loops]
    #[arg(long, short = 'D', value_name = "DUR", help_heading = "Timing")]
    pub duration: Option<String>,
    /// Intervals (IPC) or stimulus periods / external edges (GPIO) per measurement
    #[arg(long, short = 'l', value_name = "N", help_heading = "Timing")]
    pub loops: Option<u64>,
    /// `--policy`, `--priority` and `--no-mlock`.
    #[command(flatten)]
    pub threads: ThreadArgs,
    /// Request this CPU wake-up latency (us) via /dev/cpu_dma_latency for the run; restored at exit
    #[arg(
        long,
        value_name = "US",
        value_parser = clap::value_parser!(i32).range(0..),
        allow_negative_numbers = true,
        help_heading = "Scheduling"
    )]
    pub latency: Option<i32>,
    /// Fail (exit 1) when a statistic exceeds a limit on any row: max=100us, p99=20us,
    /// missed=0 (lost events) (repeatable)
    #[arg(long = "limit", value_name = "STAT=VALUE", help_heading = "Output")]
    pub limits: Vec<String>,
    /// IPC: keep every event slower than this (sequence number, latency, time) in the JSON, up
    /// to 10,000 per row
    #[arg(long, value_name = "DUR", help_heading = "Output")]
    pub event_above: Option<String>,
    /// `--json`, `--quiet` and where the run is recorded.
    #[command(flatten)]
    pub rec: crate::cli::record::RecordArgs,
}

/// Pacing of the IPC sender.
const PACINGS: [Named<Pacing>; 2] = [
    (
        Pacing::Timer,
        "timer",
        "The sender's own timer, every interval",
    ),
    (
        Pacing::Handshake,
        "handshake",
        "The receiver's ready token after sleeping the interval (rt-tests' pattern)",
    ),
];

/// Edge selection.
const EDGES: [Named<EdgeSelect>; 3] = [
    (EdgeSelect::Rising, "rising", "Rising edges only"),
    (EdgeSelect::Falling, "falling", "Falling edges only"),
    (EdgeSelect::Both, "both", "Both"),
];

/// Input bias.
const BIASES: [Named<Bias>; 4] = [
    (Bias::AsIs, "as-is", "Leave as configured"),
    (Bias::PullUp, "pull-up", "Pull-up"),
    (Bias::PullDown, "pull-down", "Pull-down"),
    (Bias::Disabled, "disabled", "No bias"),
];

/// Edge timestamp clock.
const EVENT_CLOCKS: [Named<EventClock>; 3] = [
    (EventClock::Monotonic, "monotonic", "CLOCK_MONOTONIC"),
    (EventClock::Realtime, "realtime", "CLOCK_REALTIME"),
    (EventClock::Hte, "hte", "Hardware timestamp engine"),
];
