//! Reading a campaign: the file (bounded, never a device or FIFO) or a preset's text.

use super::MAX_CAMPAIGN_FILE_BYTES;
use crate::{presets, CampaignOptions};
use rtscope_common::error::UsageError;
use std::path::Path;

/// Reads a campaign file: a regular file (a FIFO is not opened, `/dev/zero` not read) of at
/// most [`MAX_CAMPAIGN_FILE_BYTES`].
fn read_campaign_file(f: &Path) -> Result<String, UsageError> {
    use std::io::Read;
    let shown = rtscope_core::text::escape(&f.display().to_string()).into_owned();
    let cannot = |e: &dyn std::fmt::Display| {
        UsageError::new(format!("cannot read campaign file '{shown}': {e}"))
    };
    let m = std::fs::metadata(f).map_err(|e| cannot(&e).hint(missing_file_hint(f)))?;
    if !m.is_file() {
        return Err(cannot(&"not a regular file (a pipe, FIFO or device)")
            .hint("write the campaign to a file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(f)
        .and_then(|h| h.take(MAX_CAMPAIGN_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| cannot(&e))?;
    if bytes.len() as u64 > MAX_CAMPAIGN_FILE_BYTES {
        return Err(cannot(&format!(
            "larger than {} KiB, the most a campaign file may be",
            MAX_CAMPAIGN_FILE_BYTES >> 10
        )));
    }
    String::from_utf8(bytes).map_err(|e| cannot(&e))
}

/// (source, name for positions, text).
pub(super) fn read_source(a: &CampaignOptions) -> Result<(String, String, String), UsageError> {
    match (&a.preset, &a.file) {
        (Some(p), _) => {
            let text = presets::get(p).ok_or_else(|| {
                UsageError::new(format!("unknown preset '{p}'"))
                    .hint(format!("presets: {}", presets::NAMES.join(", ")))
            })?;
            Ok((p.clone(), format!("preset:{p}"), text.to_string()))
        }
        (None, Some(f)) => {
            let text = read_campaign_file(f)?;
            let shown = f.display().to_string();
            Ok((shown.clone(), shown, text))
        }
        (None, None) => Err(
            UsageError::new("rtscope run needs a campaign file or --preset").hint(format!(
                "e.g. rtscope run --preset quick, or rtscope run examples/quick.toml (presets: {})",
                presets::NAMES.join(", ")
            )),
        ),
    }
}

fn missing_file_hint(f: &Path) -> String {
    let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned());
    match stem.filter(|s| presets::NAMES.contains(&s.as_str())) {
        Some(s) => format!("the built-in copy runs with --preset {s}"),
        None => format!(
            "check the path; built-in campaigns run with --preset ({})",
            presets::NAMES.join(", ")
        ),
    }
}
