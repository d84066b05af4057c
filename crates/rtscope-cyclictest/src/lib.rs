//! `rtscope cyclictest`: the drop-in front end. Parses cyclictest 2.x options, runs the engine,
//! and prints cyclictest's formats. Where cyclictest misbehaves the format stays and the
//! behaviour is fixed (see docs/cyclictest-differences.md).

#![warn(missing_docs)]

use rtscope_ctopts::{args, help};
pub mod json;
pub mod lower;
pub mod pm_qos;
pub mod smi;
pub mod status_file;
pub mod text;

use args::CtOptions;
use lower::Plan;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_core::{Nanos, Stats};
use rtscope_engine::{Run, RunResult, Sample, ThreadShared};
use rtscope_session::output::{Guarded, OutputFile};
use rtscope_session::record::{self, RecordSpec};
use rtscope_session::sysinfo::{self, SysInfo};
use rtscope_session::RunError;
use rtscope_session::{plan::RunPlan, Event, Observer, Recorded, Session};
use std::io::Write;
use std::path::Path;
use std::time::Duration;
use text::TLine;

const DATE_FORMAT: &str = "%a, %d %b %Y %H:%M:%S %z";

/// Runs `rtscope cyclictest ARGS`. `cmdline` is the whole command line as typed (for JSON).
pub fn run(args: &[String], cmdline: &str, out: &mut dyn Write) -> Result<ExitStatus, RunError> {
    // Before any thread starts: a signal is taken by the control loop or by nobody.
    rtscope_common::signals::hold_signals();
    let o = args::parse(args)?;
    if o.help || o.version {
        return help_or_version(&o, out);
    }
    let ct = lower::lower(&o, &lower::online())?;
    rtscope_common::names::check_label_and_tags(o.label.as_deref(), &o.tags)?;
    // Opened before anything is set or started: the counts begin with the run.
    let smi = o
        .smi
        .then(|| {
            let online: Vec<usize> = lower::online().iter().collect();
            smi::Smi::open(Path::new("/"), &pinned(&ct.cpus), &online)
        })
        .transpose()?;
    preamble(&o, &ct, out)?;
    let dma = pm_qos::DmaRequest::of(&o);
    let mut plan = RunPlan::from_config(ct.config.clone(), dma.latency_us());
    // --mainaffinity names the CPUs of rtscope's own threads (rtscope-session's placement).
    plan.housekeeping_cpus = ct.main_affinity.clone();
    let json_file = OutputFile::prepare_given(o.json.as_deref(), "--json")?;
    // A closed stdout ends the run (as it ends cyclictest) but never loses it.
    let mut out = Guarded::new(out);
    let out = &mut out;
    if let Some(n) = dma.notice() {
        rtscope_common::error::warn(n);
    }
    let settings = pm_qos::apply(dma, &mut plan)?;
    if let Some(us) = settings.dma_latency_us() {
        writeln!(out, "# /dev/cpu_dma_latency set to {us}us")?;
    }
    // After the PM QoS request, before the threads, as cyclictest; removed on every return.
    let status_file = status_file();
    if o.verbose {
        verbose_threads(&ct, out)?;
    }
    out.flush()?;
    let recorded = recorded(&o, args, cmdline, &plan)?;
    let mut session = Session::start(plan, settings, recorded)?;
    let mut live = Live::new(&o, &ct, status_file.as_ref(), smi.as_ref());
    let tick = live.tick();
    let measured = session.drive(
        tick,
        &mut LiveOut {
            live: &mut live,
            out,
        },
    )?;
    let outcome = &measured;
    let smis = smi.as_ref().map(smi::Smi::final_counts);
    live.finish(&outcome.result, smis.as_deref(), out)?;
    // A reader that left (`cyclictest -v | head`) ends the run early: recorded as
    // interrupted, but the exit status stays the run's (0, or 1 for a break), as before.
    let interrupted = outcome.signal.is_some();
    let ended = Ended {
        r: &outcome.result,
        smis: smis.as_deref(),
        interrupted,
    };
    let (status, json) = finish(&o, &ct, &ended, cmdline, out)?;
    Ok(conclude(
        &mut session,
        &measured,
        status,
        json_file.zip(json),
        out,
    ))
}

