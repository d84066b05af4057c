//! Reading a committed fixture (tests/fixtures/NAME): the events of its `pages.bin` decoded with
//! its `header_page` and `formats/*.format`, and how many pages failed to parse.

use rtscope_trace::decode::{decode_pages, Event, Schema};
use rtscope_trace::format::{EventFormat, PageLayout};
use std::path::{Path, PathBuf};

/// The fixture's directory.
pub fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The decoded events, the number of event types decoded and of bad pages.
pub fn events(name: &str) -> (Vec<Event>, usize, usize) {
    let d = dir(name);
    let layout =
        PageLayout::parse(&std::fs::read_to_string(d.join("header_page")).unwrap()).unwrap();
    let formats = std::fs::read_dir(d.join("formats"))
        .unwrap()
        .map(|e| EventFormat::parse(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap());
    let schema = Schema::new(formats);
    let pages = std::fs::read(d.join("pages.bin")).unwrap();
    let (events, _, bad) = decode_pages(&pages, 4096, &layout, &schema);
    (events, schema.len(), bad)
}
