#!/usr/bin/env python3
"""Raw-sample bytes of one recorded run: as stored, and as codec tag 2 (before issue 28 item 3)
would store the same samples, chunk for chunk (tag 2: per sample the varints of cycle delta,
latency and zigzag(offset - previous offset - delta x interval)).

    rtscope measure --raw -D 30s -q --db /tmp/pqraw.db
    rtscope export 1 --db /tmp/pqraw.db -f csv -o out/
    python3 bench/raw-size.py /tmp/pqraw.db 1 out/run-1-samples.csv 1000000

The last argument is the run's interval in ns (every thread's, as with one `-i`). Standard
library only.
"""
import csv, sqlite3, sys
db, rid, path, interval = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
def vl(v):
    n = 1
    while v >= 0x80:
        v >>= 7; n += 1
    return n
def zz(v):
    v &= (1 << 64) - 1
    s = v - (1 << 64) if v >> 63 else v
    return ((s << 1) ^ (s >> 63)) & ((1 << 64) - 1)
con = sqlite3.connect(db)
chunks = con.execute("select thread, count, length(data) from samples where run_id=? order by thread, first_cycle", (rid,)).fetchall()
rows = [(int(r["thread"]), int(r["cycle"]), int(r["latency_ns"]), int(r["offset_ns"])) for r in csv.DictReader(open(path))]
rows.sort()
stored = sum(c[2] for c in chunks)
n = sum(c[1] for c in chunks)
assert n == len(rows), (n, len(rows))
old, at = 0, 0
for _, count, _ in chunks:
    part = rows[at:at + count]; at += count
    old += 1 + vl(interval) + vl(count)
    prev = None
    for (_, c, l, o) in part:
        if prev is None:
            old += vl(c) + vl(l) + vl(o)
        else:
            d = (c - prev[0]) % (1 << 64)
            old += vl(d) + vl(l) + vl(zz(o - (prev[2] + d * interval)))
        prev = (c, l, o)
print(f"samples {n} chunks {len(chunks)}: stored (tag 3) {stored} B = {stored/n:.2f} B/sample; tag 2 would be {old} B = {old/n:.2f} B/sample")
