//! rtscope end to end: the real binary (as root, SCHED_FIFO), the real store, loads, browsers,
//! peers (cyclictest, sshd, Prometheus) — one test binary, so the suite links once. Each
//! module below is one area; `cargo test -p rtscope --test e2e MODULE::` runs one of them.

mod common;
#[path = "hostile/support.rs"]
mod hostile_support;

mod campaign_file;
mod campaign_run;
mod campaign_tail;
mod cause_line;
mod check;
mod cli;
mod compare;
mod compare_both_sides;
mod compare_functions;
mod compat_json;
mod compat_text;
mod drop_in;
mod explain;
mod explain_all_cpus;
mod explain_stacks;
mod explain_stacks_causes;
mod export;
mod fidelity;
mod fleet_ci;
mod fleet_merge;
mod fleet_prometheus;
mod fleet_ssh;
mod grammar_summary_histogram;
mod grammar_verbose_live_json;
mod hostile;
mod hostile_cases;
mod hostile_db;
mod hostile_memory;
mod hostile_noise;
mod hostile_round4;
mod hostile_round5;
mod housekeeping;
mod import;
mod import_oslat;
mod import_rtla;
mod import_summary;
mod loads;
mod manual;
mod noise;
mod noise_culprits;
mod noise_default;
mod noise_irqs_off;
mod noise_plan;
mod observer;
mod overflow_percentiles;
mod readme;
mod records;
mod report;
mod report_layout;
mod report_loadcases;
mod report_noise;
mod report_watch;
mod respond;
mod snapshots;
mod stop_wake;
mod tail;
mod usage_round3;
mod watch;
mod watch_dashboard;
mod watch_hardening;
