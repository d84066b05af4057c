//! The watch loop: one [`Session`] that never ends by itself, cut into windows on the control
//! thread (on the housekeeping CPUs), each window stored, checked against the alerts, added to
//! `/metrics` and the textfile, then the retention applied. SIGHUP closes the open window,
//! reads the configuration again and starts a new session on the same series (a bad new
//! configuration is logged and the old one kept); SIGINT and SIGTERM close the open window
//! and end the watch with exit 0, its normal end — unless windows could not be written by
//! then ([`Stopped::lost`]: the caller says how many and exits 2). At the end the alert
//! command's process groups are ended ([`Notifier::stop`]).

use crate::alert::{self, Breach, Held, Notifier};
use crate::asked::Answer;
use crate::config::Config;
use crate::explain::WindowExplainer;
use crate::http::{self, Page};
use crate::metrics::{Exposition, Format};
use crate::roller::{Closed, Roller, Snap};
use rtscope_common::error::UsageError;
use rtscope_core::Nanos;
use rtscope_engine::{sys, ClockKind, Run, Sample};
use rtscope_session::record::RecordSpec;
use rtscope_session::{plan::ConfigDoc, Event, Observer, Recorded, Session, SystemSettings};
use rtscope_store::watch::{Culprit, SeriesId, WatchWindow};
use rtscope_store::Store;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// How often the control thread looks at the clock: a window closes within this of its end.
pub const TICK: Nanos = Nanos::from_ms(100);
/// How long the end of a session waits for the trace of its last window's worst wake-up.
const FINISH_PATIENCE: std::time::Duration = std::time::Duration::from_millis(1500);
/// How long after its window an alert waits for the cause of its worst wake-up (`--explain`);
/// then it goes out without one.
const HOLD: Nanos = Nanos::from_secs(10);
/// Windows kept in memory while the database cannot be written (then the oldest are dropped).
const MAX_PENDING: usize = 10_000;

/// How the watch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// Windows written.
    pub windows: u64,
    /// Configuration reloads (SIGHUP).
    pub reloads: u32,
    /// Window rows the database did not take: dropped while it could not be written (more
    /// than [`MAX_PENDING`] waiting) and still unwritten at the stop. Lost.
    pub lost: u64,
    /// Why the last write failed, when windows were lost.
    pub error: Option<String>,
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn mono_now() -> i64 {
    sys::now(sys::clock_id(ClockKind::Monotonic)).0 as i64
}

/// What outlives a session: the database, the series, `/metrics`.
pub struct Shared {
    /// The database.
    pub store: Store,
    /// The series.
    pub series: SeriesId,
    /// The page `/metrics` serves.
    pub page: Page,
    /// Alert commands.
    pub notifier: Notifier,
    /// Windows not yet written (the database was locked or full).
    pending: Vec<WatchWindow>,
    /// Alerts waiting for their window's explanation.
    held: Vec<Held>,
    /// Windows written.
    pub windows: u64,
    /// Windows dropped while the database could not be written (more than [`MAX_PENDING`]).
    dropped: u64,
    /// The last write error.
    last_error: Option<String>,
    /// Where warnings go (stderr, which the journal keeps under systemd).
    pub warn: fn(&str),
}

