"""Reference agreement for kernel sections with preemption or interrupts off (manual step).

    python3 tests/guest/noisy/run.py --kernel rt-amd64 \
        --rtscope target/x86_64-unknown-linux-musl/release/rtscope [--modes preempt,irq]

Builds noisy.ko for the kernel's ABI (build.sh), boots the kernel with it (guest.py), runs
guest-noisy.sh and compares rtscope's attribution of each kept spike with the reference
instance (reference.py). Prints the figures; exit 0 when every mode's run exited 0 and at
least one spike was compared (the agreement is printed, not required: tests/guest/README.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import guest  # noqa: E402
import reference  # noqa: E402


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default="rt-amd64", help="amd64 or rt-amd64")
    p.add_argument("--rtscope", type=Path, required=True)
    p.add_argument("--modes", default="preempt,irq")
    p.add_argument("--out", type=Path, default=Path("target/guest/noisy"))
    p.add_argument("--timeout", type=float, default=900)
    a = p.parse_args(argv)
    out = a.out / a.kernel
    out.mkdir(parents=True, exist_ok=True)
    k = guest.fetch_kernel(a.kernel)
    built = subprocess.run(["bash", str(HERE / "build.sh"), k.abi, str(out / "build")],
                           capture_output=True, text=True)
    if built.returncode != 0:
        print(f"FAIL {a.kernel}: noisy.ko does not build: {built.stderr[-500:]}")
        return 1
    modes = [m for m in a.modes.split(",") if m]
    r = guest.boot(a.kernel, (HERE / "guest-noisy.sh").read_text(), a.rtscope,
                   env={"MODES": " ".join(modes)},
                   files={"/root/noisy.ko": Path(built.stdout.strip().splitlines()[-1])},
                   timeout=a.timeout, console_log=out / "console.log")
    for name, data in r.files.items():
        (out / name).write_bytes(data)
    ok = r.finished
    for mode in modes:
        rc = r.checks().get(f"explain-{mode}")
        x = json.loads(r.files.get(f"explain-{mode}.json") or b"{}").get("explain") or {}
        ref = reference.parse((r.files.get(f"reference-{mode}.txt") or b"").decode(
            errors="replace"), 1)
        c = reference.compare(x, ref, 1, culprit=f"noisy-{mode}")
        for line in c.lines:
            print(f"  {a.kernel} {mode}: {line}")
        print(f"{a.kernel} {mode}: rc {rc}, tier {x.get('tier')}: {reference.summary(c)}")
        ok = ok and rc == 0 and c.spikes > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
