//! `rtscope import`: cyclictest -h/-H histogram text. Any bytes must give Ok or Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtscope_import::ImportFormat;
use rtscope_import::parse_bytes;

fuzz_target!(|data: &[u8]| {
    let _ = parse_bytes(ImportFormat::CyclictestHist, data);
});