impl Shared {
    /// Opens the database and the series, and serves `/metrics` on `listener` if bound.
    pub fn open(
        c: &Config,
        listener: Option<std::net::TcpListener>,
        command_line: &[String],
        warn: fn(&str),
    ) -> Result<Shared, UsageError> {
        let store = Store::open(&c.db).map_err(UsageError::from_error)?;
        // A power loss may cost the open window only: each window's commit reaches the disk
        // (tests/guest/watch-systemd cuts a guest's power 3 s after a commit).
        store
            .set_durable_commits()
            .map_err(UsageError::from_error)?;
        let host = rtscope_session::sysinfo::SysInfo::read().nodename;
        let config = serde_json::json!({
            "command_line": command_line,
            "series": c.series,
            "interval_ns": c.interval.0,
            "window_ns": c.window.0,
            "priority": c.priority,
            "cpus": c.cpus,
            "spike_ns": c.spike.0,
        })
        .to_string();
        let (series, resumed) = store
            .open_series(&c.series, Some(&host), unix_now(), &config)
            .map_err(UsageError::from_error)?;
        if resumed {
            warn(&format!(
                "rtscope watch: resuming series '{}' in {}",
                c.series,
                c.db.display()
            ));
        }
        let page: Page = Arc::new(Mutex::new(Exposition::new(&c.series)));
        if let Some(l) = listener {
            let at = http::serve(l, Arc::clone(&page)).map_err(UsageError::from_error)?;
            warn(&format!("rtscope watch: metrics at http://{at}/metrics"));
        }
        Ok(Shared {
            store,
            series,
            page,
            notifier: Notifier::new(c.alert_command.clone()),
            pending: Vec::new(),
            held: Vec::new(),
            windows: 0,
            dropped: 0,
            last_error: None,
            warn,
        })
    }

    /// Stores, alerts on, publishes and houses one closed window. With `explaining`, an alert
    /// whose window's worst wake-up went to the tracer waits for its cause ([`Held`]).
    fn take(&mut self, c: &Config, mut closed: Closed, explaining: bool) {
        let marked = alert::mark(&mut closed.windows, &c.alerts);
        for (i, w) in closed.windows.iter_mut().enumerate() {
            if let Some(worst) = closed.worst[i] {
                w.explain = Some(format!(
                    r#"{{"worst":{{"latency_ns":{},"at_unix_ns":{}}}}}"#,
                    worst.latency.0, worst.at_ns
                ));
            }
        }
        // One notification per CPU that breached; the all-CPUs row is marked but notified only
        // when no CPU's row breached (a percentile over all CPUs can).
        let cpu_marked = marked.iter().any(|&i| closed.windows[i].cpu.is_some());
        for i in marked {
            if cpu_marked && closed.windows[i].cpu.is_none() {
                continue;
            }
            let worst = closed.worst[i].map(|w| (w.latency, w.at_ns));
            match worst.filter(|w| explaining && w.0 >= c.spike) {
                Some(worst) => self.held.push(Held {
                    window: closed.windows[i].clone(),
                    worst,
                    due_ns: closed.windows[i].end_ns + HOLD.0 as i64,
                }),
                None => self.notify(&c.series, &closed.windows[i], worst, None),
            }
        }
        if let Ok(mut p) = self.page.lock() {
            p.add(&closed.windows, &closed.sums);
        }
        self.pending.extend(closed.windows);
        self.flush(c);
    }

    /// Sends one alert (syslog and the command).
    fn notify(
        &mut self,
        series: &str,
        w: &WatchWindow,
        worst: Option<(Nanos, i64)>,
        cause: Option<&str>,
    ) {
        let b = Breach {
            series,
            window: w,
            worst,
            cause,
        };
        if !self.notifier.notify(&b) {
            (self.warn)(&format!(
                "rtscope watch: {} (no syslog at /dev/log)",
                b.line()
            ));
        }
    }

