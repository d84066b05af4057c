"""`rtscope noise` like for like with the kernel's osnoise tracer (issue 33), host side.

In each guest with the injected culprit (rtscope-checks.sh: FIFO 99, 20 ms every 100 ms on
CPU 1), `rtscope noise -D 4s --cpus 1 --runtime 950ms --period 1s` runs, then the kernel's
osnoise tracer on CPU 1 with the same runtime and period for 4 s, then rtscope noise again.
Both loops run at SCHED_OTHER, both with a 5 us threshold, so both lose the culprit's share of
the CPU. Checked: rtscope noise exits 0 and the osnoise settings are written back; both tools
see the culprit (a longest single noise of at least 15 ms, the culprit's 20 ms less what a
loaded host can shave off the emulated timer) and osnoise's available share lies within
AVAILABLE_TOLERANCE points of the range of the two rtscope runs around it (4.3 points apart on
a quiet host: 72.87 % against 77.21 %). The runs are one after the other, each 4 s, on an
emulated CPU whose host noise drifts between them: beside a loaded CI with three guests booted
at once the guest had 30-47 % of its CPU, and one rtscope run alone against osnoise was 16.5
points apart (46.66 % against 30.12 %) with nothing wrong in either. Bracketing osnoise with
two rtscope runs sees that drift instead of failing on it.

A third rtscope run charges every gap to its causes (`--explain 5us`) and counts the
interference in osnoise's columns (HW, NMI, IRQ, SIRQ, THREAD); it is not one of the two
around osnoise, since tracing costs the emulated CPU several points of its available share
(56.58 % with it against 62.23 % without, 73.36 % for osnoise, rt-amd64 on a quiet host).
Compared per second of runtime, each class of the guest's own (NMI, IRQ, SIRQ, THREAD) lies
within a factor of RATE_FACTOR of rtscope's, or RATE_SLACK per second from it. Why a factor and
not a few per cent: the runs are one after the other on an emulated CPU whose host load drifts,
and rtscope counts the gaps over its threshold only. Both count every interrupt entry; until 26
Nov 2026 rtscope counted each distinct culprit of a gap once (the culprit's 20 ms hold about five
timer ticks: osnoise 5, rtscope 1), and beside the hog rt-amd64's IRQ was 194 against 89/s,
past the factor. HW is printed, not
compared: in an emulated guest the gaps with no kernel context are the host taking the emulated
CPU, a property of the host's load at that moment, not of the guest, and two runs a few seconds
apart have differed by more than any bar that would still mean something (osnoise against
rtscope on rt-arm64: 3,132 against 1,692/s beside a loaded CI, 792 against 2,547/s beside a test
suite, 609 against 3,928/s on CI's fresh machine; on rt-amd64 298 against 407/s). That rtscope names those gaps
is checked instead: in the explained run the time the host took is charged to the hypervisor,
with unexplained time at most a tenth of it. The guest's own classes stayed within a factor of 2
in every run.
rtscope's counts cover the traced gaps; they are scaled to all gaps over the threshold by its
coverage (traced / handed to the explainer), which must be at least MIN_COVERAGE.
- On a PREEMPT_RT kernel softirqs run in threads and osnoise counts them as thread noise (its
  softirq hooks are compiled out there: SIRQ is 0 by construction), so rtscope's SIRQ is
  printed there, not compared.
- RCU's threads (`rcuc/N`, `rcu_preempt`) are printed: they took part in 250-470 of rtscope's
  traced gaps a run on the loop's CPU until the static binary's allocator was changed
  (crates/rtscope/src/alloc.rs), and rtscope's THREAD was then 2-3.2 times osnoise's. That
  was rtscope's own doing: its munmaps (tens of thousands a run) freed page tables through RCU
  and kept grace periods going. Stop 42 left `rcuc/N` out of the comparison, wrongly blaming
  the user-space loop; with dlmalloc they took part in 3 and 0 gaps (rt-amd64, rt-arm64) and
  THREAD is compared whole.

And the default threshold where the loop is slow: a clock read under TCG takes about 1.1 us, so
the 1 us default must be raised to twice the loop's resolution (rounded up to a microsecond)
and recorded as raised, and at most half the iterations may count as noise (the bug: every
iteration counted, 0.00000 % available).
"""

from __future__ import annotations

import bisect
import json
import re

import guest
import reference

