"""Where a silent guest's vCPUs are: QEMU's QMP monitor, sampled from the host.

A guest that stops printing may be busy (a livelock, a spinning real-time task), halted with
nothing to run (a lost wake-up or interrupt), or stopped in a loop with interrupts off; the
in-guest watchdog (lib.sh check_within) sees none of these when the guest kernel itself is
stuck. This samples every vCPU's program counter, privilege level, interrupt flag and halt
state a few times, and reads the words on each vCPU's stack that look like kernel return
addresses: a poor man's backtrace. Guests boot with `nokaslr`, so raw addresses can be
symbolised afterwards (`addr2line -f -e vmlinux ADDR`, vmlinux from the kernel's -dbg
package); with RTSCOPE_GUEST_SYMBOLS=FILE (a System.map or `nm -n` listing) they are
symbolised here.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import socket
import time
from pathlib import Path

# Kernel text without KASLR (x86_64: the kernel image and modules; arm64: the image), used to
# pick candidate return addresses off a stack when no symbol map is given.
TEXT_RANGES = {
    "amd64": (0xFFFFFFFF80000000, 0xFFFFFFFFFF000000),
    "arm64": (0xFFFF800008000000, 0xFFFF800010000000),
}
STACK_WORDS = 160  # 8-byte words read from each vCPU's stack pointer
MAX_FRAMES = 24  # candidate return addresses printed per vCPU


class QmpError(Exception):
    """The monitor could not be reached or refused a command."""


class Qmp:
    """A QMP client on QEMU's unix socket (`-qmp unix:PATH,server=on,wait=off`)."""

    def __init__(self, path: Path, timeout: float = 10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(path))
        except OSError as e:
            raise QmpError(f"connect {path}: {e}") from e
        self.buf = b""
        self._reply()  # the greeting
        self._command({"execute": "qmp_capabilities"})

    def _line(self) -> dict:
        while b"\n" not in self.buf:
            try:
                chunk = self.sock.recv(65536)
            except OSError as e:
                raise QmpError(f"read: {e}") from e
            if not chunk:
                raise QmpError("monitor closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def _reply(self) -> dict:
        while True:
            msg = self._line()
            if "event" not in msg:  # events arrive between replies
                return msg

    def _command(self, cmd: dict) -> object:
        self.sock.sendall(json.dumps(cmd).encode() + b"\n")
        msg = self._reply()
        if "error" in msg:
            raise QmpError(f"{cmd['execute']}: {msg['error'].get('desc', msg['error'])}")
        return msg.get("return")

    def hmp(self, line: str, cpu: int | None = None) -> str:
        """A human-monitor command's output (CPU: the vCPU it applies to)."""
        args: dict = {"command-line": line}
        if cpu is not None:
            args["cpu-index"] = cpu
        return str(self._command({"execute": "human-monitor-command", "arguments": args}))

    def close(self) -> None:
        self.sock.close()


class Symbols:
    """Address -> `name+0xoff` from a System.map-style listing (ADDR TYPE NAME, text only)."""

    def __init__(self, path: Path):
        pairs = []
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in "tTwW" and re.fullmatch(r"[0-9a-fA-F]+", parts[0]):
                    pairs.append((int(parts[0], 16), parts[2]))
        pairs.sort()
        self.addrs = [a for a, _ in pairs]
        self.names = [n for _, n in pairs]

    def name(self, addr: int) -> str | None:
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0 or not self.addrs or addr - self.addrs[i] > 0x100000:
            return None
        return f"{self.names[i]}+{addr - self.addrs[i]:#x}"

    def is_text(self, addr: int) -> bool:
        return bool(self.addrs) and self.addrs[0] <= addr <= self.addrs[-1] + 0x1000

    def frames(self, words: list[int]) -> list[str]:
        """The words that are kernel text addresses, as `name+0xoff`."""
        return [n for v in words if self.is_text(v) and (n := self.name(v))]


def read_words(qmp: "Qmp", addr: int, n: int = 1, cpu: int = 0) -> list[int]:
    """N 8-byte words of guest memory at virtual ADDR, through vCPU CPU's page tables."""
    text = qmp.hmp(f"x /{n}gx {addr:#x}", cpu=cpu)
    return [int(v, 16) for line in text.splitlines() if ":" in line
            for v in re.findall(r"0x([0-9a-f]{16})", line.split(":", 1)[1])]


def load_symbols() -> Symbols | None:
    path = os.environ.get("RTSCOPE_GUEST_SYMBOLS")
    if not path or not Path(path).is_file():
        return None
    s = Symbols(Path(path))
    return s if s.addrs else None


def parse_registers(text: str) -> dict[int, dict[str, str]]:
    """`info registers -a` -> {cpu: {REG: hex}} (x86: RIP, RSP, RFL, CPL, HLT; arm64: PC, SP…)."""
    cpus: dict[int, dict[str, str]] = {}
    for block in re.split(r"(?m)^CPU#(?=\d)", text)[1:]:
        num, _, body = block.partition("\n")
        regs = dict(re.findall(r"\b([A-Z][A-Z0-9_]*)=\s*([0-9a-fA-F]+)\b", body))
        cpus[int(re.match(r"\d+", num).group())] = regs
    return cpus


def describe(arch: str, regs: dict[str, str], syms: Symbols | None) -> str:
    """One vCPU's state on a line: where it is, in which mode, interrupts, halted."""
    pc = regs.get("RIP") or regs.get("PC") or "?"
    where = syms.name(int(pc, 16)) if syms and pc != "?" else None
    pc_text = f"{pc} {where}" if where else pc
    if arch == "amd64":
        flags = int(regs.get("RFL", "0"), 16)
        mode = "kernel" if regs.get("CPL") == "0" else f"user (CPL {regs.get('CPL', '?')})"
        irq = "on" if flags & 0x200 else "OFF"
        return f"pc {pc_text}  {mode}  interrupts {irq}  halted {regs.get('HLT', '?')}"
    pstate = int(regs.get("PSTATE", "0"), 16)
    el = (pstate >> 2) & 3
    irq = "OFF" if pstate & 0x80 else "on"
    return f"pc {pc_text}  EL{el}  interrupts {irq}"


def stack_frames(qmp: Qmp, arch: str, cpu: int, regs: dict[str, str],
                 syms: Symbols | None) -> list[str]:
    """Words on CPU's stack that look like kernel text addresses, symbolised when possible."""
    sp = regs.get("RSP") or regs.get("SP") or regs.get("SP_EL1")
    if not sp or int(sp, 16) < 0x8000000000000000:
        return []  # a user-mode stack: nothing of the kernel's to read
    words = read_words(qmp, int(sp, 16), STACK_WORDS, cpu)
    if syms:
        return [f"{v:#x} {n}" for v in words if syms.is_text(v) and (n := syms.name(v))][:MAX_FRAMES]
    lo, hi = TEXT_RANGES.get(arch, (0, 0))
    return [f"{v:#x}" for v in words if lo <= v < hi][:MAX_FRAMES]


def dump(qmp_path: Path, arch: str, samples: int = 6, interval: float = 0.5) -> list[str]:
    """The report's lines; never raises (a monitor failure is reported as a line)."""
    syms = load_symbols()
    out = [f"vCPU state from QEMU's monitor ({samples} samples, {interval} s apart; "
           f"symbols: {'RTSCOPE_GUEST_SYMBOLS' if syms else 'none, guest booted nokaslr'})"]
    try:
        qmp = Qmp(qmp_path)
    except (QmpError, OSError, ValueError) as e:
        return out + [f"monitor unavailable: {e}"]
    try:
        out += ["info cpus: " + " | ".join(qmp.hmp("info cpus").strip().splitlines())]
        regs: dict[int, dict[str, str]] = {}
        for i in range(samples):
            regs = parse_registers(qmp.hmp("info registers -a"))
            for cpu, r in sorted(regs.items()):
                out.append(f"sample {i} cpu {cpu}: {describe(arch, r, syms)}")
            time.sleep(interval)
        for cpu, r in sorted(regs.items()):
            frames = stack_frames(qmp, arch, cpu, r, syms)
            out.append(f"cpu {cpu} stack, candidate return addresses: "
                       + (", ".join(frames) if frames else "none"))
    except (QmpError, OSError, ValueError) as e:
        out.append(f"monitor failed: {e}")
    finally:
        qmp.close()
    return out
