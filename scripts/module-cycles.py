#!/usr/bin/env python3
"""Module cycles inside each crate of the workspace (a newcomer reads a crate top-down only if
its modules depend one way): an edge a -> b for every `crate::b` path in a top-level module a
of the crate's src/ (and `super::b` in a's own file), its children counted as a, its
`#[cfg(test)] mod tests` left out. Prints each cycle and exits 1 if there is any.

Usage: python3 scripts/module-cycles.py [crates]"""
import os, re, sys, itertools
root = sys.argv[1] if len(sys.argv) > 1 else 'crates'
found = 0
for crate in sorted(os.listdir(root)):
    src = os.path.join(root, crate, 'src')
    if not os.path.isdir(src):
        continue
    tops = {}
    for dp, _, fs in os.walk(src):
        for f in fs:
            if not f.endswith('.rs'):
                continue
            rel = os.path.relpath(os.path.join(dp, f), src)
            parts = rel[:-3].split(os.sep)
            top = parts[0]
            if top in ('lib', 'main'):
                continue
            tops.setdefault(top, []).append((os.path.join(dp, f), parts))
    edges = {t: set() for t in tops}
    for t, files in tops.items():
        for path, parts in files:
            text = open(path).read()
            text = re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*', '', text, flags=re.S)
            for m in re.finditer(r'\bcrate::([a-z_][a-z0-9_]*)', text):
                if m.group(1) in tops and m.group(1) != t:
                    edges[t].add(m.group(1))
            if len(parts) == 1:
                for m in re.finditer(r'\bsuper::([a-z_][a-z0-9_]*)', text):
                    if m.group(1) in tops and m.group(1) != t:
                        edges[t].add(m.group(1))
    # find cycles (SCCs of size > 1)
    index = {}; low = {}; stack = []; on = set(); sccs = []; i = [0]
    def strong(v):
        index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: sccs.append(comp)
    for v in edges:
        if v not in index:
            strong(v)
    for c in sccs:
        found += 1
        print(f"{crate}: cycle among {sorted(c)}")
print(f"{found} module cycles")
sys.exit(1 if found else 0)