/// What records the run: the database of `--db` (none without it), the command line and the
/// arguments as given.
/// How often a run recorded with `--db` samples the monitors (`measure`'s default).
const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

fn recorded(
    o: &CtOptions,
    args: &[String],
    cmdline: &str,
    plan: &RunPlan,
) -> Result<Recorded, RunError> {
    let store = o.db.as_deref().map(record::open).transpose()?;
    let spec = RecordSpec {
        kind: rtscope_store::RunKind::Cyclictest,
        label: o.label.clone(),
        tags: o.tags.clone(),
        command_line: cmdline.split(' ').map(String::from).collect(),
        config_json: serde_json::json!({
            "cyclictest_args": args,
            "cpu_dma_latency_us": plan.latency,
        })
        .to_string(),
        // With a database, the system monitors of `measure` (temperatures, frequencies,
        // interrupts, …, every second): the study's first figure is the temperature over the
        // run. Said on stderr, which cyclictest's own output does not use.
        monitor_interval: store.is_some().then_some(MONITOR_INTERVAL),
        checks: Vec::new(),
        raw: o.raw,
    };
    if store.is_some() {
        rtscope_common::error::warn(
            "rtscope: recording the system monitors every 1 s with the run (--db)",
        );
    }
    Ok(Recorded {
        store,
        spec,
        checkpoint_period: Duration::from_secs(1),
    })
}

/// The JSON file written (a failure makes the exit status 2), the record's end, the status.
/// A stdout that failed other than by a closed pipe (a full disk, `/dev/full`) lost the text
/// the user asked for: exit 2, said on stderr; a closed pipe keeps the run's status.
fn conclude(
    session: &mut Session,
    measured: &rtscope_session::Measured,
    mut status: ExitStatus,
    json: Option<(OutputFile, String)>,
    out: &mut Guarded<&mut dyn Write>,
) -> ExitStatus {
    if let Some((file, body)) = json {
        if let Err(e) = file.write(body.as_bytes(), out, "--json") {
            rtscope_common::error::warn(&format!("rtscope: {e}"));
            status = ExitStatus::Usage;
        }
    }
    let _ = out.flush();
    let status = out.verdict(status, "the results", " (the run is still recorded)");
    let rec = session.finish(measured, status.code());
    if let Some(line) = rec.line {
        rtscope_common::error::warn(&format!("rtscope: {line}"));
    }
    if rec.failed {
        ExitStatus::Usage
    } else {
        status
    }
}

fn help_or_version(o: &CtOptions, out: &mut dyn Write) -> Result<ExitStatus, RunError> {
    if o.help {
        out.write_all(help::USAGE.as_bytes())?;
    } else {
        let v = env!("CARGO_PKG_VERSION");
        writeln!(out, "rtscope {v} (cyclictest 2.40 compatible)")?;
    }
    Ok(ExitStatus::Success)
}

/// What cyclictest prints before the run: the lowering's notices (stderr), and with `-v` the
/// CPU counts.
fn preamble(o: &CtOptions, ct: &Plan, out: &mut dyn Write) -> std::io::Result<()> {
    for n in &ct.notices {
        let _ = writeln!(std::io::stderr(), "{n}");
    }
    if !o.verbose {
        return Ok(());
    }
    if o.early_using_line {
        if let Some(m) = &ct.affinity_mask {
            writeln!(out, "Using {} cpus.", m.len())?;
        }
    }
    let conf = rtscope_engine::sys::configured_cpus();
    let online = lower::online().len();
    write!(out, "Max CPUs = {conf}\nOnline CPUs = {online}\n")?;
    if let Some(m) = &ct.affinity_mask {
        writeln!(out, "Using {} cpus.", m.len())?;
    }
    Ok(())
}

