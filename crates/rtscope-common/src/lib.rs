//! rtscope-common: what every front end shares and that needs neither the engine nor the
//! tracer. Today: [`outfile`], the one way rtscope writes an output file.

#![warn(missing_docs)]

pub mod errors;
pub mod outfile;
