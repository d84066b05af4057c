//! rtscope-ctopts: cyclictest 2.x's command line without the engine.
//!
//! * [`getopt`]: a getopt_long-compatible scanner (cyclictest's command lines parse as with
//!   glibc);
//! * [`args`]: the option table and its parsed, type-checked values ([`args::CtOptions`]);
//! * [`help`]: the usage text of `rtscope cyclictest --help`.
//!
//! `rtscope-cyclictest` lowers the options to a run plan; `rtscope-import` reads the command line
//! a cyclictest `--json` file holds. Depends on core and common only.

#![warn(missing_docs)]

pub mod args;
pub mod getopt;
pub mod help;
