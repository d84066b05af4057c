"""Reference agreement for noise of known kinds on the measured CPU (manual step): kernel
sections with preemption or interrupts off, an interrupt storm, softirq work, network receive.

    python3 tests/guest/noisy/run.py --kernel rt-amd64 \
        --rtscope target/x86_64-unknown-linux-musl/release/rtscope \
        [--modes preempt,irq,storm,softirq,net]

Builds noisy.ko for the kernel's ABI (build.sh), boots the kernel with it (guest.py), runs
guest-noisy.sh and compares rtscope's attribution of each kept spike with the reference
instance (reference.py), the injected noise as the culprit (CULPRITS). Prints the figures;
exit 0 when every mode's run exited 0 and at least one spike was compared, and with --bar (CI,
tests/guest/ci.sh) when every mode meets reference.bar too.
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

# The modes that need noisy.ko (build.sh); net needs no module.
MODULE_MODES = {"preempt", "irq", "storm", "softirq"}

# What each mode's injected noise is called in reference.compare (reference.culprit_matcher).
CULPRITS = {
    "preempt": "noisy-preempt",
    "irq": "noisy-irq",
    "storm": "vector:call_function_single",
    "softirq": "softirq:TASKLET",
    "net": "softirq:NET_RX",
}


def culprit_of(mode: str, kernel: str) -> str:
    """The mode's culprit on this kernel: arm64's function-call IPIs are hard interrupts named
    `IPI` (one number per IPI kind), not an x86 vector."""
    if mode == "storm" and kernel.endswith("arm64"):
        return "irq:IPI"
    return CULPRITS[mode]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default="rt-amd64",
                   help="amd64, rt-amd64 or rt-arm64")
    p.add_argument("--rtscope", type=Path, required=True)
    p.add_argument("--modes", default=",".join(CULPRITS))
    p.add_argument("--out", type=Path, default=Path("target/guest/noisy"))
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--bar", action="store_true",
                   help="exit 1 unless every mode meets reference.bar (CI)")
    a = p.parse_args(argv)
    out = a.out / a.kernel
    out.mkdir(parents=True, exist_ok=True)
    modes = [m for m in a.modes.split(",") if m]
    unknown = [m for m in modes if m not in CULPRITS]
    if unknown:
        p.error(f"unknown mode(s) {', '.join(unknown)}: choose from {', '.join(CULPRITS)}")
    files = {}
    if any(m in MODULE_MODES for m in modes):
        k = guest.fetch_kernel(a.kernel)
        built = subprocess.run(["bash", str(HERE / "build.sh"), k.abi, str(out / "build")],
                               capture_output=True, text=True)
        if built.returncode != 0:
            print(f"FAIL {a.kernel}: noisy.ko does not build: {built.stderr[-500:]}")
            return 1
        files["/root/noisy.ko"] = Path(built.stdout.strip().splitlines()[-1])
    r = guest.boot(a.kernel, (HERE / "guest-noisy.sh").read_text(), a.rtscope,
                   env={"MODES": " ".join(modes)}, files=files,
                   timeout=a.timeout, console_log=out / "console.log")
    for name, data in r.files.items():
        (out / name).write_bytes(data)
    ok = r.finished
    for mode in modes:
        rc = r.checks().get(f"explain-{mode}")
        x = json.loads(r.files.get(f"explain-{mode}.json") or b"{}").get("explain") or {}
        ref = reference.parse((r.files.get(f"reference-{mode}.txt") or b"").decode(
            errors="replace"), 1)
        dump = reference.dump_events(
            (r.files.get(f"dump-{mode}.txt") or b"").decode(errors="replace"), 1)
        culprit = culprit_of(mode, a.kernel)
        c = reference.compare(x, ref, 1, culprit=culprit,
                              apart=reference.stamped_apart(dump, ref))
        for line in c.lines:
            print(f"  {a.kernel} {mode}: {line}")
        met, text = reference.bar(c)
        print(f"{a.kernel} {mode} ({culprit}): rc {rc}, tier {x.get('tier')}: "
              f"{reference.summary(c)}")
        verdict = ("PASS" if met else "FAIL") if a.bar else "INFO"
        print(f"{verdict} {a.kernel} {mode}: the reference bar {'met' if met else 'not met'}: "
              f"{text}", flush=True)
        ok = ok and rc == 0 and c.spikes > 0 and (met or not a.bar)
    print(f"{a.kernel}: guest finished in {r.seconds:.0f} s" if r.finished
          else f"FAIL {a.kernel}: the guest did not finish ({r.seconds:.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
