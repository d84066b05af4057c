//! `rtscope import`: rt-tests --json output (cyclictest's and oslat's, one envelope). Any bytes
//! must give Ok or Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtscope_import::ImportFormat;
use rtscope_import::parse_bytes;

fuzz_target!(|data: &[u8]| {
    let _ = parse_bytes(ImportFormat::CyclictestJson, data);
    let _ = parse_bytes(ImportFormat::Oslat, data);
});
