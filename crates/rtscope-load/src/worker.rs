//! The load worker: `rtscope __load '<LoadSpec JSON>' [--for SECONDS]`.
//!
//! It blocks SIGINT, SIGTERM and SIGHUP before anything else (so it is never killed half-way
//! by them and messaging in process mode forks while single-threaded), starts the built-in
//! load, and waits for one of those signals, the optional `--for` limit, or a load thread
//! that failed. It then stops the load, lets it clean up (joins threads, reaps processes,
//! removes scratch files), prints its [`LoadReport`] as one JSON line on stdout and exits:
//! 0 when the load worked, 1 when it failed, 2 for a bad command line.

use crate::builtin::{self, Stop};
use crate::sys::{SigSet, STOP_SIGNALS};
use crate::{LoadError, LoadReport, LoadSpec};
use rtscope_core::LoadStatus;
use std::io::Write;
use std::time::{Duration, Instant};

/// How often the worker looks at its stop conditions.
const TICK: Duration = Duration::from_millis(50);

/// Runs a load worker. `args` are the arguments after `__load`: the spec as JSON, then
/// optionally `--for SECONDS` (a decimal number). Returns the process exit code.
pub fn worker_main(args: &[String]) -> i32 {
    let signals = SigSet::of(&STOP_SIGNALS);
    signals.block();
    let (spec, limit) = match parse_args(args) {
        Ok(v) => v,
        Err(e) => {
            {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "error: {e}");
            };
            if let Some(h) = e.hint() {
                {
                    use std::io::Write as _;
                    let _ = writeln!(std::io::stderr(), "\nhint: {h}");
                };
            }
            return 2;
        }
    };
    let name = format!("load-{}", spec.kind());
    if let Ok(n) = std::ffi::CString::new(name) {
        crate::sys::set_name(&n);
    }
    let started = Instant::now();
    let stop = Stop::new();
    let outcome = match builtin::start(&spec, &stop) {
        Ok(running) => {
            wait(&signals, &stop, limit);
            stop.set();
            running.finish()
        }
        Err(e) => builtin::Outcome {
            metrics: Vec::new(),
            error: Some(e),
        },
    };
    let failed = outcome.error.is_some();
    let report = LoadReport {
        name: spec.name(),
        spec,
        command_line: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        ran_ns: started.elapsed().as_nanos() as u64,
        status: if failed {
            LoadStatus::Failed
        } else {
            LoadStatus::Ok
        },
        error: outcome.error.map(|e| e.to_string()),
        metrics: outcome.metrics,
        output_tail: None,
    };
    let line = serde_json::to_string(&report).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
    i32::from(failed)
}

fn parse_args(args: &[String]) -> Result<(LoadSpec, Option<Duration>), LoadError> {
    let text = args.first().map_or("", String::as_str);
    let spec: LoadSpec = serde_json::from_str(text).map_err(|source| LoadError::SpecJson {
        text: text.to_string(),
        source,
    })?;
    let limit = match args.get(1..) {
        Some([flag, secs]) if flag == "--for" => match secs.parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s)),
            _ => return Err(bad_arg(secs)),
        },
        Some([]) | None => None,
        Some(other) => return Err(bad_arg(&other.join(" "))),
    };
    if matches!(spec, LoadSpec::External { .. }) {
        return Err(LoadError::BadSpec {
            kind: "external",
            field: "kind",
            value: "external".into(),
            expected: "the worker runs built-in loads only".into(),
        });
    }
    spec.check()?;
    Ok((spec, limit))
}

fn bad_arg(text: &str) -> LoadError {
    LoadError::BadSpec {
        kind: "worker",
        field: "arguments",
        value: text.to_string(),
        expected: "expected `--for SECONDS` after the spec".into(),
    }
}

/// Waits for a stop signal, the limit, or a load that stopped itself.
fn wait(signals: &SigSet, stop: &Stop, limit: Option<Duration>) {
    let deadline = limit.map(|l| Instant::now() + l);
    while !stop.is_set() {
        let left = deadline.map_or(TICK, |d| d.saturating_duration_since(Instant::now()));
        if deadline.is_some() && left.is_zero() {
            return;
        }
        if signals.wait(left.min(TICK)).is_some() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn takes_a_spec_and_an_optional_limit() {
        let (spec, limit) = parse_args(&args(&[r#"{"kind":"cpu","threads":2}"#])).unwrap();
        assert_eq!((spec, limit), (LoadSpec::Cpu { threads: 2 }, None));
        let a = args(&[r#"{"kind":"cpu","threads":1}"#, "--for", "0.5"]);
        assert_eq!(parse_args(&a).unwrap().1, Some(Duration::from_millis(500)));
    }

    #[test]
    fn refuses_bad_json_bad_limits_values_and_external_programs() {
        assert!(matches!(
            parse_args(&args(&["{"])),
            Err(LoadError::SpecJson { .. })
        ));
        let a = args(&[r#"{"kind":"cpu","threads":1}"#, "--for", "soon"]);
        assert!(parse_args(&a).is_err());
        let a = args(&[r#"{"kind":"cpu","threads":0}"#]);
        assert!(parse_args(&a)
            .unwrap_err()
            .to_string()
            .contains("threads = 0"));
        let a = args(&[r#"{"kind":"external","program":"sleep","args":["1"]}"#]);
        assert!(parse_args(&a).is_err());
    }
}
