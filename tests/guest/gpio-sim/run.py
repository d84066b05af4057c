#!/usr/bin/env python3
"""`rtscope respond` on a simulated GPIO chip in a QEMU guest (gpio-sim), end to end, in a boot
of its own (CI runs the same checks in the amd64 kernel's one boot: `guest.py check --gpio-sim`).

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
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import checks  # noqa: E402  (tests/guest/checks.py: the PASS/FAIL lines)
import gpio_checks  # noqa: E402
import guest  # noqa: E402  (tests/guest/guest.py, the boards harness)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rtscope", type=Path, required=True, help="static rtscope for the guest")
    p.add_argument("--kernel", default="amd64", help="Debian flavour [amd64]")
    p.add_argument("--out", type=Path, default=Path("target/guest/gpio-sim"))
    p.add_argument("--host-rtscope", type=Path, help="reads the guest's database [--rtscope]")
    p.add_argument("--edges", type=int, default=gpio_checks.EDGES)
    p.add_argument("--timeout", type=float, default=900, help="outer timeout of the boot, s")
    a = p.parse_args(argv)
    if a.edges <= 0 or a.edges % 2:
        p.error("--edges must be a positive even number")
    a.out.mkdir(parents=True, exist_ok=True)
    c = checks.Checker()
    try:
        t0 = time.monotonic()
        kernel = guest.fetch_kernel(a.kernel)
        ko, build_line = gpio_checks.build_module(kernel.abi, a.out / "module")
        print(f"kernel {kernel.abi}; {build_line}; fetch+build {time.monotonic() - t0:.1f} s", flush=True)
        script = (HERE / "guest-gpio-sim.sh").read_text()
        r = guest.boot(a.kernel, script, a.rtscope, files={"/root/gpio-sim.ko": ko},
                       modules=["configfs"], env={"EDGES": str(a.edges)}, timeout=a.timeout,
                       console_log=a.out / "console.log")
    except (guest.GuestError, subprocess.CalledProcessError, OSError) as e:
        print(f"FAIL gpio-sim: set-up - {e}", file=sys.stderr)
        return 2
    gpio_checks.verify(c, a.kernel, r, a.edges, a.out, a.host_rtscope or a.rtscope, own_boot=True)
    print(f"boot+checks {r.seconds:.1f} s")
    if c.failed:
        print(f"\n{len(c.failed)} gpio-sim check(s) failed; console in {a.out}/console.log", file=sys.stderr)
        return 1
    print("\nall gpio-sim checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
