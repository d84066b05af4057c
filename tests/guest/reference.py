"""An independent reference for `rtscope measure --explain`: what a second tracefs instance saw.

While rtscope explains the spikes of CPU 1, the guest script records the same CPU in its own
instance (`instances/reference`: `sched_switch`, `sched_waking`, `irq_handler_entry/exit`, `softirq_entry/exit`,
`trace_clock=mono`, so its times are CLOCK_MONOTONIC like rtscope's spike times) and sends its
text `trace` back. For each spike rtscope kept in its JSON (`explain.worst`, traced), this
replays the reference over [deadline, wake-up): the innermost context (a softirq by vector, a
hard interrupt by number, else the task the last `sched_switch` put on the CPU, by pid) gets
each interval, except while the measuring thread itself is blocked (it left the CPU with
`prev_state=D` and is not yet switched in again): then nothing on the CPU delays it, and the
interval is its own block. Agreement is the spike time both put on the same cause, summed over
causes (min of the two charges), over the spike time compared.

    python3 tests/guest/reference.py EXPLAIN.json REFERENCE-TRACE [--cpu 1]

prints one line per spike and the totals. rtscope's categories that name no context the
reference can see (a late timer interrupt's unnamed cause, unexplained) never agree;
`timer_irq_handler` is the hard interrupt in which the reference saw the thread woken (its own
`sched_waking`; none when the waking was on another CPU); `exit_from_idle` and
`hypervisor` are the idle task (pid 0) running, `return_to_user` the measuring thread running
(the switch to it and its way back to user space), `irqs_off_or_hypervisor` with a task or softirq
that one running (with interrupts off, or the vCPU stopped under it), which the reference sees.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field

# `  culprit-123     [001] d.h2.   123.456789: irq_handler_entry: irq=24 name=virtio0`
LINE = re.compile(r"\[(\d+)\]\s+(?:\S+\s+)?(\d+)\.(\d+):\s+(\w+):\s?(.*)$")
SWITCH_NEXT = re.compile(r"next_comm=(.*) next_pid=(-?\d+)")
WAKING = re.compile(r"pid=(-?\d+) prio=")
SWITCH_PREV = re.compile(r"prev_pid=(-?\d+) prev_prio=-?\d+ prev_state=(\S+)")
IRQ = re.compile(r"irq=(\d+)")
VECTOR = re.compile(r"vector=(\d+)")
VEC = re.compile(r"vec=(\d+) \[action=(\w+)\]")


@dataclass
class Event:
    ts_ns: int
    kind: str
    args: str


@dataclass
class Reference:
    """The reference instance's events of one CPU, in time order."""

    events: list[Event]
    lost: list[int] = field(default_factory=list)  # times after which events were lost

    @property
    def first_ns(self) -> int | None:
        return self.events[0].ts_ns if self.events else None


def parse(text: str, cpu: int) -> Reference:
    events, lost = [], []
    for line in text.splitlines():
        if "LOST" in line and "EVENTS" in line:
            lost.append(events[-1].ts_ns if events else 0)
            continue
        m = LINE.search(line)
        if not m or int(m.group(1)) != cpu:
            continue
        frac = m.group(3)
        ns = int(m.group(2)) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
        events.append(Event(ns, m.group(4), m.group(5)))
    events.sort(key=lambda e: e.ts_ns)
    return Reference(events, lost)


