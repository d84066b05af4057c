#!/usr/bin/env python3
"""Benchmark rtscope against cyclictest (rt-tests) under identical settings.

Both tools are run alternately with the same options plus a 1 us histogram
(`-h 2000`) and `--json=FILE`.

Like with like: cyclictest pins its own main thread to the -a CPUs, so with `-a0` a
thread of cyclictest wakes every 10 ms on the measured CPU, which on a VM changes how
many timer reprogrammings (each a trap to the hypervisor) happen per wake-up and lowers
its p50 by ~12 %. rtscope's main thread is not pinned there. So every scenario runs
cyclictest with `--mainaffinity=` the CPUs it does not measure (where there are any), and
each scenario runs in two sets: `idle` (no /dev/cpu_dma_latency request: `--default-system`
for both; both hold it at 0 by default) and `latency0` (`--latency=0` for both: C-states held off, the observer
effect gone). See docs/cyclictest-differences.md.  p50/p99 are derived the same way for both
tools from the pooled histogram buckets of the JSON output (nearest rank);
CPU time comes from os.wait4() on the child process; peak RSS from GNU time's
%M when /usr/bin/time exists (wait4's ru_maxrss of a child forked from Python
keeps Python's own high-water mark across exec, so it cannot see a tool that is
smaller than the Python interpreter).

See bench/README.md for the meaning of every figure and the targets.
Python 3 standard library only.
"""

import argparse
import gzip
import json
import math
import os
import re
import platform
import shlex
import statistics
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

GNU_TIME = "/usr/bin/time"
HIST_RANGE = 2000  # -h argument: buckets 0..HIST_RANGE-1 us, rest overflow
WAKEUPS_UNIT = 100_000  # CPU time is reported per this many wake-ups

SCENARIOS = {
    "1:1": "-l {loops} -m -p90 -i {interval} -a0 -t1 -q",
    "N:N": "-l {loops} -m -S -p90 -i {interval} -d0 -q",
    "M:N": "-l {loops} -m -p90 -i {interval} -d0 -t4 -a -q",
}

# key, label, decimals, target (rtscope/cyclictest ratio must be <= target;
# None = informational only).
METRICS = [
    ("min", "min latency (us)", 0, None),
    ("p50", "p50 latency (us)", 0, 1.0),
    ("p99", "p99 latency (us)", 0, 1.0),
    ("wakeups", "total wake-ups (samples)", 0, None),
    ("user_ms", "user CPU ms / 100k wake-ups", 2, 0.5),
    ("sys_ms", "sys CPU ms / 100k wake-ups", 2, None),
    ("cpu_ms", "total CPU ms / 100k wake-ups", 2, 1.0),
    ("rss_kib", "peak RSS (KiB)", 0, 1.5),
]


class ToolError(Exception):
    """A benchmarked tool could not be run or produced unusable output."""


@dataclass
class Tool:
    name: str
    path: str
    prefix: list  # argv words before the cyclictest options
    json_path: str = ""
    runs: dict = field(default_factory=dict)  # scenario -> [metrics dict]

    def command(self, scenario_args):
        return [*self.prefix, *scenario_args,
                "-h", str(HIST_RANGE), f"--json={self.json_path}"]


def default_rtscope():
    """The binary users install: the static musl release build (scripts/dist.sh,
    tests/guest/ci.sh) when it exists, else the glibc development build. Peak RSS
    depends on which: the dynamic build also maps glibc's libc, libm, libgcc_s and ld.so
    (about 1.8 MiB resident here) on top of its own code."""
    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")
    static = os.path.join(target, f"{platform.machine()}-unknown-linux-musl", "release", "rtscope")
    if os.path.isfile(static) and os.access(static, os.X_OK):
        return os.path.normpath(static)
    return os.path.normpath(os.path.join(target, "release", "rtscope"))


