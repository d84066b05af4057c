//! System settings a run may change, each held by a guard that restores it when dropped.
//!
//! Which requests a run makes is the front end's choice: `rtscope measure` writes
//! `/dev/cpu_dma_latency` only with `--latency`, the cyclictest drop-in holds it at 0 unless
//! `--default-system` (as cyclictest does).

use crate::EngineError;
use std::io::Write;

/// The path of the PM QoS CPU latency request file.
pub const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// An open PM QoS request on `/dev/cpu_dma_latency`. The kernel holds the request only while the
/// file stays open, so dropping the guard — or the process dying in any way, even SIGKILL —
/// restores the previous state.
#[derive(Debug)]
pub struct DmaLatencyGuard {
    _file: std::fs::File,
    /// The requested maximum wake-up latency in µs.
    pub value_us: i32,
    /// The value before the request (µs), as read from the file.
    pub previous_us: Option<i32>,
}

impl DmaLatencyGuard {
    /// Requests a CPU wake-up latency of at most `value_us` µs for as long as the guard lives.
    pub fn set(value_us: i32) -> Result<Self, EngineError> {
        let err = |source| EngineError::Knob {
            path: CPU_DMA_LATENCY.to_string(),
            source,
        };
        let previous_us = read_current().ok();
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(CPU_DMA_LATENCY)
            .map_err(err)?;
        file.write_all(&value_us.to_ne_bytes()).map_err(err)?;
        Ok(DmaLatencyGuard {
            _file: file,
            value_us,
            previous_us,
        })
    }
}

/// Reads the current PM QoS value (µs).
pub fn read_current() -> std::io::Result<i32> {
    let bytes = std::fs::read(CPU_DMA_LATENCY)?;
    let arr: [u8; 4] = bytes
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or(std::io::ErrorKind::InvalidData)?;
    Ok(i32::from_ne_bytes(arr))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this process has a descriptor open on /dev/cpu_dma_latency.
    fn held() -> bool {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|t| t == std::path::Path::new(CPU_DMA_LATENCY))
            })
    }

    /// The request is held while the guard lives and released when it is dropped (run as root,
    /// like the engine's other tests).
    #[test]
    fn the_request_is_held_while_the_guard_lives_and_released_on_drop() {
        rtscope_testkit::require_root!("opens /dev/cpu_dma_latency");
        assert!(!held());
        let g = DmaLatencyGuard::set(0).expect("root can open /dev/cpu_dma_latency");
        assert_eq!(g.value_us, 0);
        assert!(held());
        // The system-wide value is the smallest request: ours.
        assert_eq!(read_current().unwrap(), 0);
        drop(g);
        assert!(!held());
    }
}
