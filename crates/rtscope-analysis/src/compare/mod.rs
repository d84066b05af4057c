//! `rtscope compare`'s analysis: groups of recorded runs side by side, a load-case matrix, and
//! a verdict per statistic against the first group (the baseline). See docs/compare.md.
//!
//! * [`load`]: the groups read from the store (selectors and watch series' periods);
//! * [`model`]: statistics and groups of runs merged losslessly;
//! * [`verdict`]: thresholds and the verdict rule;
//! * [`significance`]: the Mann–Whitney U test on per-run values, stratified (van Elteren);
//! * [`strata`]: runs matched like with like (scenario, load case) before they are tested;
//! * [`tail`]: the groups' tail levels beyond the measured time (`--tail-level`), rtscope-evt's;
//! * [`analysis`]: the comparison as data; [`request`]: the whole command as one call (a typed
//!   request against a store gives the comparison, its notes and its exit status);
//! * [`differences`]: checked system settings and run settings that differ between groups;
//! * [`functions`]: kernel functions whose charged time changed between groups (kernel stacks);
//! * [`plot`]: the overlaid plots; [`ci`]: the verdicts as CI test cases, which rtscope-formats
//!   writes. The comparison's text report and its JSON document (`rtscope.compare/3`) are
//!   rtscope-present's (`compare_text`, `compare_json`).

pub mod analysis;
pub mod change;
pub mod ci;
pub mod differences;
pub mod functions;
pub mod group;
pub mod load;
pub mod model;
pub mod plot;
pub mod request;
pub mod significance;
pub mod strata;
pub mod tail;
pub mod verdict;
pub mod watch;