def reference_causes(ref: Reference, start: int, end: int,
                     tid: int | None = None) -> dict[tuple, int] | None:
    """ns per cause in [start, end) from the reference, or None when it does not cover it
    (no `sched_switch` before `start`, or events lost before `end`). While the measuring
    thread `tid` is blocked (out with `D`), the cause is ("blocked", tid); the hard interrupt
    in which the reference saw `tid` woken (its own `sched_waking`) is ("wake-irq",)."""
    if any(t < end for t in ref.lost) or not ref.events or ref.events[-1].ts_ns < end:
        return None
    wake = waking_irq(ref, start, end, tid)
    task: tuple | None = None
    blocked = False
    stack: list[tuple[tuple, int]] = []  # (cause, index of its entry event)
    out: dict[tuple, int] = {}
    prev = None
    for i, e in enumerate(ref.events + [Event(end, "end", "")]):
        if prev is not None and e.ts_ns > start:
            a, b = max(prev, start), min(e.ts_ns, end)
            if b > a:
                top = stack[-1] if stack else None
                cause = (("blocked", tid) if blocked else ("wake-irq",)
                         if top and top[1] == wake else top[0] if top else task)
                if cause is None:
                    return None
                out[cause] = out.get(cause, 0) + (b - a)
        if e.ts_ns >= end:
            break
        prev = e.ts_ns
        if e.kind == "sched_switch":
            m = SWITCH_NEXT.search(e.args)
            if m:
                task = ("thread", int(m.group(2)))
                stack.clear()  # a switch happens in task context: every interrupt has ended
                if int(m.group(2)) == tid:
                    blocked = False
            p = SWITCH_PREV.search(e.args)
            if p and tid is not None and int(p.group(1)) == tid:
                blocked = p.group(2).startswith("D")
        else:
            replay(stack, e, i, task)
    return out


def replay(stack: list[tuple[tuple, int]], e: Event, i: int, task: tuple | None) -> None:
    """Interrupt entries and exits on the context stack (`i`: the entry event's index)."""
    if e.kind == "irq_handler_entry" and (m := IRQ.search(e.args)):
        stack.append((("irq", int(m.group(1))), i))
    elif e.kind.endswith("_entry") and VECTOR.search(e.args):
        stack.append((("vector", e.kind.removesuffix("_entry")), i))  # x86 (irq_vectors)
    elif e.kind == "softirq_entry" and (m := VEC.search(e.args)):
        # The task it runs in too: a softirq run by a thread (`ksoftirqd/N`; every softirq
        # on PREEMPT_RT) is that thread's work as much as the vector's.
        stack.append((("softirq", m.group(2), task[1] if task else None), i))
    elif (e.kind in ("irq_handler_exit", "softirq_exit")
          or e.kind.endswith("_exit") and VECTOR.search(e.args)) and stack:
        stack.pop()


def waking_irq(ref: Reference, start: int, end: int, tid: int | None) -> int | None:
    """The entry index of the hard interrupt enclosing the last `sched_waking` of `tid`
    between 1 ms before `start` and `end` (lib.sh records the event), as rtscope finds its
    waking interrupt; None when it was woken elsewhere or the event is not recorded."""
    found = None
    stack: list[tuple[tuple, int]] = []
    task: tuple | None = None
    for i, e in enumerate(ref.events):
        if e.ts_ns > end:
            break
        if e.kind == "sched_switch":
            stack.clear()
            if m := SWITCH_NEXT.search(e.args):
                task = ("thread", int(m.group(2)))
        elif e.kind == "sched_waking" and (m := WAKING.search(e.args)):
            if int(m.group(1)) == tid and e.ts_ns + 1_000_000 >= start:
                hard = [x for x in stack if x[0][0] != "softirq"]
                found = hard[-1][1] if hard else None
        else:
            replay(stack, e, i, task)
    return found


def blocked_stacks(text: str, cpu: int) -> list[tuple[int, str]]:
    """Each time a measuring thread (`rtscope-m*`) left CPU `cpu` blocked (`D`), with the
    kernel stack the reference's `stacktrace` trigger took (lib.sh): its time and the frames
    below the scheduler, innermost first (`folio_wait_bit < migration_entry_wait < ...`)."""
    out: list[tuple[int, str]] = []
    frames: list[str] | None = None
    at = 0
    for line in text.splitlines():
        if frames is not None and line.lstrip().startswith("=>"):
            frames.append(line.split("=>", 1)[1].strip())
            continue
        if frames is not None and "<stack trace>" not in line:
            out.append((at, why(frames)))
            frames = None
        m = LINE.search(line)
        if m and int(m.group(1)) == cpu and m.group(4) == "sched_switch":
            p = SWITCH_PREV.search(m.group(5))
            if "prev_comm=rtscope-m" in m.group(5) and p and p.group(2).startswith("D"):
                at = int(m.group(2)) * 1_000_000_000 + int(m.group(3).ljust(9, "0")[:9])
                frames = []
    if frames is not None:
        out.append((at, why(frames)))
    return out


