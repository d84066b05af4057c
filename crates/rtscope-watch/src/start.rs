//! What a watch checks and takes before its banner, before anything is created: the database's
//! directory, the `--textfile` path, the CPU lists and the plan ([`plan`], which each session
//! builds again), the `--listen` port (bound here, so a port
//! in use is refused now), the series' lock ([`crate::lock`], the lock file beside the
//! database) and, last, the database itself, opened once as the watch will open it (a full
//! disk, a file of another program). A refusal here is exit 2 before the banner, naming the
//! database and the fix; up to the lock nothing is written: no series row, no empty database.

use crate::config::Config;
use crate::lock::{LockError, SeriesLock};
use rtscope_common::error::UsageError;
use rtscope_common::outfile::Dest;
use rtscope_session::{field::Naming, plan::PlanSpec, plan::PolicyChoice, plan::RunPlan};
use std::net::TcpListener;
use std::path::Path;

/// A checked configuration with what the watch holds for its whole life.
#[derive(Debug)]
pub struct Ready {
    /// The configuration.
    pub config: Config,
    /// The series' lock, held until the process ends.
    pub lock: SeriesLock,
    /// `/metrics`' socket, bound.
    pub listener: Option<TcpListener>,
}

fn shown(p: &Path) -> String {
    rtscope_core::text::escape(&p.display().to_string()).into_owned()
}

/// The fix of a database that cannot be written.
const WRITABLE_HINT: &str = "a watch writes every window: give --db a database on a writable \
                             file system, e.g. --db /var/lib/rtscope/watch.db";

/// The database: its directory exists, it is a regular file (or nothing yet: the store's one
/// check, which never opens a FIFO), and it and its directory can be written (SQLite and the
/// series' lock make files beside it).
fn check_db(db: &Path) -> Result<(), UsageError> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(UsageError::new(format!(
            "--db {}: the directory {} does not exist",
            shown(db),
            shown(dir)
        ))
        .hint("create the directory, or give --db a path in an existing one"));
    }
    if db.is_dir() {
        return Err(
            UsageError::new(format!("--db {}: it is a directory", shown(db)))
                .hint("give --db a file, e.g. --db /var/lib/rtscope/watch.db"),
        );
    }
    let exists = rtscope_store::Store::check_regular(db).map_err(|e| {
        UsageError::from_error(e).hint(
            "give --db a regular file (a new path is created), e.g. --db /var/lib/rtscope/watch.db",
        )
    })?;
    if exists {
        std::fs::OpenOptions::new()
            .append(true)
            .open(db)
            .map_err(|e| {
                UsageError::new(format!("--db {}: cannot be written: {e}", shown(db)))
                    .hint(WRITABLE_HINT)
            })?;
    }
    let probe = dir.join(format!(".rtscope-watch-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| {
            UsageError::new(format!(
                "--db {}: its directory {} cannot be written ({e}); the database and its lock \
                 need files there",
                shown(db),
                shown(dir)
            ))
            .hint(WRITABLE_HINT)
        })?;
    Ok(())
}

/// The database opened once as the watch opens it, so what refuses it (a full disk, a file of
/// another program, a newer schema) is said before the banner, with the store's hint.
fn check_store(db: &Path) -> Result<(), UsageError> {
    rtscope_store::Store::open(db).map(drop).map_err(|e| {
        let hint = e.hint();
        UsageError::from_error(e).hint(hint)
    })
}

/// `--textfile`: a regular file (new or replaced whole) in an existing directory, or a device
/// or FIFO written through; never a directory, a symlink or standard output.
pub fn check_textfile(path: &Path) -> Result<(), UsageError> {
    let hint = "give a file in node_exporter's textfile directory, e.g. \
                --textfile /var/lib/node_exporter/textfile_collector/rtscope.prom";
    match Dest::resolve(path) {
        Ok(Dest::Stdout) => Err(UsageError::new(format!(
            "--textfile {}: standard output is not a textfile",
            shown(path)
        ))
        .hint(hint)),
        Ok(_) => Ok(()),
        Err(e) => Err(UsageError::new(format!("--textfile: {e}")).hint(hint)),
    }
}

