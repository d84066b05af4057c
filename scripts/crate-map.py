#!/usr/bin/env python3
"""crates/README.md against `cargo metadata` (issue 27): a map that drifts stops being read.

Checks, for the workspace's own crates (normal dependencies; dev-dependencies are tests):
  * each crate's "May depend on:" list names exactly the rtscope crates it depends on
    ("every crate above" for the CLI: only crates listed before it), each with its reason in
    parentheses after it (issue 69: an arrow is there because something uses it);
  * every arrow drawn in the diagram (a crate under its parent) is a real dependency, and every
    workspace crate is drawn;
  * README.md's layout table (issue 52) has one row per workspace crate, by its directory, and
    no row for a crate that is not one.
Prints every difference and exits 1 if there is any.

Usage: python3 scripts/crate-map.py [crates/README.md [README.md]]"""
import json, re, subprocess, sys

readme_path = sys.argv[1] if len(sys.argv) > 1 else 'crates/README.md'
layout_path = sys.argv[2] if len(sys.argv) > 2 else 'README.md'
meta = json.loads(subprocess.run(
    ['cargo', 'metadata', '--format-version', '1', '--no-deps', '--offline'],
    check=True, capture_output=True, text=True).stdout)
members = {p['name'] for p in meta['packages']}
deps = {p['name']: {d['name'] for d in p['dependencies']
                    if d['name'] in members and d.get('kind') in (None, 'normal', 'build')}
        for p in meta['packages']}
short = {m: m[len('rtscope-'):] for m in members if m.startswith('rtscope-')}
full = {v: k for k, v in short.items()}

text = open(readme_path).read()
problems = []

# The allow-lists: "**rtscope-X** — ... May depend on: a, b (why), `c`. Must not: ..."
order = []
for m in re.finditer(r'\*\*(rtscope-[a-z]+)\*\*(.*?)(?=\n\*\*rtscope-|\Z)', text, re.S):
    name, body = m.group(1), ' '.join(m.group(2).split())
    order.append(name)
    allowed = re.search(r'May depend on:(.*?)(?:\. Must not|$)', body)
    if name not in members:
        problems.append(f'{name}: described but not a workspace crate')
        continue
    if not allowed:
        problems.append(f'{name}: no "May depend on:" list')
        continue
    listed = allowed.group(1)
    actual = deps[name]
    if 'every crate above' in listed:
        above = set(order[:-1])
        for d in sorted(actual - above):
            problems.append(f'{name} -> {d}: the CLI depends on a crate not described above it')
        continue
    depth, items, cur = 0, [], ''
    for ch in listed:  # commas inside parentheses do not separate items
        depth += ch == '('
        depth -= ch == ')'
        if ch == ',' and depth == 0:
            items.append(cur)
            cur = ''
        else:
            cur += ch
    items.append(cur)
    words = {i.strip().strip('`').split(' ')[0].strip('`') for i in items if i.strip()}
    for i in items:
        w = i.strip().strip('`').split(' ')[0].strip('`')
        if w in full and '(' not in i:
            problems.append(f'{name} -> {full[w]}: no reason given in its "May depend on" list')
    named = {full[w] for w in words if w in full}
    for d in sorted(actual - named):
        problems.append(f'{name} -> {d}: present in Cargo.toml, not in its "May depend on" list')
    for d in sorted(named - actual):
        problems.append(f'{name} -> {d}: in its "May depend on" list, absent from Cargo.toml')

# The diagram: a crate drawn under another (by indentation) is an arrow parent -> child.
diagram = re.search(r'```\n(rtscope \(binary\).*?)```', text, re.S).group(1)
stack, drawn = [], set()
for line in diagram.splitlines():
    m = re.search(r'(rtscope(?:-[a-z]+)?)\b', line)
    if not m:
        continue
    name = 'rtscope' if line.startswith('rtscope (binary)') else m.group(1)
    indent = m.start()
    drawn.add(name)
    while stack and stack[-1][0] >= indent:
        stack.pop()
    if stack and indent > 0:
        parent = stack[-1][1]
        if name not in deps.get(parent, set()):
            problems.append(f'diagram: {parent} -> {name} is drawn but {parent} does not depend on it')
    stack.append((indent, name))
for m in sorted(members - drawn):
    problems.append(f'diagram: {m} is not drawn')

# README.md's layout table: "| `crates/NAME` | what |" rows under "## Layout".
root = meta['workspace_root'].rstrip('/') + '/'
dirs = {p['manifest_path'][len(root):].rsplit('/', 1)[0]: p['name'] for p in meta['packages']}
layout = open(layout_path).read()
section = re.search(r'^## Layout\n(.*?)(?=^## |\Z)', layout, re.S | re.M)
rows = re.findall(r'^\| `(crates/[^`]+)` \|', section.group(1), re.M) if section else []
if not section:
    problems.append(f'{layout_path}: no "## Layout" section')
for d in sorted(set(dirs) - set(rows)):
    problems.append(f'{layout_path}: layout table has no row for {d} ({dirs[d]})')
for d in sorted(set(rows) - set(dirs)):
    problems.append(f'{layout_path}: layout table row {d} is not a workspace crate')
for d in sorted({d for d in rows if rows.count(d) > 1}):
    problems.append(f'{layout_path}: layout table lists {d} twice')

for p in problems:
    print(p)
if problems:
    print(f'{len(problems)} difference(s) between {readme_path} or {layout_path} and cargo metadata')
    sys.exit(1)
print(f'{readme_path}: {len(members)} crates, every allow-list and arrow matches cargo metadata; '
      f'{layout_path}: the layout table lists each of them once')
