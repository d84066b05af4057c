//! The scheduling options of the commands that measure (`measure`, `noise`, `respond`):
//! `--policy` and `--priority` spelled once and parsed straight into the plan's
//! [`PolicyChoice`], the one policy type below the command line.
//!
//! A command flattens [`SchedArgs`]; one whose threads accept fewer policies or another
//! default says so with [`narrowed`].

use crate::cli::values::{one_of, Named};
use clap::{Arg, Args};
use rtscope_session::plan::PolicyChoice;

/// `--policy` and `--priority`, as `rtscope measure` words them.
#[derive(Debug, Clone, Args)]
pub struct SchedArgs {
    /// Scheduling policy
    #[arg(
        long,
        default_value = "fifo",
        value_parser = one_of(PolicyChoice::ALL.map(named)),
        help_heading = "Scheduling"
    )]
    pub policy: PolicyChoice,
    /// Real-time priority (1-99, default 90) for fifo/rr; nice value (-20..19, default 0) for
    /// other/batch; ignored by idle and deadline
    #[arg(
        long,
        short = 'p',
        allow_negative_numbers = true,
        help_heading = "Scheduling"
    )]
    pub priority: Option<i32>,
}

impl SchedArgs {
    /// The priority given, else `realtime` for fifo and rr and nice 0 for the others.
    pub fn priority_or(&self, realtime: i32) -> i32 {
        let default = if self.policy.is_realtime() {
            realtime
        } else {
            0
        };
        self.priority.unwrap_or(default)
    }
}

/// The group as `noise` and `respond` have it: [`SchedArgs`] (worded with [`narrowed`]) and
/// `--no-mlock` beside them (`measure` lists it among its system settings).
#[derive(Debug, Clone, Args)]
pub struct ThreadArgs {
    /// `--policy` and `--priority`.
    #[command(flatten)]
    pub sched: SchedArgs,
    /// Do not lock memory (mlockall is on by default)
    #[arg(long, help_heading = "Scheduling")]
    pub no_mlock: bool,
}

/// The group as `noise` and `respond` word it (in their `#[command(mut_args(..))]`): threads
/// that take the `accepted` policies, the first the default, `--policy`'s help `help`, and 95
/// the real-time priority by default. The arguments keep their places (completions list them
/// in that order).
pub fn narrowed(accepted: &'static [PolicyChoice], help: &'static str) -> impl FnMut(Arg) -> Arg {
    move |arg| match arg.get_id().as_str() {
        "policy" => arg
            .value_parser(one_of(accepted.iter().map(|&p| named(p))))
            .default_value(accepted[0].name())
            .help(help),
        "priority" => arg.help(
            "Real-time priority (1-99) for fifo/rr; nice value (-20..19) for other [default: 95 \
             for fifo/rr, 0 for other]",
        ),
        _ => arg,
    }
}

/// A policy with its name and help.
fn named(p: PolicyChoice) -> Named<PolicyChoice> {
    let help = match p {
        PolicyChoice::Fifo => "SCHED_FIFO",
        PolicyChoice::Rr => "SCHED_RR",
        PolicyChoice::Other => "SCHED_OTHER",
        PolicyChoice::Batch => "SCHED_BATCH",
        PolicyChoice::Idle => "SCHED_IDLE",
        PolicyChoice::Deadline => "SCHED_DEADLINE (set --dl-runtime, --dl-deadline, --dl-period)",
    };
    (p, p.name(), help)
}