    /// Sends the held alerts due by `now_ns` (all with `None`) without a cause.
    fn release(&mut self, series: &str, now_ns: Option<i64>) {
        let (due, kept): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| now_ns.is_none_or(|n| h.due_ns <= n));
        self.held = kept;
        for h in due {
            self.notify(series, &h.window, Some(h.worst), None);
        }
    }

    /// Adds explanations to their windows' rows and their causes to `/metrics`, and sends the
    /// alerts held for them with their largest cause; a window with none gets its reason.
    fn explained(&mut self, series: &str, answers: Vec<Answer>) {
        for a in answers {
            let f = match a {
                Answer::Found(f) => f,
                Answer::Missed(m) => {
                    self.missed(series, m);
                    continue;
                }
            };
            let first = f.causes.first();
            // The cause by the one rule (a culprit only with half of the wake-up).
            let cause = f.line.clone();
            let (mine, kept): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
                .into_iter()
                .partition(|h| h.is_for(f.start_ns, f.cpu, f.latency));
            self.held = kept;
            for h in mine {
                self.notify(series, &h.window, Some(h.worst), cause.as_deref());
            }
            let r = self.store.explain_window(
                self.series,
                f.start_ns,
                f.cpu,
                f.latency.0,
                &f.json,
                first.map(|c| Culprit {
                    name: &c.name,
                    ns: c.time.0,
                    pids: &c.pids,
                    line: f.line.as_deref(),
                }),
            );
            if let Err(e) = r {
                (self.warn)(&format!("rtscope watch: cannot store an explanation: {e}"));
            }
            if let Ok(mut p) = self.page.lock() {
                p.set_causes(&f.causes);
            }
        }
    }

    /// Stores why a window's worst wake-up has no explanation and sends the alerts held for
    /// it without a cause.
    fn missed(&mut self, series: &str, m: crate::asked::Missed) {
        let (mine, kept): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.is_for(m.start_ns, m.cpu, m.latency));
        self.held = kept;
        for h in mine {
            self.notify(series, &h.window, Some(h.worst), None);
        }
        let r = self.store.unexplained_window(
            self.series,
            m.start_ns,
            m.cpu,
            m.latency.0,
            m.why.name(),
        );
        if let Err(e) = r {
            (self.warn)(&format!(
                "rtscope watch: cannot store why a window is not explained: {e}"
            ));
        }
        if let Ok(mut p) = self.page.lock() {
            p.add_unexplained(m.why);
        }
    }

    /// Writes the pending windows, then applies the retention as of the newest window.
    fn flush(&mut self, c: &Config) {
        let Some(now) = self.pending.iter().map(|w| w.end_ns).max() else {
            return;
        };
        match self.store.add_windows(self.series, &self.pending) {
            Ok(()) => {
                self.windows += self.pending.len() as u64;
                self.pending.clear();
                if let Err(e) = c.retention.apply(&mut self.store, self.series, now) {
                    (self.warn)(&format!("rtscope watch: retention: {e}"));
                }
            }
            Err(e) => {
                (self.warn)(&format!(
                    "rtscope watch: cannot write {} window row(s) yet (held in memory, retried at the next window): {e}",
                    self.pending.len()
                ));
                self.last_error = Some(e.to_string());
                let over = self.pending.len().saturating_sub(MAX_PENDING);
                if over > 0 {
                    self.pending.drain(..over);
                    self.dropped += over as u64;
                    (self.warn)(&format!(
                        "rtscope watch: {over} window row(s) dropped, the oldest ({} lost so far): more than {MAX_PENDING} waited for the database",
                        self.dropped
                    ));
                }
            }
        }
        if let Some(path) = &c.textfile {
            let body = self
                .page
                .lock()
                .map(|p| p.render(Format::Text))
                .unwrap_or_default();
            if let Err(e) = rtscope_common::outfile::write(path, &mut io::sink(), |w| {
                w.write_all(body.as_bytes())
            }) {
                (self.warn)(&format!("rtscope watch: --textfile: {e}"));
            }
        }
    }
}

/// The observer that cuts windows.
struct Watcher<'a> {
    config: &'a Config,
    shared: &'a mut Shared,
    explainer: Option<WindowExplainer>,
    roller: Option<Roller>,
    /// Unix minus monotonic time, ns (taken at each tick).
    offset: i64,
}

fn snaps(run: &Run) -> Vec<Snap> {
    run.threads()
        .iter()
        .map(|t| {
            let s = t.stats();
            Snap {
                histogram: t.histogram(),
                missed: s.missed,
                dropped: t.ring().map_or(0, |r| r.dropped()),
                sum_ns: s.sum_ns,
            }
        })
        .collect()
}

/// The measuring thread pinned to `cpu`.
fn tid_on(run: &Run, cpu: u32) -> Option<i32> {
    run.threads()
        .iter()
        .find(|t| t.cpu() == Some(cpu as usize))
        .map(|t| t.tid())
}

