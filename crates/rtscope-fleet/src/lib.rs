//! rtscope on fleets of boards: the command line run on remote boards over the system `ssh`
//! (one connection per board) and their runs merged into the local database.
//!
//! * [`targets`]: the boards, named in a `targets.toml`;
//! * [`master`]: one board's ssh connection (a ControlMaster of its own);
//! * [`remote`]: rtscope there, its output streaming back, stopped on a signal;
//! * [`board`]: one board's run of a job, step by step;
//! * [`fanout`]: every board at once, their runs fetched and merged; the boards that recorded
//!   no run come back as rtscope-formats' `MissingBoard`, failed cases in every CI output.
//!
//! The formats a run is written in for monitoring and lab CI are rtscope-formats'.
//! Docs: docs/fleet.md.

#![warn(missing_docs)]

pub mod board;
pub mod fanout;
pub mod master;
pub mod remote;
pub mod targets;
