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
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))

import checks  # noqa: E402  (the culprit's build)
import guest  # noqa: E402

#: rtla and what it links (ldd of Debian 12's rtla: libtracefs, libtraceevent, libc).
PACKAGES = ["rtla", "libtracefs1", "libtraceevent1", "libc6"]


def rtla_root(tmp: Path, arch: guest.Arch) -> tuple[Path, list[str]]:
    """A tree with /usr/bin/rtla, its libraries in /lib/x86_64-linux-gnu and the loader at
    /lib64 (its ELF interpreter); returns it and the .deb files used."""
    unpacked = tmp / "unpacked"
    debs = []
    for p in PACKAGES:
        deb = guest.download(p, arch)
        debs.append(deb.name)
        unpacked.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    root = tmp / "root"
    lib = root / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (root / "lib64").mkdir()
    (root / "usr" / "bin").mkdir(parents=True)
    for d in [unpacked / "lib" / "x86_64-linux-gnu", unpacked / "usr" / "lib" / "x86_64-linux-gnu"]:
        for name in ["libc.so.6", "ld-linux-x86-64.so.2", "libtracefs.so.1",
                     "libtraceevent.so.1"]:
            f = d / name
            if f.exists():
                (lib / name).write_bytes(f.resolve().read_bytes())
    (root / "lib64" / "ld-linux-x86-64.so.2").write_bytes(
        (lib / "ld-linux-x86-64.so.2").read_bytes())
    (root / "usr" / "bin" / "rtla").write_bytes((unpacked / "usr/bin/rtla").read_bytes())
    for f in [root / "usr/bin/rtla", lib / "ld-linux-x86-64.so.2",
              root / "lib64/ld-linux-x86-64.so.2"]:
        f.chmod(0o755)
    return root, debs


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
