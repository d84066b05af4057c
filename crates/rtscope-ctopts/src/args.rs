//! cyclictest 2.x options: the table and the parsed, type-checked values.
//!
//! Values are parsed strictly (cyclictest uses `atoi`, so `-p9O` silently meant priority 9):
//! a bad value is a usage error naming the option.

use super::getopt::{scan, Arg, OptDef};
use rtscope_common::error::UsageError;
use rtscope_core::Nanos;
use std::path::PathBuf;

/// Whether the word after `-a` is its CPU list: cyclictest takes it when it starts with a digit
/// or `!`; `all` means what a bare `-a` means (every CPU), so it is taken too.
fn cpuish(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit() || c == '!') || s == "all"
}

fn numeric(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit())
}

macro_rules! opt {
    ($s:expr, $l:expr, $a:expr, $id:expr) => {
        OptDef {
            short: $s,
            long: $l,
            arg: $a,
            id: $id,
        }
    };
}

/// Every option cyclictest 2.40 knows, plus the legacy `-n`.
pub const TABLE: &[OptDef] = &[
    opt!(
        Some('a'),
        Some("affinity"),
        Arg::Optional(cpuish),
        "affinity"
    ),
    opt!(
        Some('A'),
        Some("aligned"),
        Arg::Optional(numeric),
        "aligned"
    ),
    opt!(Some('b'), Some("breaktrace"), Arg::Required, "breaktrace"),
    opt!(Some('c'), Some("clock"), Arg::Required, "clock"),
    opt!(None, Some("default-system"), Arg::None, "default-system"),
    opt!(Some('d'), Some("distance"), Arg::Required, "distance"),
    opt!(Some('D'), Some("duration"), Arg::Required, "duration"),
    opt!(Some('F'), Some("fifo"), Arg::Required, "fifo"),
    opt!(Some('h'), Some("histogram"), Arg::Required, "histogram"),
    opt!(Some('H'), Some("histofall"), Arg::Required, "histofall"),
    opt!(None, Some("histfile"), Arg::Required, "histfile"),
    opt!(None, Some("hist-sparse"), Arg::None, "hist-sparse"),
    opt!(Some('i'), Some("interval"), Arg::Required, "interval"),
    opt!(None, Some("json"), Arg::Required, "json"),
    opt!(None, Some("laptop"), Arg::None, "laptop"),
    opt!(None, Some("latency"), Arg::Required, "latency"),
    opt!(Some('l'), Some("loops"), Arg::Required, "loops"),
    opt!(None, Some("mainaffinity"), Arg::Required, "mainaffinity"),
    opt!(Some('m'), Some("mlockall"), Arg::None, "mlockall"),
    opt!(
        Some('M'),
        Some("refresh_on_max"),
        Arg::None,
        "refresh_on_max"
    ),
    opt!(Some('n'), Some("nanosleep"), Arg::None, "nanosleep"),
    opt!(Some('N'), Some("nsecs"), Arg::None, "nsecs"),
    opt!(Some('o'), Some("oscope"), Arg::Required, "oscope"),
    opt!(Some('p'), Some("priority"), Arg::Required, "priority"),
    opt!(None, Some("policy"), Arg::Required, "policy"),
    opt!(None, Some("priospread"), Arg::None, "priospread"),
    opt!(Some('q'), Some("quiet"), Arg::None, "quiet"),
    opt!(Some('r'), Some("relative"), Arg::None, "relative"),
    opt!(Some('R'), Some("resolution"), Arg::None, "resolution"),
    opt!(
        None,
        Some("secaligned"),
        Arg::Optional(numeric),
        "secaligned"
    ),
    opt!(Some('s'), Some("system"), Arg::None, "system"),
    opt!(Some('S'), Some("smp"), Arg::None, "smp"),
    opt!(None, Some("smi"), Arg::None, "smi"),
    opt!(None, Some("spike"), Arg::Required, "spike"),
    opt!(None, Some("spike-nodes"), Arg::Required, "spike-nodes"),
    opt!(
        Some('t'),
        Some("threads"),
        Arg::Optional(numeric),
        "threads"
    ),
    opt!(None, Some("tracemark"), Arg::None, "tracemark"),
    opt!(Some('u'), Some("unbuffered"), Arg::None, "unbuffered"),
    opt!(Some('v'), Some("verbose"), Arg::None, "verbose"),
    opt!(None, Some("dbg_cyclictest"), Arg::None, "dbg_cyclictest"),
    opt!(Some('x'), Some("posix_timers"), Arg::None, "posix_timers"),
    opt!(None, Some("db"), Arg::Required, "db"),
    opt!(None, Some("label"), Arg::Required, "label"),
    opt!(None, Some("raw"), Arg::None, "raw"),
    opt!(None, Some("tag"), Arg::Required, "tag"),
    opt!(None, Some("help"), Arg::None, "help"),
    opt!(None, Some("version"), Arg::None, "version"),
];

