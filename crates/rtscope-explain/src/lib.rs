//! rtscope-explain: what an explanation of a late wake-up is, as data.
//!
//! - [`model`]: the categories time is charged to, a spike, its attribution, why a spike was
//!   not traced;
//! - [`book`]: the worst spikes per time window, culprit totals and the coverage ("traced X of
//!   Y spikes");
//! - [`cause`]: the one rule for naming a spike's cause in a line, with its share;
//! - [`culprits`]: the culprit table, bounded without folding a known cause into
//!   "unexplained";
//! - [`classes`]: noise time per class (thread, irq, …, unexplained);
//! - [`class_hist`]: per CPU and class, a histogram of each traced gap's time in it;
//! - [`coarse`]: the fallback tier fed by monitor samples;
//! - [`stack`]: where in the kernel: a spike's kernel stack folded, time by kernel function;
//! - [`folded`]: folded stacks for flame graphs (`flamegraph.pl`, inferno), by charged time;
//! - [`parts`]: a spike's or gap's time in parts that add up (its largest causes, the others,
//!   its unexplained rest) with shares that sum to 100 %;
//! - [`unexplained`]: why a spike or a watch window's worst wake-up was not explained, one
//!   vocabulary for JSON, text and report;
//! - [`render`]: their text.
//!
//! Pure data and rendering, no tracefs and no I/O: `rtscope-trace` fills these from a trace,
//! `rtscope-report` draws them, so a report or a comparison never links the tracer.

#![warn(missing_docs)]

pub mod book;
pub mod cause;
pub mod class_hist;
pub mod classes;
pub mod coarse;
pub mod culprits;
pub mod folded;
pub mod interference;
pub mod model;
pub mod parts;
pub mod render;
pub mod stack;
pub mod tally;
pub mod unexplained;
pub mod words;