def linkage(path):
    """'static' or 'dynamic': whether the ELF file has a PT_INTERP (program interpreter)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF":
                return "?"
            is64, little = head[4] == 2, head[5] == 1
            order = "<" if little else ">"
            if is64:
                phoff, = struct.unpack_from(order + "Q", head, 32)
                phentsize, phnum = struct.unpack_from(order + "HH", head, 54)
            else:
                phoff, = struct.unpack_from(order + "I", head, 28)
                phentsize, phnum = struct.unpack_from(order + "HH", head, 42)
            f.seek(phoff)
            table = f.read(phentsize * min(phnum, 256))
    except OSError:
        return "?"
    types = [struct.unpack_from(order + "I", table, i * phentsize)[0]
             for i in range(len(table) // max(phentsize, 1))]
    return "dynamic" if 3 in types else "static"  # PT_INTERP = 3


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Compare rtscope with cyclictest (latency, CPU, RSS).")
    p.add_argument("--rtscope", default=default_rtscope(),
                   help="rtscope binary (default: the static musl release build if it exists, "
                        "as shipped to the boards, else the development build: %(default)s)")
    p.add_argument("--cyclictest", default="/usr/bin/cyclictest",
                   help="cyclictest binary (default: %(default)s)")
    p.add_argument("--pairs", type=int, help="run pairs per scenario (default 5)")
    p.add_argument("--loops", type=int, help="loops per thread, -l (default 20000)")
    p.add_argument("--interval", type=int, default=200,
                   help="base interval in us, -i (default: %(default)s)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help="comma list of %s (default: all)" % ", ".join(SCENARIOS))
    p.add_argument("--sets", default=",".join(SETS),
                   help="comma list of %s (default: both)" % ", ".join(SETS))
    p.add_argument("--out", help="also write the report as Markdown to FILE")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: --pairs 1 --loops 2000 unless given")
    # Self-test only: run the --rtscope path without the 'cyclictest' word.
    p.add_argument("--rtscope-is-cyclictest", action="store_true",
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.pairs is None:
        args.pairs = 1 if args.quick else 5
    if args.loops is None:
        args.loops = 2000 if args.quick else 20000
    args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    args.sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if not args.sets or any(s not in SETS for s in args.sets):
        p.error(f"--sets: choose from {list(SETS)}")
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown or not args.scenarios:
        p.error(f"unknown scenario(s) {unknown}; choose from {list(SCENARIOS)}")
    if args.pairs < 1 or args.loops < 1 or args.interval < 1:
        p.error("--pairs, --loops and --interval must be >= 1")
    return args


def make_tools(args, workdir):
    for path in (args.rtscope, args.cyclictest):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ToolError(f"not an executable file: {path}")
    if args.rtscope_is_cyclictest:
        # Self-test: the "rtscope" is really cyclictest, treat it as such.
        rt_prefix = [args.rtscope]
    else:
        rt_prefix = [args.rtscope, "cyclictest"]
    tools = [Tool("rtscope", args.rtscope, rt_prefix),
             Tool("cyclictest", args.cyclictest, [args.cyclictest])]
    for tool in tools:
        tool.json_path = os.path.join(workdir, f"{tool.name}.json")
    return tools


# The two sets of every scenario: the extra options of (rtscope, cyclictest).
SETS = {
    "idle": (["--default-system"], ["--default-system"]),
    "latency0": (["--latency=0"], ["--latency=0"]),
}


def main_affinity(name):
    """cyclictest's --mainaffinity: the online CPUs the scenario does not measure."""
    measured = {0} if "-a0" in SCENARIOS[name] else set(os.sched_getaffinity(0))
    free = sorted(set(os.sched_getaffinity(0)) - measured)
    return [f"--mainaffinity={','.join(map(str, free))}"] if free else []


def scenario_args(name, args, tool=None, cset="idle"):
    """The options of a scenario and set for `tool` (None: the common part)."""
    base = shlex.split(SCENARIOS[name].format(loops=args.loops,
                                              interval=args.interval))
    if tool is None:
        return base
    rt_extra, ct_extra = SETS[cset]
    if tool.name == "cyclictest" or args.rtscope_is_cyclictest:
        return base + ct_extra + main_affinity(name)
    return base + rt_extra


