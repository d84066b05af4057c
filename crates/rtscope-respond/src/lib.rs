//! rtscope-respond: event response latency — how fast a real-time thread reacts to an event.
//!
//! * [`ipc`]: events between two threads of rtscope through seven kernel mechanisms (eventfd,
//!   pipe, futex, POSIX message queue, real-time signal, SysV semaphore, UNIX datagram socket),
//!   on one CPU or across CPUs; no hardware needed. The sender reads CLOCK_MONOTONIC just before
//!   its system call, the receiver just after its wait returns.
//! * [`gpio`]: edges on GPIO lines through the Linux GPIO character device (uAPI v2, kernel
//!   timestamps per edge): loopback with one jumper, the oscilloscope-equivalent measurement
//!   with two, or an external stimulus. The hardware sits behind the [`gpio::Gpio`] trait, so the
//!   measurement logic is tested against an in-memory chip (rtscope-testkit's `gpio`).
//!
//! Receivers run with the timer engine's thread set-up ([`rtscope_engine::prepare_current_thread`]:
//! affinity, policy, priority, prefaulted stack) and record into the engine's preallocated
//! [`rtscope_engine::ThreadShared`] (lossless histogram, statistics, event log) through a
//! [`rtscope_engine::Recorder`]. All latencies are in nanoseconds.
//!
//! Re-exports (facades of its modules): `gpio` names its private `session` module's types
//! (`GpioRun`, `GpioConfig`, …) and `ipc` its private `receiver` and `sysv` modules' (`IpcRun`,
//! `IpcResult`, and `sysv_keys_of`, sysv's `keys_of` named for its place), so `gpio::X` and
//! `ipc::X` are their one path.

#![warn(missing_docs)]

mod gate;
pub mod gpio;
pub mod ipc;
pub mod record;
pub mod run;

/// Why a measurement could not start.
#[derive(Debug, thiserror::Error)]
pub enum RespondError {
    /// A setting the measurement cannot run with.
    #[error("{0}")]
    Invalid(String),
    /// The IPC channel could not be created.
    #[error("cannot create the {what} channel: {source}")]
    Open {
        /// The mechanism.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// A thread could not be created.
    #[error("cannot start a thread: {0}")]
    Spawn(std::io::Error),
    /// The real-time set-up of a thread failed (policy, priority, affinity, mlock).
    #[error(transparent)]
    Engine(#[from] rtscope_engine::EngineError),
    /// A GPIO chip or line problem.
    #[error(transparent)]
    Gpio(#[from] gpio::GpioError),
    /// The external responder program could not be started.
    #[error("cannot start --responder-cmd '{command}': {source}")]
    Responder {
        /// The command line given.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Progress could not be written (a closed standard output).
    #[error("cannot write the progress: {0}")]
    Output(std::io::Error),
}