# `  osnoise/1-215   [001] .....   123.456: 1000000  200315  79.96850   20012   0   0   1041   35   12`
SAMPLE = re.compile(r"\[(\d+)\][^:]*\d+\.\d+:\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)"
                    r"\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")


# The interference classes in osnoise's column order, with rtscope's names for them.
CLASSES = (("hw", "hw"), ("nmi", "nmi"), ("irq", "irq"), ("sirq", "softirq"), ("thread", "thread"))
# How far apart the interference rates may be (module docstring): a factor, or per second.
RATE_FACTOR = 2.0
RATE_SLACK = 10.0
# The classes not compared, and why (module docstring); SIRQ only on a PREEMPT_RT kernel.
NOT_COMPARED = {"hw": "the host's in an emulator", "sirq": "softirqs are threads on PREEMPT_RT"}
# The least share of rtscope's gaps that must be traced for its counts to be compared.
MIN_COVERAGE = 0.5
# The largest difference of the available shares, in percentage points (module docstring).
AVAILABLE_TOLERANCE = 15.0
# The least longest single noise each tool must see with the 20 ms culprit, in µs.
CULPRIT_SEEN_US = 15_000


def osnoise_periods(text: str, cpu: int) -> list[dict]:
    """The osnoise tracer's per-period lines of `cpu` (its columns: runtime and noise in µs,
    % CPU available, max single noise in µs, HW NMI IRQ SIRQ THREAD counts)."""
    out = []
    for line in text.splitlines():
        m = SAMPLE.search(line)
        if not m or int(m.group(1)) != cpu or line.lstrip().startswith("#"):
            continue
        runtime, noise, avail, single, hw, nmi, irq, sirq, thread = m.groups()[1:]
        out.append({"runtime_us": int(runtime), "noise_us": int(noise), "avail": float(avail),
                    "max_single_us": int(single), "hw": int(hw), "nmi": int(nmi),
                    "irq": int(irq), "sirq": int(sirq), "thread": int(thread)})
    return out


def figures(noise_json: dict, osnoise_text: str, cpu: int = 1) -> dict | None:
    """Both tools' available share (%) and longest single noise (µs) on `cpu`, with the
    runtime each covered; None without both."""
    cpus = [c for c in noise_json.get("cpus", []) if c.get("summary", {}).get("cpu") == cpu]
    periods = osnoise_periods(osnoise_text, cpu)
    if not cpus or not periods:
        return None
    s = cpus[0]["summary"]
    runtime = sum(p["runtime_us"] for p in periods)
    noise = sum(p["noise_us"] for p in periods)
    return {
        "rtscope_avail": s.get("available_percent") or 0.0,
        "rtscope_single_us": (s.get("max_single_ns") or 0) / 1e3,
        "rtscope_runtime_s": s.get("runtime_ns", 0) / 1e9,
        "osnoise_avail": 100 * (runtime - noise) / runtime if runtime else 0.0,
        "osnoise_single_us": max(p["max_single_us"] for p in periods),
        "osnoise_runtime_s": runtime / 1e6,
        "osnoise_periods": len(periods),
    }


def bracketed(before: float, osnoise: float, after: float | None,
              tolerance: float = AVAILABLE_TOLERANCE) -> bool:
    """Whether osnoise's available share lies within `tolerance` points of the range of the
    rtscope runs before and after it (only the one before when there is none after)."""
    lo, hi = (before, before) if after is None else (min(before, after), max(before, after))
    return lo - tolerance <= osnoise <= hi + tolerance


def rtscope_rates(noise_json: dict, cpu: int = 1) -> dict | None:
    """rtscope's interference counts on `cpu` per second of runtime, by osnoise's column names,
    scaled from the traced gaps to all those handed to the explainer, with that `coverage`;
    None without an explanation."""
    ex = noise_json.get("explain") or {}
    rows = [i for i in ex.get("interference") or [] if i.get("cpu") == cpu]
    cpus = [c for c in noise_json.get("cpus", []) if c.get("summary", {}).get("cpu") == cpu]
    counts = ex.get("counts") or {}
    runtime = cpus[0]["summary"].get("runtime_ns", 0) / 1e9 if cpus else 0.0
    if not rows or not counts.get("traced") or runtime <= 0:
        return None
    coverage = counts["traced"] / max(counts.get("spikes", 0), counts["traced"])
    # RCU's threads' part in the gaps, printed (module docstring).
    rcuc = sum(c.get("spikes", 0) for c in ex.get("culprits") or []
               if (c.get("category") or {}).get("kind") == "thread"
               and str((c.get("category") or {}).get("comm", "")).startswith("rcu"))
    rates = {col: rows[0].get(key, 0) / coverage / runtime for col, key in CLASSES}
    return {**rates, "coverage": coverage, "rcuc_gaps": rcuc}


