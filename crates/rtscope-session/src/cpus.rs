//! Validation shared by the front ends: CPU lists and thread counts.

use rtscope_common::error::UsageError;
use rtscope_engine::CpuSet;

/// Parses a CPU list given to `flag` and checks every CPU is online.
pub fn cpu_list(text: &str, online: &CpuSet, flag: &str) -> Result<CpuSet, UsageError> {
    let set = CpuSet::parse(text, online)
        .map_err(|e| UsageError::new(format!("invalid value for '{flag}': {e}")))?;
    let bad = set.iter().find(|c| !online.contains(*c));
    match bad {
        Some(bad) => Err(UsageError::new(format!(
            "invalid value for '{flag}': CPU {bad} is not online (online CPUs: {online})"
        ))),
        None => Ok(set),
    }
}

/// The most measuring threads rtscope starts: the kernel's threads-max, capped at 4096.
pub fn max_threads() -> usize {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/threads-max")
        .ok()
        .and_then(|t| t.trim().parse::<usize>().ok())
        .unwrap_or(4096);
    kernel.min(4096)
}
