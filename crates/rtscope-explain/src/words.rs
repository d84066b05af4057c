//! The words every text of an explanation is made of: durations for people, a category's
//! label and its task named by command, untrusted text escaped (task names come from the
//! traced system). A leaf: the renderers, the cause line and the parts of a spike build on it.

use crate::model::Category;

/// A duration for people: `812 ns`, `41.3 µs`, `2.38 ms`.
pub fn dur(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        _ => format!("{:.2} ms", ns as f64 / 1e6),
    }
}

/// A category label with control characters escaped.
pub fn label(c: &Category) -> String {
    escaped(&c.to_string())
}

/// A category's label with its task named by command only (`thread cc1` for `thread
/// cc1:4101:nice0`), escaped: the name of the threads of one command together. Other
/// categories' labels as [`label`].
pub fn command_label(c: &Category) -> String {
    let l = label(c);
    match c.named_task() {
        Some(t) => l.replacen(&escaped(&t.to_string()), &escaped(&t.comm), 1),
        None => l,
    }
}

/// `s` with control characters escaped (task names come from the traced system).
pub fn escaped(s: &str) -> String {
    s.chars()
        .flat_map(|ch| {
            if ch.is_control() {
                ch.escape_default().collect::<Vec<_>>()
            } else {
                vec![ch]
            }
        })
        .collect()
}
