//! rtscope-common: what every front end shares and that needs neither the engine nor the
//! tracer: [`error`], the exit codes and the usage error every front end returns, how an error
//! is rendered and [`error::warn`], a warning to stderr; [`names`], labels and
//! tags checked one way; [`limits`], the `--limit STAT=VALUE` gates and their checks; [`outfile`],
//! the one way rtscope writes an output file; [`keeper`], the forked child that cleans up after
//! rtscope however it ends; [`signals`], the signals a run waits for; [`clock`], the control
//! side's time behind a seam (a fake clock for tests); [`prometheus`], the exposition's
//! buckets, label escaping and bucket rule, shared by the formats' textfile and watch's
//! `/metrics`.

#![warn(missing_docs)]

pub mod clock;
pub mod error;
pub mod keeper;
pub mod limits;
pub mod names;
pub mod outfile;
pub mod prometheus;
pub mod signals;
