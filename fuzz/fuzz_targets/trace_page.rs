//! `--explain`: one `trace_pipe_raw` page, decoded with the event formats captured on a 6.18
//! x86-64 kernel. Any bytes must give Ok or Err, never a panic, and the analyzer must accept
//! whatever events come out.
#![no_main]

#[path = "trace_common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

macro_rules! formats {
    ($($name:literal),*) => {
        [$(include_str!(concat!("../../crates/rtscope-trace/tests/fixtures/culprit/formats/", $name, ".format"))),*]
    };
}

fuzz_target!(|data: &[u8]| {
    let texts = formats!(
        "sched_switch", "sched_waking", "irq_handler_entry", "irq_handler_exit", "softirq_entry",
        "softirq_exit", "local_timer_entry", "local_timer_exit", "reschedule_entry", "nmi_handler"
    );
    // The kernel stack entries of `--explain`'s stacks (same kernel, the `stacks` fixture).
    let stack = include_str!(
        "../../crates/rtscope-trace/tests/fixtures/stacks/formats/kernel_stack.format"
    );
    let texts: Vec<&str> = texts.iter().copied().chain([stack]).collect();
    common::decode_and_attribute(data, &texts, rtscope_trace::analyze::attribute_on);
});
