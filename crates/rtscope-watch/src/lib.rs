//! `rtscope watch`: latency in the field (docs/watch.md). A measurement that never ends by
//! itself, cut into rolling windows (default 1 min) each with its histogram, percentiles,
//! maximum, missed deadlines and worst wake-up, stored in the run database with downsampling
//! (windows → hours → days) and retention (by age and a disk budget); `/metrics` over HTTP and
//! a node_exporter textfile; alerts to syslog and a command; SIGHUP reloads the configuration.
//!
//! - [`roller`] cuts the engine's cumulative state into windows (pure, time as an argument);
//! - [`retention`] what is kept, applied through the store after every window;
//! - [`metrics`] the exposition (Prometheus text 0.0.4 or OpenMetrics 1.0);
//! - [`http`] serves it; [`alert`] thresholds, syslog and the alert command;
//! - [`explain`] each window's worst wake-up charged to its causes (`--explain`), [`asked`]
//!   which wake-ups wait for which window's answer (an explanation, or why there is none);
//! - [`config`] the configuration file and flags; [`start`] what is checked and taken before
//!   the banner, with [`lock`] (one watch per series and database); [`daemon`] the loop around
//!   the session.

#![warn(missing_docs)]

pub mod alert;
pub mod asked;
pub mod cause;
pub mod config;
pub mod daemon;
pub mod error;
pub mod explain;
pub mod http;
pub mod lock;
pub mod metrics;
pub mod retention;
pub mod roller;
pub mod start;
