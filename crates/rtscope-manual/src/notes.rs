//! What clap does not know about each command: exit codes, environment, files, examples and
//! references. Keyed by the subcommand path (`""`, `"measure"`, `"runs show"`).

use rtscope_common::error::ExitStatus;

/// The hand-written parts of one page.
#[derive(Debug, Clone, Copy)]
pub struct Notes {
    /// What exit code 0 means.
    pub exit_0: &'static str,
    /// What exit code 1 means for this command; `None`: the command never exits 1.
    pub exit_1: Option<&'static str>,
    /// What exit code 3 means; `None`: the command is never interrupted mid-way.
    pub exit_3: Option<&'static str>,
    /// How the command uses `RTSCOPE_DB`.
    pub environment: &'static str,
    /// How the command uses `./rtscope.db`.
    pub files: &'static str,
    /// (command line, what it does).
    pub examples: &'static [(&'static str, &'static str)],
    /// Further references, e.g. `cyclictest(8)`.
    pub see_also: &'static [&'static str],
}

const DB_ENV: &str = "The run database when no --db option is given; without either, \
./rtscope.db in the current directory.";
const DB_ENV_UNUSED: &str = "The run database of the commands that record or read runs \
(this command does not open it).";
const DB_FILE: &str = "The run database (SQLite; one file, created on first use; schema in \
docs/store-schema.md). Chosen by --db PATH, else $RTSCOPE_DB, else this file.";
const DB_FILE_UNUSED: &str = "The run database of the commands that record or read runs; this \
command does not open it.";

const INTERRUPTED_RUN: &str = ExitStatus::Interrupted.meaning();
const LIMIT_EXCEEDED: &str = "A --limit was exceeded (per CPU or overall).";

/// The exit codes of a command, from the one list ([`ExitStatus::ALL`]): 0 and 2 always (2 in
/// the same words everywhere), 1 and 3 where the command has them, each in its own words.
pub fn exit_codes(n: &Notes) -> Vec<(ExitStatus, &'static str)> {
    ExitStatus::ALL
        .into_iter()
        .filter_map(|s| {
            let text = match s {
                ExitStatus::Success => Some(n.exit_0),
                ExitStatus::LimitExceeded => n.exit_1,
                ExitStatus::Usage => Some(s.meaning()),
                ExitStatus::Interrupted => n.exit_3,
            };
            text.map(|t| (s, t))
        })
        .collect()
}

const fn reader(examples: &'static [(&'static str, &'static str)]) -> Notes {
    Notes {
        exit_0: "Success.",
        exit_1: None,
        exit_3: None,
        environment: DB_ENV,
        files: DB_FILE,
        examples,
        see_also: &[],
    }
}

/// A command that measures and records a run (exits 1 on a limit, 3 when interrupted); `files`
/// says how it records.
const fn recorder(
    files: &'static str,
    examples: &'static [(&'static str, &'static str)],
    see_also: &'static [&'static str],
) -> Notes {
    Notes {
        exit_0: "Success.",
        exit_1: Some(LIMIT_EXCEEDED),
        exit_3: Some(INTERRUPTED_RUN),
        environment: DB_ENV,
        files,
        examples,
        see_also,
    }
}

/// Where `measure` and `respond` record their run.
const RECORDED: &str =
    "The run is recorded here unless --no-db or --db PATH is given (see RTSCOPE_DB).";

