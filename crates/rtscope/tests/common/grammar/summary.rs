//! `T:` status lines and the `-q` summary with its `-b` trailer.

use super::*;

/// One `T:` status line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TLine {
    pub thread: i64,
    pub tid: i64,
    pub prio: i64,
    pub interval: i64,
    pub cycles: i64,
    pub min: i64,
    pub act: i64,
    pub avg: i64,
    pub max: i64,
}

/// Parses `T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld Max:%8ld`
/// (with `nsecs` (-N), Act and Avg are `%8ld`).
pub fn parse_t_line(line: &str, nsecs: bool) -> Result<TLine, String> {
    let caps = re!(
        r"^T:( *-?\d+) \(( *-?\d+)\) P:( *-?\d+) I:(-?\d+) C:( *\d+) Min:( *-?\d+) Act:( *-?\d+) Avg:( *-?\d+) Max:( *-?\d+)$"
    )
    .captures(line)
    .ok_or_else(|| {
        "not a `T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:.. Avg:.. Max:%8ld` line (single spaces between fields)"
            .to_string()
    })?;
    let aw = if nsecs { 8 } else { 5 };
    let spec = [
        ("T:", 2),
        ("(tid)", 5),
        ("P:", 2),
        ("I:", 1),
        ("C:", 7),
        ("Min:", 7),
        ("Act:", aw),
        ("Avg:", aw),
        ("Max:", 8),
    ];
    let mut v = [0i64; 9];
    for (i, (name, width)) in spec.iter().enumerate() {
        v[i] = space_padded(&caps[i + 1], *width).map_err(|e| format!("field {name} {e}"))?;
    }
    let [thread, tid, prio, interval, cycles, min, act, avg, max] = v;
    Ok(TLine {
        thread,
        tid,
        prio,
        interval,
        cycles,
        min,
        act,
        avg,
        max,
    })
}

/// Value sanity of a final `T:` line (not for live frames, which race).
pub fn check_t_values(t: &TLine) -> Result<(), String> {
    if t.cycles == 0 {
        if (t.min, t.act, t.avg, t.max) != (MIN_UNSET, 0, 0, 0) {
            return Err("a thread with C: 0 must show Min:1000000 Act:0 Avg:0 Max:0".into());
        }
        return Ok(());
    }
    if t.tid <= 0 {
        return Err(format!("thread with {} cycles has TID {}", t.cycles, t.tid));
    }
    if !(t.min <= t.avg && t.avg <= t.max) {
        return Err(format!(
            "expected Min <= Avg <= Max, got {} / {} / {}",
            t.min, t.avg, t.max
        ));
    }
    if !(t.min <= t.act && t.act <= t.max) {
        return Err(format!(
            "expected Min <= Act <= Max, got {} / {} / {}",
            t.min, t.act, t.max
        ));
    }
    Ok(())
}

/// Parses consecutive `T:` lines starting at `lines[i]`, numbered 0, 1, ...
/// Returns them and the index of the first other line.
pub(super) fn t_block(
    lines: &[&str],
    mut i: usize,
    nsecs: bool,
    values: bool,
) -> Result<(Vec<TLine>, usize), String> {
    let mut out: Vec<TLine> = Vec::new();
    while i < lines.len() && lines[i].starts_with("T:") && !lines[i].contains("Spike:") {
        let t = parse_t_line(lines[i], nsecs).map_err(|e| at(i + 1, lines[i], e))?;
        if t.thread != out.len() as i64 {
            return Err(at(
                i + 1,
                lines[i],
                format!("expected thread number {}", out.len()),
            ));
        }
        if values {
            check_t_values(&t).map_err(|e| at(i + 1, lines[i], e))?;
        }
        out.push(t);
        i += 1;
    }
    Ok((out, i))
}

// ---------------------------------------------------------------- summary

/// Options for [`check_summary`].
#[derive(Clone, Debug, Default)]
pub struct SummaryOpts {
    /// `-N`: values in ns, Act and Avg are `%8ld`.
    pub nsecs: bool,
    /// Expected number of `T:` lines; `None` accepts any number >= 1.
    pub threads: Option<usize>,
    /// `Some(true)`: the `# /dev/cpu_dma_latency` preamble is required;
    /// `Some(false)`: it must be absent (`--default-system`); `None`: optional.
    pub preamble: Option<bool>,
}

impl SummaryOpts {
    /// µs summary of `threads` threads with the preamble.
    pub fn us(threads: usize) -> Self {
        SummaryOpts {
            nsecs: false,
            threads: Some(threads),
            preamble: Some(true),
        }
    }
    /// `-N` summary of `threads` threads with the preamble.
    pub fn ns(threads: usize) -> Self {
        SummaryOpts {
            nsecs: true,
            threads: Some(threads),
            preamble: Some(true),
        }
    }
}

/// The `-b` trailer: `# Thread Ids: %05d...`, then, if the break fired,
/// `# Break thread: <tid>` and `# Break value: <value>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BreakTrailer {
    pub thread_ids: Option<Vec<u64>>,
    pub break_thread: Option<u64>,
    pub break_value: Option<u64>,
}

