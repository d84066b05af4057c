"""The `explain-ebpf` guest check (issue 68): `rtscope measure --explain --explain-recorder ebpf`
beside the injected culprit, the reference instance recording CPU 1 meanwhile
(rtscope-checks.sh), verified on the host.

Required (function): the run exits 0; its tier line and its record name the recorder as this
architecture must have it — on amd64 the eBPF rings (`eBPF rings on raw tracepoints`, tier
flight-recorder, and on the RT kernels the note that timerlat was not used), on arm64 the rings
or the fallback to tracefs whose reason names only the IPI events the recorder has no program
for yet (`ipi:ipi_entry`, `ipi:ipi_exit`; there the tier the tracefs recorder takes, timerlat
on the RT kernels); the culprit named in the output and the JSON; no tracefs instance left,
osnoise as before; the culprit charged at least half of the time it ran per the reference
(`reference.named`, unless the host made every kept spike: `reference.host_only`).
Figures (load-dependent, required with --figures): the reference bar, the interrupt exits in
both traces, and the spikes where the reference has the culprit running most of the time that
rtscope charges it first.
"""

from __future__ import annotations

import json
import re

import guest
import noisy_checks
import reference

# crates/rtscope-trace/src/tracefs/observed.rs RINGS: how the eBPF recorder's words begin.
RINGS = "eBPF rings on raw tracepoints"
# crates/rtscope-trace/src/explain/choose.rs: the rings asked for and not used, and the
# timerlat tier not used beside them.
NOT_USED = "eBPF recorder not used, tracefs instead: "
NO_TIMERLAT = "timerlat tier not used: the eBPF recorder was asked for"
# The tracepoints the recorder has no program for on arm64 (docs/explain.md, "The eBPF flight
# recorder"): the only reason arm64 may fall back for.
ARM64_LACKING = {"ipi:ipi_entry", "ipi:ipi_exit"}


def tier_line(log: str) -> str:
    """The run's tier line (`explaining spikes: tier …`), or ''."""
    return next((l.strip() for l in log.splitlines() if "explaining spikes: tier " in l), "")


def lacking(line: str) -> set[str]:
    """The tracepoints a fallback's reason says the recorder cannot follow (`it cannot follow
    ipi:ipi_entry (…); ipi:ipi_exit (…)`)."""
    at = line.find(NOT_USED)
    if at < 0:
        return set()
    rest = line[at + len(NOT_USED):]
    if not rest.startswith("it cannot follow "):
        return set()
    return set(re.findall(r"(?:follow |; )(\w+:\w+) \(", rest))


def recorder_check(kernel: str, line: str, record: str) -> tuple[bool, bool, str, str]:
    """Whether the tier line `line` and the run's recorder `record` (`runs show`) are what the
    kernel's architecture requires; whether the rings ran; the check's words; its detail."""
    rt = guest.is_rt(kernel)
    m = re.search(r"explaining spikes: tier ([a-z-]+)", line)
    tier = m.group(1) if m else None
    rings = f"recorder: {RINGS}" in line
    detail = f"record: {record or 'none'}; {line or 'no tier line'}"
    if guest.arch_of(kernel).debian == "amd64":
        what = ("--explain-recorder ebpf: the eBPF rings on raw tracepoints record, tier "
                "flight-recorder" + (" (timerlat not used, said)" if rt else ""))
        ok = (rings and tier == "flight-recorder" and NOT_USED not in line
              and record.startswith(RINGS) and (not rt or NO_TIMERLAT in line))
        return ok, rings, what, detail
    fallback = "timerlat" if rt else "flight-recorder"
    what = ("--explain-recorder ebpf: the eBPF rings record (tier flight-recorder), or tracefs "
            f"(tier {fallback}) with the reason: no program for arm64's IPI events")
    if rings:
        ok = (tier == "flight-recorder" and NOT_USED not in line and record.startswith(RINGS)
              and (not rt or NO_TIMERLAT in line))
        return ok, True, what, detail
    why = lacking(line)
    ok = (tier == fallback and bool(why) and why <= ARM64_LACKING
          and "recorder: tracefs instance" in line and record.startswith("tracefs instance"))
    return ok, False, what, detail


