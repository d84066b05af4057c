//! A respond scenario's keys (`respond`, `placement`, `burst`), lowered into the plan's
//! workload; the plan checks them with the scenario's other settings.

use crate::file::RawSettings;
use crate::pos::Source;
use rtscope_common::error::UsageError;
use rtscope_engine::CpuSet;
use rtscope_respond::ipc::{parse_placements, IpcKind, Pacing};
use rtscope_session::plan::RespondSpec;

/// A respond scenario's workload (`respond = "eventfd"`) from its own keys: the plan gives it
/// the scenario's interval, length, policy and priority, and checks them as measure's.
pub(super) fn respond(
    src: &Source,
    s: &RawSettings,
    online: &CpuSet,
) -> Result<Option<RespondSpec>, UsageError> {
    let Some(kind) = &s.respond else {
        if let Some(p) = s
            .placement
            .as_ref()
            .map(|p| p.span())
            .or(s.burst.as_ref().map(|b| b.span()))
        {
            return Err(src
                .error(p, "placement and burst apply to respond scenarios only")
                .hint("add respond = \"eventfd\" (or pipe, futex, mqueue, signal, sysvsem, unix-dgram)"));
        }
        return Ok(None);
    };
    let k = IpcKind::parse(kind.get_ref()).ok_or_else(|| {
        src.error(
            kind.span(),
            format!("unknown IPC mechanism '{}'", kind.get_ref()),
        )
        .hint("use eventfd, pipe, futex, mqueue, signal, sysvsem or unix-dgram (one per scenario)")
    })?;
    // `same` and `cross` take the online CPUs this process may use (else any online one).
    let mask = rtscope_engine::sys::current_affinity().unwrap_or_else(|_| online.clone());
    let usable: Vec<usize> = online.iter().filter(|&c| mask.contains(c)).collect();
    let allowed = if usable.is_empty() {
        online.iter().collect()
    } else {
        usable
    };
    let text = s
        .placement
        .as_ref()
        .map_or("same", |p| p.get_ref().as_str());
    let span = s.placement.as_ref().map_or(0..0, |p| p.span());
    let placements = parse_placements(text, None, &allowed)
        .map_err(|e| src.error(span.clone(), e.to_string()))?;
    let [placement] = placements[..] else {
        return Err(src
            .error(span, "a respond scenario has one placement")
            .hint("write one scenario per placement"));
    };
    Ok(Some(RespondSpec::Ipc {
        kinds: vec![k],
        placements: vec![placement],
        burst: s.burst.as_ref().map_or(1, |b| *b.get_ref()),
        pacing: Pacing::Timer,
    }))
}
