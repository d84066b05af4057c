//! The noise loop the injection tests run (rtscope-engine's `noise_injected`,
//! rtscope-session's `noise_explain`): one second on one CPU at SCHED_FIFO 10, a 1 µs
//! threshold, 950 ms spun in every second, 64 Ki gaps a ring, no mlock.

use rtscope_core::Nanos;
use rtscope_engine::noise::{CounterChoice, NoiseConfig, Threshold};
use rtscope_engine::Policy;
use std::path::PathBuf;

/// One second of the noise loop on `cpu`, reading `counter` and the SMI counters `smi_files`.
pub fn one_second_on(cpu: usize, counter: CounterChoice, smi_files: Vec<PathBuf>) -> NoiseConfig {
    NoiseConfig {
        cpus: vec![cpu],
        policy: Policy::Fifo,
        priority: 10,
        threshold: Threshold::Given(Nanos::from_us(1)),
        preheat: Nanos::from_ms(10),
        runtime: Nanos::from_ms(950),
        period: Nanos::from_secs(1),
        duration: Nanos::from_secs(1),
        gap_capacity: 1 << 16,
        mlock: false,
        prefault_stack: 16 * 1024,
        counter,
        smi_files,
    }
}