def why(frames: list[str]) -> str:
    """The frames below the scheduler's own (`schedule`, `__schedule`, `io_schedule` …)."""
    last = max((i for i, f in enumerate(frames) if "schedule" in f.split("+")[0]), default=-1)
    return " < ".join(f.split("+")[0] for f in frames[last + 1:last + 5]) or "no stack"


def irq_cause(name: str) -> tuple:
    """`virtio0 (irq 24)` is IRQ 24; an x86 vector is named by its event (`local_timer`,
    `local_timer (irq 236)` on the timerlat tier), as the reference's irq_vectors events."""
    base = re.sub(r" \(irq \d+\)$", "", name)
    if base in X86_VECTORS:
        return ("vector", base)
    m = re.search(r"\(irq (\d+)\)$", name)
    return ("irq", int(m.group(1))) if m else ("irq-name", name)


# The entry events of irq_vectors (arch/x86/include/asm/trace/irq_vectors.h), less `_entry`.
X86_VECTORS = {"local_timer", "spurious_apic", "error_apic", "x86_platform_ipi", "irq_work",
               "reschedule", "call_function", "call_function_single", "threshold_apic",
               "deferred_error_apic", "thermal_apic"}


def rtscope_cause(cat: dict, tid: int | None = None) -> tuple:
    kind = cat.get("kind")
    if kind == "timer_irq_handler":
        return ("wake-irq",)  # the interrupt that woke the thread, found by both
    if kind == "measuring_thread_blocked":
        return ("blocked", tid)
    if kind == "return_to_user" and tid is not None:
        return ("thread", tid)  # the measuring thread on the CPU, on its way back to user
    if kind in ("thread", "blocking"):
        return ("thread", int(cat["pid"]))
    if kind == "irq":
        return irq_cause(cat.get("name", ""))
    if kind == "timer_irq_late" and cat.get("cause") == "irqs_off_or_hypervisor" and "pid" in cat:
        return ("thread", int(cat["pid"]))  # the task that ran, interrupts off or not
    if kind == "timer_irq_late" and cat.get("cause") == "irqs_off_or_hypervisor" and "vec" in cat:
        return ("softirq", cat["vec"])  # likewise the softirq
    if kind == "timer_irq_late" and cat.get("cause") == "previous_irq":
        return irq_cause(cat.get("name", ""))  # the handler that ran when the timer was due
    if kind == "softirq":
        return ("softirq", cat.get("vec"))
    if kind == "hypervisor" or kind == "timer_irq_late" and cat.get("cause") == "exit_from_idle":
        return ("thread", 0)  # both are the idle task on the CPU before the timer interrupt
    return ("rtscope-only", kind, cat.get("cause"))


def traced_spikes(explain: dict, cpu: int) -> list[dict]:
    return [w for w in explain.get("worst", [])
            if w.get("tier") != "coarse" and "charges" in w and w["spike"]["cpu"] == cpu]


@dataclass
class Compared:
    spikes: int = 0
    skipped: int = 0  # not covered by the reference
    spike_ns: int = 0
    agree_ns: int = 0
    culprit_spikes: int = 0  # the culprit ran in them, per the reference
    culprit_spike_ns: int = 0
    culprit_agree_ns: int = 0
    culprit_ref_ns: int = 0  # the culprit ran, per the reference, in those spikes
    culprit_rt_ns: int = 0  # rtscope charged it there
    culprit_both_ns: int = 0  # per spike the smaller of the two, summed
    lines: list[str] = field(default_factory=list)

    def pct(self, a: int, b: int) -> str:
        return f"{100 * a / b:.1f} %" if b else "unknown"


def softirqs_as_named(ref_ns: dict[tuple, int], rt_ns: dict[tuple, int]) -> dict[tuple, int]:
    """The reference's softirq time ("softirq", vec, host pid) as the vector, or as the thread
    it ran in (a `ksoftirqd/N`, any thread on PREEMPT_RT, where osnoise counts it as that
    thread's noise) when rtscope named that thread: both describe the same execution."""
    out: dict[tuple, int] = {}
    for k, v in ref_ns.items():
        if k[0] == "softirq" and len(k) == 3:
            host = ("thread", k[2])
            k = host if k[2] not in (None, 0) and rt_ns.get(host, 0) > 0 else k[:2]
        out[k] = out.get(k, 0) + v
    return out


