"""`rtla timerlat -a` beside rtscope's kernel stacks in the RT guests (issue 53), host side.

Debian 12's own `rtla` (6.1, source `linux`) runs in the guest (`rtla_root`: the program, its
libraries and glibc's loader, from `apt-get download`, nothing installed on the host). Its
`-a US` (auto mode: `-T US -s US -t`) stops the timerlat tracer at the first thread latency of
US or more and saves the trace with the kernel stack the timer interrupt found the CPU in for
that sample (`osnoise/print_stack`), to `timerlat_trace.txt`: the stack of the thread that
blocked timerlat's. rtla 6.1 has no textual auto-analysis yet (that came with 6.3, whose
"Blocking thread stack trace" is this same saved stack); its trace is the kernel's own
answer.

`rtla timerlat` and `rtscope measure --explain` cannot run at once on one CPU: the timerlat
tracer's settings (`osnoise/cpus`, the period) are global, and rtla's stop (`stop_tracing_
total_us`) turns off every instance with the tracer, rtscope's too. So guest-noisy.sh runs
rtla right after rtscope's two runs of a mode, on the same kernel, CPU and injected section
(`noisy.ko`'s thread still running), up to RTLA_TRIES times while its stack names no function
of the module (a host stall over the threshold stops it elsewhere: the emulated CPU idle).

The check (`verify`): rtla ran and stopped on a sample over the threshold, its stack names an
injected `noisy_*` function in its frames, and the kept spikes' stacks rtscope took for the
module's thread in `measure --explain` name that same function in their first
noisy_checks.TOP_FRAMES frames (the function most of them name). Function, not latency. When
every try stopped with the CPU idle (beside the hog, host stalls over 8 ms won three tries in
a row on rt-arm64, 28 Nov 2026), there is nothing to compare: the agreement is then a
load-dependent figure, shown as not met, and required only with `--figures`.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import guest
import noisy_checks

#: rtla and what it links (ldd of Debian 12's rtla: libtracefs, libtraceevent, libc).
PACKAGES = ["rtla", "libtracefs1", "libtraceevent1", "libc6"]

#: Per architecture: the multiarch library directory and where the ELF interpreter is looked
#: for (`readelf -l rtla`: /lib64/ld-linux-x86-64.so.2, /lib/ld-linux-aarch64.so.1).
LIBS = {
    "amd64": ("x86_64-linux-gnu", "lib64/ld-linux-x86-64.so.2"),
    "arm64": ("aarch64-linux-gnu", "lib/ld-linux-aarch64.so.1"),
}

#: The modes run under rtla (the sections the module's own thread holds: the blocking thread).
RTLA_MODES = ("preempt", "irq")

#: rtla's threshold, µs: the sections are 10 ms and the timer fires every 1 ms in them, so
#: each section's first late sample is 9–10 ms late; 8 ms leaves host stalls shorter than
#: that out.
RTLA_THRESHOLD_US = 8000

#: Runs of rtla per mode at most (guest-noisy.sh): the next while no stack names the module.
RTLA_TRIES = 3


def rtla_root(dest: Path, arch: guest.Arch) -> tuple[Path, list[str]]:
    """A tree under DEST with /usr/bin/rtla, its libraries in /lib/TRIPLE and the loader where
    the program asks for it; returns it and the .deb files used. Made once per DEST."""
    triple, loader = LIBS[arch.debian]
    unpacked, root = dest / "unpacked", dest / "root"
    debs = []
    for p in PACKAGES:
        deb = guest.download(p, arch)
        debs.append(deb.name)
        unpacked.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    lib = root / "lib" / triple
    lib.mkdir(parents=True, exist_ok=True)
    (root / "usr" / "bin").mkdir(parents=True, exist_ok=True)
    names = ["libc.so.6", Path(loader).name, "libtracefs.so.1", "libtraceevent.so.1"]
    for d in [unpacked / "lib" / triple, unpacked / "usr" / "lib" / triple]:
        for name in names:
            f = d / name
            if f.exists():
                (lib / name).write_bytes(f.resolve().read_bytes())
    missing = [n for n in names if not (lib / n).exists()]
    if missing:
        raise guest.GuestError(f"rtla's libraries not found in {', '.join(debs)}: {missing}")
    interp = root / loader
    interp.parent.mkdir(parents=True, exist_ok=True)
    interp.write_bytes((lib / Path(loader).name).read_bytes())
    (root / "usr" / "bin" / "rtla").write_bytes((unpacked / "usr/bin/rtla").read_bytes())
    for f in [root / "usr/bin/rtla", lib / Path(loader).name, interp]:
        f.chmod(0o755)
    return root, debs


def guest_files(kernel: str, out: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """The files and environment of rtla's runs in KERNEL's boot (guest-noisy.sh)."""
    arch = guest.arch_of(kernel)
    root, _ = rtla_root(out / "rtla", arch)
    triple, _ = LIBS[arch.debian]
    return {"/": root}, {"RTLA": "1", "RTLA_LIB": f"/lib/{triple}",
                         "RTLA_THRESHOLD_US": str(RTLA_THRESHOLD_US),
                         "RTLA_TRIES": str(RTLA_TRIES)}


def trace_stacks(text: str) -> list[list[str]]:
    """The kernel stacks in an ftrace text trace (`<stack trace>` then ` => FUNC` lines),
    innermost frame first, in the trace's order; each frame's name without offset or module."""
    stacks: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if "<stack trace>" in line:
            current = []
            stacks.append(current)
            continue
        m = re.match(r"\s*=>\s+(\S+)", line)
        if m and current is not None:
            if m.group(1) != "0":  # the kernel pads a short stack with zero entries
                current.append(m.group(1).split("+")[0])
        elif line.strip():
            current = None
    return stacks


def injected(frames: list[str]) -> str | None:
    """The innermost function of the module among FRAMES (`noisy_*`, ` [noisy]` dropped)."""
    for f in frames:
        name = f.split(" ")[0]
        if name.startswith("noisy_"):
            return name
    return None


def shown(frames: list[str]) -> list[str]:
    """A stack's frames as printed: up to the module's function, else the first 20."""
    f = injected(frames)
    return frames[:frames.index(f) + 1] if f in frames else frames[:20]


def rtscope_functions(x: dict, thread: str) -> dict[str, int]:
    """How many of the kept spikes' stacks of THREAD name each function of the module (the
    innermost `noisy_*` in their first TOP_FRAMES frames)."""
    out: dict[str, int] = {}
    for w in x.get("worst") or []:
        stack = w.get("stack") or {}
        if (stack.get("task") or {}).get("comm") != thread:
            continue
        f = injected(stack.get("frames", [])[:noisy_checks.TOP_FRAMES])
        if f is not None:
            out[f] = out.get(f, 0) + 1
    return out


#: Each mode's injected hold (rtscope's function), and the clock read its spin loop calls
#: (noisy.c: spin_us, inlined into the hold, calls ktime_get_ns, which is ktime_get).
HOLDS = {"preempt": "noisy_hold_preempt_off", "irq": "noisy_hold_irqs_off"}
SPIN_CALL = "ktime_get"


def lost_hold(frames: list[str], mode: str) -> bool:
    """Whether rtla's stack is the mode's hold with the hold's own frame lost: the interrupt
    found the CPU in the spin's clock read (`ktime_get`) right under the module's thread
    (`noisy_thread`), which in these modes calls it only through the hold. arm64's
    frame-record unwinder does that when the interrupt lands in the callee's first
    instructions, before it saved its frame record: the unwinding goes on from the hold's
    saved record, so the hold's caller follows the interrupted function (seen on rt-arm64:
    `el1h_64_irq <- ktime_get <- noisy_thread`)."""
    names = [f.split(" ")[0] for f in frames]
    if mode not in HOLDS or "noisy_thread" not in names or HOLDS[mode] in names:
        return False
    i = names.index("noisy_thread")
    return i > 0 and names[i - 1] == SPIN_CALL


def agree(rtla_text: str, x: dict, thread: str, mode: str = "") -> tuple[bool, str]:
    """Whether rtla's saved stack (the last in its trace that names a function of the module:
    the sample that stopped it) and rtscope's stacks of THREAD name the same one; a stack of
    rtla's that lost the hold's frame ([`lost_hold`]) names the mode's hold."""
    stacks = trace_stacks(rtla_text)
    found = next((s for s in reversed(stacks) if injected(s)), None)
    theirs = injected(found) if found else None
    lost = found is not None and lost_hold(found, mode)
    if lost:
        theirs = HOLDS[mode]
    ours = rtscope_functions(x, thread)
    top = max(ours.items(), key=lambda kv: kv[1])[0] if ours else None
    last = stacks[-1] if stacks else []
    detail = (f"rtla: {len(stacks)} stack(s), names {theirs or 'no noisy function'}"
              + (f" (its own frame lost: the interrupt was in {SPIN_CALL}'s first instructions)"
                 if lost else "")
              + f" ({' <- '.join(shown(last)) or 'no stack'}); rtscope's {thread} stacks: "
              + (", ".join(f"{n}x {f}" for f, n in sorted(ours.items(), key=lambda kv: -kv[1]))
                 or "none name the module"))
    return theirs is not None and theirs == top, detail


