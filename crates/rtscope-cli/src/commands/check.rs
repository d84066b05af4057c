//! `rtscope check [--cpus LIST] [--json]`: the preflight audit of rtscope-check, as a table or
//! JSON. Exit 0 when no check is bad, 1 when one is, 2 on a usage error. See docs/check.md.

use crate::cli::check::CheckArgs;
use rtscope_check::{audit, LiveProbe, Options, System};
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_engine::CpuSet;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// Version of the `--json` document.
pub const CHECK_SCHEMA: &str = "rtscope-check/1";

#[derive(Serialize)]
struct Json<'a> {
    schema: &'static str,
    cpus: &'a [u32],
    summary: Summary,
    findings: &'a [rtscope_check::Finding],
}

#[derive(Serialize)]
struct Summary {
    ok: usize,
    warn: usize,
    bad: usize,
    unavailable: usize,
}

/// The measured CPUs of `--cpus` (the syntax and checks of `measure --cpus`), against the
/// online CPUs under `root`.
pub fn cpus_for(text: Option<&str>, root: &Path) -> Result<Vec<u32>, UsageError> {
    let probe = LiveProbe;
    let online = System::new(root, &probe).online_cpus();
    let Some(text) = text else {
        return Ok(online);
    };
    let online = CpuSet::from_cpus(online.iter().map(|&c| c as usize));
    let set = rtscope_session::cpus::cpu_list(text, &online, "--cpus")?;
    Ok(set.iter().map(|c| c as u32).collect())
}

/// Runs `rtscope check`.
pub fn run(a: &CheckArgs, argv: &[String], out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    if !a.fleet.targets.is_empty() {
        // `check` records nothing and has no CI outputs: a board's failure is its exit code.
        let mut missing = Vec::new();
        return crate::commands::fleet::remote(&a.fleet, argv, None, None, out, &mut missing);
    }
    if !a.root.is_dir() {
        return Err(
            UsageError::new(format!("--root {} is not a directory", a.root.display())).into(),
        );
    }
    let cpus = cpus_for(a.cpus.as_deref(), &a.root)?;
    let probe = LiveProbe;
    let sys = System::new(&a.root, &probe);
    let result = audit(
        &sys,
        &Options {
            cpus,
            priority: a.priority,
        },
    );
    if a.json {
        use rtscope_check::Verdict as V;
        let doc = Json {
            schema: CHECK_SCHEMA,
            cpus: &result.cpus,
            summary: Summary {
                ok: result.count(V::Ok),
                warn: result.count(V::Warn),
                bad: result.count(V::Bad),
                unavailable: result.count(V::Unavailable),
            },
            findings: &result.findings,
        };
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
    } else {
        out.write_all(rtscope_check::render::table(&result).as_bytes())?;
    }
    out.flush()?;
    Ok(if result.has_bad() {
        ExitStatus::LimitExceeded
    } else {
        ExitStatus::Success
    })
}
