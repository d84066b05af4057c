//! Options of `rtscope watch`. Each may also be a key of the configuration file (its long name
//! with `_` for `-`); the command line wins.

use clap::Args;

/// Options of `rtscope watch`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  rtscope watch --cpus 1-3 --listen 127.0.0.1:9464\n  rtscope watch --config /etc/rtscope/watch.toml\n  rtscope watch --window 10s --alert 'max>200us' --alert-command 'logger -t rt \"$RTSCOPE_ALERT\"'\n\nRuns until SIGINT or SIGTERM (exit 0, the open window is written); SIGHUP re-reads the configuration.\nExit status: 0 stopped, every window written; 2 bad input or set-up (before anything starts; another watch of the series and database names its PID), or window rows the database could not take by the stop (their number is printed). See docs/watch.md (the service, the tables, the metrics)."
)]
pub struct WatchArgs {
    /// Configuration file (TOML; keys are these options' long names with _ for -) [the service: /etc/rtscope/watch.toml]
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    /// Name of the series: a restart with the same name resumes it [default: the host name]
    #[arg(long, value_name = "NAME")]
    pub series: Option<String>,
    /// Database the windows are written to [default: rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<String>,
    /// CPUs to measure, e.g. 1,3 or 2-5 [default: every online CPU]
    #[arg(long, short = 'c', value_name = "LIST", help_heading = "Measurement")]
    pub cpus: Option<String>,
    /// CPUs for rtscope's own threads [default: the online CPUs not measured]
    #[arg(long, value_name = "LIST", help_heading = "Measurement")]
    pub housekeeping: Option<String>,
    /// Wake-up interval; a bare number is us [default: 5ms: under 0.5 % of a CPU, docs/watch.md]
    #[arg(long, short = 'i', value_name = "DUR", help_heading = "Measurement")]
    pub interval: Option<String>,
    /// SCHED_FIFO priority of the measuring threads [default: 90]
    #[arg(long, short = 'p', help_heading = "Measurement")]
    pub priority: Option<i32>,
    /// Window length: whole seconds dividing an hour; a bare number is s [default: 1m]
    #[arg(long, value_name = "DUR", help_heading = "Windows")]
    pub window: Option<String>,
    /// Charge each window's worst wake-up at or above --spike to what ran on its CPU (tracefs: root)
    #[arg(long, help_heading = "Windows")]
    pub explain: bool,
    /// Where the flight recorder takes the spikes' events from [default: tracefs;
    /// docs/explain.md, "The eBPF flight recorder"]
    #[arg(long, value_name = "RECORDER", help_heading = "Windows",
          value_parser = crate::cli::values::one_of(crate::cli::measure::EXPLAIN_RECORDER))]
    pub explain_recorder: Option<rtscope_trace::explain::RecorderChoice>,
    /// Wake-ups at or above this count as spikes; a bare number is us [default: 100us]
    #[arg(long, value_name = "DUR", help_heading = "Windows")]
    pub spike: Option<String>,
    /// Keep measured windows this long, then merge them into hours [default: 2d]
    #[arg(long, value_name = "DUR", help_heading = "Retention")]
    pub keep_windows: Option<String>,
    /// Keep hours this long, then merge them into days [default: 90d]
    #[arg(long, value_name = "DUR", help_heading = "Retention")]
    pub keep_hours: Option<String>,
    /// Keep nothing older than this [default: 1825d, 5 years]
    #[arg(long, value_name = "DUR", help_heading = "Retention")]
    pub keep: Option<String>,
    /// Keep the database within this size; the oldest windows go first [default: 64MB]
    #[arg(long, value_name = "SIZE", help_heading = "Retention")]
    pub disk_budget: Option<String>,
    /// Serve /metrics (Prometheus text or OpenMetrics) on ADDR:PORT, e.g. 127.0.0.1:9464
    #[arg(long, value_name = "ADDR:PORT", help_heading = "Output")]
    pub listen: Option<String>,
    /// Write the metrics after each window to this node_exporter textfile (.prom)
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub textfile: Option<String>,
    /// Alert when a window breaches STAT>VALUE: max, p99, p99.99 (latencies), missed, spikes (counts); repeatable
    #[arg(long = "alert", value_name = "STAT>VALUE", help_heading = "Output")]
    pub alerts: Vec<String>,
    /// Run this through sh -c on a breach, with RTSCOPE_ALERT, RTSCOPE_CPU, RTSCOPE_MAX_NS … set
    #[arg(long, value_name = "CMD", help_heading = "Output")]
    pub alert_command: Option<String>,
}
