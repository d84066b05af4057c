"""Noise of known kinds on the measured CPU against the reference instance, host side.

The kinds (guest side `noisy/guest-noisy.sh`, module `noisy/noisy.c`): kernel sections with
preemption or interrupts off, an interrupt storm, softirq work, network receive. For each,
`rtscope measure --explain --explain-keep 100` ran on CPU 1 with the reference instance
recording (lib.sh reference_start/stop), then `rtscope noise --explain 20us --explain-keep 200`
(a SCHED_OTHER busy loop on CPU 1, its gaps the "spikes") with it recording again; here each
kept spike's attribution is compared with the reference (reference.py), the injected noise as
the culprit (CULPRITS), and with `bar` every kind must meet reference.bar in both runs (RUNS),
each run with the kernel's interrupt exits in both traces (exits_reached). `guest.py check
--noisy MODES` runs them in the same boot as the other checks of a kernel; `noisy/run.py` boots
a kernel for them alone.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import guest
import reference

HERE = Path(__file__).resolve().parent

# The modes that need noisy.ko (noisy/build.sh); net needs no module.
MODULE_MODES = {"preempt", "irq", "storm", "softirq"}

# What each mode's injected noise is called in reference.compare (reference.culprit_matcher).
CULPRITS = {
    "preempt": "noisy-preempt",
    "irq": "noisy-irq",
    "storm": "vector:call_function_single",
    "softirq": "softirq:TASKLET",
    "net": "softirq:NET_RX",
}


# The modes whose injected section is held by the module's thread: a spike it caused ends in a
# switch from that thread, and `--explain` takes its kernel stack there (docs/explain.md,
# "Kernel stacks"). The interrupt storm's and the tasklet's handlers are named by their
# function (HANDLER_MODES below), not by a stack: no late-only stack samples them (a hard IRQ
# handler runs with interrupts off; a stack at the waking named the tasklet in 4 of 24 spikes
# on arm64 and 0 of 3 on amd64, the measured timer firing where the softirq began, before the
# tasklet ran: 27 Nov 2026).
STACK_MODES = {"preempt", "irq"}


# Raw frames looked at: the tracer's, the scheduler's or the timer interrupt's come first (4 to
# 10 of them on amd64: the waking's stack is taken inside the timer interrupt; 16 on arm64,
# from `trace_event_raw_event_sched_wakeup_template` to `el1h_64_irq`, the interrupted section
# at the 17th or 18th: rt-arm64 in a `.ci/run` beside the hog, 27 Nov 2026).
TOP_FRAMES = 24


# The share of the thread's stacks that must name the module (per cent). Not all: the waking
# interrupt can find the thread just past its section, on its way to sleep (amd64, 27 Nov
# 2026: 1 of 55, in a tracepoint's static-call trampoline under msleep).
STACK_SHARE = 90


def named_share(frames: list[list[str]], own: str, what: str) -> tuple[bool, str]:
    """Whether STACK_SHARE % of `frames` (each stack's first TOP_FRAMES frames; empty: no
    stack) name a function of the module (` [noisy]`), at least one: the verdict and its
    detail, with how many name `own` (the injected section's function, a prefix)."""
    named = [f for f in frames if any(fr.endswith(" [noisy]") for fr in f)]
    owned = [f for f in named if any(fr.startswith(own) for fr in f)]
    detail = (f"{what}, {len(named)} name a noisy function in the first {TOP_FRAMES} frames "
              f"(at least {STACK_SHARE} % needed), {len(owned)} the section's own ({own}*)")
    if frames and len(named) < len(frames):
        bad = next(f for f in frames if f not in named)
        detail += f"; first without: {' <- '.join(bad) or 'no stack'}"
    return bool(frames) and len(named) * 100 >= len(frames) * STACK_SHARE, detail


def stack_check(x: dict, thread: str) -> tuple[bool, str]:
    """Whether the kept spikes' kernel stacks of the module's thread `thread` name a function
    of the module (noisy_hold_preempt_off, noisy_hold_irqs_off, noisy_thread) in their first
    TOP_FRAMES frames: at least one such stack, and STACK_SHARE % of them."""
    stacks = [w["stack"]["frames"][:TOP_FRAMES] for w in x.get("worst") or []
              if (w.get("stack") or {}).get("task", {}).get("comm") == thread]
    return named_share(stacks, "noisy_hold_", f"{len(stacks)} stack(s) of {thread}")


# Frames of a context that was asleep or idle, not running: the measured thread's own
# `clock_nanosleep`, another sleeper's, the idle loop. A spike's time is never theirs, so no
# shown stack and no row of "time by kernel function" may be named by one (issue 65).
SLEEP_OR_IDLE = ("do_nanosleep", "hrtimer_nanosleep", "common_nsleep", "clock_nanosleep",
                 "__x64_sys_clock_nanosleep", "__arm64_sys_clock_nanosleep", "schedule_hrtimeout",
                 "do_idle", "cpu_startup_entry", "default_idle", "arch_cpu_idle", "cpuidle_",
                 "poll_idle", "cpu_idle_poll", "do_sys_poll", "ep_poll", "futex_wait")


def asleep(frame: str) -> bool:
    """Whether `frame` (`name [module]` or `name`) is a sleeping or idle path."""
    name = frame.split(" ")[0]
    return any(name == s or (s.endswith("_") and name.startswith(s)) for s in SLEEP_OR_IDLE)


def measuring(comm: str) -> bool:
    """Whether COMM measures: an rtscope thread or the timerlat tracer's `timerlat/<CPU>`
    (rtscope-trace's `stacks::is_measuring`), whose stack is its own sleep in `timerlat_main`."""
    cpu = comm.removeprefix("timerlat/")
    return comm.startswith("rtscope") or (cpu != comm and cpu.isdigit())


def shown_stacks_check(x: dict) -> tuple[bool, str]:
    """No kept spike shows the stack of a measuring thread (the measuring threads `rtscope-m*`,
    noise's `rtscope-n*`, any rtscope process's, the timerlat tier's `timerlat/<CPU>`) or of
    the spike's own thread (its way into
    its sleep), as docs/explain.md's stack rule says: a stack is the charged context's."""
    worst = [w for w in x.get("worst") or [] if w.get("stack")]
    task = lambda w: w["stack"].get("task") or {}  # noqa: E731
    ours = [w for w in worst if measuring(str(task(w).get("comm", "")))]
    own = [w for w in worst if task(w).get("pid") == w["spike"].get("tid")]
    detail = (f"{len(worst)} kept stack(s): {len(ours)} of a measuring thread, {len(own)} of "
              "the spike's own thread")
    bad = (ours or own)[:1]
    if bad:
        st = bad[0]["stack"]
        detail += f"; first: {' <- '.join(st.get('frames', [])[:8])} ({st.get('task')})"
    return not ours and not own, detail


def functions_check(x: dict) -> tuple[bool, str]:
    """"time by kernel function" ranks the code that held the CPU: its first row (most time)
    is a function of the module (` [noisy]`, the injected section), or one the module called
    on the heaviest folded stack, and no row is a sleeping or idle path."""
    rows = sorted(x.get("functions") or [], key=lambda r: -int(r.get("ns", 0)))
    total = sum(int(r.get("ns", 0)) for r in rows)
    sleeping = [r["function"] for r in rows if asleep(str(r.get("function", "")))]
    first = rows[0] if rows else {}
    share = 100 * int(first.get("ns", 0)) / total if total else 0
    detail = (f"{len(rows)} row(s); first {first.get('function')!r} ({share:.1f} % of "
              f"{total / 1e6:.3f} ms); {len(sleeping)} sleeping or idle row(s)"
              + (f": {', '.join(sleeping[:3])}" if sleeping else ""))
    # The first row's function may be one the module's section calls (arm64's
    # `arch_counter_read` under `noisy_hold_*`, bpo-arm64 in a CI pass, 28 Nov 2026): then the
    # heaviest folded stack (the run's `stacks`, root first) must pass through the module.
    folded = max(x.get("stacks") or [], key=lambda f: int(f.get("ns", 0)), default={})
    under = " [noisy]" in str(folded.get("stack", ""))
    if not str(first.get("function", "")).endswith(" [noisy]"):
        detail += f"; heaviest folded stack {str(folded.get('stack'))[-120:]!r}"
    ok = (bool(rows) and not sleeping
          and (str(first.get("function", "")).endswith(" [noisy]") or under))
    return ok, detail


def listed(x: dict) -> bool:
    """Whether "time by kernel function" has a row of the module's (` [noisy]`) or its
    heaviest folded stack passes through the module."""
    rows = x.get("functions") or []
    return any(str(r.get("function", "")).endswith(" [noisy]") for r in rows) or any(
        " [noisy]" in str(f.get("stack", "")) for f in x.get("stacks") or [])


def ranking_check(c, kernel: str, label: str, x: dict, cmp, host: tuple[bool, str]) -> None:
    """"time by kernel function" ranks the module's function first (functions_check), required
    where the reference says the culprit ran at least half of the kept spikes' time: then no
    other code can outweigh it. Where it ran less, another function may lawfully lead (beside
    CI's hog, bpo-rt-arm64's preempt run: the culprit in 21 of 100 kept spikes, a page fault's
    `__ptep_set_access_flags` first with 13.7 %, 29 Nov 2026): then the table must still list
    the module's function, and its rank is a load-dependent figure."""
    name = f"{label}: time by kernel function ranks the module's first"
    ok, detail = functions_check(x)
    share = 100 * cmp.culprit_ref_ns / cmp.spike_ns if cmp.spike_ns else 0.0
    if ok or share >= 50 or host[0]:
        unless_host(c, kernel, name, ok, detail, host)
        return
    why = (f"the culprit ran {share:.1f} % of the kept spikes' time per the reference "
           f"({cmp.culprit_spikes} of {cmp.spikes} spikes): another function may lead")
    c.expect(kernel, f"{label}: time by kernel function lists the module's function",
             listed(x), f"{detail}; {why}")
    c.figure(kernel, name, False, f"{detail}; {why}")


# The modes whose injected section is a handler in interrupt context, named by the function the
# kernel's events give (a spike's `handler`: docs/explain.md, "Handlers"), never by a stack: the
# handler kind and the module's function.
HANDLER_MODES = {"storm": ("csd", "noisy_long_irq_handler"),
                 "softirq": ("tasklet", "noisy_long_softirq")}


# The reference's event stem of each handler kind (csd_function_entry, tasklet_entry).
REF_STEM = {"csd": "csd_function", "tasklet": "tasklet"}


def handler_check(x: dict, mode: str, ref: reference.Reference,
                  has_events: bool) -> tuple[bool, str, bool, bool]:
    """Against the reference instance, which records the same handler events: every kept
    spike that names the module's function (HANDLER_MODES) as its handler is one where the
    reference saw that function run, at least one does, and STACK_SHARE % of the spikes the
    reference saw it run for at least half of (the spikes it caused) name it. Where the
    kernel has no such events (`has_events`: 6.1's IPI function calls) no spike names a
    handler of that kind. Returns the verdict, its detail, whether no spike names it wrongly
    (what stays required when the host made every spike: reference.host_only), and whether
    there was nothing to name: the reference saw the function run in none of the kept spikes
    it covers (beside CI's hog a storm run kept 200 spikes of the host's, the handler in none:
    a miss there is load-dependent, like host_only's)."""
    kind, own = HANDLER_MODES[mode]
    worst = [w for w in x.get("worst") or [] if "charges" in w]
    of_kind = [w for w in worst if (w.get("handler") or {}).get("kind") == kind]
    if not has_events:
        return (not of_kind, f"no {kind} events on this kernel: {len(of_kind)} spike(s) name one",
                not of_kind, False)
    spans = reference.handler_spans(ref, REF_STEM[kind], own)
    first, last = ref.first_ns or 0, ref.events[-1].ts_ns if ref.events else 0

    def truth(w: dict) -> int | None:
        a, b = w["spike"]["deadline_ns"], w["spike"]["wakeup_ns"]
        if a < first or b > last or any(t < b for t in ref.lost):
            return None  # not covered by the reference
        return reference.overlap(spans, a, b)

    covered = [(w, t) for w in worst if (t := truth(w)) is not None]
    named = [(w, t) for w, t in covered if w in of_kind
             and str(w["handler"].get("function", "")).startswith(own)]
    wrong = [w for w, t in named if t == 0]
    caused = [w for w, t in covered
              if 2 * t >= w["spike"]["wakeup_ns"] - w["spike"]["deadline_ns"]]
    caught = [w for w in caused if any(w is n for n, _ in named)]
    rt_ns, ref_ns = sum(w["handler"].get("ns", 0) for w, _ in named), sum(t for _, t in named)
    detail = (f"{len(covered)} kept spike(s) the reference covers, {len(named)} name {own} "
              f"({kind}; {len(wrong)} where the reference saw it not run; its time there "
              f"{rt_ns / 1e6:.3f} ms, the reference's {ref_ns / 1e6:.3f} ms); the reference saw it "
              f"take half or more of {len(caused)}, {len(caught)} of them name it (at least "
              f"{STACK_SHARE} % needed)")
    missed = [w for w in caused if w not in caught]
    if missed:
        detail += (f"; first missed: handler {missed[0].get('handler')}, "
                   f"{missed[0]['charges'][0]}")
    ok = bool(named) and not wrong and len(caught) * 100 >= len(caused) * STACK_SHARE
    nothing = not any(t > 0 for _, t in covered)
    return ok, detail, not wrong, nothing


# Each late wake-up takes at most this many late-only stacks (docs/explain.md, "Kernel
# stacks"): the switch's, the late timer's and the tick's; a prompt one takes none.
LATE_CHAINS = 3


def late_stack_counts(x: dict, dump: str) -> tuple[int, int, int]:
    """The kernel stacks and the measured thread's wake-ups in rtscope's own trace (its
    RTSCOPE_TRACE_DUMP), and the run's spikes at or above the threshold."""
    lines = dump.splitlines()
    stacks = sum(1 for ln in lines if " KernelStack {" in ln)
    wakings = sum(1 for ln in lines if " Waking {" in ln and 'comm: "rtscope-m' in ln)
    return stacks, wakings, (x.get("counts") or {}).get("spikes", 0)


def late_stack_check(x: dict, dump: str) -> tuple[bool, str]:
    """Whether the late-only stacks came with late wake-ups only: the kernel stacks in
    rtscope's own trace at most LATE_CHAINS per spike at or above the threshold, far fewer
    than the measured thread's wake-ups."""
    stacks, wakings, spikes = late_stack_counts(x, dump)
    detail = (f"{stacks} kernel stack(s) in the trace for {spikes} spike(s) at or above the "
              f"threshold among {wakings} wake-up(s) of the measured thread (at most "
              f"{LATE_CHAINS} per late one; a prompt one takes none)")
    return 0 < stacks <= LATE_CHAINS * spikes and spikes < wakings, detail


def late_stack_verdict(c, kernel: str, name: str, x: dict, dump: str) -> None:
    """late_stack_check through `c`: where rtscope's trace holds no more of the measured
    thread's wake-ups than late ones (a starved guest: beside CI's hog rt-amd64's irq run had 86
    in its trace for 261 spikes, 29 Nov 2026), no prompt one shows that it takes no stack, and
    a failure of that part alone is a load-dependent figure; the bound of LATE_CHAINS stacks per
    spike stays required."""
    ok, detail = late_stack_check(x, dump)
    stacks, wakings, spikes = late_stack_counts(x, dump)
    if not ok and 0 < stacks <= LATE_CHAINS * spikes and spikes >= wakings:
        c.figure(kernel, name, False, detail + "; no prompt wake-up in the trace to show it "
                 "takes none (the guest woke the thread late at least as often)")
    else:
        c.expect(kernel, name, ok, detail)


def parse_modes(text: str) -> list[str]:
    """The comma-separated modes; ValueError names the unknown ones."""
    modes = [m for m in text.split(",") if m]
    unknown = [m for m in modes if m not in CULPRITS]
    if unknown:
        raise ValueError(f"unknown mode(s) {', '.join(unknown)}: choose from {', '.join(CULPRITS)}")
    return modes


def culprit_of(mode: str, kernel: str) -> str:
    """The mode's culprit on this kernel: arm64's function-call IPIs are hard interrupts named
    `IPI` (one number per IPI kind), not an x86 vector."""
    if mode == "storm" and kernel.endswith("arm64"):
        return "irq:IPI"
    return CULPRITS[mode]


def guest_files(kernel: str, modes: list[str], out: Path) -> tuple[dict[str, Path], str]:
    """The files the guest needs for `modes` (noisy.ko built for the kernel's ABI when a mode
    needs it, and the guest script): ({guest path: host path}, "") or ({}, why not)."""
    files = {"/guest/guest-noisy.sh": HERE / "noisy" / "guest-noisy.sh"}
    if any(m in MODULE_MODES for m in modes):
        k = guest.fetch_kernel(kernel)
        built = subprocess.run(["bash", str(HERE / "noisy" / "build.sh"), k.abi, str(out / "build")],
                               capture_output=True, text=True)
        if built.returncode != 0:
            return {}, f"noisy.ko does not build: {built.stderr[-500:]}"
        files["/root/noisy.ko"] = Path(built.stdout.strip().splitlines()[-1])
    return files, ""


# The two runs of each mode (guest-noisy.sh): the file prefix of rtscope's output and of its
# reference trace, the words of the check.
RUNS = (("explain", "", "rtscope measure --explain"),
        ("noise", "noise-", "rtscope noise --explain"))


def verify(c, kernel: str, r: guest.BootResult, modes: list[str]) -> None:
    """Each mode's two runs: exit 0, spikes compared, interrupt exits in both traces and the
    culprit named (`reference.named`) as PASS/FAIL lines through `c.expect(kernel, name, ok,
    detail)`; reference.bar's agreement through `c.figure` (required with `--figures`)."""
    for mode in modes:
        for run in RUNS:
            verify_run(c, kernel, r, mode, run)
    kill = r.value("late-sigkill")
    if kill is not None:
        ok, detail = sigkill_check(kill)
        c.expect(kernel, "late-only stacks: a SIGKILL leaves no instance and no synthetic event",
                 ok, detail)


def unless_host(c, kernel: str, name: str, ok: bool, detail: str, host: tuple[bool, str],
                sound: bool = True) -> None:
    """A function check of the culprit's naming (`sound`: no spike names it where it did not
    run), required through `c.expect` unless the host made every kept spike (`host`:
    reference.host_only): then the culprit ran in none of them, there was nothing to name, and
    a miss is a load-dependent figure through `c.figure` (required with `--figures`), as long
    as nothing was named wrongly."""
    if not ok and sound and host[0]:
        c.figure(kernel, name, False, f"{detail}; {host[1]}")
    else:
        c.expect(kernel, name, ok, detail)


def sigkill_check(marker: str) -> tuple[bool, str]:
    """The `late-sigkill` marker (`set=N bpf=N instances=N left=N instances-left=N`): the
    late-only stacks (hist triggers' synthetic events, or eBPF programs held by the process)
    and the instance were there while `measure --explain` recorded, and no synthetic event or
    instance is left after its SIGKILL (the reaper's work; the programs go with the process)."""
    v = dict(kv.split("=", 1) for kv in marker.split() if "=" in kv)
    n = {k: int(x) if x.isdigit() else -1 for k, x in v.items()}
    ok = ((n.get("set", 0) > 0 or n.get("bpf", 0) > 0) and n.get("instances", 0) > 0
          and n.get("left") == 0 and n.get("instances-left") == 0)
    return ok, (f"while recording: {v.get('set')} synthetic event(s), {v.get('bpf', 0)} eBPF "
                f"program(s), {v.get('instances')} instance(s); after the SIGKILL: "
                f"{v.get('left')} synthetic event(s) and {v.get('instances-left')} instance(s)")


def all_timed_out(x: dict) -> tuple[bool, str]:
    """Whether rtscope traced none of a run's spikes because the analysis of every one timed out
    (`not traced (timed out)`: the trace reader fell behind a starved guest), as rtscope itself
    said: then nothing can be compared. Beside CI's hog, five guests and the end-to-end
    suite's SCHED_FIFO runs, rt-amd64's runs of four modes came to that (29 Nov 2026: 437 of
    437 spikes, 89.9 % of the deadlines missed, the trace set up in 40.5 s)."""
    n = x.get("counts") or {}
    spikes = n.get("spikes", 0)
    timed_out = (n.get("not_traced") or {}).get("timed_out", 0)
    ok = spikes > 0 and n.get("traced", 0) == 0 and n.get("partial", 0) == 0 and timed_out == spikes
    return ok, (f"rtscope traced none of its {spikes} spikes: the analysis of each timed out "
                "(the trace reader fell behind the starved guest), as it said; nothing to compare")


class AsFigures:
    """The check list C, with a failing function check given as a load-dependent figure with
    WHY (required with `--figures`): for a run all_timed_out."""

    def __init__(self, c, why: str):
        self.c, self.why = c, why

    def expect(self, kernel: str, name: str, ok: bool, detail: str = "") -> None:
        if ok:
            self.c.expect(kernel, name, ok, detail)
        else:
            self.c.figure(kernel, name, ok, f"{detail}; {self.why}")

    def __getattr__(self, name: str):
        return getattr(self.c, name)


def verify_run(c, kernel: str, r: guest.BootResult, mode: str, run: tuple[str, str, str]) -> None:
    """One run of one mode: `measure --explain`'s spikes or `noise --explain`'s gaps, each
    kept one compared with the reference trace recorded over the same run. A run whose spikes
    all timed out in rtscope's analysis (all_timed_out) gives its failures as figures."""
    check, prefix, words = run
    rc = r.checks().get(f"{check}-{mode}")
    x = json.loads(r.files.get(f"{check}-{mode}.json") or b"{}").get("explain") or {}
    starved, why = all_timed_out(x)
    if starved and rc == 0:
        c = AsFigures(c, why)
    ref = reference.parse((r.files.get(f"reference-{prefix}{mode}.txt") or b"").decode(
        errors="replace"), 1)
    text = (r.files.get(f"{prefix}dump-{mode}.txt") or b"").decode(errors="replace")
    apart = sorted(reference.stamped_apart(reference.dump_events(text, 1), ref)
                   + reference.osnoise_apart(reference.osnoise_irqs(text, 1), ref))
    culprit = culprit_of(mode, kernel)
    cmp = reference.compare(x, ref, 1, culprit=culprit, apart=apart)
    for line in cmp.lines:
        print(f"  {kernel} {mode} {check}: {line}")
    label = f"noise {mode}" if check == "explain" else f"noise {mode}, rtscope noise"
    c.expect(kernel, f"{label}: {words} exits 0 and its spikes are compared",
             rc == 0 and cmp.spikes > 0,
             f"rc {rc}, tier {x.get('tier')}, {cmp.spikes} spikes")
    if guest.is_rt(kernel):
        ok, detail = reference.traced_from_start(x)
        c.expect(kernel, f"{label}: no spike before the timerlat tracer was live", ok, detail)
    host = reference.host_only(cmp)
    if not host[0]:
        host = reference.not_in_kept(cmp)
    if mode in STACK_MODES:
        ok, detail = stack_check(x, culprit)
        unless_host(c, kernel, f"{label}: the kernel stacks name the module's function",
                    ok, detail, host)
        ok, detail = shown_stacks_check(x)
        c.expect(kernel, f"{label}: no shown stack is an rtscope thread's or the spike's own", ok,
                 detail)
        ranking_check(c, kernel, label, x, cmp, host)
    log = (r.files.get(f"{check}-{mode}.log") or b"").decode(errors="replace")
    events = dict(kv.split("=", 1) for kv in (r.value("handler-events") or "").split()
                  if "=" in kv)
    if mode in HANDLER_MODES and events:
        kind = HANDLER_MODES[mode][0]
        has = events.get(kind) == "1"
        ok, detail, sound, nothing = handler_check(x, mode, ref, has)
        # Nothing to name where the handler ran in no kept spike (this check only).
        handler_host = host if host[0] or not nothing else (
            True, "the reference saw the module's function run in none of the kept spikes "
            "it covers: nothing to name")
        # The tier line (`measure`'s; `noise -q` prints none) says which kinds are named.
        word = {"csd": "IPI function call", "tasklet": "tasklet"}[kind]
        at = log.find("handlers named:")
        named = log[at:].split(";")[0].split("\n")[0] if at >= 0 else ""
        said = check != "explain" or bool(named) and (word in named) == has
        unless_host(c, kernel, f"{label}: the handler named is the module's function",
                    ok and said, f"{detail}; the tier line says which handlers are named: {said}",
                    handler_host, sound=sound and said)
    if mode in STACK_MODES and "kernel stacks when late" in log:
        late_stack_verdict(c, kernel, f"{label}: late-only stacks: prompt wake-ups took none", x,
                           text)
    ok, detail = reference.exits_reached(x, ref, r.values("noisy-retry"), f"{check}-{mode}")
    c.expect(kernel, f"{label}: the kernel's interrupt exits reached both traces", ok, detail)
    ok, detail = reference.named(cmp)
    unless_host(c, kernel, f"{label}: the injected {culprit} is named for most of the time it ran",
                ok, detail, host)
    met, text = reference.bar(cmp)
    c.figure(kernel, f"{label} ({culprit}): the reference bar", met,
             f"{text}; {reference.summary(cmp)}")