/// `-v`: each thread's CPU (only with a CPU list, `-a LIST`, as cyclictest) and interval.
fn verbose_threads(ct: &Plan, out: &mut dyn Write) -> std::io::Result<()> {
    for (i, (cpu, iv)) in ct.cpus.iter().zip(&ct.verbose_intervals).enumerate() {
        if ct.affinity_mask.is_some() {
            writeln!(out, "Thread {i} using cpu {cpu}.")?;
        }
        writeln!(out, "Thread {i} Interval: {iv}")?;
    }
    Ok(())
}

/// The status file SIGUSR2 writes (`get_cyclictest_snapshot`); a warning when it cannot be
/// created.
fn status_file() -> Option<status_file::StatusFile> {
    status_file::StatusFile::create()
        .map_err(|e| {
            rtscope_common::error::warn(&format!(
                "rtscope: warning: no status file for SIGUSR2 (get_cyclictest_snapshot): cannot create {}/cyclictest{}: {e}",
                status_file::SHM_DIR,
                std::process::id()
            ))
        })
        .ok()
}

fn t_line(plan: &Plan, index: usize, tid: i32, s: &Stats, last: Nanos, avg: f64) -> TLine {
    TLine {
        index,
        tid,
        prio: plan.prios[index],
        interval_us: plan.config.threads[index].interval.as_us_trunc(),
        cycles: s.count,
        min: (s.count > 0).then_some(s.min),
        act: last,
        avg,
        max: s.max,
        smi: None,
    }
}

/// The threads' CPUs for `--smi` (which requires every thread pinned).
fn pinned(cpus: &[i32]) -> Vec<usize> {
    cpus.iter()
        .map(|&c| usize::try_from(c).unwrap_or(0))
        .collect()
}

/// Each line with its thread's SMI count (`--smi`).
fn with_smi(mut lines: Vec<TLine>, smis: Option<&[u64]>) -> Vec<TLine> {
    if let Some(smis) = smis {
        for (l, n) in lines.iter_mut().zip(smis) {
            l.smi = Some(*n);
        }
    }
    lines
}

fn t_lines(
    plan: &Plan,
    threads: &[std::sync::Arc<ThreadShared>],
    smi: Option<&smi::Smi>,
) -> Vec<TLine> {
    let live = threads.iter().enumerate();
    let lines = live
        .map(|(i, t)| {
            let s = t.stats();
            let avg = s.mean_ns().unwrap_or(0.0) / plan.unit.0 as f64;
            t_line(plan, i, t.tid(), &s, t.last(), avg)
        })
        .collect();
    with_smi(lines, smi.map(smi::Smi::live_counts).as_deref())
}

fn result_t_lines(plan: &Plan, r: &RunResult, smis: Option<&[u64]>) -> Vec<TLine> {
    let done = r.threads.iter();
    let lines = done
        .map(|t| {
            let avg = t.histogram.mean_truncated(plan.unit).unwrap_or(0.0);
            t_line(plan, t.index, t.tid, &t.stats, t.last, avg)
        })
        .collect();
    with_smi(lines, smis)
}

/// What the run left for the final output.
struct Ended<'a> {
    r: &'a RunResult,
    /// Each thread's SMIs over the run (`--smi`).
    smis: Option<&'a [u64]>,
    /// Stopped by a signal.
    interrupted: bool,
}

/// [`Live`] writing to the front end's output, as the session's observer.
struct LiveOut<'a, 'p, W: Write> {
    live: &'a mut Live<'p>,
    out: &'a mut Guarded<W>,
}

impl<W: Write> LiveOut<'_, '_, W> {
    /// A reader that left (`cyclictest -v | head`) ends the run.
    fn reader_gone(&self) -> std::io::Result<()> {
        match self.out.error() {
            Some(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
            None => Ok(()),
        }
    }
}

impl<W: Write> Observer for LiveOut<'_, '_, W> {
    fn on(&mut self, run: &Run, ev: Event) -> std::io::Result<()> {
        self.live.update(run, ev, self.out)?;
        self.reader_gone()
    }