/// A parsed `-q` summary.
#[derive(Clone, Debug)]
pub struct Summary {
    pub preamble: bool,
    pub threads: Vec<TLine>,
    pub trailer: BreakTrailer,
}

/// Checks a `-q` summary (stdout): the optional preamble, one `T:` line per
/// thread with cyclictest's exact widths, and the optional `-b` trailer.
pub fn check_summary(text: &str, opts: &SummaryOpts) -> Result<(), String> {
    parse_summary(text, opts).map(|_| ())
}

/// Like [`check_summary`], returning the parsed values.
pub fn parse_summary(text: &str, opts: &SummaryOpts) -> Result<Summary, String> {
    let lines = lines_of(text)?;
    let mut i = preamble(&lines, 0, opts.preamble)?;
    let has_preamble = i == 1;
    let (threads, next) = t_block(&lines, i, opts.nsecs, true)?;
    i = next;
    thread_count(&lines, i, threads.len(), opts.threads)?;
    let tids: Vec<u64> = threads.iter().map(|t| t.tid.max(0) as u64).collect();
    let (trailer, next) = break_trailer(&lines, i, threads.len(), Some(&tids))?;
    if let (Some(tid), Some(value)) = (trailer.break_thread, trailer.break_value) {
        let t = threads
            .iter()
            .find(|t| t.tid as u64 == tid)
            .expect("checked by break_trailer");
        if value as i64 > t.max {
            let msg = format!(
                "break value {value} exceeds Max {} of the break thread {tid}",
                t.max
            );
            return Err(at(next, lines[next - 1], msg));
        }
    }
    if next < lines.len() {
        let msg =
            "unexpected line: a summary holds only the preamble, `T:` lines and the -b trailer";
        return Err(at(next + 1, lines[next], msg));
    }
    Ok(Summary {
        preamble: has_preamble,
        threads,
        trailer,
    })
}

/// Checks the preamble at `lines[i]`; returns the index after it.
pub(super) fn preamble(lines: &[&str], i: usize, want: Option<bool>) -> Result<usize, String> {
    let line = lines.get(i).copied().unwrap_or("");
    let has = is_preamble(line);
    match (want, has) {
        (Some(true), false) => Err(at(
            i + 1,
            line,
            "expected `# /dev/cpu_dma_latency set to 0us`",
        )),
        (Some(false), true) => Err(at(
            i + 1,
            line,
            "preamble present, expected none (--default-system)",
        )),
        _ => Ok(i + usize::from(has)),
    }
}

pub(super) fn thread_count(
    lines: &[&str],
    i: usize,
    got: usize,
    want: Option<usize>,
) -> Result<(), String> {
    let line = lines.get(i).copied().unwrap_or("<end of output>");
    if got == 0 {
        return Err(at(i + 1, line, "expected a `T:` line"));
    }
    match want {
        Some(n) if n != got => Err(at(
            i + 1,
            line,
            format!("expected {n} `T:` lines, found {got}"),
        )),
        _ => Ok(()),
    }
}

/// Parses the optional `-b` trailer at `lines[i]` for `n` threads; `tids`
/// are the TIDs the ids must match when known. Returns the index after it.
pub(super) fn break_trailer(
    lines: &[&str],
    mut i: usize,
    n: usize,
    tids: Option<&[u64]>,
) -> Result<(BreakTrailer, usize), String> {
    let mut tr = BreakTrailer::default();
    let Some(rest) = lines.get(i).and_then(|l| l.strip_prefix("# Thread Ids:")) else {
        return Ok((tr, i));
    };
    let ids = zero_padded_list(rest, 5).map_err(|e| at(i + 1, lines[i], e))?;
    if ids.len() != n {
        return Err(at(
            i + 1,
            lines[i],
            format!("expected {n} thread ids, found {}", ids.len()),
        ));
    }
    if let Some(t) = tids.filter(|t| *t != ids.as_slice()) {
        return Err(at(
            i + 1,
            lines[i],
            format!("thread ids differ from the TIDs of the `T:` lines {t:?}"),
        ));
    }
    tr.thread_ids = Some(ids.clone());
    i += 1;
    let Some(c) = lines
        .get(i)
        .and_then(|l| re!(r"^# Break thread: (\d+)$").captures(l))
    else {
        return Ok((tr, i));
    };
    let tid: u64 = c[1].parse().map_err(|e| at(i + 1, lines[i], e))?;
    if !ids.contains(&tid) {
        return Err(at(
            i + 1,
            lines[i],
            "break thread is not one of the thread ids",
        ));
    }
    i += 1;
    let line = lines.get(i).copied().unwrap_or("<end of output>");
    let Some(c) = re!(r"^# Break value: (\d+)$").captures(line) else {
        return Err(at(
            i + 1,
            line,
            "expected `# Break value: N` after `# Break thread:`",
        ));
    };
    tr.break_thread = Some(tid);
    tr.break_value = Some(c[1].parse().map_err(|e| at(i + 1, line, e))?);
    Ok((tr, i + 1))
}
