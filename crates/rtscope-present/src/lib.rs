//! What a run looks like to people and programs: `rtscope measure`'s table and limit lines
//! ([`table`]), its versioned JSON document ([`measure_json`], schema `rtscope.measure/1`),
//! `rtscope respond`'s ([`respond_json`], schema `rtscope.respond/1`) and the stored runs as
//! `rtscope runs` lists and shows them ([`runs`]). Nothing here measures, records or parses a
//! command line; the front ends in rtscope-cli call it.

#![warn(missing_docs)]

pub mod measure_json;
pub mod respond_json;
pub mod runs;
pub mod table;
