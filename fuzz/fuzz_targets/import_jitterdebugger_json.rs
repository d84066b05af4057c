//! `rtscope import`: jitterdebugger's results.json, alone and with a samples.raw (two threads,
//! from the test fixtures). Any bytes must give Ok or Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtscope_import::ImportFormat;
use rtscope_import::{parse_bytes, parse_jitterdebugger};

/// 100 records of both threads of the fixture's samples.raw (its records 0-49 and 537-586).
const RAW: &[u8] = include_bytes!("../corpus/import_jitterdebugger_raw/seed-two-threads.raw");

fuzz_target!(|data: &[u8]| {
    let _ = parse_bytes(ImportFormat::Jitterdebugger, data);
    let _ = parse_jitterdebugger(data, Some(RAW));
});
