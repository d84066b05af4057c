//! Per-CPU statistics rows, and `summary.csv` / `summary.md` made from them.

use crate::model::RunData;
use rtscope_core::{text, Histogram, Overflow, Percentile, PERCENTILES};
use rtscope_store::RunId;

/// Statistics of one CPU of one run, or of all its CPUs (`cpu == "all"`). Latencies in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// Run id.
    pub run: RunId,
    /// Run label (may be empty).
    pub label: String,
    /// Load case (may be empty).
    pub case: String,
    /// CPU number as text, `tN` for an unpinned thread, or `all`.
    pub cpu: String,
    /// Samples.
    pub samples: u64,
    /// Minimum, ns.
    pub min_ns: Option<u64>,
    /// Mean, ns.
    pub mean_ns: Option<f64>,
    /// p50, p90, p99, p99.9, p99.99, p99.999, p99.9999 (see [`PERCENTILES`]), ranked over all
    /// samples: those among an import's histogram overflows are lower bounds.
    pub percentiles: Vec<Percentile>,
    /// Maximum, ns.
    pub max_ns: Option<u64>,
    /// Time of the maximum from the run's start, ns.
    pub max_offset_ns: Option<u64>,
    /// Missed periods; `None` when the source did not say (an import).
    pub missed: Option<u64>,
}

/// A missed-periods count for a table: `—` when unknown (never 0).
pub fn missed_cell(m: Option<u64>) -> String {
    m.map_or_else(|| "—".into(), |n| n.to_string())
}

/// One row per CPU of each run, then that run's `all` row.
pub fn summary_rows(runs: &[RunData]) -> Vec<SummaryRow> {
    let mut out = Vec::new();
    for r in runs {
        let label = r.detail.summary.label.clone().unwrap_or_default();
        let case = r.case();
        let row = |cpu: String, h: &Histogram, over: Overflow| SummaryRow {
            run: r.id(),
            label: label.clone(),
            case: case.clone(),
            cpu,
            samples: h.count(),
            min_ns: h.min().map(|v| v.0),
            mean_ns: None,
            percentiles: h.percentiles_over_all(over),
            max_ns: h.max().map(|v| v.0),
            max_offset_ns: None,
            missed: None,
        };
        let threads = &r.detail.threads;
        for t in threads {
            // A respond run's thread is a mechanism: named, not numbered.
            let cpu = match r.role(t.thread) {
                Some(_) => r.cpu_name(t.thread),
                None => t.cpu.map_or(format!("t{}", t.thread), |c| c.to_string()),
            };
            let mut x = row(cpu, &t.histogram, r.detail.overflow(t));
            x.samples = t.figures.samples.max(x.samples);
            x.min_ns = t.figures.min_ns.or(x.min_ns);
            x.max_ns = t.figures.max_ns.or(x.max_ns);
            x.mean_ns = t.figures.mean_ns;
            x.max_offset_ns = t.figures.max_offset_ns;
            x.missed = r.missed_known().then_some(t.missed);
            out.push(x);
        }
        let s = &r.detail.summary;
        let mut all = row("all".into(), &s.histogram, r.detail.overflow_all());
        all.samples = s.samples.max(all.samples);
        all.max_ns = s.max_ns.or(all.max_ns);
        all.missed = r.missed();
        let weighted: f64 = threads
            .iter()
            .filter_map(|t| t.figures.mean_ns.map(|m| m * t.figures.samples as f64))
            .sum();
        all.mean_ns = (s.samples > 0 && threads.iter().any(|t| t.figures.mean_ns.is_some()))
            .then(|| weighted / s.samples as f64);
        let worst = threads
            .iter()
            .filter(|t| t.figures.max_ns == s.max_ns)
            .find_map(|t| t.figures.max_offset_ns);
        all.max_offset_ns = worst;
        out.push(all);
    }
    out
}

fn us3(v: Option<u64>) -> String {
    v.map_or(String::new(), |ns| format!("{:.3}", ns as f64 / 1000.0))
}