#: The exit codes of rtla killed by the guest script's `timeout` (coreutils 124, busybox's the
#: child's 143).
KILLED = ("124", "143")


def saved(tries: list[str], text: str) -> tuple[bool, str]:
    """Whether rtla's last try (`TRY RC STOP-LINE`) ran and saved its trace TEXT: it exited 0,
    or the guest's timeout killed it after it had stopped on a latency and saved the trace with
    the module's function on a stack (beside CI's hog, rt-amd64's preempt try: rc 143, its
    auto-analysis outlasting the timeout of a starved guest, 29 Nov 2026); and a note on it."""
    rc = tries[-1].split()[1:2] if tries else []
    if not text:
        return False, ""
    if rc == ["0"]:
        return True, ""
    killed = rc and rc[0] in KILLED and any(injected(s) for s in trace_stacks(text))
    return bool(killed), ("; the timeout killed it after it saved a trace naming the module"
                          if killed else "")


def verify(c, kernel: str, r: guest.BootResult, modes: list[str]) -> None:
    """For each of RTLA_MODES run: rtla ran (`rtla-MODE` marker: tries and exit code, its
    trace sent back) and its stack names the function rtscope's stacks name."""
    for mode in [m for m in RTLA_MODES if m in modes]:
        thread = noisy_checks.culprit_of(mode, kernel)
        tries = r.values("rtla-" + mode)
        x = json.loads(r.files.get(f"explain-{mode}.json") or b"{}").get("explain") or {}
        text = (r.files.get(f"rtla-trace-{mode}.txt") or b"").decode(errors="replace")
        ran, said = saved(tries, text)
        c.expect(kernel, f"noise {mode}: rtla timerlat -a {RTLA_THRESHOLD_US} ran and saved "
                 "its trace", ran, f"tries (try rc stop-line): {'; '.join(tries) or 'none'}"
                 + said)
        ok, detail = agree(text, x, thread, mode)
        last = [trace_stacks(text)]
        for n in range(1, len(tries)):
            before = (r.files.get(f"rtla-trace-{mode}-try{n}.txt") or b"").decode(errors="replace")
            stacks = trace_stacks(before)
            last.append(stacks)
            detail += (f"; try {n} stopped in {' <- '.join(shown(stacks[-1]))}" if stacks
                       else f"; try {n}: no stack")
        name = f"noise {mode}: rtla timerlat -a's stack and rtscope's name the same injected function"
        starved, why = noisy_checks.all_timed_out(x)
        if ran and not ok and any(last) and all(not s or not injected(s[-1]) for s in last):
            # Every try stopped on a latency the module did not make: the guest's CPU idle (a
            # host stall), another kernel function's section (beside CI's hog rt-amd64's try
            # in rcu_core, 29 Nov 2026), or no stack saved: nothing to compare, so the
            # agreement is a load-dependent figure for that run.
            c.figure(kernel, name, False, detail + "; every try stopped with the CPU idle "
                     "(a host stall over the threshold), in a function not of the module, or "
                     "saved no stack, nothing to compare")
        elif ran and not ok and starved:
            # rtscope's run of the mode traced none of its spikes, as it said (beside CI's
            # hog, rt-amd64's irq run, 29 Nov 2026): it has no stack to compare.
            c.figure(kernel, name, False, f"{detail}; {why}")
        else:
            c.expect(kernel, name, ran and ok, detail)
