//! rtscope-trace: explains late wake-ups.
//!
//! - [`format`] and [`page`] parse the tracefs `format` files and the binary pages of
//!   `per_cpu/cpuN/trace_pipe_raw`; [`decode`] turns records into typed events. Pure code,
//!   unit-tested and fuzzed.
//! - [`tracefs`] finds (or mounts) tracefs and owns a private instance, never the top-level
//!   buffer; [`reaper`] removes that instance even when rtscope is SIGKILLed.
//! - [`recorder`] reads the instance from a housekeeping thread and keeps a bounded window of
//!   events per measured CPU; [`exits`] checks on them that the kernel's interrupt exits
//!   reach the trace (else no time is named the hypervisor's); [`keep`] holds what the
//!   window drops while a spike that needs it waits for its analysis.
//! - [`bpf_events`]: the eBPF flight recorder's records as the same events (not yet read by
//!   the recorder: issue 68).
//! - [`stacks`]: the `stacktrace` trigger, a spike's kernel stack, `/proc/kallsyms`;
//!   [`handlers`]: the interrupt-context handler that ran the longest over a spike, by the
//!   function its events name.
//! - [`analyze`] charges each nanosecond of a spike to a [`model::Category`]; [`book`] keeps
//!   the worst spikes per time window and the culprit totals; [`coarse`] is the fallback tier
//!   fed by the monitors (these three data modules are the `rtscope-explain` crate's, reached
//!   only there: a report draws them without linking the tracer).
//!
//! Depends on `libc`, `thiserror`, `serde` and `rtscope-core`. See docs/explain.md.

#![warn(missing_docs)]

pub mod analyze;
pub mod bpf_events;
pub mod bpf_stacks;
pub mod decode;
pub mod exits;
pub mod explain;
pub mod format;
pub mod handlers;
pub mod hwlat;
pub mod keep;
pub mod machine;
pub mod page;
pub mod reaper;
pub mod recorder;
pub mod sibling;
pub mod stacks;
mod timeline;
pub mod timerlat;
pub mod tracefs;

// The explanation model (rtscope-explain), where the analyzer's results live: used here by
// these paths, reached from outside only as `rtscope_explain::…`.
use rtscope_explain::{book, coarse, model};

/// Errors of the trace layer.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A `format` or `header_page` file could not be parsed.
    #[error("bad tracefs format description: {0}")]
    Format(String),
    /// A ring-buffer page is malformed.
    #[error("bad trace page: {0}")]
    Page(String),
    /// A tracefs file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// tracefs cannot be used here (why, for the recorded tier).
    #[error("tracefs unavailable: {0}")]
    Unavailable(String),
    /// The eBPF flight recorder cannot run here (why, for the tier reason).
    #[error("{0}")]
    Bpf(String),
}
