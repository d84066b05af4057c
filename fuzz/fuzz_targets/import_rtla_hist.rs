//! `rtscope import`: `rtla osnoise hist` text. Any bytes must give Ok or Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtscope_import::parse_bytes;
use rtscope_import::ImportFormat;

fuzz_target!(|data: &[u8]| {
    let _ = parse_bytes(ImportFormat::RtlaOsnoiseHist, data);
});
