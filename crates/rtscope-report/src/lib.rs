//! rtscope-report: plots, tables and the HTML report.

#![warn(missing_docs)]
