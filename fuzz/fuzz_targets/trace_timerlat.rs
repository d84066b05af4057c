//! `--explain`'s timerlat tier: one `trace_pipe_raw` page, decoded with the event formats
//! captured on Debian's 6.1 PREEMPT_RT kernel (the `osnoise/*_noise` events, the scheduler's,
//! the tracer's sample). Any bytes must give Ok or Err, never a panic, and the timerlat
//! analyzer must charge every nanosecond of a spike made from whatever events come out.
#![no_main]

#[path = "trace_common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

macro_rules! formats {
    ($($name:literal),*) => {
        [$(include_str!(concat!("../../crates/rtscope-trace/tests/fixtures/timerlat_rt/formats/", $name, ".format"))),*]
    };
}

fuzz_target!(|data: &[u8]| {
    let texts = formats!(
        "sched_switch", "sched_waking", "irq_noise", "softirq_noise", "nmi_noise", "thread_noise",
        "timerlat"
    );
    common::decode_and_attribute(data, &texts, rtscope_trace::timerlat::attribute_on);
});