def run_tool(tool, cmd, workdir):
    """Run one command; return (rusage, parsed JSON). Raise ToolError."""
    if os.path.exists(tool.json_path):
        os.unlink(tool.json_path)
    out_path = os.path.join(workdir, f"{tool.name}.stdout")
    rss_path = os.path.join(workdir, f"{tool.name}.rss")
    if os.path.exists(rss_path):
        os.unlink(rss_path)
    launch = ([GNU_TIME, "-f", "%M", "-o", rss_path] + cmd) if os.access(GNU_TIME, os.X_OK) else cmd
    err_path = os.path.join(workdir, f"{tool.name}.stderr")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(launch, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise ToolError(f"{tool.name}: cannot start: {exc}") from exc
        _, status, rusage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    with open(err_path, errors="replace") as f:
        stderr = f.read()
    if proc.returncode != 0:
        rc = proc.returncode
        raise _failure(tool, cmd, stderr, f"was killed by signal {-rc}"
                       if rc < 0 else f"failed with exit status {rc}")
    try:
        with open(tool.json_path) as f:
            return rusage, _load_json(f), _read_rss(rss_path, rusage)
    except (OSError, ValueError) as exc:
        raise _failure(tool, cmd, stderr,
                       f"wrote no usable --json file ({exc})") from exc


def _read_rss(path, rusage):
    """Peak RSS in KiB: GNU time's %M, else wait4's (inflated) ru_maxrss."""
    try:
        with open(path) as f:
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return rusage.ru_maxrss


def _failure(tool, cmd, stderr, what):
    return ToolError(f"{tool.name} {what}\ncommand: {shlex.join(cmd)}\n"
                     f"stderr:\n{stderr.rstrip() or '(empty)'}")


def _load_json(f):
    data = json.load(f)
    if not isinstance(data.get("thread"), dict) or not data["thread"]:
        raise ValueError("no 'thread' object")
    return data


def pooled_histogram(data):
    """Merge all threads' histograms: ({latency_us: count}, overflows, cycles)."""
    buckets, overflow, cycles = {}, 0, 0
    for tid, thread in data["thread"].items():
        hist = thread.get("histogram", {})
        in_range = 0
        for key, count in hist.items():
            buckets[int(key)] = buckets.get(int(key), 0) + int(count)
            in_range += int(count)
        n = int(thread["cycles"])
        if n < in_range:
            raise ValueError(f"thread {tid}: histogram sum {in_range} > "
                             f"cycles {n}")
        overflow += n - in_range
        cycles += n
    return buckets, overflow, cycles


def nearest_rank(buckets, overflow, q):
    """q-th percentile (0<q<=100) by nearest rank; overflows rank above
    the histogram range and are reported as HIST_RANGE (a lower bound)."""
    total = sum(buckets.values()) + overflow
    rank = max(1, math.ceil(q / 100 * total))
    seen = 0
    for latency in sorted(buckets):
        seen += buckets[latency]
        if seen >= rank:
            return latency
    return HIST_RANGE


def run_metrics(tool, cmd, workdir):
    rusage, data, rss_kib = run_tool(tool, cmd, workdir)
    try:
        buckets, overflow, wakeups = pooled_histogram(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ToolError(f"{tool.name}: malformed JSON histogram ({exc})") from exc
    if wakeups == 0:
        raise ToolError(f"{tool.name}: JSON reports zero cycles")
    per_unit_ms = 1000.0 * WAKEUPS_UNIT / wakeups
    return {
        "min": min(buckets) if buckets else HIST_RANGE,
        "p50": nearest_rank(buckets, overflow, 50),
        "p99": nearest_rank(buckets, overflow, 99),
        "wakeups": wakeups,
        "user_ms": rusage.ru_utime * per_unit_ms,
        "sys_ms": rusage.ru_stime * per_unit_ms,
        "cpu_ms": (rusage.ru_utime + rusage.ru_stime) * per_unit_ms,
        "rss_kib": rss_kib,
        "overflow": overflow,
    }


def run_scenario(name, tools, args, workdir):
    """Run all pairs of one scenario and set (`name` is `scenario/set`), alternating the
    order every pair."""
    scenario, cset = name.split("/")
    for tool in tools:
        tool.runs[name] = []
    for i in range(args.pairs):
        order = tools if i % 2 == 0 else tools[::-1]
        for tool in order:
            sargs = scenario_args(scenario, args, tool, cset)
            metrics = run_metrics(tool, tool.command(sargs), workdir)
            tool.runs[name].append(metrics)
            n = metrics["overflow"]
            note = f" ({n} histogram overflow(s))" if n else ""
            log(f"[{name}] pair {i + 1}/{args.pairs} {tool.name:<10} "
                f"p50={metrics['p50']} p99={metrics['p99']} "
                f"cpu={metrics['cpu_ms']:.1f}ms/100k "
                f"rss={metrics['rss_kib']}KiB{note}")


def ratio(a, b):
    if b == 0:
        return 1.0 if a == 0 else math.inf
    return a / b


def verdict(target, med_ratio, lo):
    """ok: median ratio meets the target; noise: it does not, but at least
    one pair does (target inside the run-to-run range); OVER: no pair does."""
    if target is None:
        return ""
    if med_ratio <= target:
        return "ok"
    return "noise" if lo <= target else "OVER"


def target_text(target):
    return "-" if target is None else f"<= {target:.2f}x"


def summarize(name, rt, ct):
    """Rows: metric, rtscope median, cyclictest median, ratio, range, ..."""
    rows = []
    for key, label, decimals, target in METRICS:
        rv = [m[key] for m in rt.runs[name]]
        cv = [m[key] for m in ct.runs[name]]
        r_med, c_med = statistics.median(rv), statistics.median(cv)
        pair_ratios = [ratio(a, b) for a, b in zip(rv, cv)]
        lo, hi = min(pair_ratios), max(pair_ratios)
        med_ratio = ratio(r_med, c_med)
        rows.append([label, f"{r_med:.{decimals}f}", f"{c_med:.{decimals}f}",
                     f"{med_ratio:.2f}", f"{lo:.2f}-{hi:.2f}",
                     target_text(target), verdict(target, med_ratio, lo)])
    return rows


def format_table(headers, rows, markdown):
    widths = [max(len(str(r[i])) for r in [headers, *rows])
              for i in range(len(headers))]

    def line(cells):
        padded = [str(c).ljust(w) for c, w in zip(cells, widths)]
        return ("| " + " | ".join(padded) + " |") if markdown else \
            "  ".join(padded).rstrip()

    sep = ["-" * w for w in widths]
    return "\n".join([line(headers), line(sep), *(line(r) for r in rows)])


SUMMARY_HEADERS = ["metric", "rtscope", "cyclictest", "ratio",
                   "per-pair ratio range", "target", "verdict"]


def binary_rows(tools):
    sizes = [os.path.getsize(os.path.realpath(t.path)) for t in tools]
    rows = [[t.name, f"{os.path.realpath(t.path)} ({linkage(t.path)})", str(s)]
            for t, s in zip(tools, sizes)]
    rows.append(["ratio", "rtscope / cyclictest", f"{ratio(*sizes):.2f}x"])
    return rows


def cpu_accounting_note():
    """Warn when the kernel only samples the user/sys split at each tick."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            config = f.read()
    except OSError:
        return None
    if "CONFIG_TICK_CPU_ACCOUNTING=y" not in config:
        return None
    hz = re.search(r"^CONFIG_HZ=(\d+)$", config, re.M)
    return ("Note: this kernel uses tick-based CPU accounting "
            f"(CONFIG_TICK_CPU_ACCOUNTING, HZ={hz.group(1) if hz else '?'}): "
            "total CPU is exact, the user/sys split is sampled per tick, "
            "so user and sys CPU are estimates (more --loops = tighter).")


def render_report(tools, args, markdown):
    rt, ct = tools
    h = "## " if markdown else "== "
    out = [f"{'# ' if markdown else ''}rtscope vs cyclictest: {args.pairs} "
           f"pair(s), -l {args.loops}, -i {args.interval} us, "
           f"medians over pairs, ratio = rtscope / cyclictest", ""]
    note = cpu_accounting_note()
    if note:
        out += [note, ""]
    for name in runs_of(args):
        scenario, cset = name.split("/")
        out += [f"{h}scenario {scenario}, set {cset}", ""]
        cmds = [shlex.join(t.command(scenario_args(scenario, args, t, cset)))
                for t in tools]
        out += [f"- {t.name}: `{c}`" if markdown else f"  {t.name}: {c}"
                for t, c in zip(tools, cmds)]
        out += ["", format_table(SUMMARY_HEADERS, summarize(name, rt, ct),
                                 markdown), ""]
    out += [f"{h}binary size (bytes)", "",
            format_table(["tool", "file", "bytes"], binary_rows(tools),
                         markdown), ""]
    return "\n".join(out)


def runs_of(args):
    """Every `scenario/set` measured, in order."""
    return [f"{s}/{c}" for s in args.scenarios for c in args.sets]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def main(argv=None):
    args = parse_args(argv)
    if args.rtscope_is_cyclictest:
        log("SELF-TEST: the --rtscope path is invoked as plain cyclictest")
    try:
        with tempfile.TemporaryDirectory(prefix="rtscope-bench-") as workdir:
            tools = make_tools(args, workdir)
            for name in runs_of(args):
                run_scenario(name, tools, args, workdir)
            text = render_report(tools, args, markdown=False)
            md = render_report(tools, args, markdown=True) if args.out else None
    except ToolError as exc:
        log(f"error: {exc}")
        return 1
    print(text)
    if md is not None:
        with open(args.out, "w") as f:
            f.write(md)
        log(f"Markdown report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