def osnoise_rates(osnoise_text: str, cpu: int = 1) -> dict | None:
    """osnoise's interference counts on `cpu` per second of its runtime; None without a period."""
    periods = osnoise_periods(osnoise_text, cpu)
    runtime = sum(p["runtime_us"] for p in periods) / 1e6
    if runtime <= 0:
        return None
    return {col: sum(p[col] for p in periods) / runtime for col, _ in CLASSES}


def rates_agree(before: dict, osnoise: dict, after: dict | None, rt: bool) -> tuple[bool, str]:
    """Whether each of osnoise's interference rates lies within RATE_FACTOR (or RATE_SLACK per
    second) of the range of the rtscope runs around it, each with at least MIN_COVERAGE of its
    gaps traced; HW is not compared (the host's, module docstring), nor SIRQ on a PREEMPT_RT
    kernel (`rt`). One line per class."""
    runs = [before] if after is None else [before, after]
    ok, parts = all(r["coverage"] >= MIN_COVERAGE for r in runs), []
    for col, _ in CLASSES:
        lo, hi = min(r[col] for r in runs), max(r[col] for r in runs)
        o = osnoise[col]
        within = lo / RATE_FACTOR - RATE_SLACK <= o <= hi * RATE_FACTOR + RATE_SLACK
        why = NOT_COMPARED.get(col) if col == "hw" or rt else None
        compared = why is None
        ok = ok and (within or not compared)
        mark = "" if compared else f" (not compared: {why})"
        parts.append(f"{col.upper()} {o:.0f}/s vs {lo:.0f}-{hi:.0f}/s"
                     f"{'' if within or not compared else ' APART'}{mark}")
    cov = ", ".join(f"{r['coverage']:.0%}" for r in runs)
    rcuc = ", ".join(str(r.get("rcuc_gaps", 0)) for r in runs)
    return ok, (f"osnoise vs rtscope: {'; '.join(parts)}; rtscope's gaps traced {cov}; "
                f"RCU's threads' part in traced gaps: {rcuc}")


def compare(noise_json: dict, osnoise_text: str, cpu: int = 1) -> str | None:
    """One line: both tools' available share and longest single noise, or None without
    both figures."""
    f = figures(noise_json, osnoise_text, cpu)
    if f is None:
        return None
    return (f"available {f['rtscope_avail']:.2f} % (rtscope noise, "
            f"{f['rtscope_runtime_s']:.2f} s of runtime) vs {f['osnoise_avail']:.2f} % (osnoise, "
            f"{f['osnoise_periods']} periods, {f['osnoise_runtime_s']:.2f} s); longest single "
            f"noise {f['rtscope_single_us']:.0f} us vs {f['osnoise_single_us']} us")


