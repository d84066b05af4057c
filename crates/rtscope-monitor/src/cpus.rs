//! Which CPUs are housekeeping CPUs (where the monitor thread belongs).

use crate::text::{numbered_entries, parse_cpulist, read_trimmed};
use std::path::Path;

/// The housekeeping CPUs under `root` ("/" in production): online CPUs
/// (`/sys/devices/system/cpu/online`) that are neither isolated (`isolcpus=`,
/// `/sys/devices/system/cpu/isolated`) nor adaptive-tick (`nohz_full=`,
/// `/sys/devices/system/cpu/nohz_full`), ascending.
///
/// When every online CPU is excluded, all online CPUs are returned (there is no housekeeping
/// CPU, so any will do). Missing or malformed lists count as empty (kernels print `(null)`
/// for an unset `nohz_full`). The result is empty only if no CPU can be found at all.
/// The caller pins its monitor thread to one of these; this crate does not change affinity.
pub fn housekeeping_cpus(root: &Path) -> Vec<u32> {
    let dir = root.join("sys/devices/system/cpu");
    let list = |name: &str| {
        read_trimmed(&dir.join(name))
            .and_then(|s| parse_cpulist(&s))
            .unwrap_or_default()
    };
    let mut online = list("online");
    if online.is_empty() {
        online = numbered_entries(&dir, "cpu")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
    }
    let isolated = list("isolated");
    let nohz_full = list("nohz_full");
    let hk: Vec<u32> = online
        .iter()
        .copied()
        .filter(|c| !isolated.contains(c) && !nohz_full.contains(c))
        .collect();
    if hk.is_empty() {
        online
    } else {
        hk
    }
}