def compare(explain: dict, ref: Reference, cpu: int, culprit: str = "culprit") -> Compared:
    """Compare every traced spike of `cpu` rtscope kept with the reference."""
    c = Compared()
    for w in traced_spikes(explain, cpu):
        s = w["spike"]
        lat = s["wakeup_ns"] - s["deadline_ns"]
        ref_ns = reference_causes(ref, s["deadline_ns"], s["wakeup_ns"], s.get("tid"))
        if ref_ns is None or lat <= 0:
            c.skipped += 1
            continue
        rt_ns: dict[tuple, int] = {}
        for ch in w["charges"]:
            k = rtscope_cause(ch, s.get("tid"))
            rt_ns[k] = rt_ns.get(k, 0) + int(ch["ns"])
        ref_ns = softirqs_as_named(ref_ns, rt_ns)
        agree = sum(min(v, ref_ns.get(k, 0)) for k, v in rt_ns.items())
        c.spikes += 1
        c.spike_ns += lat
        c.agree_ns += agree
        culprits = [k for k in set(ref_ns) | set(rt_ns)
                     if k[0] == "thread" and comm_of(ref, k) == culprit]
        ref_c = sum(ref_ns.get(k, 0) for k in culprits)
        if ref_c > 0:
            c.culprit_spikes += 1
            c.culprit_spike_ns += lat
            c.culprit_agree_ns += agree
            c.culprit_ref_ns += ref_c
            c.culprit_rt_ns += sum(rt_ns.get(k, 0) for k in culprits)
            c.culprit_both_ns += sum(min(ref_ns.get(k, 0), rt_ns.get(k, 0)) for k in culprits)
        c.lines.append(
            f"spike at {s['deadline_ns']} ns, {lat / 1e6:.3f} ms: reference {fmt(ref_ns, ref)}; "
            f"rtscope {fmt(rt_ns, ref)}; same cause {c.pct(agree, lat)}")
    return c


def comm_of(ref: Reference, key: tuple) -> str | None:
    """The task's last name in the reference (a forked child first runs as its parent)."""
    if key[0] != "thread":
        return None
    for e in reversed(ref.events):
        if e.kind == "sched_switch":
            m = SWITCH_NEXT.search(e.args)
            if m and int(m.group(2)) == key[1]:
                return m.group(1)
    return None


def fmt(causes: dict[tuple, int], ref: Reference) -> str:
    parts = []
    for k, v in sorted(causes.items(), key=lambda kv: -kv[1])[:4]:
        name = comm_of(ref, k)
        label = f"{name}:{k[1]}" if name else ":".join(str(x) for x in k if x is not None)
        parts.append(f"{label} {v / 1e6:.3f} ms")
    return ", ".join(parts)


def summary(c: Compared) -> str:
    return (f"{c.spikes} spikes compared ({c.skipped} not covered by the reference), "
            f"same cause {c.pct(c.agree_ns, c.spike_ns)} of {c.spike_ns / 1e6:.3f} ms; "
            f"spikes where the culprit ran {c.culprit_spikes}: same cause "
            f"{c.pct(c.culprit_agree_ns, c.culprit_spike_ns)}; the culprit ran "
            f"{c.culprit_ref_ns / 1e6:.3f} ms (reference), rtscope charged it "
            f"{c.culprit_rt_ns / 1e6:.3f} ms, {c.pct(c.culprit_both_ns, c.culprit_ref_ns)} of "
            f"its time where both say so")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json")
    p.add_argument("trace")
    p.add_argument("--cpu", type=int, default=1)
    a = p.parse_args(argv)
    with open(a.json) as f:
        explain = json.load(f).get("explain") or {}
    with open(a.trace, errors="replace") as f:
        ref = parse(f.read(), a.cpu)
    c = compare(explain, ref, a.cpu)
    for line in c.lines:
        print(line)
    print(summary(c))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
