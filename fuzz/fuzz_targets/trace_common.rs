//! What the `trace_*` page targets share: decode one page with the given `format` texts, make a
//! spike from the first and last events, and require an analyzer to charge all of it.

use rtscope_trace::decode::{decode_pages, Event, Schema};
use rtscope_trace::format::{EventFormat, PageLayout};
use rtscope_trace::machine::Machine;
use rtscope_explain::model::Attribution;
use rtscope_explain::model::Spike;

pub fn decode_and_attribute(
    data: &[u8],
    formats: &[&str],
    attribute: fn(&[Event], &Spike, bool, Machine) -> Attribution,
) {
    let schema = Schema::new(formats.iter().filter_map(|t| EventFormat::parse(t).ok()));
    let (events, _, _) = decode_pages(data, 4096, &PageLayout::default(), &schema);
    if let (Some(a), Some(b)) = (events.first(), events.last()) {
        let (lo, hi) = (a.ts.min(b.ts), a.ts.max(b.ts));
        let spike = Spike { cpu: 1, tid: events[0].pid, deadline_ns: lo + (hi - lo) / 3, wakeup_ns: hi, smis: None };
        let att = attribute(&events, &spike, false, Machine::default());
        assert_eq!(att.charges.iter().map(|c| c.ns).sum::<u64>(), spike.latency_ns());
    }
}
