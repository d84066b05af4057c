#!/usr/bin/env python3
"""Captures real `rtla osnoise top` and `rtla osnoise hist` output for `rtscope import`'s
fixtures, in one boot of a Debian 12 kernel with the osnoise tracer (default rt-amd64).

    python3 tests/guest/rtla-capture/run.py [--kernel rt-amd64] \\
        [--out crates/rtscope/tests/fixtures/import/rtla] [--timeout 1800]

Debian 12's own `rtla` package (source `linux`, linked with libtracefs1 and libtraceevent1) is
fetched with `apt-get download` (nothing is installed on the host), unpacked with its
libraries and glibc's loader into the guest's initramfs, and run by capture.sh as root against
the booted kernel. Each command's standard output becomes NAME.txt in --out, its standard error
NAME.err (kept only when not empty); the commands, exit codes, kernel and rtla version are
printed and written to --out/capture.log. The guest has loopback networking only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))

import checks  # noqa: E402  (the culprit's build)
import guest  # noqa: E402
from rtla_checks import rtla_root  # noqa: E402  (rtla, its libraries and loader)

def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default="rt-amd64")
    p.add_argument("--out", default=str(REPO / "crates/rtscope/tests/fixtures/import/rtla"))
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--console", default=None, help="write the serial console here")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    kernel = guest.fetch_kernel(a.kernel)
    with tempfile.TemporaryDirectory(prefix="rtscope-rtla-") as tmp:
        root, debs = rtla_root(Path(tmp), kernel.arch)
        culprit = checks.build_culprit(Path(tmp), "amd64")
        if culprit is None:
            return 1
        files = {"/": root, "/root/culprit": culprit}
        r = guest.boot(a.kernel, (HERE / "capture.sh").read_text(), None, files,
                       timeout=a.timeout, console_log=Path(a.console) if a.console else None)
    log = [f"kernel package {kernel.package}", f"debs {' '.join(debs)}"]
    log += [f"{k} {v}" for k, v in r.markers if k not in ("file-begin", "file-end")]
    log.append(f"boot-seconds {r.seconds:.1f} finished {r.finished} timed-out {r.timed_out}")
    for name, data in sorted(r.files.items()):
        if name.endswith(".err") and not data.strip():
            continue
        (out / name).write_bytes(data)
    (out / "capture.log").write_text("\n".join(log) + "\n")
    print("\n".join(log))
    return 0 if r.finished and not r.timed_out else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
