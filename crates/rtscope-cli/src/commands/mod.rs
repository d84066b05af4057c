//! One file per subcommand: each turns its clap arguments into a library call and prints.

pub mod check;
pub mod compare;
pub mod cyclictest;
pub mod export;
pub mod fleet;
pub mod import;
pub mod load;
pub mod measure;
pub mod merge;
pub mod noise;
pub mod noise_hwlat;
pub mod report;
pub mod report_watch;
pub mod respond;
pub mod run;
pub mod runs;
pub mod runs_explain;
pub mod tail;
pub mod watch;