def raised_threshold(doc: dict) -> tuple[bool, str]:
    """Whether a run at the default threshold ran with 1 µs raised to twice the slowest
    loop's pre-heat resolution (rounded up to a whole µs), and counted at most half of its
    iterations as noise (the bug counted every one). Not the available share: on a loaded
    host the emulated CPU loses most of its time to the host (9 % available on rt-arm64
    beside a CI run, its hog and a cross build), and that is noise."""
    cfg = doc.get("config", {})
    res = max(cfg.get("resolution_ns") or [0])
    want = max(1000, -(-2 * res // 1000) * 1000)
    cpus = doc.get("cpus") or [{}]
    s = cpus[0].get("summary", {})
    over, its = s.get("gaps_over_threshold", 0), s.get("iterations", 0)
    ok = (cfg.get("threshold_rule") == "default" and cfg.get("threshold_requested_ns") == 1000
          and cfg.get("threshold_ns") == want and its > 0 and 2 * over <= its)
    return ok, (f"resolution {res} ns, threshold {cfg.get('threshold_ns')} ns (want {want}), "
                f"rule {cfg.get('threshold_rule')}, {over} of {its} iterations over it, "
                f"available {s.get('available_percent') or 0.0:.2f} %")


def verify_noise(c, kernel: str, r) -> None:
    if r.checks().get("noise") is None:
        return  # no osnoise tracer in this kernel: nothing ran
    c.expect(kernel, "rtscope noise exits 0 in the guest", r.checks().get("noise") == 0,
             f"rc {r.checks().get('noise')}")
    restored = r.value("osnoise-restored") or ""
    before, _, after = restored.partition(" -> ")
    c.expect(kernel, "osnoise settings written back after the osnoise tracer",
             bool(before) and before == after, restored or "not marked")
    noise = json.loads(r.files.get("noise.json") or b"{}")
    text = (r.files.get("osnoise.txt") or b"").decode(errors="replace")
    line = compare(noise, text)
    print(f"INFO {kernel}: rtscope noise vs the kernel's osnoise tracer, CPU 1 with the culprit "
          f"(20 % injected): {line or 'no figures from one of them'}", flush=True)
    f = figures(noise, text)
    c.expect(kernel, f"rtscope noise and osnoise both see the 20 ms culprit (longest single "
             f"noise >= {CULPRIT_SEEN_US} us each)",
             f is not None and min(f["rtscope_single_us"], f["osnoise_single_us"]) >= CULPRIT_SEEN_US,
             line or "no figures from one of them")
    after = json.loads(r.files.get("noise-after.json") or b"{}")
    fa = figures(after, text)
    after_avail = fa["rtscope_avail"] if fa is not None else None
    c.expect(kernel, "rtscope noise exits 0 again after osnoise", r.checks().get("noise-after") == 0,
             f"rc {r.checks().get('noise-after')}")
    c.figure(kernel, f"osnoise's available share lies within {AVAILABLE_TOLERANCE:.0f} points of "
             "the rtscope runs before and after it",
             f is not None and bracketed(f["rtscope_avail"], f["osnoise_avail"], after_avail),
             (line or "no figures from one of them")
             + (f"; rtscope after: available {after_avail:.2f} %" if after_avail is not None
                else "; no rtscope run after osnoise"))
    verify_interference(c, kernel, r, text)
    verify_injected(c, kernel, r)
    c.expect(kernel, "rtscope noise at the default threshold exits 0",
             r.checks().get("noise-default") == 0, f"rc {r.checks().get('noise-default')}")
    ok, detail = raised_threshold(json.loads(r.files.get("noise-default.json") or b"{}"))
    c.expect(kernel, "the default threshold is raised to the slow loop's resolution", ok, detail)


def verify_interference(c, kernel: str, r, text: str) -> None:
    """The explained run's interference counts per class against osnoise's, and the time the
    host took named hypervisor."""
    c.expect(kernel, "rtscope noise --explain exits 0 in the guest",
             r.checks().get("noise-explained") == 0, f"rc {r.checks().get('noise-explained')}")
    doc = json.loads(r.files.get("noise-explained.json") or b"{}")
    if guest.is_rt(kernel):
        ok, detail = reference.traced_from_start(doc.get("explain") or {})
        c.expect(kernel, "noise --explain measures once the timerlat tracer is live: no gap "
                 "before it", ok, detail)
    rt, o = rtscope_rates(doc), osnoise_rates(text)
    if rt is None or o is None:
        c.expect(kernel, "rtscope noise --explain and osnoise both count interference per class",
                 False, f"rtscope counts: {rt is not None}, osnoise periods: {o is not None}")
        return
    ok, detail = rates_agree(rt, o, None, guest.is_rt(kernel))
    print(f"INFO {kernel}: interference per second of runtime, {detail}", flush=True)
    c.figure(kernel, f"each of the guest's interference classes of osnoise's within a factor of "
             f"{RATE_FACTOR:.0f} (or {RATE_SLACK:.0f}/s) of rtscope's", ok, detail)
    ok, detail = exits_reached(doc, r.values("noise-retry"))
    c.expect(kernel, "noise --explain: the kernel's interrupt exits reached the trace", ok, detail)
    named, detail = hypervisor_named(doc)
    c.expect(kernel, "the time the host took from the emulated CPU is named hypervisor (its "
             "share above 0, HW gaps counted)", hypervisor_seen(doc), detail)
    c.figure(kernel, "the time the host took is mostly named: less left unexplained than named "
             "hypervisor", named, detail)


def exits_reached(doc: dict, retries: list[str]) -> tuple[bool, str]:
    """Whether every interrupt's exit reached the explained run's trace (its `missing_exits`
    empty). Without them rtscope cannot tell an interrupt from the host's time and names none
    of it hypervisor (rtscope-trace's `exits`), so the hypervisor check below cannot judge such
    a run: the guest runs it once more (`noise-retry`), and a second such run fails here."""
    ok, detail, again = reference.rtscope_exits(doc.get("explain") or {}, retries,
                                                "noise-explained")
    return ok, detail + again


def hypervisor_seen(doc: dict) -> bool:
    """The function hypervisor_named's figure rests on: the explained run named some of the
    traced gap time hypervisor and counted HW gaps."""
    t = doc.get("explain_classes") or {}
    rows = (doc.get("explain") or {}).get("interference") or [{}]
    return t.get("hypervisor_ns", 0) > 0 and rows[0].get("hw", 0) > 0


def hypervisor_named(doc: dict) -> tuple[bool, str]:
    """Whether an explained run in a TCG guest names the time the host took: the hypervisor's
    share of the traced gap time above 0 and above the unexplained share (time below the
    kernel is the hypervisor's on a guest, mostly named, not left unexplained), and HW gaps
    counted. Neither share has a fixed bar: the hypervisor's is the host's load at that moment
    (12 % to 61 % in ten runs), and the unexplained (0 % to 3.8 % in nine of them) was 11.2 %
    on rt-arm64 in one pass beside the hog, with the hypervisor at 56.3 %."""
    t = doc.get("explain_classes") or {}
    total = sum(v for k, v in t.items() if k.endswith("_ns"))
    hyp, unexplained = t.get("hypervisor_ns", 0), t.get("unexplained_ns", 0)
    rows = (doc.get("explain") or {}).get("interference") or [{}]
    hw = rows[0].get("hw", 0)
    ok = total > 0 and hyp > 0 and unexplained < hyp and hw > 0
    share = (lambda v: 100 * v / total if total else 0.0)
    return ok, (f"hypervisor {share(hyp):.1f} % of {total / 1e6:.0f} ms of traced gaps, "
                f"thread {share(t.get('thread_ns', 0)):.1f} %, irq {share(t.get('irq_ns', 0)):.1f} %, "
                f"unexplained {share(unexplained):.1f} %; {hw} HW gaps")


# Injected ground truth in the guest (issue 33): the culprit's spins by its own clock
# (culprit.c's LOG), each found inside one gap with both edges within max(1 us, 2 %), at least
# INJECTED_FOUND of those inside the loop's windows; the explained run charges at least
# INJECTED_CHARGED of their time to the culprit by name and PID. Only the lower side of a gap
# is bounded: under emulation the host may stop the vCPU just before or after a spin, which
# lengthens the gap (the excess is printed).
INJECTED_FOUND = 0.99
INJECTED_CHARGED = 0.95
# The function checks ask for most of them (found, charged by name and PID) whatever the
# host's load; the shares above are figures (Checker.figure), required with --figures.
INJECTED_FUNCTION = 0.5
# An interrupt charged more than this in a gap was stopped by the host inside its handler (a
# timer handler takes tens of microseconds; beside the hog one took 12.3 ms of a 23.4 ms
# spin on rt-amd64): the culprit's clock counts that time as its spin, the trace as the
# interrupt's, and neither is wrong, so it is credited like the reference's undecidable time
# (both shares printed).
STALLED_IRQ_NS = 1_000_000
# A spin counts when it lies this far inside one of the loop's runtime windows.
WINDOW_MARGIN_NS = 1_000_000


def parse_spins(text: str) -> list[tuple[int, int]]:
    """culprit.c's log: one `START END` (CLOCK_MONOTONIC ns) per spin."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            out.append((int(parts[0]), int(parts[1])))
    return out


def spins_measured(doc: dict, spins: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spins inside the run's runtime windows (`clock_start_ns` + k periods, `runtime_ns`
    each, until `duration_ns`), WINDOW_MARGIN_NS from their edges, that took the CPU for at
    least the run's threshold while the loop was spinning (`loop_spinning`). The culprit spins
    until an absolute time (its period start + 20 ms): woken more than 20 ms late — beside a
    loaded host a 232.9 ms gap ended 7.4 ms before one — it logs a spin of 0 ns, which injects
    nothing to find."""
    cfg, start = doc.get("config") or {}, doc.get("clock_start_ns")
    period, runtime, duration = (cfg.get(k) for k in ("period_ns", "runtime_ns", "duration_ns"))
    if not (start and period and runtime and duration):
        return []
    gaps = run_gaps(doc)
    out = []
    for a, b in spins:
        if a < start or b - a < (cfg.get("threshold_ns") or 0):
            continue
        w = start + (a - start) // period * period
        end = min(w + runtime, start + duration)
        if (a >= w + WINDOW_MARGIN_NS and b <= end - WINDOW_MARGIN_NS
                and loop_spinning(gaps, start, w, a, b)):
            out.append((a, b))
    return out


def run_gaps(doc: dict) -> list[tuple[int, int]]:
    """The first CPU's gaps (`--json`) as sorted (start, end) on CLOCK_MONOTONIC."""
    start = doc.get("clock_start_ns") or 0
    return sorted((start + g["offset_ns"], start + g["offset_ns"] + g["duration_ns"])
                  for g in ((doc.get("cpus") or [{}])[0].get("gaps") or []))


def loop_spinning(gaps: list[tuple[int, int]], start: int, w: int, a: int, b: int) -> bool:
    """Whether the loop was spinning when a spin took the CPU at `a`, in the window from `w`.
    The first window starts without a sleep. A later one starts when the loop's sleep ends,
    and its wake-up can come after the window's start: beside the hog, on rt-amd64, a host
    stall held it and the culprit (FIFO 99) ran first, and the loop's first gap came 66 ms
    into its window, after a 15.5 ms spin no gap held. Nothing was measured then. The loop
    shows that it ran in the window by a gap there that started by the spin's start (one
    before it, or the spin's own): the loop's gaps follow one another, so the last to start by
    then is the one that ends latest."""
    j = bisect.bisect_right(gaps, (a + max(1000, (b - a) // 50), 1 << 63))
    return w == start or (j > 0 and gaps[j - 1][1] > w)


def covering(spans: list[tuple[int, int]], a: int, b: int) -> tuple[int, int] | None:
    """The span of `spans` (sorted by start) holding [a, b] with both edges within max(1 us,
    2 % of b - a)."""
    tol = max(1000, (b - a) // 50)
    i = bisect.bisect_right(spans, (a + tol, 1 << 63))
    for s in reversed(spans[max(0, i - 4):i]):
        if s[0] <= a + tol and s[1] >= b - tol:
            return s
    return None


def injected_found(doc: dict, spins: list[tuple[int, int]],
                   share: float = INJECTED_FOUND) -> tuple[bool, str]:
    """Whether the run's gaps (`--json`, on CLOCK_MONOTONIC from `clock_start_ns`) hold the
    injected spins: `share` of them each inside one gap."""
    gaps = run_gaps(doc)
    inside = spins_measured(doc, spins)
    excess = sorted((g[1] - g[0]) - (b - a) for a, b in inside
                    if (g := covering(gaps, a, b)) is not None)
    ok = bool(inside) and len(excess) >= share * len(inside)
    return ok, (f"{len(excess)} of {len(inside)} injected spins in the loop's windows found in "
                f"one gap each (of {len(spins)} logged), edges within max(1 us, 2 %)"
                + (f"; the gap beyond the spin: median {excess[len(excess) // 2] / 1e3:.1f} us, "
                   f"max {excess[-1] / 1e3:.1f} us" if excess else ""))


def injected_charged(doc: dict, spins: list[tuple[int, int]], pid: int,
                     share: float = INJECTED_CHARGED) -> tuple[bool, str]:
    """Whether the explained run charges `share` of the injected spins' time to the culprit by
    name and PID, in the kept traced gap holding each (at most the spin's time)."""
    kept = sorted((w["spike"]["deadline_ns"], w["spike"]["wakeup_ns"], i)
                  for i, w in enumerate((doc.get("explain") or {}).get("worst") or [])
                  if "charges" in w)
    worst = (doc.get("explain") or {}).get("worst") or []
    spans = [(a, b) for a, b, _ in kept]
    inside = spins_measured(doc, spins)
    total = charged = credited = held = 0
    for a, b in inside:
        total += b - a
        g = covering(spans, a, b)
        if g is None:
            continue
        held += 1
        w = worst[kept[spans.index(g)][2]]
        ns = sum(int(ch["ns"]) for ch in w["charges"] if ch.get("kind") == "thread"
                 and ch.get("pid") == pid and ch.get("comm") == "culprit")
        stalled = sum(max(0, int(ch["ns"]) - STALLED_IRQ_NS) for ch in w["charges"]
                      if ch.get("kind") == "irq")
        charged += min(ns, b - a)
        credited += min(ns + stalled, b - a)
    ok = total > 0 and credited >= share * total
    pct = (lambda v: 100 * v / total if total else 0.0)
    return ok, (f"{pct(charged):.1f} % of {total / 1e6:.1f} ms of {len(inside)} injected spins "
                f"charged to culprit:{pid}, {pct(credited):.1f} % with the interrupts the host "
                f"stopped (past {STALLED_IRQ_NS // 1_000_000} ms); {held} of them in a kept "
                "traced gap")


def verify_injected(c, kernel: str, r) -> None:
    """The culprit's logged spins against the first noise run and the explained run."""
    spins = parse_spins((r.files.get("culprit-spins.txt") or b"").decode(errors="replace"))
    pid = int(r.value("culprit-pid") or 0)
    found = json.loads(r.files.get("noise.json") or b"{}")
    ok, detail = injected_found(found, spins, INJECTED_FUNCTION)
    c.expect(kernel, f"rtscope noise finds most (>= {INJECTED_FUNCTION:.0%}) of the injected "
             "spins, each in one gap", ok, detail)
    ok, detail = injected_found(found, spins)
    c.figure(kernel, f"rtscope noise finds >= {INJECTED_FOUND:.0%} of the injected spins, each "
             "in one gap", ok, detail)
    explained = json.loads(r.files.get("noise-explained.json") or b"{}")
    ok, detail = injected_charged(explained, spins, pid, INJECTED_FUNCTION)
    c.expect(kernel, f"rtscope noise --explain charges most (>= {INJECTED_FUNCTION:.0%}) of the "
             "injected spins' time to the culprit by name and PID", ok, detail)
    ok, detail = injected_charged(explained, spins, pid)
    c.figure(kernel, f"rtscope noise --explain charges >= {INJECTED_CHARGED:.0%} of the injected "
             "spins' time to the culprit by name and PID", ok, detail)


def irqs_off(doc: dict) -> tuple[bool, str]:
    """Whether an `--irqs-off` run's JSON is the kernel's hwlat measurement of CPU 1: its
    schema, the width and window asked for, and at least one window run."""
    cfg = doc.get("config", {})
    cpus = doc.get("cpus") or [{}]
    ok = (doc.get("schema") == "rtscope.hwnoise/1" and cfg.get("cpus") == [1]
          and cfg.get("width_us") == 100000 and cfg.get("window_us") == 500000
          and cpus[0].get("windows", 0) >= 1)
    return ok, (f"schema {doc.get('schema')}, {cpus[0].get('windows')} windows, "
                f"{cpus[0].get('samples')} with a gap over {cfg.get('threshold_us')} us, longest "
                f"inner/outer {cpus[0].get('max_inner_us')}/{cpus[0].get('max_outer_us')} us, "
                f"NMIs {cpus[0].get('nmis')}")


def verify_irqs_off(c, kernel: str, r) -> None:
    """`rtscope noise --irqs-off`: run by the kernel's hwlat tracer where the kernel has it,
    its settings written back; refused naming CONFIG_HWLAT_TRACER where it has not."""
    rc = r.checks().get("irqs-off")
    err = (r.files.get("irqs-off.err") or b"").decode(errors="replace")
    if (r.value("hwlat-available") or "") != "yes":
        c.expect(kernel, "noise --irqs-off is refused naming CONFIG_HWLAT_TRACER (no hwlat tracer)",
                 rc == 2 and "CONFIG_HWLAT_TRACER" in err, f"rc {rc}: {err.strip()[:200]}")
        return
    c.expect(kernel, "noise --irqs-off exits 0 with the kernel's hwlat tracer", rc == 0,
             f"rc {rc}: {err.strip()[:200]}")
    ok, detail = irqs_off(json.loads(r.files.get("irqs-off.json") or b"{}"))
    print(f"INFO {kernel}: noise --irqs-off on CPU 1: {detail}", flush=True)
    c.expect(kernel, "noise --irqs-off reports the hwlat windows of CPU 1", ok, detail)
    restored = r.value("hwlat-restored") or ""
    before, _, after = restored.partition(" -> ")
    c.expect(kernel, "the hwlat tracer's settings are written back after --irqs-off",
             bool(before) and before == after, restored or "not marked")
