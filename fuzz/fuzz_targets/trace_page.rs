//! `--explain`: one `trace_pipe_raw` page, decoded with the event formats captured on a 6.18
//! x86-64 kernel. Any bytes must give Ok or Err, never a panic, and the analyzer must accept
//! whatever events come out.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtscope_trace::analyze::attribute;
use rtscope_trace::decode::{decode_pages, Schema};
use rtscope_trace::format::{EventFormat, PageLayout};
use rtscope_trace::Spike;

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
    let schema = Schema::new(texts.iter().filter_map(|t| EventFormat::parse(t).ok()));
    let (events, _, _) = decode_pages(data, 4096, &PageLayout::default(), &schema);
    if let (Some(a), Some(b)) = (events.first(), events.last()) {
        let (lo, hi) = (a.ts.min(b.ts), a.ts.max(b.ts));
        let spike = Spike { cpu: 1, tid: events[0].pid, deadline_ns: lo + (hi - lo) / 3, wakeup_ns: hi };
        let att = attribute(&events, &spike, false);
        assert_eq!(att.charges.iter().map(|c| c.ns).sum::<u64>(), spike.latency_ns());
    }
});
