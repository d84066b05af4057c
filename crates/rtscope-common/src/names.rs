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

/// Checks a board's name (a board of targets.toml, or the host of `--target
/// [user@]host[:port]`) as a label is checked ([`check_name`], at most [`MAX_NAME_BYTES`]):
/// it becomes the `board` tag of the board's runs and reaches the same terminals, tables, SVG
/// and HTML.
pub fn check_board_name(text: &str) -> Result<(), UsageError> {
    check_name(text, "board name", MAX_NAME_BYTES)
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

/// Of [`RESERVED_TAGS`], those that say where a run stands in a campaign — which campaign,
/// which repeat, how its `until_tail` check ended: no single run may claim them (a run tagged
/// `campaign=x` by hand would join campaign x in selectors). `scenario` and `case` say what a
/// run measured, and a single run may carry them: `compare`'s strata and load-case matrix read
/// them (docs/compare.md), so `measure`, `import` and the like accept them with `--tag`.
pub const CAMPAIGN_ONLY_TAGS: &[&str] = &["campaign", "repeat", "until_tail"];

/// Whether `key` is one of the tags campaigns set on their runs ([`RESERVED_TAGS`]).
pub fn is_reserved_tag(key: &str) -> bool {
    RESERVED_TAGS.contains(&key.trim())
}

/// [`parse_tag`], refusing a key of `refused` (named in the hint).
fn parse_tag_but(text: &str, refused: &[&str]) -> Result<(String, String), UsageError> {
    let (k, v) = parse_tag(text)?;
    if refused.contains(&k.as_str()) {
        return Err(UsageError::new(format!(
            "invalid value '{}' for '--tag': '{k}' is set by campaigns",
            rtscope_core::text::escape(text)
        ))
        .hint(format!("reserved tags: {}", refused.join(", "))));
    }
    Ok((k, v))
}

/// [`parse_tag`] for a tag a user sets on runs that are, or may be, a campaign's — `runs tag`,
/// `run --tag`, `runs merge --tag`: every tag a campaign sets ([`RESERVED_TAGS`]) is refused.
pub fn parse_user_tag(text: &str) -> Result<(String, String), UsageError> {
    parse_tag_but(text, RESERVED_TAGS)
}

/// [`parse_tag`] for `--tag` of a single run — `measure`, `noise`, `respond`, `cyclictest`,
/// `import`: the tags only a campaign may set ([`CAMPAIGN_ONLY_TAGS`]) are refused. The one
/// check of every such `--tag`.
pub fn parse_run_tag(text: &str) -> Result<(String, String), UsageError> {
    parse_tag_but(text, CAMPAIGN_ONLY_TAGS)
}

/// Checks `--label` and every `--tag` of a single run before anything is measured (a tag only
/// campaigns set is refused: [`parse_run_tag`]).
pub fn check_label_and_tags(label: Option<&str>, tags: &[String]) -> Result<(), UsageError> {
    if let Some(l) = label {
        check_name(l, "--label", MAX_NAME_BYTES)?;
    }
    for t in tags {
        parse_run_tag(t)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_run_may_carry_its_case_but_never_a_campaign_s_place() {
        for key in CAMPAIGN_ONLY_TAGS {
            let e = parse_run_tag(&format!("{key}=x")).unwrap_err();
            assert!(e.to_string().contains("is set by campaigns"), "{e}");
        }
        assert_eq!(
            parse_run_tag(" case = idle").unwrap(),
            ("case".into(), "idle".into())
        );
        assert!(parse_run_tag("scenario=1:1").is_ok());
        for key in RESERVED_TAGS {
            assert!(parse_user_tag(&format!("{key}=x")).is_err(), "{key}");
        }
        assert!(check_label_and_tags(None, &["campaign=x".into()]).is_err());
        assert!(check_label_and_tags(None, &["case=x".into()]).is_ok());
    }
}
