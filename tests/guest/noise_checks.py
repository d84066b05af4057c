"""`rtscope noise` like for like with the kernel's osnoise tracer (issue 33), host side.

In each guest with the injected culprit (rtscope-checks.sh: FIFO 99, 20 ms every 100 ms on
CPU 1), `rtscope noise -D 4s --cpus 1 --runtime 950ms --period 1s` runs, then the kernel's
osnoise tracer on CPU 1 with the same runtime and period for 4 s. Both loops run at
SCHED_OTHER, so both lose the culprit's share of the CPU. Checked: rtscope noise exits 0 and
the osnoise settings are written back; printed as INFO: the available share and the longest
single noise of each, one after the other on an emulated CPU (not a bar yet).
"""

from __future__ import annotations

import json
import re

# `  osnoise/1-215   [001] .....   123.456: 1000000  200315  79.96850   20012   0   0   1041   35   12`
SAMPLE = re.compile(r"\[(\d+)\][^:]*\d+\.\d+:\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)"
                    r"\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")


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


def compare(noise_json: dict, osnoise_text: str, cpu: int = 1) -> str | None:
    """One line: both tools' available share and longest single noise, or None without
    both figures."""
    cpus = [c for c in noise_json.get("cpus", []) if c.get("summary", {}).get("cpu") == cpu]
    periods = osnoise_periods(osnoise_text, cpu)
    if not cpus or not periods:
        return None
    s = cpus[0]["summary"]
    runtime = sum(p["runtime_us"] for p in periods)
    noise = sum(p["noise_us"] for p in periods)
    avail = 100 * (runtime - noise) / runtime if runtime else float("nan")
    single = max(p["max_single_us"] for p in periods)
    return (f"available {s['available_percent']:.2f} % (rtscope noise, "
            f"{s['runtime_ns'] / 1e9:.2f} s of runtime) vs {avail:.2f} % (osnoise, "
            f"{len(periods)} periods, {runtime / 1e6:.2f} s); longest single noise "
            f"{s['max_single_ns'] / 1e3:.0f} us vs {single} us")


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
