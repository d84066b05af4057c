//! `--spike` lines after the `-q` summary.

use super::summary::{preamble, t_block, thread_count};
use super::*;

/// One `--spike` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spike {
    pub thread: i64,
    pub value: i64,
    pub ts: i64,
}

/// Default `--spike-nodes`: at most this many spike lines are printed.
pub const SPIKE_NODES: usize = 1024;

/// Checks `-q --spike=US` output: preamble, `T:` lines, then (if any spike
/// was seen) a blank line, `T:%2d Spike:%8ld: TS: %12ld` lines,
/// `spikes = N` and a blank line.
pub fn check_spikes(text: &str) -> Result<(), String> {
    parse_spikes(text, None).map(|_| ())
}

/// Like [`check_spikes`], also requiring every spike to exceed `trigger`.
pub fn check_spikes_above(text: &str, trigger: i64) -> Result<(), String> {
    parse_spikes(text, Some(trigger)).map(|_| ())
}

/// Parses spike output; returns the `T:` lines and the spikes.
pub fn parse_spikes(text: &str, trigger: Option<i64>) -> Result<(Vec<TLine>, Vec<Spike>), String> {
    let lines = lines_of(text)?;
    let i = preamble(&lines, 0, None)?;
    let (threads, mut i) = t_block(&lines, i, false, true)?;
    thread_count(&lines, i, threads.len(), None)?;
    if i == lines.len() {
        return Ok((threads, Vec::new()));
    }
    if !lines[i].is_empty() {
        return Err(at(
            i + 1,
            lines[i],
            "expected a blank line before the spike list",
        ));
    }
    i += 1;
    let mut spikes: Vec<Spike> = Vec::new();
    while i < lines.len() && lines[i].starts_with("T:") {
        let s = spike_line(lines[i], &threads, trigger).map_err(|e| at(i + 1, lines[i], e))?;
        if let Some(p) = spikes
            .iter()
            .rev()
            .find(|p| p.thread == s.thread)
            .filter(|p| p.ts > s.ts)
        {
            return Err(at(
                i + 1,
                lines[i],
                format!(
                    "TS goes backwards for thread {} (previous {})",
                    s.thread, p.ts
                ),
            ));
        }
        spikes.push(s);
        i += 1;
    }
    let line = lines.get(i).copied().unwrap_or("<end of output>");
    let Some(c) = re!(r"^spikes = (\d+)$").captures(line) else {
        return Err(at(
            i + 1,
            line,
            "expected `spikes = N` after the spike lines",
        ));
    };
    let total: usize = c[1].parse().map_err(|e| at(i + 1, line, e))?;
    let expect = total.min(SPIKE_NODES);
    if spikes.is_empty() || spikes.len() > total || (total <= SPIKE_NODES && spikes.len() != expect)
    {
        return Err(at(
            i + 1,
            line,
            format!("`spikes = {total}` but {} spike lines", spikes.len()),
        ));
    }
    if lines.get(i + 1) != Some(&"") || lines.len() != i + 2 {
        let l = lines.get(i + 1).copied().unwrap_or("<end of output>");
        return Err(at(
            i + 2,
            l,
            "expected one blank line ending the output after `spikes = N`",
        ));
    }
    Ok((threads, spikes))
}

fn spike_line(line: &str, threads: &[TLine], trigger: Option<i64>) -> Result<Spike, String> {
    let c = re!(r"^T:( *\d+) Spike:( *-?\d+): TS: ( *-?\d+)$")
        .captures(line)
        .ok_or("expected `T:%2d Spike:%8ld: TS: %12ld`")?;
    let thread = space_padded(&c[1], 2).map_err(|e| format!("thread {e}"))?;
    let value = space_padded(&c[2], 8).map_err(|e| format!("Spike: {e}"))?;
    let ts = space_padded(&c[3], 12).map_err(|e| format!("TS: {e}"))?;
    let t = threads
        .get(thread as usize)
        .ok_or(format!("no `T:` line for thread {thread}"))?;
    if value > t.max {
        return Err(format!("spike {value} exceeds the thread's Max {}", t.max));
    }
    if let Some(trig) = trigger.filter(|&trig| value <= trig) {
        return Err(format!("spike {value} is not above the trigger {trig}"));
    }
    Ok(Spike { thread, value, ts })
}