    fn samples(&mut self, thread: usize, samples: &[Sample]) -> std::io::Result<()> {
        self.live.verbose(thread, samples, self.out)?;
        self.reader_gone()
    }
}

/// The live part: status redraws or `-v` sample lines, while the run goes on.
struct Live<'p> {
    plan: &'p Plan,
    status_file: Option<&'p status_file::StatusFile>,
    smi: Option<&'p smi::Smi>,
    verbose: bool,
    quiet: bool,
    unbuffered: bool,
    refresh_on_max: bool,
    oscope: u64,
    drawn: bool,
    last_max: Vec<Nanos>,
    reduce: Vec<(u64, u64, u64)>,
}

impl<'p> Live<'p> {
    fn new(
        o: &CtOptions,
        plan: &'p Plan,
        status_file: Option<&'p status_file::StatusFile>,
        smi: Option<&'p smi::Smi>,
    ) -> Self {
        let n = plan.config.threads.len();
        Live {
            plan,
            status_file,
            smi,
            verbose: o.verbose,
            quiet: o.quiet,
            unbuffered: o.unbuffered,
            refresh_on_max: o.refresh_on_max,
            oscope: o.oscope,
            drawn: false,
            last_max: vec![Nanos::ZERO; n],
            reduce: vec![(0, 0, 0); n],
        }
    }

    fn tick(&self) -> Nanos {
        if self.verbose {
            Nanos::from_ms(10)
        } else if self.quiet {
            Nanos::from_secs(1)
        } else {
            Nanos::from_ms(100)
        }
    }

    fn update(&mut self, run: &Run, ev: Event, out: &mut dyn Write) -> std::io::Result<()> {
        match ev {
            Event::User1 => {
                let lines = t_lines(self.plan, run.threads(), self.smi);
                let s = text::current_status(&lines, self.plan.unit);
                std::io::stderr().write_all(s.as_bytes())
            }
            Event::User2 => {
                if let Some(f) = self.status_file {
                    let lines = t_lines(self.plan, run.threads(), self.smi);
                    let s = text::current_status(&lines, self.plan.unit);
                    if let Err(e) = f.write(&s) {
                        rtscope_common::error::warn(&format!(
                            "rtscope: warning: cannot write the status to {}: {e}",
                            f.path().display()
                        ));
                    }
                }
                Ok(())
            }
            Event::Tick if self.verbose => {
                if self.unbuffered {
                    out.flush()?;
                }
                Ok(())
            }
            Event::Tick if self.quiet => Ok(()),
            Event::Tick => {
                let lines = t_lines(self.plan, run.threads(), self.smi);
                let new_max: Vec<Nanos> = lines.iter().map(|l| l.max).collect();
                if self.refresh_on_max && self.drawn && new_max == self.last_max {
                    return Ok(());
                }
                self.last_max = new_max;
                self.draw(&lines, out)
            }
        }
    }

    fn draw(&mut self, lines: &[TLine], out: &mut dyn Write) -> std::io::Result<()> {
        let mut s = String::new();
        if self.drawn {
            s.push_str(&format!("\x1b[{}A", lines.len() + 2));
        }
        s.push_str(&text::status_block(
            &self.plan.policy_label,
            &sysinfo::loadavg(),
            lines,
            self.plan.unit,
        ));
        self.drawn = true;
        out.write_all(s.as_bytes())?;
        out.flush()
    }

    /// `-v` lines for thread `i`'s new samples (reduced by `-o` when given).
    fn verbose(
        &mut self,
        i: usize,
        samples: &[Sample],
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if !self.verbose {
            return Ok(());
        }
        let mut s = String::new();
        let (unit, red) = (self.plan.unit, self.oscope);
        let acc = &mut self.reduce[i];
        for sample in samples {
            let v = sample.latency.0 / unit.0;
            if v > acc.1 || acc.2 == 0 {
                *acc = (sample.cycle, v, acc.2);
            }
            acc.2 += 1;
            if acc.2 == red {
                text::verbose_line(&mut s, i, acc.0, acc.1);
                *acc = (0, 0, 0);
            }
        }
        out.write_all(s.as_bytes())
    }

