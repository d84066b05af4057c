//! `rtscope import`: cyclictest's summary without a histogram (`-q` output, a live status,
//! `--spike` output). Any bytes must give Ok or Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtscope_import::ImportFormat;
use rtscope_import::parse_bytes;

fuzz_target!(|data: &[u8]| {
    let _ = parse_bytes(ImportFormat::CyclictestSummary, data);
});
