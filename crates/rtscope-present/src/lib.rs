//! What a run looks like to people and programs: `rtscope measure`'s table and limit lines
//! ([`table`]), its versioned JSON document ([`measure_json`], schema `rtscope.measure/1`),
//! `rtscope respond`'s ([`respond_json`], schema `rtscope.respond/1`), `rtscope tail`'s
//! ([`tail_json`], schema `rtscope.tail/1`), `rtscope compare`'s text report ([`compare_text`])
//! and document ([`compare_json`], schema `rtscope.compare/3`), `rtscope noise`'s table,
//! progress line and documents ([`noise`], schemas `rtscope.noise/1` and `rtscope.hwnoise/1`)
//! and the stored runs as `rtscope runs` lists and shows them ([`runs`]). Every versioned
//! document a command prints is defined here (or in rtscope-export), which
//! `tests/schemas.rs` checks. Nothing here measures, records or parses a
//! command line; the front ends in rtscope-cli call it.

#![warn(missing_docs)]

pub mod compare_json;
pub mod compare_text;
pub mod measure_json;
pub mod noise;
pub mod respond_json;
pub mod runs;
pub mod table;
pub mod tail_json;