impl Watcher<'_> {
    fn roller(&mut self, run: &Run, now: i64) -> &mut Roller {
        let c = self.config;
        self.roller.get_or_insert_with(|| {
            let cpus = run
                .threads()
                .iter()
                .map(|t| t.cpu().map(|c| c as u32))
                .collect();
            Roller::new(c.window, c.spike, cpus, now, snaps(run))
        })
    }

    /// Closes the open window at the end of the session (`tids`: each CPU's measuring
    /// thread) and waits for the last explanations.
    fn close(&mut self, run_snaps: Vec<Snap>, tids: &[(Option<usize>, i32)]) {
        if let Some(r) = self.roller.as_mut() {
            let closed = r.close(unix_now(), run_snaps);
            let answers = self.explainer.as_mut().map(|x| {
                x.close(&closed, |cpu| {
                    tids.iter().find(|t| t.0 == Some(cpu as usize)).map(|t| t.1)
                })
            });
            let explaining = self.explainer.is_some();
            self.shared.take(self.config, closed, explaining);
            self.shared
                .explained(&self.config.series, answers.unwrap_or_default());
        }
        if let Some(mut x) = self.explainer.take() {
            let answers = x.drain(FINISH_PATIENCE);
            self.shared.explained(&self.config.series, answers);
        }
        self.shared.release(&self.config.series, None);
    }
}

impl Observer for Watcher<'_> {
    fn on(&mut self, run: &Run, ev: Event) -> io::Result<()> {
        if ev != Event::Tick {
            return Ok(());
        }
        let now = unix_now();
        self.offset = now - mono_now();
        let offset = self.offset;
        self.roller(run, now);
        let Some(r) = self.roller.as_mut() else {
            return Ok(());
        };
        let mut answers = Vec::new();
        if let Some(x) = self.explainer.as_mut() {
            // The open window's worst so far, while the trace still holds it.
            let start = r.start_ns();
            for (cpu, worst) in r.running_worst() {
                if let Some((cpu, tid)) = cpu.and_then(|c| tid_on(run, c).map(|t| (c, t))) {
                    x.hand(cpu, tid, start, worst, &mut answers);
                }
            }
        }
        if r.due(now) {
            // The rings first, then the snapshot: every wake-up noted is in it.
            for (i, t) in run.threads().iter().enumerate() {
                if let Some(ring) = t.ring() {
                    ring.drain(|s| r.note(i, &s, offset));
                }
            }
            let closed = r.close(now, snaps(run));
            if let Some(x) = self.explainer.as_mut() {
                answers.extend(x.close(&closed, |cpu| tid_on(run, cpu)));
            }
            let explaining = self.explainer.is_some();
            self.shared.take(self.config, closed, explaining);
        }
        if let Some(x) = self.explainer.as_mut() {
            answers.extend(x.poll());
        }
        self.shared.explained(&self.config.series, answers);
        self.shared.release(&self.config.series, Some(now));
        self.shared.notifier.reap();
        Ok(())
    }

    fn samples(&mut self, thread: usize, samples: &[Sample]) -> io::Result<()> {
        if let Some(r) = self.roller.as_mut() {
            for s in samples {
                r.note(thread, s, self.offset);
            }
        }
        Ok(())
    }
}

