//! `rtscope import`: jitterdebugger's samples.raw (28-byte records: u32 thread, i64 s, i64 ns,
//! u64 latency). The input is samples.raw, read with two results.json of two threads: one whose
//! counts exceed the records (statistics from results.json, series from the samples) and one
//! whose counts match them (lossless histogram, series and interval from the samples), the latter
//! in µs and in ns. Any bytes must give Ok or Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtscope_import::parse_jitterdebugger;

const RECORD: usize = 28;

/// A results.json of two threads with the given counts and an (almost) empty histogram.
fn results(counts: [u64; 2], unit: u64) -> String {
    let cpu: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(t, n)| {
            let hist = if *n > 0 { r#""20": 1"# } else { "" };
            format!(
                r#""{t}": {{"histogram": {{{hist}}}, "count": {n}, "min": 20, "max": 2000, "avg": 25.5}}"#
            )
        })
        .collect();
    format!(
        r#"{{"version": 3, "sysinfo": {{"resolution_in_ns": {unit}}}, "cpu": {{{}}}}}"#,
        cpu.join(", ")
    )
}

fuzz_target!(|data: &[u8]| {
    let mut counts = [0u64; 2];
    for rec in data.chunks_exact(RECORD) {
        let t = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]) as usize;
        if let Some(c) = counts.get_mut(t) {
            *c += 1;
        }
    }
    let more = results([counts[0] + 100_000, counts[1] + 100_000], 1000);
    let _ = parse_jitterdebugger(more.as_bytes(), Some(data));
    for unit in [1000, 1] {
        let _ = parse_jitterdebugger(results(counts, unit).as_bytes(), Some(data));
    }
});
