//! The built-in campaigns. Each is also shipped as `examples/NAME.toml`, and the preset is that
//! very file (embedded at build time), so `--preset quick` and `rtscope run
//! examples/quick.toml` plan the same runs.

/// The preset names, in the order they are listed.
pub const NAMES: &[&str] = &["quick", "scenarios", "loadcases", "osadl", "respond-ipc"];

/// The TOML text of preset `name`.
pub fn get(name: &str) -> Option<&'static str> {
    Some(match name {
        "quick" => include_str!("../../../examples/quick.toml"),
        "scenarios" => include_str!("../../../examples/scenarios.toml"),
        "loadcases" => include_str!("../../../examples/loadcases.toml"),
        "osadl" => include_str!("../../../examples/osadl.toml"),
        "respond-ipc" => include_str!("../../../examples/respond-ipc.toml"),
        _ => return None,
    })
}