/// An untrusted text cell (rtscope-core's one CSV rule: control characters escaped, formulas
/// disarmed, quoted as needed).
fn csv_field(s: &str) -> String {
    rtscope_core::text::csv_text(s).into_owned()
}

/// `summary.csv`: one line per run × CPU plus each run's `all` line; latencies in µs with ns
/// precision.
pub fn csv(rows: &[SummaryRow]) -> String {
    let mut out = String::from("run,label,case,cpu,samples,min_us,mean_us");
    for (l, _) in PERCENTILES {
        out.push_str(&format!(",{l}_us"));
    }
    out.push_str(",max_us,max_at_s,missed,miss_ratio\n");
    for r in rows {
        let mean = r
            .mean_ns
            .map_or(String::new(), |m| format!("{:.3}", m / 1000.0));
        let mut cells = vec![
            r.run.to_string(),
            csv_field(&r.label),
            csv_field(&r.case),
            r.cpu.clone(),
            r.samples.to_string(),
            us3(r.min_ns),
            mean,
        ];
        cells.extend(r.percentiles.iter().map(|p| {
            let v = us3(p.value.map(|v| v.0));
            if p.lower_bound {
                format!(">={v}")
            } else {
                v
            }
        }));
        cells.push(us3(r.max_ns));
        cells.push(
            r.max_offset_ns
                .map_or(String::new(), |o| format!("{:.3}", o as f64 / 1e9)),
        );
        cells.push(r.missed.map_or(String::new(), |m| m.to_string()));
        cells.push(miss_ratio(r).map_or(String::new(), |x| format!("{x:.6}")));
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// The deadline-miss ratio of a row: missed / (samples + missed), 0 … 1.
pub fn miss_ratio(r: &SummaryRow) -> Option<f64> {
    let missed = r.missed?;
    let deadlines = r.samples.saturating_add(missed);
    (deadlines > 0).then(|| missed as f64 / deadlines as f64)
}

/// A Markdown table cell: `|` and backslashes escaped, HTML special characters as entities (Markdown
/// renderers pass inline HTML through), newlines as spaces.
fn md_cell(s: &str) -> String {
    let text = crate::escape::escape(s).replace('\\', "\\\\");
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A latency in µs with one decimal, or `-`.
pub fn us1(v: Option<u64>) -> String {
    v.map_or("-".into(), crate::us)
}

/// Percentile `i` of [`PERCENTILES`] of a row in µs, `≥` when a lower bound (its rank falls
/// among an import's histogram overflows), marked `*` when fewer than 10 samples lie beyond it
/// ([`Percentile::is_supported`]: it then rests on too few samples to mean much).
pub fn pct_cell(r: &SummaryRow, i: usize) -> String {
    let Some(p) = r.percentiles.get(i) else {
        return "-".into();
    };
    let v = text::percentile(p);
    if v != "-" && !p.is_supported() {
        format!("{v}*")
    } else {
        v
    }
}

/// The note explaining `*` in the tables.
pub const STAR_NOTE: &str =
    "* fewer than 10 samples lie beyond this percentile: measure longer for a meaningful value";

/// `summary.md`: the same rows as a Markdown table, latencies in µs.
pub fn markdown(rows: &[SummaryRow]) -> String {
    let mut head = vec!["run", "label", "case", "cpu", "samples", "min", "mean"];
    head.extend(PERCENTILES.iter().map(|(l, _)| *l));
    head.extend(["max", "missed", "miss %"]);
    let mut out = String::from("# rtscope report: latency per run and CPU (µs)\n\n");
    out.push_str(&format!("| {} |\n", head.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(head.len())));
    for r in rows {
        let mut cells = vec![
            r.run.to_string(),
            md_cell(&r.label),
            md_cell(&r.case),
            r.cpu.clone(),
            r.samples.to_string(),
            us1(r.min_ns),
            r.mean_ns
                .map_or("-".into(), |m| format!("{:.1}", m / 1000.0)),
        ];
        cells.extend((0..PERCENTILES.len()).map(|i| pct_cell(r, i)));
        cells.push(us1(r.max_ns));
        cells.push(missed_cell(r.missed));
        cells.push(miss_ratio(r).map_or("-".into(), |x| format!("{:.4}", x * 100.0)));
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push_str(&format!("\n{STAR_NOTE}\n"));
    out
}

/// The runs of one load case together. Latencies in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRow {
    /// Load case (or the run's name when it has none).
    pub case: String,
    /// Runs of this case.
    pub runs: usize,
    /// Samples over those runs.
    pub samples: u64,
    /// p99 of all their samples (a lower bound among import overflows).
    pub p99: Percentile,
    /// p99.99 of all their samples.
    pub p9999: Percentile,
    /// The largest latency of any of them.
    pub max_ns: Option<u64>,
    /// The run that had it.
    pub worst_run: RunId,
    /// Missed periods over those runs; `None` when one of them did not say (an import).
    pub missed: Option<u64>,
}

/// One row per load case, in order of first appearance: the table of maximum latency per load
/// case.
pub fn case_rows(runs: &[RunData]) -> Vec<CaseRow> {
    let names: Vec<String> = runs
        .iter()
        .map(|r| match r.case() {
            c if c.is_empty() => r.name(),
            c => c,
        })
        .collect();
    rows_named(runs, &names)
}

/// Whether any run was measured under a load case (a campaign's, or a `case` tag): else the
/// per-case table would list labels as cases, and [`group_rows`] is the table to show.
pub fn has_cases(runs: &[RunData]) -> bool {
    runs.iter().any(|r| !r.case().is_empty())
}

/// [`case_rows`] with one row per group of `g` (the grouping every plot uses), for runs
/// without load cases.
pub fn group_rows(runs: &[RunData], g: &crate::group::Grouping) -> Vec<CaseRow> {
    let mut names: Vec<String> = runs.iter().map(RunData::name).collect();
    for grp in &g.groups {
        for &i in &grp.runs {
            names[i] = grp.name.clone();
        }
    }
    rows_named(runs, &names)
}

/// One row per distinct name in `names` (the name of each run, in order).
fn rows_named(runs: &[RunData], names: &[String]) -> Vec<CaseRow> {
    let mut out: Vec<(CaseRow, Histogram, Overflow)> = Vec::new();
    for (r, case) in runs.iter().zip(names.iter().cloned()) {
        let s = &r.detail.summary;
        let i = match out.iter().position(|(c, _, _)| c.case == case) {
            Some(i) => i,
            None => {
                let row = CaseRow {
                    case,
                    runs: 0,
                    samples: 0,
                    p99: Histogram::new().percentile_over_all("p99", 0.99, Overflow::default()),
                    p9999: Histogram::new().percentile_over_all(
                        "p99.99",
                        0.9999,
                        Overflow::default(),
                    ),
                    max_ns: None,
                    worst_run: s.id,
                    missed: Some(0),
                };
                out.push((row, Histogram::new(), Overflow::default()));
                out.len() - 1
            }
        };
        let (row, h, over) = &mut out[i];
        row.runs += 1;
        row.samples += s.samples;
        row.missed = row.missed.zip(r.missed()).map(|(a, b)| a + b);
        if s.max_ns > row.max_ns {
            row.max_ns = s.max_ns;
            row.worst_run = s.id;
        }
        h.merge(&s.histogram);
        *over = over.merge(r.detail.overflow_all());
    }
    out.into_iter()
        .map(|(mut row, h, over)| {
            row.p99 = h.percentile_over_all("p99", 0.99, over);
            row.p9999 = h.percentile_over_all("p99.99", 0.9999, over);
            row
        })
        .collect()
}

/// The per-case table in Markdown (µs).
pub fn case_markdown(rows: &[CaseRow]) -> String {
    let mut out = String::from("| case | runs | samples | p99 | p99.99 | max | worst run | missed |\n|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            md_cell(&r.case),
            r.runs,
            r.samples,
            text::percentile(&r.p99),
            text::percentile(&r.p9999),
            us1(r.max_ns),
            r.worst_run,
            missed_cell(r.missed)
        ));
    }
    out
}
