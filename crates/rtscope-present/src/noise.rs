//! `rtscope noise`'s output: the per-CPU table and the line on the counter ([`table`]), the
//! progress line on a terminal ([`progress`]), the JSON document ([`json`], schema
//! `rtscope.noise/1`) and the hardware-only mode's table and document ([`hwnoise`], schema
//! `rtscope.hwnoise/1`). The limit lines are [`crate::table::render_checks`], as measure's.

pub mod hwnoise;
pub mod json;
pub mod progress;
pub mod table;

#[cfg(test)]
mod tests;