/// Runs one session of the watch until a signal; returns the signal.
pub fn session(c: &Config, shared: &mut Shared) -> Result<Option<i32>, UsageError> {
    let online = sys::online_cpus();
    let plan = crate::start::plan(c, &online)?;
    let settings = SystemSettings::apply(&plan).map_err(UsageError::from_error)?;
    let spec = RecordSpec {
        kind: rtscope_store::RunKind::Measure,
        label: None,
        tags: Vec::new(),
        command_line: Vec::new(),
        config_json: serde_json::to_string(&ConfigDoc::of(&plan)).unwrap_or_default(),
        monitor_interval: None,
        checks: Vec::new(),
        raw: false,
    };
    let recorded = Recorded {
        store: None,
        spec,
        checkpoint_period: std::time::Duration::ZERO,
    };
    // Before the measuring threads: the explainer forks its reaper while the process is small.
    let explainer = c.explain.then(|| {
        let hk = plan
            .placement(&online)
            .cpus()
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        let pinned = plan.config.pinned_cpus();
        let cpus = if pinned.is_empty() {
            online.iter().collect()
        } else {
            pinned.iter().collect()
        };
        WindowExplainer::start(c.spike, cpus, hk, c.explain_recorder)
    });
    let mut session = Session::start(plan, settings, recorded).map_err(UsageError::from_error)?;
    (shared.warn)(&format!("rtscope watch: {}", session.placement_line()));
    if let Some(x) = &explainer {
        (shared.warn)(&format!("rtscope watch: {}", x.tier_line()));
    }
    let mut w = Watcher {
        config: c,
        shared,
        explainer,
        roller: None,
        offset: unix_now() - mono_now(),
    };
    let measured = session
        .drive(TICK, &mut w)
        .map_err(UsageError::from_error)?;
    // The threads have stopped: their final state closes the open window.
    let tids: Vec<(Option<usize>, i32)> = measured
        .result
        .threads
        .iter()
        .map(|t| (t.cpu, t.tid))
        .collect();
    let last: Vec<Snap> = measured
        .result
        .threads
        .iter()
        .map(|t| Snap {
            histogram: t.histogram.clone(),
            missed: t.stats.missed,
            dropped: 0,
            sum_ns: t.stats.sum_ns,
        })
        .collect();
    w.close(last, &tids);
    Ok(measured.signal)
}

/// How long the alert commands still running at the end of the watch have to end by
/// themselves (one started for the last window), before SIGTERM to their process groups.
pub const ALERT_FINISH: std::time::Duration = std::time::Duration::from_secs(1);
/// How long the alert commands' process groups have after SIGTERM, before SIGKILL.
pub const ALERT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Ends the alert commands still running (see [`Notifier::stop`]) and says so.
fn end_alerts(shared: &mut Shared) {
    let ended = shared.notifier.stop(ALERT_FINISH, ALERT_GRACE);
    if ended > 0 {
        (shared.warn)(&format!(
            "rtscope watch: {ended} alert command(s) still running at the stop ended with their process group (SIGTERM, SIGKILL after {} s)",
            ALERT_GRACE.as_secs()
        ));
    }
}

/// Runs the watch ([`crate::start::prepare`]d: checked, its series locked): sessions until SIGINT or
/// SIGTERM, re-reading the configuration on SIGHUP.
pub fn run(
    ready: crate::start::Ready,
    load: &dyn Fn() -> Result<Config, UsageError>,
    command_line: &[String],
    warn: fn(&str),
) -> Result<Stopped, UsageError> {
    rtscope_common::signals::hold_signals();
    let crate::start::Ready {
        config: mut c,
        lock: _lock,
        listener,
    } = ready;
    let mut shared = Shared::open(&c, listener, command_line, warn)?;
    let mut reloads = 0;
    loop {
        let signal = match session(&c, &mut shared) {
            Ok(s) => s,
            Err(e) => {
                end_alerts(&mut shared);
                return Err(e);
            }
        };
        if signal != Some(libc::SIGHUP) {
            end_alerts(&mut shared);
            let unwritten = shared.pending.len() as u64;
            return Ok(Stopped {
                signal,
                windows: shared.windows,
                reloads,
                lost: shared.dropped + unwritten,
                error: (shared.dropped + unwritten > 0)
                    .then(|| shared.last_error.clone())
                    .flatten(),
            });
        }
        reloads += 1;
        // A new configuration is checked as at the start (its paths and CPU lists too).
        let checked = load().and_then(|new| {
            if let Some(t) = &new.textfile {
                crate::start::check_textfile(t)?;
            }
            crate::start::plan(&new, &sys::online_cpus())?;
            Ok(new)
        });
        match checked {
            Ok(new) if new.db == c.db && new.series == c.series && new.listen == c.listen => {
                c = new;
                warn("rtscope watch: SIGHUP: configuration reloaded");
            }
            Ok(_) => warn("rtscope watch: SIGHUP: --db, --series and --listen change only with a restart; the old configuration stays"),
            Err(e) => warn(&format!("rtscope watch: SIGHUP: the new configuration is refused, the old one stays: {e}")),
        }
    }
}
