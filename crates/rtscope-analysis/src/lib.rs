//! rtscope-analysis: what recorded runs say when put side by side.
//!
//! * [`select`]: run selectors (`3`, `last`, `campaign:NAME`, `label:TEXT`, `kernel=rt,case=idle`)
//!   resolved against the store;
//! * [`series`]: a watch series and a period of it, found in the store (`report --watch`,
//!   compare's `watch:SERIES@FROM..TO`);
//! * [`compare`]: groups of runs merged losslessly, statistics side by side, the load-case
//!   matrix and a verdict per statistic — as data ([`compare::analysis::Comparison`]), rendered
//!   as text, JSON or overlaid plots (drawn by rtscope-report); the groups read from the
//!   store with the notes to print about them ([`compare::load`]).
//!
//! Depends on core, store and report (for drawing); never on clap, the CLI or the engine.

#![warn(missing_docs)]

pub mod compare;
pub mod select;
pub mod series;
