//! `--explain`: tracefs `format` and `header_page` texts. Any bytes must give Ok or Err.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtscope_trace::format::{EventFormat, PageLayout};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = EventFormat::parse(text);
        let _ = PageLayout::parse(text);
    }
});
