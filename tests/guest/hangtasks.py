#!/usr/bin/env python3
"""Every thread of a running x86_64 guest, read from outside over its QMP socket.

    hangtasks.py QMP_SOCKET VMLINUX

What `echo t > /proc/sysrq-trigger` would print, for a guest whose console or userspace no
longer answers: each thread's pid, name, state, CPU, policy and real-time priority, CPU time,
whether it is on a CPU now, and for a thread that is not, the return addresses on its saved
kernel stack (symbolised). Then each vCPU's current thread, and whether the guest's clock
(jiffies) still advances. VMLINUX is the kernel's image with debug information (Debian:
linux-image-ABI-dbg, /usr/lib/debug/boot/vmlinux-ABI; 860 MB for 6.1 rt-amd64); `gdb` reads
the structure offsets from it. The guest must run without KASLR (guest.py boots `nokaslr`)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import hangdump

FIELDS = {
    "tasks": "tasks", "thread_group": "thread_group", "comm": "comm", "pid": "pid",
    "state": "__state", "cpu": "thread_info.cpu", "on_cpu": "on_cpu", "policy": "policy",
    "rt_priority": "rt_priority", "runtime": "se.sum_exec_runtime", "sp": "thread.sp",
}
SYMBOLS = ["init_task", "current_task", "__per_cpu_offset", "jiffies"]
STATES = {0: "R", 1: "S", 2: "D", 4: "T", 8: "t", 0x10: "X", 0x20: "Z", 0x80: "P",
          0x402: "I", 0x1000: "rtlock"}
MAX_THREADS = 5000


def layout(vmlinux: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(task_struct field offsets, symbol addresses) from the image's debug information."""
    args = ["gdb", "-batch", "-nx"]
    for f in FIELDS.values():
        args += ["-ex", f"print/x (unsigned long)&((struct task_struct *)0)->{f}"]
    for s in SYMBOLS:
        args += ["-ex", f"print/x (unsigned long)&{s}"]
    out = subprocess.run(args + [str(vmlinux)], capture_output=True, text=True, timeout=600).stdout
    values = [int(v, 16) for v in re.findall(r"^\$\d+ = (0x[0-9a-f]+)", out, re.M)]
    if len(values) != len(FIELDS) + len(SYMBOLS):
        raise SystemExit(f"gdb did not give every offset of {vmlinux}:\n{out[-2000:]}")
    return (dict(zip(FIELDS, values[:len(FIELDS)])), dict(zip(SYMBOLS, values[len(FIELDS):])))


class Guest:
    """Reads guest memory (virtual addresses, through vCPU 0's page tables)."""

    def __init__(self, qmp: hangdump.Qmp):
        self.qmp = qmp

    def words(self, addr: int, n: int = 1, cpu: int = 0) -> list[int]:
        return hangdump.read_words(self.qmp, addr, n, cpu)

    def u32(self, addr: int) -> int:
        return self.words(addr)[0] & 0xFFFFFFFF

    def string(self, addr: int, size: int = 16) -> str:
        raw = b"".join(w.to_bytes(8, "little") for w in self.words(addr, size // 8))
        return raw.split(b"\0")[0].decode(errors="replace")


def threads(g: Guest, off: dict[str, int], init: int):
    """Every thread: the process list from init_task, each process's thread group."""
    proc, count = init, 0
    while count < MAX_THREADS:
        t = proc
        while count < MAX_THREADS:
            yield t
            count += 1
            t = g.words(t + off["thread_group"])[0] - off["thread_group"]
            if t == proc:
                break
        proc = g.words(proc + off["tasks"])[0] - off["tasks"]
        if proc == init:
            return


def describe(g: Guest, off: dict[str, int], t: int, syms: hangdump.Symbols) -> str:
    state = g.u32(t + off["state"])
    line = (f"{g.u32(t + off['pid']):6} {g.string(t + off['comm']):<16} "
            f"{STATES.get(state & ~0x2000, hex(state)):<6} cpu {g.u32(t + off['cpu'])} "
            f"policy {g.u32(t + off['policy'])} rtprio {g.u32(t + off['rt_priority']):<2} "
            f"ran {g.words(t + off['runtime'])[0] / 1e9:8.2f} s")
    if g.u32(t + off["on_cpu"]):
        return line + "  ON CPU"
    frames = syms.frames(g.words(g.words(t + off["sp"])[0], 48))
    return line + "  " + " < ".join(frames[:10])


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    sock, vmlinux = Path(argv[0]), Path(argv[1])
    off, sym = layout(vmlinux)
    listing = subprocess.run(["nm", "-n", str(vmlinux)], capture_output=True, text=True,
                             check=True).stdout
    map_file = Path(f"/tmp/hangtasks-{vmlinux.name}.map")
    map_file.write_text(listing)
    syms = hangdump.Symbols(map_file)
    g = Guest(hangdump.Qmp(sock))
    for t in threads(g, off, sym["init_task"]):
        print(describe(g, off, t, syms))
    offsets = g.words(sym["__per_cpu_offset"], 2)
    for cpu, base in enumerate(offsets):
        cur = g.words(base + sym["current_task"], 1, cpu)[0]
        print(f"vCPU {cpu} runs {g.string(cur + off['comm'])} (pid {g.u32(cur + off['pid'])})")
    j0 = g.words(sym["jiffies"])[0]
    time.sleep(2)
    print(f"jiffies advanced {g.words(sym['jiffies'])[0] - j0} in 2 s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
