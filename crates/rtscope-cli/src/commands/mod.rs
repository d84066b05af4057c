//! One file per subcommand: each turns its clap arguments into a library call and prints.

pub mod compare;
pub mod export;
pub mod run;
