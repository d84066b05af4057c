//! The watch's configuration: `/etc/rtscope/watch.toml` (or `--config`), overridden by the
//! command line, checked into a [`Config`]. Every key of the file is a flag's long name with
//! `_` for `-`; unknown keys are refused with the file's line, so a typo never goes unnoticed
//! on a product that runs for months.

use crate::alert::{self, Threshold};
use crate::error::ConfigError;
use crate::retention::Retention;
use rtscope_common::error::UsageError;
use rtscope_core::Nanos;
use rtscope_trace::explain::RecorderChoice;
use std::path::{Path, PathBuf};

/// The default wake-up interval (see [`Config::build`]).
pub const DEFAULT_INTERVAL: Nanos = Nanos::from_ms(5);

/// The file the service reads.
pub const SERVICE_CONFIG: &str = "/etc/rtscope/watch.toml";

/// The configuration as written: text, as in the file or on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Series name (default: the host name).
    pub series: Option<String>,
    /// Database.
    pub db: Option<String>,
    /// CPUs to measure.
    pub cpus: Option<String>,
    /// Wake-up interval.
    pub interval: Option<String>,
    /// SCHED_FIFO priority.
    pub priority: Option<i32>,
    /// Window length.
    pub window: Option<String>,
    /// Spike threshold.
    pub spike: Option<String>,
    /// How long measured windows are kept.
    pub keep_windows: Option<String>,
    /// How long hours are kept.
    pub keep_hours: Option<String>,
    /// How long anything is kept.
    pub keep: Option<String>,
    /// The database's size limit.
    pub disk_budget: Option<String>,
    /// `ADDR:PORT` for `/metrics`.
    pub listen: Option<String>,
    /// A node_exporter textfile written after each window.
    pub textfile: Option<String>,
    /// Alert thresholds.
    pub alert: Vec<String>,
    /// Command run on a breach.
    pub alert_command: Option<String>,
    /// CPUs of rtscope's own threads.
    pub housekeeping: Option<String>,
    /// Explain each window's worst wake-up.
    pub explain: Option<bool>,
    /// Where the flight recorder takes its events from: `tracefs`, `ebpf` or `auto`.
    pub explain_recorder: Option<String>,
}

/// The file as TOML: the keys of [`Settings`], nothing else.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    series: Option<String>,
    db: Option<String>,
    cpus: Option<String>,
    interval: Option<String>,
    priority: Option<i32>,
    window: Option<String>,
    spike: Option<String>,
    keep_windows: Option<String>,
    keep_hours: Option<String>,
    keep: Option<String>,
    disk_budget: Option<String>,
    listen: Option<String>,
    textfile: Option<String>,
    alert: Option<Vec<String>>,
    alert_command: Option<String>,
    housekeeping: Option<String>,
    explain: Option<bool>,
    explain_recorder: Option<String>,
}

/// The line (from 1) of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// `e` as the watch says it: an unknown key or a value of the wrong kind by its key and line,
/// anything else with the parser's own words and the line.
fn file_error(text: &str, e: &toml::de::Error) -> ConfigError {
    let line = e.span().map_or(0, |s| line_of(text, s.start));
    let msg = e.message().trim().to_string();
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let key = rest.split('`').next().unwrap_or_default().to_string();
        return ConfigError::UnknownKey { line, key };
    }
    if msg.starts_with("invalid type") || msg.starts_with("invalid value") {
        let key = text
            .lines()
            .nth(line.saturating_sub(1))
            .and_then(|l| l.split('=').next())
            .map(|k| k.trim().to_string())
            .unwrap_or_default();
        let want = match key.as_str() {
            "priority" => "an integer",
            "explain" => "true or false",
            "alert" => "an array of strings",
            _ => "a quoted string",
        };
        return ConfigError::WrongType { line, key, want };
    }
    ConfigError::Syntax { line, error: msg }
}