/// How many threads `-t` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// `-t` alone: one per available CPU.
    PerCpu,
    /// `-t N`.
    Count(usize),
}

/// Parsed cyclictest options (units as cyclictest: µs unless noted).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CtOptions {
    /// `-a` given; `Some(list)` when a CPU list was given.
    pub affinity: Option<Option<String>>,
    /// `-v` came before `-a CPUSET` (cyclictest then prints an extra "Using N cpus." first).
    pub early_using_line: bool,
    /// `-A [USEC]`.
    pub aligned: Option<u64>,
    /// `--secaligned [USEC]`.
    pub secaligned: Option<u64>,
    /// `-b USEC`.
    pub breaktrace: Option<u64>,
    /// `-c 0|1`.
    pub clock: u32,
    /// `-d USEC` as given (`None`: default 500).
    pub distance: Option<u64>,
    /// `-D TIME`.
    pub duration: Option<Nanos>,
    /// `-h`/`-H US`.
    pub histogram: Option<usize>,
    /// `-H`.
    pub histofall: bool,
    /// `--histfile PATH`.
    pub histfile: Option<PathBuf>,
    /// `--hist-sparse` (rtscope): the rt-tests 2.7+ histogram form.
    pub hist_sparse: bool,
    /// `-i USEC` (default 1000).
    pub interval: u64,
    /// `--json FILE`.
    pub json: Option<PathBuf>,
    /// `--latency US`.
    pub latency: Option<i32>,
    /// `--default-system`: leave `/dev/cpu_dma_latency` alone.
    pub default_system: bool,
    /// `--laptop`: leave `/dev/cpu_dma_latency` alone to save battery.
    pub laptop: bool,
    /// `-l N` (0: endless).
    pub loops: u64,
    /// `--mainaffinity CPUSET`.
    pub mainaffinity: Option<String>,
    /// `-m`.
    pub mlockall: bool,
    /// `-M`.
    pub refresh_on_max: bool,
    /// `-n` (legacy, ignored with a notice).
    pub legacy_nanosleep: bool,
    /// `-N`.
    pub nsecs: bool,
    /// `-o RED` (default 1).
    pub oscope: u64,
    /// `-p PRIO`.
    pub priority: Option<i32>,
    /// `--policy NAME`, normalised.
    pub policy: Option<String>,
    /// `--priospread`.
    pub priospread: bool,
    /// `-q`.
    pub quiet: bool,
    /// `-r`.
    pub relative: bool,
    /// `-S`.
    pub smp: bool,
    /// `--spike USEC`.
    pub spike: Option<u64>,
    /// `--spike-nodes N` (default 1024).
    pub spike_nodes: usize,
    /// `-t [N]`.
    pub threads: Option<Threads>,
    /// `--tracemark`.
    pub tracemark: bool,
    /// `-u`.
    pub unbuffered: bool,
    /// `-v`.
    pub verbose: bool,
    /// `--smi`: count System Management Interrupts per thread (needs `-a`).
    pub smi: bool,
    /// `--db PATH` (rtscope): record the run in this database.
    pub db: Option<PathBuf>,
    /// `--raw` (rtscope, with --db): keep every sample in the database.
    pub raw: bool,
    /// `--label NAME` (rtscope, with --db).
    pub label: Option<String>,
    /// `--tag KEY=VALUE` (rtscope, with --db; repeatable).
    pub tags: Vec<String>,
    /// `--help`.
    pub help: bool,
    /// `--version`.
    pub version: bool,
}