def culprit_first(x: dict, ref: reference.Reference, apart: list[tuple[int, int]],
                  culprit: str = "culprit") -> tuple[int, int]:
    """Of the compared spikes in which the reference has the culprit running over half of the
    spike (less the time the two traces stamped apart), how many rtscope charges the culprit
    first (its largest charge): (first, of)."""
    is_culprit = reference.culprit_matcher(culprit, ref)
    first = of = 0
    for w in reference.traced_spikes(x, 1):
        s = w["spike"]
        lat = s["wakeup_ns"] - s["deadline_ns"]
        ref_ns = reference.reference_causes(ref, s["deadline_ns"], s["wakeup_ns"], s.get("tid"))
        if ref_ns is None or lat <= 0:
            continue
        amb = reference.overlap(apart, s["deadline_ns"], s["wakeup_ns"])
        if sum(v for k, v in ref_ns.items() if is_culprit(k)) * 2 <= lat + amb:
            continue
        of += 1
        rt_ns: dict[tuple, int] = {}
        for ch in w["charges"]:
            k = reference.rtscope_cause(ch, s.get("tid"))
            rt_ns[k] = rt_ns.get(k, 0) + int(ch["ns"])
        top = max(rt_ns.items(), key=lambda kv: kv[1], default=(None, 0))[0]
        first += top is not None and is_culprit(top)
    return first, of


def verify(c, kernel: str, r: guest.BootResult) -> None:
    """The explain-ebpf check's lines through `c.expect`/`c.figure` (checks.Checker)."""
    rc = r.checks().get("explain-ebpf")
    c.expect(kernel, "rtscope measure --explain --explain-recorder ebpf exits 0", rc == 0,
             f"rc {rc}")
    log = (r.files.get("explain-ebpf.log") or b"").decode(errors="replace")
    ok, rings, what, detail = recorder_check(kernel, tier_line(log),
                                             r.value("explain-ebpf-recorder") or "")
    c.expect(kernel, what, ok, detail)
    x = json.loads(r.files.get("explain-ebpf.json") or b"{}").get("explain") or {}
    comms = [k.get("category", {}).get("comm") for k in x.get("culprits", [])]
    which = "eBPF" if rings else "tracefs"
    c.expect(kernel, f"--explain-recorder ebpf ({which} ran): the culprit is named in the "
             "output and the JSON",
             int(r.value("explain-ebpf-named") or 0) > 0 and "culprit" in comms,
             f"output {r.value('explain-ebpf-named')}, JSON culprits {comms[:4]}")
    before = r.value("explain-osnoise-before")
    c.expect(kernel, f"--explain-recorder ebpf ({which} ran): no tracefs instance left, osnoise "
             "settings as before",
             r.value("explain-ebpf-instances") == "0"
             and r.value("explain-ebpf-osnoise-after") == before,
             f"instances {r.value('explain-ebpf-instances')}, osnoise {before} -> "
             f"{r.value('explain-ebpf-osnoise-after')}")
    agreement(c, kernel, r, x, which)


def agreement(c, kernel: str, r: guest.BootResult, x: dict, which: str) -> None:
    """The run's spikes one by one against its reference instance (reference-ebpf.txt; the
    time the two traces stamped one event apart, from the rings' dump, decides neither way)."""
    ref = reference.parse((r.files.get("reference-ebpf.txt") or b"").decode(errors="replace"), 1)
    text = (r.files.get("dump-ebpf.txt") or b"").decode(errors="replace")
    apart = sorted(reference.stamped_apart(reference.dump_events(text, 1), ref)
                   + reference.osnoise_apart(reference.osnoise_irqs(text, 1), ref))
    cmp = reference.compare(x, ref, 1, apart=apart)
    for line in cmp.lines:
        print(f"  {kernel} explain-ebpf: {line}")
    counts = x.get("counts") or {}
    print(f"INFO {kernel}: explain-ebpf ({which}): {counts.get('traced')} of "
          f"{counts.get('spikes')} spikes traced, not traced {counts.get('not_traced')}; "
          f"{len(text.splitlines())} dump lines", flush=True)
    label = f"--explain-recorder ebpf ({which} ran)"
    ok, detail = reference.named(cmp)
    noisy_checks.unless_host(c, kernel, f"{label}: the culprit is charged at least half of the "
                             "time it ran, per the reference", ok, detail,
                             reference.host_only(cmp))
    exits, detail = reference.exits_reached(x, ref, [], "explain-ebpf")
    c.figure(kernel, f"{label}: the kernel's interrupt exits reached both traces", exits, detail)
    first, of = culprit_first(x, ref, apart)
    c.figure(kernel, f"{label}: each spike the culprit ran most of, per the reference, is "
             "charged to it first", of > 0 and first == of,
             f"{first} of {of} such spikes")
    met, text = reference.bar(cmp)
    c.figure(kernel, f"{label} agrees with the reference instance: the culprit gets >= 90 % of "
             "the spike time it ran, >= 90 % of its spikes' time on the same cause", met,
             f"{text}; {reference.summary(cmp)}")
