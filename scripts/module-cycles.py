#!/usr/bin/env python3
"""Module cycles inside each crate of the workspace (a newcomer reads a crate top-down only if
its modules depend one way), at every level: among the top-level modules of a crate's src/ and
among the sibling modules of every directory module (`compare/analysis.rs` and
`compare/strata.rs`). An edge a -> b for every `crate::PATH::b` path in a module a under
PATH (its children counted as a), and `super::b` in a's own file (`a.rs` or `a/mod.rs`); its
`#[cfg(test)] mod tests` left out. Prints each cycle and exits 1 if there is any.

Usage: python3 scripts/module-cycles.py [crates]"""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else 'crates'


def strip_tests(text):
    return re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*', '', text, flags=re.S)


def children(directory, top):
    """The child modules of `directory`: name -> [(path, is_own_file)]."""
    kids = {}
    for entry in sorted(os.listdir(directory)):
        path = os.path.join(directory, entry)
        if entry.endswith('.rs'):
            name = entry[:-3]
            if name in ('mod', 'lib', 'main') or (top and name == 'tests'):
                continue
            kids.setdefault(name, []).append((path, True))
        elif os.path.isdir(path):
            for dp, _, fs in os.walk(path):
                for f in fs:
                    if f.endswith('.rs'):
                        p = os.path.join(dp, f)
                        own = dp == path and f == 'mod.rs'
                        kids.setdefault(entry, []).append((p, own))
    return kids


def cycles(edges):
    index, low, stack, on, sccs, i = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = i[0]
        i[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(comp)

    for v in edges:
        if v not in index:
            strong(v)
    return sccs


found = 0
for crate in sorted(os.listdir(root)):
    src = os.path.join(root, crate, 'src')
    if not os.path.isdir(src):
        continue
    for directory, _, _ in os.walk(src):
        rel = os.path.relpath(directory, src)
        path = [] if rel == '.' else rel.split(os.sep)
        kids = children(directory, not path)
        if len(kids) < 2:
            continue
        prefix = r'\bcrate::' + ''.join(p + '::' for p in path)
        edges = {k: set() for k in kids}
        for a, files in kids.items():
            for f, own in files:
                text = strip_tests(open(f).read())
                refs = re.findall(prefix + r'([a-z_][a-z0-9_]*)', text)
                if own:
                    refs += re.findall(r'\bsuper::([a-z_][a-z0-9_]*)', text)
                edges[a].update(b for b in refs if b in kids and b != a)
        for c in cycles(edges):
            found += 1
            where = '/'.join([crate, 'src'] + path)
            print(f"{where}: cycle among {sorted(c)}")
print(f"{found} module cycles")
sys.exit(1 if found else 0)
