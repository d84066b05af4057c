//! rtscope-common: what every front end shares and that needs neither the engine nor the
//! tracer: [`outfile`], the one way rtscope writes an output file; [`errors`], how an error is
//! rendered; [`keeper`], the forked child that cleans up after rtscope however it ends.

#![warn(missing_docs)]

pub mod errors;
pub mod keeper;
pub mod outfile;