impl Settings {
    /// Reads a configuration file (at most 64 KiB, a regular file).
    pub fn read(path: &Path) -> Result<Settings, UsageError> {
        let name = path.display();
        let meta = std::fs::metadata(path).map_err(|e| {
            UsageError::new(format!("cannot read the watch configuration {name}: {e}"))
                .hint("write it (docs/watch.md lists its keys) or give another with --config")
        })?;
        if !meta.is_file() || meta.len() > 64 << 10 {
            return Err(UsageError::new(format!(
                "the watch configuration {name} must be a regular file of at most 64 KiB"
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError::new(format!("cannot read {name}: {e}")))?;
        Settings::parse(&text).map_err(|e| {
            UsageError::new(format!("{name}: {e}")).hint(
                "every key is a `rtscope watch` option's long name with _ for - (docs/watch.md)",
            )
        })
    }

    /// Reads the text of a configuration file (TOML, read by the `toml` crate the binary
    /// links for campaign files): every key a flag's long name with `_` for `-`, unknown keys
    /// and values of the wrong kind refused with their line.
    pub fn parse(text: &str) -> Result<Settings, ConfigError> {
        let f: File = toml::from_str(text).map_err(|e| file_error(text, &e))?;
        Ok(Settings {
            series: f.series,
            db: f.db,
            cpus: f.cpus,
            interval: f.interval,
            priority: f.priority,
            window: f.window,
            spike: f.spike,
            keep_windows: f.keep_windows,
            keep_hours: f.keep_hours,
            keep: f.keep,
            disk_budget: f.disk_budget,
            listen: f.listen,
            textfile: f.textfile,
            alert: f.alert.unwrap_or_default(),
            alert_command: f.alert_command,
            housekeeping: f.housekeeping,
            explain: f.explain,
            explain_recorder: f.explain_recorder,
        })
    }

    /// `self` with every value that `over` sets replaced (alerts: `over`'s list if not empty).
    pub fn overlay(self, over: Settings) -> Settings {
        Settings {
            series: over.series.or(self.series),
            db: over.db.or(self.db),
            cpus: over.cpus.or(self.cpus),
            interval: over.interval.or(self.interval),
            priority: over.priority.or(self.priority),
            window: over.window.or(self.window),
            spike: over.spike.or(self.spike),
            keep_windows: over.keep_windows.or(self.keep_windows),
            keep_hours: over.keep_hours.or(self.keep_hours),
            keep: over.keep.or(self.keep),
            disk_budget: over.disk_budget.or(self.disk_budget),
            listen: over.listen.or(self.listen),
            textfile: over.textfile.or(self.textfile),
            alert: if over.alert.is_empty() {
                self.alert
            } else {
                over.alert
            },
            alert_command: over.alert_command.or(self.alert_command),
            housekeeping: over.housekeeping.or(self.housekeeping),
            explain: over.explain.or(self.explain),
            explain_recorder: over.explain_recorder.or(self.explain_recorder),
        }
    }
}

/// A checked configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Series name.
    pub series: String,
    /// Database.
    pub db: PathBuf,
    /// CPUs to measure (text, checked against the online CPUs by the plan).
    pub cpus: Option<String>,
    /// Wake-up interval.
    pub interval: Nanos,
    /// SCHED_FIFO priority.
    pub priority: i32,
    /// Window length.
    pub window: Nanos,
    /// Spike threshold.
    pub spike: Nanos,
    /// Retention.
    pub retention: Retention,
    /// `ADDR:PORT` for `/metrics`.
    pub listen: Option<String>,
    /// node_exporter textfile.
    pub textfile: Option<PathBuf>,
    /// Alert thresholds.
    pub alerts: Vec<Threshold>,
    /// Command run on a breach.
    pub alert_command: Option<String>,
    /// CPUs of rtscope's own threads (text).
    pub housekeeping: Option<String>,
    /// Explain each window's worst wake-up at or above `spike`.
    pub explain: bool,
    /// Where the flight recorder takes its events from (tracefs unless asked).
    pub explain_recorder: RecorderChoice,
}

/// The names `explain_recorder` accepts.
pub const EXPLAIN_RECORDERS: [RecorderChoice; 3] = [
    RecorderChoice::Tracefs,
    RecorderChoice::Bpf,
    RecorderChoice::Auto,
];

fn recorder(v: &Option<String>) -> Result<RecorderChoice, UsageError> {
    let Some(t) = v else {
        return Ok(RecorderChoice::Tracefs);
    };
    let found = EXPLAIN_RECORDERS.into_iter().find(|r| r.name() == t);
    found.ok_or_else(|| {
        UsageError::new(format!(
            "invalid value '{t}' for '--explain-recorder': tracefs, ebpf or auto"
        ))
    })
}

fn dur(v: &Option<String>, key: &str, default: Nanos, unit: &str) -> Result<Nanos, UsageError> {
    match v {
        None => Ok(default),
        Some(t) => Nanos::parse_with_default_unit(t, unit)
            .map_err(|e| UsageError::new(format!("invalid value '{t}' for '{key}': {e}"))),
    }
}

/// Parses a size: `64MB`, `512k`, `1G`, `1048576` (bytes; K/M/G are powers of 1024).
pub fn size(text: &str, key: &str) -> Result<u64, UsageError> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let mult: u64 = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => 0,
    };
    n.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|&v| v > 0)
        .ok_or_else(|| {
            UsageError::new(format!(
                "invalid size '{text}' for '{key}': use e.g. 64MB, 512K, 1G"
            ))
        })
}