    fn finish(
        &mut self,
        r: &RunResult,
        smis: Option<&[u64]>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if !self.verbose && !self.quiet {
            let lines = result_t_lines(self.plan, r, smis);
            self.draw(&lines, out)?;
        }
        let dropped: u64 = r.threads.iter().map(|t| t.samples_dropped).sum();
        if dropped > 0 {
            {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "rtscope: warning: {dropped} samples were not printed with -v because stdout was too slow (they are in all statistics)");
            };
        }
        Ok(())
    }
}

fn finish(
    o: &CtOptions,
    plan: &Plan,
    ended: &Ended,
    cmdline: &str,
    out: &mut dyn Write,
) -> Result<(ExitStatus, Option<String>), RunError> {
    let (r, interrupted) = (ended.r, ended.interrupted);
    // Like cyclictest, a run stopped by SIGINT/SIGTERM exits 0 whatever -l/-D say (harnesses
    // stop it that way); the interruption is in the JSON's `rtscope` object and the store.
    // And like cyclictest, a fired `-b` exits 0 too (issue 51: a CI harness that runs `-b`
    // failed on rtscope's 1): the break is the `# Break` trailer and JSON's `rtscope.break`;
    // rtscope's gate is `measure --limit`.
    let status = ExitStatus::Success;
    let unit = plan.unit;
    let break_fired = r
        .break_fired
        .map(|b| (r.threads[b.thread].tid, b.latency.0 / unit.0));
    let mut json_body = None;
    if o.json.is_some() {
        let doc = json::JsonDoc {
            cmdline,
            start_time: &sysinfo::strftime_local(r.started, DATE_FORMAT),
            end_time: &sysinfo::strftime_local(r.ended, DATE_FORMAT),
            return_code: status.code(),
            sysinfo: &SysInfo::read(),
            threads: &r.threads,
            cpus: &plan.cpus,
            unit,
            histogram: o.histogram.is_some(),
            break_fired,
            interrupted,
        };
        json_body = Some(json::render(&doc));
    }
    if o.quiet && o.histogram.is_none() {
        let mut s = String::new();
        for t in result_t_lines(plan, r, ended.smis) {
            s.push_str(&text::t_line(&t, unit));
            s.push('\n');
        }
        out.write_all(s.as_bytes())?;
    }
    if o.spike.is_some() {
        out.write_all(spike_text(r, unit).as_bytes())?;
    }
    if o.histogram.is_some() {
        write_histogram(o, r, unit, ended.smis, out)?;
    }
    if o.breaktrace.is_some_and(|b| b > 0) {
        let tids: Vec<i32> = r.threads.iter().map(|t| t.tid).collect();
        out.write_all(text::break_trailer(&tids, break_fired).as_bytes())?;
    }
    out.flush()?;
    Ok((status, json_body))
}

fn spike_text(r: &RunResult, unit: Nanos) -> String {
    let mut all: Vec<(usize, rtscope_engine::Sample)> = r
        .threads
        .iter()
        .flat_map(|t| t.events.iter().map(move |e| (t.index, *e)))
        .collect();
    all.sort_by_key(|(_, e)| e.time);
    let total: u64 = r
        .threads
        .iter()
        .map(|t| t.events.len() as u64 + t.events_dropped)
        .sum();
    text::spikes(&all, total, unit)
}

fn write_histogram(
    o: &CtOptions,
    r: &RunResult,
    unit: Nanos,
    smis: Option<&[u64]>,
    out: &mut dyn Write,
) -> Result<(), RunError> {
    let threads: Vec<text::HistThread> = r
        .threads
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            t.linear.as_ref().map(|linear| text::HistThread {
                linear,
                min: (t.stats.count > 0).then_some(t.stats.min),
                avg: t.histogram.mean_truncated(unit).unwrap_or(0.0),
                cycles: t.stats.count,
                max: t.stats.max,
                smi: smis.and_then(|s| s.get(i).copied()),
            })
        })
        .collect();
    let block = text::histogram_block(&threads, unit, o.histofall, o.hist_sparse);
    match &o.histfile {
        Some(path) => std::fs::write(path, block).map_err(|e| {
            UsageError::new(format!(
                "cannot write the histogram file '{}' (--histfile): {e}",
                path.display()
            ))
        })?,
        None => out.write_all(block.as_bytes())?,
    }
    Ok(())
}
