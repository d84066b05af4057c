#!/usr/bin/env python3
"""`rtscope respond` on a simulated GPIO chip in a QEMU guest (gpio-sim), end to end.

    python3 tests/guest/gpio-sim/run.py --rtscope target/x86_64-unknown-linux-musl/release/rtscope
                                        [--kernel amd64] [--out target/guest/gpio-sim]
                                        [--edges 200] [--timeout 900]

1. Fetches the guest kernel with the boards harness (tests/guest/guest.py) and builds gpio-sim
   for its ABI out of tree from Debian's linux-source and linux-headers (build-module.sh; no
   kernel source is kept in the repository).
2. Boots the kernel with the module and a static rtscope; guest-gpio-sim.sh sets the sim chip up
   through configfs, starts `rtscope respond` on line 0 (answering on line 1) and makes EDGES
   edges with the simulator's `pull` attribute.
3. Checks, from the marker lines and the files sent back: every edge received (rising and
   falling half each), none lost, the responder's level seen by the simulator after every edge,
   the busy line refused, exit code 0, the JSON and the database written (the database opens on
   the host: one `respond` run with every edge's intervals). One PASS/FAIL line per check; exit 0 only if all passed. QEMU runs under an outer
   timeout; its exit code is never used.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import guest  # noqa: E402  (tests/guest/guest.py, the boards harness)


class Checker:
    def __init__(self) -> None:
        self.failed: list[str] = []

    def expect(self, name: str, ok: bool, detail: str = "") -> None:
        print(f"{'PASS' if ok else 'FAIL'} gpio-sim: {name}{(' - ' + detail) if detail else ''}",
              flush=True)
        if not ok:
            self.failed.append(name)


def build_module(abi: str, out: Path) -> tuple[Path, str]:
    p = subprocess.run(["bash", str(HERE / "build-module.sh"), abi, str(out)],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise guest.GuestError(f"module build failed:\n{p.stdout}\n{p.stderr}")
    lines = p.stdout.strip().splitlines()
    return Path(lines[-1]), next((x for x in lines if x.startswith("module build")), "")


def verify(c: Checker, r: guest.BootResult, edges: int, out: Path,
           host_rtscope: Path | None) -> None:
    c.expect("guest finished within the outer timeout", r.finished and not r.timed_out,
             f"{r.seconds:.0f} s")
    c.expect("gpio-sim module loaded", r.checks().get("insmod-gpio-sim") == 0)
    c.expect("sim chip live through configfs", r.value("sim-ready") == "1", r.value("sim-chip") or "")
    c.expect("rtscope respond --list-lines shows the sim's named lines",
             r.checks().get("list-lines") == 0 and r.value("list-lines-named") == "2")
    c.expect("a busy line is refused (exit 2, 'is busy')", r.value("busy-rc") == "2 1",
             r.value("busy-rc") or "")
    c.expect("rtscope respond exit code 0", r.value("respond-rc") == "0", r.value("respond-rc") or "")
    c.expect(f"the simulator saw the response level after all {edges} edges",
             r.value("levels-followed") == str(edges), r.value("levels-followed") or "")
    for name, data in r.files.items():
        (out / name).write_bytes(data)
    raw = r.files.get("respond.json")
    c.expect("JSON written", raw is not None)
    if raw is None:
        return
    doc = json.loads(raw)
    rows = doc.get("results", [])
    lines = rows[0].get("lines", {}) if rows else {}
    inp = lines.get("input", {})
    c.expect(f"all {edges} edges received, half rising, half falling",
             inp.get("rising") == edges // 2 and inp.get("falling") == edges // 2, str(inp))
    c.expect("no edge lost (kernel sequence numbers)", inp.get("lost") == 0, str(inp.get("lost")))
    names = {(x.get("interval"), x.get("edge")) for x in rows}
    want = {(i, e) for i in ("timestamp-to-wakeup", "wakeup-to-response") for e in ("rising", "falling")}
    c.expect("timestamp-to-wakeup and wakeup-to-response per edge direction", want <= names,
             ", ".join(sorted(f"{i}/{e}" for i, e in names)))
    c.expect("each interval counted every edge of its direction",
             all(x.get("samples") == edges // 2 for x in rows), str([x.get("samples") for x in rows]))
    db = r.files.get("guest.db")
    c.expect("database written in the guest", db is not None, f"{len(db or b'')} bytes")
    if db is None or host_rtscope is None:
        return
    runs = subprocess.run([str(host_rtscope), "runs", "--json", "--db", str(out / "guest.db")],
                          capture_output=True, text=True, timeout=120)
    listed = json.loads(runs.stdout) if runs.returncode == 0 else []
    c.expect("the guest database opens on the host: one respond run, complete",
             len(listed) == 1 and listed[0].get("kind") == "respond"
             and listed[0].get("status") == "complete"
             and listed[0].get("samples") == 2 * edges,
             str([(x.get("kind"), x.get("status"), x.get("samples")) for x in listed]))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rtscope", type=Path, required=True, help="static rtscope for the guest")
    p.add_argument("--kernel", default="amd64", help="Debian flavour [amd64]")
    p.add_argument("--out", type=Path, default=Path("target/guest/gpio-sim"))
    p.add_argument("--host-rtscope", type=Path, help="reads the guest's database [--rtscope]")
    p.add_argument("--edges", type=int, default=200)
    p.add_argument("--timeout", type=float, default=900, help="outer timeout of the boot, s")
    a = p.parse_args(argv)
    if a.edges <= 0 or a.edges % 2:
        p.error("--edges must be a positive even number")
    a.out.mkdir(parents=True, exist_ok=True)
    c = Checker()
    try:
        t0 = time.monotonic()
        kernel = guest.fetch_kernel(a.kernel)
        ko, build_line = build_module(kernel.abi, a.out / "module")
        print(f"kernel {kernel.abi}; {build_line}; fetch+build {time.monotonic() - t0:.1f} s", flush=True)
        script = (HERE / "guest-gpio-sim.sh").read_text()
        r = guest.boot(a.kernel, script, a.rtscope, files={"/root/gpio-sim.ko": ko},
                       modules=["configfs"], env={"EDGES": str(a.edges)}, timeout=a.timeout,
                       console_log=a.out / "console.log")
    except (guest.GuestError, subprocess.CalledProcessError, OSError) as e:
        print(f"FAIL gpio-sim: set-up - {e}", file=sys.stderr)
        return 2
    verify(c, r, a.edges, a.out, a.host_rtscope or a.rtscope)
    print(f"boot+checks {r.seconds:.1f} s")
    if c.failed:
        print(f"\n{len(c.failed)} gpio-sim check(s) failed; console in {a.out}/console.log", file=sys.stderr)
        return 1
    print("\nall gpio-sim checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