fn num<T: std::str::FromStr>(spelled: &str, value: &str, what: &str) -> Result<T, UsageError> {
    value.trim().parse().map_err(|_| {
        UsageError::new(format!(
            "invalid value '{value}' for '{spelled}': expected {what}"
        ))
    })
}

/// Parses a cyclictest argument list (without the program name).
pub fn parse(args: &[String]) -> Result<CtOptions, UsageError> {
    let hits = scan(TABLE, args).map_err(UsageError::from_error)?;
    let mut o = CtOptions {
        interval: 1000,
        oscope: 1,
        spike_nodes: 1024,
        ..CtOptions::default()
    };
    for h in hits {
        let v = h.value.as_deref().unwrap_or("");
        let sp = h.spelled.as_str();
        match h.id {
            "affinity" => {
                // cyclictest prints "Using N cpus." while parsing a CPU list after -v.
                o.early_using_line |= o.verbose && h.value.is_some();
                o.affinity = Some(h.value.clone());
            }
            "aligned" => {
                o.aligned = Some(if v.is_empty() {
                    0
                } else {
                    num(sp, v, "microseconds")?
                })
            }
            "secaligned" => {
                o.secaligned = Some(if v.is_empty() {
                    0
                } else {
                    num(sp, v, "microseconds")?
                })
            }
            "breaktrace" => o.breaktrace = Some(num(sp, v, "a latency in microseconds")?),
            "clock" => o.clock = num(sp, v, "0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)")?,
            "distance" => o.distance = Some(num(sp, v, "microseconds")?),
            "duration" => {
                o.duration = Some(
                    Nanos::parse_with_default_unit(v, "s")
                        .map_err(|e| UsageError::new(format!("invalid value for '{sp}': {e}")))?,
                )
            }
            "histogram" | "histofall" => {
                o.histogram = Some(num(sp, v, "the histogram size in microseconds")?);
                o.histofall |= h.id == "histofall";
            }
            "histfile" => o.histfile = Some(PathBuf::from(v)),
            "hist-sparse" => o.hist_sparse = true,
            "interval" => o.interval = num(sp, v, "microseconds")?,
            "json" => o.json = Some(PathBuf::from(v)),
            "latency" => {
                let us = num::<i32>(sp, v, "microseconds")?;
                if us < 0 {
                    return Err(UsageError::new(format!(
                        "invalid value '{us}' for '--latency': use 0..{} (microseconds for /dev/cpu_dma_latency)",
                        i32::MAX
                    )));
                }
                o.latency = Some(us);
            }
            "loops" => o.loops = num(sp, v, "a number of loops")?,
            "mainaffinity" => o.mainaffinity = Some(v.to_string()),
            "mlockall" => o.mlockall = true,
            "refresh_on_max" => o.refresh_on_max = true,
            "nanosleep" => o.legacy_nanosleep = true,
            "nsecs" => o.nsecs = true,
            "oscope" => o.oscope = num(sp, v, "a reduction factor >= 1")?,
            "priority" => o.priority = Some(num(sp, v, "a priority 0..99")?),
            "policy" => o.policy = Some(parse_policy(v)?),
            "priospread" => o.priospread = true,
            "quiet" => o.quiet = true,
            "relative" => o.relative = true,
            "smp" => o.smp = true,
            "smi" => o.smi = true,
            "spike" => o.spike = Some(num(sp, v, "a latency in microseconds")?),
            "spike-nodes" => o.spike_nodes = num(sp, v, "a number of spikes")?,
            "threads" => {
                o.threads = Some(if v.is_empty() {
                    Threads::PerCpu
                } else {
                    Threads::Count(num(sp, v, "a number of threads")?)
                })
            }
            "tracemark" => o.tracemark = true,
            "unbuffered" => o.unbuffered = true,
            "verbose" => o.verbose = true,
            "db" => o.db = Some(PathBuf::from(v)),
            "label" => o.label = Some(v.to_string()),
            "raw" => o.raw = true,
            "tag" => o.tags.push(v.to_string()),
            "help" => o.help = true,
            "version" => o.version = true,
            "default-system" => o.default_system = true,
            "laptop" => o.laptop = true,
            "dbg_cyclictest" => {}
            other => return Err(unsupported(other, sp)),
        }
    }
    Ok(o)
}

