"""`rtscope respond` on a simulated GPIO chip (gpio-sim), host side: the module's build for a
kernel's ABI (gpio-sim/build-module.sh, from Debian's linux-source) and the checks of what
gpio-sim/guest-gpio-sim.sh reported. `guest.py check --gpio-sim KERNELS` runs it in the same
boot as the other checks of a kernel; `gpio-sim/run.py` boots a kernel for it alone.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import guest

HERE = Path(__file__).resolve().parent
# Edges the stimulus makes in the guest (half rising, half falling).
EDGES = 200


def build_module(abi: str, out: Path) -> tuple[Path, str]:
    p = subprocess.run(["bash", str(HERE / "gpio-sim" / "build-module.sh"), abi, str(out)],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise guest.GuestError(f"module build failed:\n{p.stdout}\n{p.stderr}")
    lines = p.stdout.strip().splitlines()
    return Path(lines[-1]), next((x for x in lines if x.startswith("module build")), "")


def verify(c, kernel: str, r: guest.BootResult, edges: int, out: Path,
           host_rtscope: Path | None, own_boot: bool) -> None:
    """The checks of guest-gpio-sim.sh's markers and files, as PASS/FAIL lines through
    `c.expect(kernel, name, ok, detail)`; `own_boot` when the boot ran only this test."""
    if own_boot:
        c.expect(kernel, "guest finished within the outer timeout", r.finished and not r.timed_out,
                 f"{r.seconds:.0f} s")
    c.expect(kernel, "gpio-sim: the module loaded", r.checks().get("insmod-gpio-sim") == 0)
    c.expect(kernel, "gpio-sim: sim chip live through configfs", r.value("sim-ready") == "1", r.value("sim-chip") or "")
    c.expect(kernel, "gpio-sim: rtscope respond --list-lines shows the sim's named lines",
             r.checks().get("list-lines") == 0 and r.value("list-lines-named") == "2")
    c.expect(kernel, "gpio-sim: a busy line is refused (exit 2, 'is busy')", r.value("busy-rc") == "2 1",
             r.value("busy-rc") or "")
    c.expect(kernel, "gpio-sim: rtscope respond exit code 0", r.value("respond-rc") == "0", r.value("respond-rc") or "")
    c.expect(kernel, f"gpio-sim: the simulator saw the response level after all {edges} edges",
             r.value("levels-followed") == str(edges), r.value("levels-followed") or "")
    for name in ("respond.json", "respond.log", "gpio.db"):
        if name in r.files:
            (out / name).write_bytes(r.files[name])
    raw = r.files.get("respond.json")
    c.expect(kernel, "gpio-sim: JSON written", raw is not None)
    if raw is None:
        return
    doc = json.loads(raw)
    rows = doc.get("results", [])
    lines = rows[0].get("lines", {}) if rows else {}
    inp = lines.get("input", {})
    c.expect(kernel, f"gpio-sim: all {edges} edges received, half rising, half falling",
             inp.get("rising") == edges // 2 and inp.get("falling") == edges // 2, str(inp))
    c.expect(kernel, "gpio-sim: no edge lost (kernel sequence numbers)", inp.get("lost") == 0, str(inp.get("lost")))
    names = {(x.get("interval"), x.get("edge")) for x in rows}
    want = {(i, e) for i in ("timestamp-to-wakeup", "wakeup-to-response") for e in ("rising", "falling")}
    c.expect(kernel, "gpio-sim: timestamp-to-wakeup and wakeup-to-response per edge direction", want <= names,
             ", ".join(sorted(f"{i}/{e}" for i, e in names)))
    c.expect(kernel, "gpio-sim: each interval counted every edge of its direction",
             all(x.get("samples") == edges // 2 for x in rows), str([x.get("samples") for x in rows]))
    db = r.files.get("gpio.db")
    c.expect(kernel, "gpio-sim: database written in the guest", db is not None, f"{len(db or b'')} bytes")
    if db is None or host_rtscope is None:
        return
    runs = subprocess.run([str(host_rtscope), "runs", "--json", "--db", str(out / "gpio.db")],
                          capture_output=True, text=True, timeout=120)
    listed = json.loads(runs.stdout) if runs.returncode == 0 else []
    c.expect(kernel, "gpio-sim: the guest database opens on the host: one respond run, complete",
             len(listed) == 1 and listed[0].get("kind") == "respond"
             and listed[0].get("status") == "complete"
             and listed[0].get("samples") == 2 * edges,
             str([(x.get("kind"), x.get("status"), x.get("samples")) for x in listed]))