/// The notes of the command at `key` (space-separated subcommand path; `""` is rtscope).
pub fn for_command(key: &str) -> Notes {
    match key {
        "" => Notes {
            exit_0: "Success.",
            exit_1: Some(ExitStatus::LimitExceeded.meaning()),
            exit_3: Some(INTERRUPTED_RUN),
            environment: DB_ENV,
            files: DB_FILE,
            examples: &[
                ("rtscope measure -D 5m --limit max=100us", "Measure every CPU for five minutes; exit 1 if any wake-up is later than 100 us."),
                ("rtscope run --preset quick && rtscope report --last", "The quick campaign (idle, then under built-in load) and its report in ./rtscope-report/."),
                ("rtscope cyclictest -l100000 -m -Sp90 -i200 -h400 -q", "Exactly as cyclictest would run."),
                ("rtscope man measure | man -l -", "Read this manual's page of a subcommand on a board without the package."),
            ],
            see_also: &["cyclictest(8)", "chrt(1)", "taskset(1)"],
        },
        "measure" => recorder(
            RECORDED,
            &[
                ("rtscope measure", "All online CPUs, SCHED_FIFO 90, 1 ms interval, 60 s; one table per run."),
                ("rtscope measure -c 2-3 -i 200us -D 2h --json run.json", "CPUs 2 and 3 for two hours at 200 us, with a JSON result file."),
                ("rtscope measure -D 5m --limit max=100us --limit p99.99=50us", "A CI gate: exit 1 when a limit is exceeded."),
                ("rtscope measure -t 16 -c 0-3", "M:N: 16 threads spread over CPUs 0-3."),
                ("rtscope measure --policy deadline --dl-runtime 50us -i 1ms", "SCHED_DEADLINE threads."),
                ("rtscope measure -D 2h --label idle --tag kernel=rt --event-above 100us", "Label, tag and keep every sample above 100 us as an event."),
            ],
            &["rtscope-runs(1)", "rtscope-report(1)", "cyclictest(8)"],
        ),
        "cyclictest" => Notes {
            exit_0: "Success, also when SIGINT, SIGTERM or SIGHUP ended the run before its -l/-D length, and when the -b/--breaktrace threshold was exceeded (as cyclictest: everything measured so far is still printed; the break is in the trailer and the JSON). Gate with rtscope measure --limit.",
            // Like cyclictest: a fired -b exits 0 (issue 51).
            exit_1: None,
            // Like cyclictest: a run stopped by SIGINT, SIGTERM or SIGHUP exits 0 (harnesses
            // stop it with a signal and read the summary), so this page has no code 3.
            exit_3: None,
            environment: "Not read: rtscope cyclictest records a run only with --db=PATH (as cyclictest, it writes no database by default).",
            files: "Not written unless --db=PATH names a database (then with --label and --tag as rtscope measure).",
            examples: &[
                ("rtscope cyclictest -l100000000 -m -Sp90 -i200 -h400 -q", "The OSADL-style histogram run, same output as cyclictest."),
                ("rtscope cyclictest -t4 -a -p80 -i500 -D 10m --json=out.json", "Four pinned threads for ten minutes with cyclictest's JSON output."),
                ("ln -s \"$(command -v rtscope)\" /usr/local/bin/cyclictest", "Existing scripts that call cyclictest run rtscope unchanged."),
            ],
            see_also: &["rtscope-measure(1)", "cyclictest(8)"],
        },
        "runs" => reader(&[
            ("rtscope runs", "The runs, newest first: label, status, length, p99.99, max, missed, tags."),
            ("rtscope runs show last --json", "The newest run in full, for scripts."),
            ("rtscope runs tag 3 load=hackbench", "Tag run 3."),
        ]),
        "runs list" => reader(&[("rtscope runs list --db board.db", "The runs of another database.")]),
        "runs show" => reader(&[("rtscope runs show last", "Settings, per-thread statistics and the environment (kernel, PREEMPT_RT, command line, isolcpus …) of the newest run.")]),
        "runs tag" => reader(&[
            ("rtscope runs tag last kernel=rt board=rpi4", "Set two tags on the newest run."),
            ("rtscope runs tag 3 --remove board", "Remove a tag."),
        ]),
        "runs delete" => reader(&[("rtscope runs delete 3 4", "Delete runs 3 and 4 with their histograms, series, events and monitors.")]),
        "import" => reader(&[
            ("rtscope import hist-h400.txt cyclictest.json verbose.txt", "Old cyclictest results as runs (format detected)."),
            ("rtscope import jitterdebugger-out/ --tag board=imx8", "A jitterdebugger directory, tagged."),
            ("rtscope import --format stress-ng stress-ng.log", "A stress-ng --cyclic log."),
            ("rtscope import oslat.json", "oslat --json output, as a noise run."),
            ("rtscope import top.txt hist.txt", "rtla osnoise top and hist output, as noise runs."),
        ]),
        "export" => reader(&[
            ("rtscope export last -o out/ -f csv,json,parquet", "The newest run as CSV, JSON and Parquet files for pandas."),
        ]),
        "run" => Notes {
            exit_0: "Success.",
            exit_1: Some("A limit of the campaign was exceeded in some run."),
            exit_3: Some("Interrupted: the current run is saved as `interrupted`, the loads are stopped, and the --resume command is printed."),
            environment: DB_ENV,
            files: DB_FILE,
            examples: &[
                ("rtscope run --preset quick", "About a minute: every CPU idle, then under built-in messaging, memory and CPU load, with monitors."),
                ("rtscope run --preset quick --duration 10s", "The same in 20 seconds."),
                ("rtscope run examples/loadcases.toml --dry-run", "The run matrix, the total time and every load it would start."),
                ("rtscope run examples/loadcases.toml --resume", "After a Ctrl-C: only the runs not yet done."),
            ],
            see_also: &["rtscope-load(1)", "rtscope-report(1)", "rtscope-compare(1)"],
        },
        "load" => Notes {
            exit_0: "Success.",
            exit_1: Some("A load failed (e.g. the memory load found a miscompare, or an external program failed)."),
            exit_3: Some("Interrupted before the --for length."),
            environment: DB_ENV_UNUSED,
            files: DB_FILE_UNUSED,
            examples: &[
                ("rtscope load messaging --for 10m", "hackbench-like messaging for ten minutes while another tool measures."),
                ("rtscope load memory --for 30s --json", "Verified memory copies; the report as JSON."),
            ],
            see_also: &["rtscope-run(1)", "hackbench(8)", "stress-ng(1)"],
        },
        "compare" => Notes {
            exit_0: "Success.",
            exit_1: Some("A candidate group regressed against the first group (see --threshold); a rise on too few runs for the significance test (marked untested) fails only with --fail-untested."),
            exit_3: None,
            environment: DB_ENV,
            files: DB_FILE,
            examples: &[
                ("rtscope compare kernel=stock kernel=rt", "Two groups by tag, side by side."),
                ("rtscope compare campaign:baseline campaign:candidate --threshold 10% --matrix p99.99", "A CI gate between two campaigns, with the load-case matrix."),
            ],
            see_also: &["rtscope-report(1)", "rtscope-runs(1)"],
        },
        "tail" => Notes {
            exit_0: "Success: every thread was analysed (an estimate or a refusal; a refusal alone is not an error).",
            exit_1: Some("A --limit tail@LEVEL=LATENCY failed: the upper confidence bound of the level is above LATENCY or unbounded, or no estimate could be made (refused, not estimable, or P within the data), or the estimate is untested (--assume-stationary)."),
            exit_3: None,
            environment: DB_ENV,
            files: DB_FILE,
            examples: &[
                ("rtscope tail last", "The newest run: per CPU the latency exceeded with probability 1e-6 … 1e-12 per wake-up and once an hour, day, year and ten years, with 95 % intervals, the threshold-stability table and the diagnostics, or the refusal."),
                ("rtscope tail 12 --cpu 3 --probability 1e-9 --json", "One CPU, one probability, as JSON."),
                ("rtscope tail last --limit tail@1e-9/wakeup=200us", "A CI gate on the estimated tail: each wake-up exceeds 200 µs with probability 1e-9 at most (tail@1/day=… per time, tail@P/episode=… per episode)."),
            ],
            see_also: &["rtscope-measure(1)", "rtscope-runs(1)"],
        },
        "check" => Notes {
            exit_0: "Success.",
            exit_1: Some("At least one check is bad (a setting that will cost latency); warnings alone exit 0."),
            exit_3: None,
            environment: DB_ENV_UNUSED,
            files: DB_FILE_UNUSED,
            examples: &[
                ("rtscope check", "Audit this machine: kernel, CPUs, interrupts, power management, memory, platform."),
                ("rtscope check --cpus 2-3 --json", "The audit for CPUs 2 and 3, as JSON."),
            ],
            see_also: &["rtscope-measure(1)"],
        },
        "respond" => recorder(
            RECORDED,
            &[
                ("rtscope respond --ipc futex,pipe -D 30s", "Event response latency of two IPC mechanisms for 30 seconds."),
            ],
            &["rtscope-measure(1)", "pmqtest(8)", "ptsematest(8)", "sigwaittest(8)", "svsematest(8)"],
        ),
        "noise" => recorder(
            "The run is recorded here as a run of kind noise unless --no-db or --db PATH is given (see RTSCOPE_DB).",
            &[
                ("rtscope noise --cpus 1 -D 1m --limit max_single=20us", "OS noise on CPU 1 for a minute; exit 1 if any gap exceeds 20 us."),
            ],
            &["rtscope-measure(1)", "oslat(8)", "rtla-osnoise(1)"],
        ),
        "report" => reader(&[
            ("rtscope report", "The newest run, or its whole campaign, into ./rtscope-report/ (report.html, PNG and SVG plots, summary.csv)."),
            ("rtscope report --campaign loadcases -o out", "Every run of a campaign on shared plots."),
        ]),
        "completions" => Notes {
            exit_0: "Success.",
            examples: &[
                ("rtscope completions bash > /etc/bash_completion.d/rtscope", "Install the bash completion."),
                ("rtscope completions zsh > \"${fpath[1]}/_rtscope\"", "Install the zsh completion."),
                ("rtscope completions fish > ~/.config/fish/completions/rtscope.fish", "Install the fish completion."),
            ],
            environment: DB_ENV_UNUSED,
            files: DB_FILE_UNUSED,
            ..reader(&[])
        },
        "man" => Notes {
            exit_0: "Success.",
            examples: &[
                ("rtscope man measure | man -l -", "Read rtscope-measure(1) without installing the package."),
                ("rtscope man --dir /usr/local/share/man/man1", "Write every page."),
            ],
            environment: DB_ENV_UNUSED,
            files: DB_FILE_UNUSED,
            ..reader(&[])
        },
        _ => reader(&[]),
    }
}
