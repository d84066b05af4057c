//! The live status screen (no `-q`) with its `ESC[<n>A` redraws.

use super::*;

/// A parsed live status stream.
#[derive(Clone, Debug)]
pub struct LiveStatus {
    pub preamble: bool,
    /// The `T:` lines of every frame.
    pub frames: Vec<Vec<TLine>>,
    /// Text after the last frame: empty, or a `# Histogram` block.
    pub rest: String,
}

/// Checks the live status stream (no `-q`): the preamble, then frames of
/// `policy: <p>: loadavg: <5 fields>` + 10 spaces, a blank line and one
/// `T:` line per thread, each frame but the last followed by
/// `ESC[<threads+2>A`. A `# Histogram` block may follow the last frame
/// (it is not checked here; see [`parse_live_status`]).
pub fn check_live_status(bytes: &[u8], threads: usize) -> Result<(), String> {
    parse_live_status(bytes, threads, false).map(|_| ())
}

/// Like [`check_live_status`] (with `nsecs` for `-N`), returning the frames.
pub fn parse_live_status(bytes: &[u8], threads: usize, nsecs: bool) -> Result<LiveStatus, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("live status is not UTF-8: {e}"))?;
    let first = text.split_inclusive('\n').next().unwrap_or("");
    let has_pre = is_preamble(first.trim_end_matches('\n')) && first.ends_with('\n');
    let body = if has_pre { &text[first.len()..] } else { text };
    let esc = format!("\x1b[{}A", threads + 2);
    let chunks: Vec<&str> = body.split(esc.as_str()).collect();
    let mut line_no = 1 + usize::from(has_pre);
    let mut frames: Vec<Vec<TLine>> = Vec::new();
    let mut rest = String::new();
    for (k, chunk) in chunks.iter().enumerate() {
        let last = k + 1 == chunks.len();
        let (frame, tail) = live_frame(chunk, threads, nsecs, line_no, last)
            .map_err(|e| format!("frame {k}: {e}"))?;
        if let Some(prev) = frames.last() {
            live_progress(prev, &frame)
                .map_err(|e| format!("frame {k} (starting line {line_no}): {e}"))?;
        }
        frames.push(frame);
        rest = tail.to_string();
        line_no += chunk.matches('\n').count();
    }
    Ok(LiveStatus {
        preamble: has_pre,
        frames,
        rest,
    })
}

/// One frame: policy line, blank line, `threads` `T:` lines. Returns the
/// frame and the remaining text (only allowed in the last chunk).
fn live_frame<'a>(
    chunk: &'a str,
    threads: usize,
    nsecs: bool,
    line_no: usize,
    last: bool,
) -> Result<(Vec<TLine>, &'a str), String> {
    let mut rest = chunk;
    let mut next = |no: usize| -> Result<&'a str, String> {
        let Some(end) = rest.find('\n') else {
            return Err(at(no, rest, "incomplete line (no newline) inside a frame"));
        };
        let line = &rest[..end];
        rest = &rest[end + 1..];
        if line.contains('\x1b') {
            return Err(at(
                no,
                line,
                "unexpected escape sequence (expected ESC[<threads+2>A between frames only)",
            ));
        }
        Ok(line)
    };
    let policy = next(line_no)?;
    let pol_re =
        r"^policy: [a-z]+(/[a-z]+)?: loadavg: \d+\.\d\d \d+\.\d\d \d+\.\d\d \d+/\d+ \d+ {10}$";
    if !re!(pol_re).is_match(policy) {
        return Err(at(
            line_no,
            policy,
            "expected `policy: fifo: loadavg: <loadavg>` + 10 spaces",
        ));
    }
    let blank = next(line_no + 1)?;
    if !blank.is_empty() {
        return Err(at(
            line_no + 1,
            blank,
            "expected a blank line after the policy line",
        ));
    }
    let mut frame = Vec::new();
    for t in 0..threads {
        let no = line_no + 2 + t;
        let line = next(no)?;
        let tl = parse_t_line(line, nsecs).map_err(|e| at(no, line, e))?;
        if tl.thread != t as i64 {
            return Err(at(no, line, format!("expected thread number {t}")));
        }
        frame.push(tl);
    }
    let histogram_follows = last && rest.starts_with("# Histogram\n");
    if !rest.is_empty() && !histogram_follows {
        let no = line_no + 2 + threads;
        let msg = format!(
            "expected ESC[{}A or the end after {threads} `T:` lines",
            threads + 2
        );
        return Err(at(no, rest.lines().next().unwrap_or(rest), msg));
    }
    Ok((frame, rest))
}

/// Between frames: C: never decreases, TID/P:/I: do not change once set.
fn live_progress(prev: &[TLine], cur: &[TLine]) -> Result<(), String> {
    for (p, c) in prev.iter().zip(cur) {
        if c.cycles < p.cycles {
            return Err(format!(
                "thread {}: C: went from {} to {}",
                c.thread, p.cycles, c.cycles
            ));
        }
        if p.tid != 0 && c.tid != p.tid {
            return Err(format!(
                "thread {}: TID changed from {} to {}",
                c.thread, p.tid, c.tid
            ));
        }
        if (p.prio, p.interval) != (c.prio, c.interval) {
            return Err(format!("thread {}: P:/I: changed between frames", c.thread));
        }
    }
    Ok(())
}