impl Config {
    /// Checks `s`; `host` names the series when `s` does not.
    pub fn build(s: &Settings, host: &str) -> Result<Config, UsageError> {
        // 5 ms, not cyclictest's 1 ms: the measuring threads are nearly all of a watch's cost,
        // and at 1 ms they took 1.7 % of each measured CPU on the project's 2-vCPU VM, at 5 ms
        // 0.39 % (utime of rtscope-m0/m1 over 61 s; the control thread 0.05 %). A watch runs
        // for months beside the product: its default stays under 0.5 % (BENCHMARKS.md).
        let interval = dur(&s.interval, "--interval", DEFAULT_INTERVAL, "us")?;
        let window = dur(&s.window, "--window", Nanos::from_secs(60), "s")?;
        if window < Nanos::from_secs(1)
            || window > Nanos::from_secs(3600)
            || 3600 % (window.0 / 1_000_000_000).max(1) != 0
            || window.0 % 1_000_000_000 != 0
        {
            return Err(UsageError::new(format!("invalid value '{window}' for '--window': use whole seconds from 1s to 1h that divide an hour (10s, 1m, 5m, 1h)")));
        }
        if interval.0 * 10 > window.0 {
            return Err(UsageError::new(
                "--interval: at least 10 wake-ups per --window",
            ));
        }
        let d = Retention::default();
        let retention = Retention {
            windows: dur(&s.keep_windows, "--keep-windows", d.windows, "s")?,
            hours: dur(&s.keep_hours, "--keep-hours", d.hours, "s")?,
            max_age: dur(&s.keep, "--keep", d.max_age, "s")?,
            budget: s
                .disk_budget
                .as_deref()
                .map_or(Ok(d.budget), |t| size(t, "--disk-budget"))?,
        };
        retention.check().map_err(UsageError::from_error)?;
        let series = s.series.clone().unwrap_or_else(|| host.to_string());
        if series.trim().is_empty() {
            return Err(UsageError::new(format!(
                "invalid value '{series}' for '--series': a series needs a name"
            ))
            .hint("name it, e.g. --series press-7 (the default is the host name)"));
        }
        rtscope_common::names::check_name(
            &series,
            "--series",
            rtscope_common::names::MAX_NAME_BYTES,
        )?;
        Ok(Config {
            series,
            db: PathBuf::from(s.db.as_deref().unwrap_or("rtscope.db")),
            cpus: s.cpus.clone(),
            interval,
            priority: s.priority.unwrap_or(90),
            window,
            spike: dur(&s.spike, "--spike", Nanos::from_us(100), "us")?,
            retention,
            listen: s.listen.clone(),
            textfile: s.textfile.as_ref().map(PathBuf::from),
            alerts: s
                .alert
                .iter()
                .map(|a| alert::parse(a))
                .collect::<Result<_, _>>()
                .map_err(UsageError::from_error)?,
            alert_command: s.alert_command.clone(),
            housekeeping: s.housekeeping.clone(),
            explain: s.explain.unwrap_or(false),
            explain_recorder: recorder(&s.explain_recorder)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_overrides_the_file_and_defaults_fill_the_rest() {
        let file = Settings::parse("series = \"press-7\"\ninterval = \"500us\"\nalert = [\"max>300us\"]\nlisten = \"127.0.0.1:9464\"\n").unwrap();
        let cli = Settings {
            interval: Some("2ms".into()),
            ..Settings::default()
        };
        let c = Config::build(&file.overlay(cli), "host").unwrap();
        assert_eq!(
            c.explain_recorder,
            RecorderChoice::Tracefs,
            "tracefs unless asked"
        );
        let ebpf = Settings::parse("explain_recorder = \"ebpf\"\n").unwrap();
        let e = Config::build(&ebpf, "host").unwrap();
        assert_eq!(e.explain_recorder, RecorderChoice::Bpf);
        let bad = Settings {
            explain_recorder: Some("bpf".into()),
            ..Settings::default()
        };
        let err = Config::build(&bad, "host").unwrap_err().to_string();
        assert!(err.contains("--explain-recorder") && err.contains("tracefs, ebpf or auto"));
        assert_eq!(
            (c.series.as_str(), c.interval, c.window),
            ("press-7", Nanos::from_ms(2), Nanos::from_secs(60))
        );
        assert_eq!(c.alerts.len(), 1);
        assert_eq!(c.retention, Retention::default());
        assert_eq!(
            Config::build(&Settings::default(), "h").unwrap().series,
            "h"
        );
    }

    #[test]
    fn bad_values_are_refused_by_name() {
        let e = Settings::parse("intervall = \"1ms\"").unwrap_err();
        assert_eq!(
            e,
            ConfigError::UnknownKey {
                line: 1,
                key: "intervall".into()
            }
        );
        assert_eq!(e.to_string(), "line 1: unknown key 'intervall'");
        let e = Settings::parse("\npriority = \"90\"").unwrap_err();
        assert_eq!(e.to_string(), "line 2: priority takes an integer");
        assert!(matches!(
            Settings::parse("alert = \"max>1us\""),
            Err(ConfigError::WrongType {
                want: "an array of strings",
                ..
            })
        ));
        let bad = |s: Settings, what: &str| {
            let e = Config::build(&s, "h").unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        };
        bad(
            Settings {
                window: Some("7s".into()),
                ..Default::default()
            },
            "--window",
        );
        bad(
            Settings {
                interval: Some("1s".into()),
                window: Some("5s".into()),
                ..Default::default()
            },
            "--interval",
        );
        bad(
            Settings {
                keep_windows: Some("10m".into()),
                ..Default::default()
            },
            "--keep-windows",
        );
        bad(
            Settings {
                disk_budget: Some("12 parsecs".into()),
                ..Default::default()
            },
            "--disk-budget",
        );
        bad(
            Settings {
                alert: vec!["max<1".into()],
                ..Default::default()
            },
            "--alert",
        );
        bad(
            Settings {
                series: Some(String::new()),
                ..Default::default()
            },
            "a series needs a name",
        );
        bad(
            Settings {
                series: Some("a\nb".into()),
                ..Default::default()
            },
            "--series",
        );
        assert_eq!(size("64MB", "x").unwrap(), 64 << 20);
        assert_eq!(size("512k", "x").unwrap(), 512 << 10);
        assert_eq!(size("1GiB", "x").unwrap(), 1 << 30);
    }
}
