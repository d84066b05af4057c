#!/usr/bin/env python3
"""Peak memory and time of `rtscope export` and `rtscope report --raw` on a large --raw run.

Records one run with raw samples, SCHED_OTHER so that no CPU is held at a real-time priority
(`measure --policy other -t 2 -i INTERVAL -D SECONDS --raw --monitor-interval 0`: two threads,
so SECONDS × 2 / INTERVAL samples), then runs each of

    rtscope export 1 -o DIR --format csv|json|parquet
    rtscope report 1 --raw -o DIR

under GNU time (`%M`, peak RSS of the process in KiB, and `%e`, wall seconds) and prints one
line per command. The sample count is read back from the database, not assumed. When the run
recorded fewer samples than --samples (late wake-ups on a loaded machine are missed deadlines,
not samples), its raw-sample chunks are copied in the database until it holds that many
(--no-replicate: measure it as recorded); --seconds shortens the recording run. Build first:
`cargo build --release -p rtscope`. Standard library only, plus /usr/bin/time.

    python3 bench/export-memory.py [--samples 6000000] [--interval-us 20] [--seconds S] [--keep]
"""

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "rtscope")


def timed(args):
    """(peak RSS KiB, wall s) of `args` under GNU time; raises on a non-zero exit."""
    p = subprocess.run(
        ["/usr/bin/time", "-f", "%M %e", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{p.stderr}")
    rss, wall = p.stderr.strip().splitlines()[-1].split()
    return int(rss), float(wall)


def replicate(con, target):
    """Copies run 1's raw-sample chunks (under new first_cycle keys) until the run holds at
    least `target` samples; returns the new count. On a loaded machine late wake-ups are
    missed deadlines, not samples, so a recording run may fall short of the target; the
    exports read the chunks as they read recorded ones, so their memory is measured the same."""
    rows = con.execute("SELECT thread, first_cycle, count, data FROM samples WHERE run_id = 1").fetchall()
    if not rows:
        sys.exit("the run recorded no raw samples")
    total = sum(r[2] for r in rows)
    span = 1 + max(r[1] + r[2] for r in rows)
    copy = 1
    while total < target:
        for thread, first, count, data in rows:
            con.execute(
                "INSERT INTO samples (run_id, thread, first_cycle, count, data) VALUES (1, ?, ?, ?, ?)",
                (thread, first + copy * span, count, data),
            )
            total += count
            if total >= target:
                break
        copy += 1
    con.commit()
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=6_000_000)
    ap.add_argument("--interval-us", type=int, default=20)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--seconds", type=float, help="length of the recording run (default: from --samples)")
    ap.add_argument(
        "--no-replicate",
        action="store_true",
        help="measure the recorded run as it is, even below --samples",
    )
    a = ap.parse_args()
    if not os.path.exists(BINARY):
        sys.exit("build first: cargo build --release -p rtscope")
    tmp = tempfile.mkdtemp(prefix="rtscope-export-mem-")
    db = os.path.join(tmp, "bench.db")
    seconds = a.seconds or a.samples * a.interval_us / 2 / 1e6
    rec = [
        BINARY, "measure", "--policy", "other", "-t", "2", "-i", f"{a.interval_us}us",
        "-D", f"{seconds:.3f}s", "--raw", "--monitor-interval", "0", "--db", db, "-q",
    ]
    subprocess.run(rec, check=True, stdout=subprocess.DEVNULL)
    con = sqlite3.connect(db)
    raw = con.execute("SELECT coalesce(sum(count), 0) FROM samples").fetchone()[0]
    recorded = raw
    if raw < a.samples and not a.no_replicate:
        raw = replicate(con, a.samples)
    con.close()
    size = os.path.getsize(db)
    print(f"run: {recorded} raw samples recorded ({' '.join(rec[1:])})")
    if raw != recorded:
        print(f"     chunks replicated to {raw} raw samples (cycle numbers repeat)")
    print(f"     database {size / 2**20:.1f} MiB")
    for fmt in ("csv", "json", "parquet"):
        out = os.path.join(tmp, f"export-{fmt}")
        rss, wall = timed([BINARY, "export", "1", "--db", db, "-o", out, "--format", fmt])
        print(f"export --format {fmt}: peak RSS {rss / 1024:.0f} MiB, {wall:.1f} s")
    out = os.path.join(tmp, "report")
    rss, wall = timed([BINARY, "report", "1", "--raw", "--db", db, "-o", out])
    print(f"report --raw: peak RSS {rss / 1024:.0f} MiB, {wall:.1f} s")
    if a.keep:
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
