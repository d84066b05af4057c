//! rtscope-common: what every front end shares and that needs neither the engine nor the
//! tracer: [`error`], the exit codes and the usage error every front end returns; [`errors`],
//! how an error is rendered; [`names`], labels and tags checked one way; [`outfile`], the one
//! way rtscope writes an output file; [`keeper`], the forked child that cleans up after rtscope
//! however it ends.

#![warn(missing_docs)]

pub mod error;
pub mod errors;
pub mod keeper;
pub mod names;
pub mod outfile;