/// The plan of a watch: SCHED_FIFO on the chosen CPUs, until stopped, with a sample ring per
/// thread (the worst wake-up of each window and its time).
pub fn plan(c: &Config, online: &rtscope_engine::CpuSet) -> Result<RunPlan, UsageError> {
    let cpus = |t: &Option<String>, flag| {
        t.as_deref()
            .map(|t| rtscope_session::cpus::cpu_list(t, online, flag))
            .transpose()
    };
    let spec = PlanSpec {
        cpus: cpus(&c.cpus, "--cpus")?,
        policy: PolicyChoice::Fifo,
        priority: c.priority,
        interval: c.interval,
        // Checked as a run of one window; the watch then runs until stopped (below).
        duration: Some(c.window),
        raw: true,
        housekeeping_cpus: cpus(&c.housekeeping, "--housekeeping")?,
        ..PlanSpec::default()
    };
    let mut plan = RunPlan::build(&spec, online).map_err(|e| e.usage(Naming::Flags))?;
    plan.config.duration = None;
    plan.config.loops = None;
    Ok(plan)
}

/// Checks `config` and takes what the watch holds (see the module docs).
pub fn prepare(config: Config) -> Result<Ready, UsageError> {
    check_db(&config.db)?;
    if let Some(t) = &config.textfile {
        check_textfile(t)?;
    }
    // The CPU lists and the plan, as each session builds it.
    plan(&config, &rtscope_engine::sys::online_cpus())?;
    let listener = match &config.listen {
        Some(addr) => Some(crate::http::bind(addr).map_err(|e| {
            UsageError::new(format!("--listen {addr}: {e}")).hint(
                "give a free ADDR:PORT, e.g. 127.0.0.1:9464 (0.0.0.0 exposes it to the network)",
            )
        })?),
        None => None,
    };
    let lock = SeriesLock::take(&config.db, &config.series).map_err(|e| match &e {
        LockError::Held { pid, .. } => {
            let stop = match *pid {
                p if p > 0 => format!("kill -TERM {p}"),
                _ => "in its container".to_string(),
            };
            UsageError::from_error(e).hint(format!(
                "one watch per series and database: stop that watch first ({stop}), \
                 or give another --series or --db"
            ))
        }
        LockError::DbNotRegular { .. } => UsageError::from_error(e).hint(
            "give --db a regular file (a new path is created), e.g. --db /var/lib/rtscope/watch.db",
        ),
        _ => UsageError::new(format!("--db {}: {e}", shown(&config.db)))
            .hint("the lock file beside the database must be a regular file the watch can write"),
    })?;
    check_store(&config.db)?;
    Ok(Ready {
        config,
        lock,
        listener,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 67: a FIFO database is refused by the store's own check before any lock file is
    /// made, naming the database and the fix (never "the lock file beside the database").
    #[test]
    fn a_fifo_database_is_refused_by_name_before_its_lock() {
        let dir = std::env::temp_dir().join(format!("rtscope-start-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("f.db");
        let c = std::ffi::CString::new(db.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path `c`, which outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = check_db(&db).unwrap_err();
        assert_eq!(
            e.message,
            format!(
                "{} is not a regular file (a FIFO); a run database must be one",
                db.display()
            )
        );
        assert!(
            e.hint
                .as_deref()
                .unwrap()
                .starts_with("give --db a regular file"),
            "{e}"
        );
        assert!(!crate::lock::lock_path(&db).exists());
        // A regular file, and a new path, in a writable directory pass.
        assert!(check_db(&dir.join("new.db")).is_ok());
        std::fs::write(dir.join("r.db"), b"").unwrap();
        assert!(check_db(&dir.join("r.db")).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
