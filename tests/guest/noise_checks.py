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

And the default threshold where the loop is slow: a clock read under TCG takes about 1.1 us, so
the 1 us default must be raised to twice the loop's resolution (rounded up to a microsecond)
and recorded as raised, and at most half the iterations may count as noise (the bug: every
iteration counted, 0.00000 % available).
"""

from __future__ import annotations

import json
import re

# `  osnoise/1-215   [001] .....   123.456: 1000000  200315  79.96850   20012   0   0   1041   35   12`
SAMPLE = re.compile(r"\[(\d+)\][^:]*\d+\.\d+:\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)"
                    r"\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")


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
    c.expect(kernel, f"osnoise's available share lies within {AVAILABLE_TOLERANCE:.0f} points of "
             "the rtscope runs before and after it",
             f is not None and bracketed(f["rtscope_avail"], f["osnoise_avail"], after_avail),
             (line or "no figures from one of them")
             + (f"; rtscope after: available {after_avail:.2f} %" if after_avail is not None
                else "; no rtscope run after osnoise"))
    c.expect(kernel, "rtscope noise at the default threshold exits 0",
             r.checks().get("noise-default") == 0, f"rc {r.checks().get('noise-default')}")
    ok, detail = raised_threshold(json.loads(r.files.get("noise-default.json") or b"{}"))
    c.expect(kernel, "the default threshold is raised to the slow loop's resolution", ok, detail)


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
