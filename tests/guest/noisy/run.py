"""Reference agreement for noise of known kinds on the measured CPU, in a boot of its own
(CI runs the same checks in each kernel's one boot: `guest.py check --noisy MODES`).

    python3 tests/guest/noisy/run.py --kernel rt-amd64 \
        --rtscope target/x86_64-unknown-linux-musl/release/rtscope \
        [--modes preempt,irq,storm,softirq,net] [--figures] [--storm-irq-us US] [--rtla]

Builds noisy.ko for the kernel's ABI (build.sh), boots the kernel with it (guest.py), runs
guest-noisy.sh and compares rtscope's attribution of each kept spike (`measure --explain`)
and gap (`noise --explain`) with the reference instance (noisy_checks.py, reference.py).
With --rtla (RT kernels), Debian's `rtla timerlat -a` runs after the preempt and irq
modes' runs, and its stack must name the function rtscope's stacks name (rtla_checks.py). Prints the
figures; exit 0 when both runs of every mode exited 0 and at least one spike was
compared in each, and with --bar when every run meets reference.bar too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import checks  # noqa: E402
import guest  # noqa: E402
import noisy_checks  # noqa: E402
import rtla_checks  # noqa: E402


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default="rt-amd64",
                   help="amd64, rt-amd64, arm64 or rt-arm64")
    p.add_argument("--rtscope", type=Path, required=True)
    p.add_argument("--modes", default=",".join(noisy_checks.CULPRITS))
    p.add_argument("--out", type=Path, default=Path("target/guest/noisy"))
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--storm-irq-us", type=int, metavar="US",
                   help="the storm's handler time (default: 50 on x86, 500 on arm64)")
    p.add_argument("--figures", "--bar", dest="figures", action="store_true",
                   help="exit 1 unless every mode meets reference.bar (a figure: quiet host)")
    p.add_argument("--rtla", action="store_true",
                   help="after the preempt and irq runs, Debian's rtla timerlat -a on the same "
                   "section: its stack names the function rtscope's name (RT kernels)")
    p.add_argument("--append", default="",
                   help="extra kernel command line (e.g. preempt=full: the late-only stacks "
                   "then leave the held chain out)")
    a = p.parse_args(argv)
    out = a.out / a.kernel
    out.mkdir(parents=True, exist_ok=True)
    try:
        modes = noisy_checks.parse_modes(a.modes)
    except ValueError as e:
        p.error(str(e))
    c = checks.Checker(figures=a.figures)
    files, why = noisy_checks.guest_files(a.kernel, modes, out)
    if why:
        c.expect(a.kernel, "noisy.ko builds", False, why)
        return 1
    env = {"MODES": " ".join(modes)}
    if a.rtla:
        more, rtla_env = rtla_checks.guest_files(a.kernel, out)
        files.update(more)
        env.update(rtla_env)
    if a.storm_irq_us is not None:
        env["STORM_IRQ_US"] = str(a.storm_irq_us)
    r = guest.boot(a.kernel, (HERE / "guest-noisy.sh").read_text(), a.rtscope,
                   env=env, files=files, append=a.append,
                   timeout=a.timeout, console_log=out / "console.log")
    for name, data in r.files.items():
        (out / name).write_bytes(data)
    c.expect(a.kernel, "guest finished within the outer timeout", r.finished and not r.timed_out,
             f"{r.seconds:.0f} s")
    noisy_checks.verify(c, a.kernel, r, modes)
    if a.rtla:
        rtla_checks.verify(c, a.kernel, r, modes)
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
