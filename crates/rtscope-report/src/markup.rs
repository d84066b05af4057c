//! The figures' HTML, shared by the page and its sections (latency, noise, the tail): below
//! the page (`html`) so that a section can draw its figures without reaching back up to the page.

use crate::escape::escape;
use crate::figures::{NamedFigure, Section};
use std::fmt::Write;

/// The figures of one section, in order.
pub(crate) fn figures(h: &mut String, figs: &[(&NamedFigure, &str)], section: Section) {
    for (f, svg) in figs.iter().filter(|(f, _)| f.section == section) {
        figure(h, f, svg);
    }
}

/// One figure with its caption and links to its files.
pub(crate) fn figure(h: &mut String, f: &NamedFigure, svg: &str) {
    let n = escape(&f.name);
    let _ = writeln!(
        h,
        "<figure id=\"fig-{n}\">{svg}<figcaption>{} <a href=\"{n}.png\">PNG</a> · <a href=\"{n}.svg\">SVG</a></figcaption></figure>",
        escape(&f.caption)
    );
}
