//! Names given on input — `--label`, `--tag KEY=VALUE`, campaign names — checked one way
//! everywhere: bounded in bytes, no control characters (escape sequences, newlines, NUL would
//! reach terminals, tables, SVG and HTML), and the tags campaigns set kept for campaigns.

use crate::error::UsageError;

/// The longest label, tag value or campaign name accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// The longest tag key accepted, in bytes.
pub const MAX_TAG_KEY_BYTES: usize = 64;

/// Tags a campaign sets on its runs; `runs tag` and `--tag` cannot set them.
pub const RESERVED_TAGS: &[&str] = &["campaign", "scenario", "case", "repeat", "until_tail"];

/// Tags that say how a run ended, not what it measured (a campaign's `until_tail` outcome):
/// reports and comparisons never group or match runs by them.
pub const OUTCOME_TAGS: &[&str] = &["until_tail"];

/// Checks a name given on input (`--label`, a tag, a campaign name): at most `max` bytes and
/// no control characters (escape sequences, newlines, NUL), which would reach terminals,
/// tables, SVG and HTML.
pub fn check_name(text: &str, what: &str, max: usize) -> Result<(), UsageError> {
    let shown = rtscope_core::text::escape(&rtscope_core::text::clip(text, 60)).into_owned();
    if text.len() > max {
        return Err(UsageError::new(format!(
            "invalid value '{shown}' for '{what}': {} bytes, at most {max}",
            text.len()
        )));
    }
    if text.chars().any(char::is_control) {
        return Err(UsageError::new(format!(
            "invalid value '{shown}' for '{what}': control characters are not allowed"
        )));
    }
    Ok(())
}

/// Parses `--tag key=value` (key at most [`MAX_TAG_KEY_BYTES`], value at most
/// [`MAX_NAME_BYTES`], no control characters).
pub fn parse_tag(text: &str) -> Result<(String, String), UsageError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => {
            let (k, v) = (k.trim(), v.trim());
            check_name(k, "--tag", MAX_TAG_KEY_BYTES)?;
            check_name(v, "--tag", MAX_NAME_BYTES)?;
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(UsageError::new(format!(
            "invalid value '{}' for '--tag': expected KEY=VALUE, e.g. --tag kernel=rt",
            rtscope_core::text::escape(&rtscope_core::text::clip(text, 60))
        ))),
    }
}

/// Whether `key` is one of the tags campaigns set on their runs ([`RESERVED_TAGS`]): no user
/// input may set it (a run tagged `campaign=x` by hand would join campaign x in selectors).
pub fn is_reserved_tag(key: &str) -> bool {
    RESERVED_TAGS.contains(&key.trim())
}

/// [`parse_tag`] for a tag a user sets — `--tag` of `measure`, `noise`, `respond`,
/// `cyclictest`, `import`, `run`, `runs merge`, and `runs tag`: the campaign's own tags
/// ([`RESERVED_TAGS`]) are refused. The one check of every user-given tag.
pub fn parse_user_tag(text: &str) -> Result<(String, String), UsageError> {
    let (k, v) = parse_tag(text)?;
    if is_reserved_tag(&k) {
        return Err(UsageError::new(format!(
            "invalid value '{}' for '--tag': '{k}' is set by campaigns",
            rtscope_core::text::escape(text)
        ))
        .hint(format!("reserved tags: {}", RESERVED_TAGS.join(", "))));
    }
    Ok((k, v))
}

/// Checks `--label` and every `--tag` before anything is measured (a reserved tag is refused:
/// [`parse_user_tag`]).
pub fn check_label_and_tags(label: Option<&str>, tags: &[String]) -> Result<(), UsageError> {
    if let Some(l) = label {
        check_name(l, "--label", MAX_NAME_BYTES)?;
    }
    for t in tags {
        parse_user_tag(t)?;
    }
    Ok(())
}