fn parse_policy(v: &str) -> Result<String, UsageError> {
    let l = v.to_ascii_lowercase();
    match l.as_str() {
        "other" | "normal" => Ok("other".into()),
        "batch" | "idle" | "fifo" | "rr" => Ok(l),
        _ => Err(UsageError::new(format!(
            "unknown policy '{v}' for '--policy': use one of other, normal, batch, idle, fifo, rr"
        ))),
    }
}

fn unsupported(id: &str, spelled: &str) -> UsageError {
    let why = match id {
        "fifo" => "the named-pipe status output is not implemented; use --json or SIGUSR1",
        "resolution" => "the clock-resolution check is not implemented",
        "system" | "posix_timers" => "rtscope measures with clock_nanosleep only, the mode every cyclictest user runs by default; drop the option",
        _ => "it is not supported",
    };
    UsageError::new(format!(
        "option '{spelled}' is not supported by rtscope: {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &str) -> Result<CtOptions, UsageError> {
        parse(&v.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn parses_the_osadl_recipe() {
        let o = p("-l100000000 -m -Sp90 -i200 -h400 -q").unwrap();
        assert_eq!(
            (
                o.loops,
                o.mlockall,
                o.smp,
                o.priority,
                o.interval,
                o.histogram,
                o.quiet
            ),
            (100_000_000, true, true, Some(90), 200, Some(400), true)
        );
    }

    #[test]
    fn parses_thread_and_affinity_forms() {
        assert_eq!(p("-t").unwrap().threads, Some(Threads::PerCpu));
        assert_eq!(p("-t16 -a").unwrap().threads, Some(Threads::Count(16)));
        assert_eq!(p("-t 4 -a 0-3").unwrap().affinity, Some(Some("0-3".into())));
        assert_eq!(p("-a0").unwrap().affinity, Some(Some("0".into())));
        assert_eq!(p("-a -q").unwrap().affinity, Some(None));
        assert_eq!(p("-a !1").unwrap().affinity, Some(Some("!1".into())));
    }

    #[test]
    fn parses_long_forms_and_durations() {
        let o = p("--json=out.json -D 2h --policy=RR --spike=100 --spike-nodes 10 --latency=0")
            .unwrap();
        assert!(
            p("--latency=-5").is_err(),
            "a negative latency is refused, not clamped"
        );
        assert_eq!(o.json, Some(PathBuf::from("out.json")));
        assert_eq!(o.duration, Some(Nanos::from_secs(7200)));
        assert_eq!(o.policy.as_deref(), Some("rr"));
        assert_eq!(
            (o.spike, o.spike_nodes, o.latency),
            (Some(100), 10, Some(0))
        );
        assert_eq!(p("-D 30").unwrap().duration, Some(Nanos::from_secs(30)));
        assert_eq!(p("-D10m").unwrap().duration, Some(Nanos::from_secs(600)));
    }

    #[test]
    fn rejects_bad_values_naming_the_option() {
        for (args, needle) in [
            ("-p abc", "'-p'"),
            ("-i", "'-i'"),
            ("--policy=fast", "--policy"),
            ("-D 1y", "'-D'"),
            ("-z", "-z"),
            ("-F /tmp/x", "'-F'"),
            ("-h -1", "'-h'"),
        ] {
            let e = p(args).unwrap_err().to_string();
            assert!(e.contains(needle), "{args}: {e}");
        }
    }
}
