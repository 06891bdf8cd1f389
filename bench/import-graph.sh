#!/usr/bin/env bash
# import-graph.sh - the module import graph of each crate's src/ and its circles.
#
# Every `crate::a::b` path in a module (use lines and inline paths alike,
# its unit tests aside) is an edge from that module to the deepest module
# the path names. Prints the
# edges (module -> modules it imports), then every circle (a strongly
# connected component of more than one module), then the same for the layers
# (each top-level module or folder of src/ as one node), then which modules
# import the CLI layer and which name clap; once per crate (the root's src/
# and crates/*/src; between crates Cargo refuses circles itself).
#
#   bench/import-graph.sh            # the whole report; exit 0
#   bench/import-graph.sh --circles  # circles only; exit 1 if there is one (CI)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
status=0
for src in "$ROOT/src" "$ROOT"/crates/*/src; do
echo "#### ${src#"$ROOT"/}"
python3 - "$src" "${1:-}" <<'PY' || status=1
import os, re, sys
src, mode = sys.argv[1], sys.argv[2]
mods = {}
for dirpath, _, files in os.walk(src):
    for f in files:
        if not f.endswith(".rs"):
            continue
        rel = os.path.relpath(os.path.join(dirpath, f), src)[:-3].split(os.sep)
        if rel[-1] in ("mod", "lib", "main"):
            rel = rel[:-1]
        mods["::".join(rel) or "crate"] = os.path.join(dirpath, f)
names = set(mods)

def resolve(path, here):
    parts = path.split("::")
    for i in range(len(parts), 0, -1):
        cand = "::".join(parts[:i])
        if cand in names:
            return cand
    return None

def parent(m):
    return m.rsplit("::", 1)[0] if "::" in m else "crate"

edges = {m: set() for m in names}
path_re = re.compile(r"\bcrate((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
group_re = re.compile(r"\bcrate::((?:[A-Za-z_][A-Za-z0-9_]*::)*)\{([^}]*)\}", re.S)
super_re = re.compile(r"\bsuper((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
super_group_re = re.compile(r"\bsuper::((?:[A-Za-z_][A-Za-z0-9_]*::)*)\{([^}]*)\}", re.S)
for m, f in mods.items():
    text = open(f, encoding="utf-8").read()
    # Drop comments so doc text naming crate::x is not an import, and the
    # unit tests at the end of a file (a test may reach anywhere in its
    # crate): the same rule as tests/architecture.rs.
    text = re.sub(r"//[^\n]*", "", text)
    cut = text.find("#[cfg(test)]\nmod tests")
    if cut >= 0:
        text = text[:cut]
    targets = set()
    for g in group_re.finditer(text):
        base = g.group(1).rstrip(":")
        for item in g.group(2).split(","):
            item = item.strip().split(" as ")[0].strip()
            if not item:
                continue
            p = (base + "::" + item) if base else item
            targets.add(resolve(p.replace("::self", ""), m))
    for p in path_re.finditer(text):
        targets.add(resolve(p.group(1)[2:], m))
    # `super` is the parent module, for a mod.rs file and a leaf file alike.
    base = parent(m)
    def under(rest):
        return rest if base == "crate" else (base + "::" + rest if rest else base)
    for g in super_group_re.finditer(text):
        pre = g.group(1).rstrip(":")
        for item in g.group(2).split(","):
            item = item.strip().split(" as ")[0].strip()
            if item:
                p = (pre + "::" + item) if pre else item
                targets.add(resolve(under(p.replace("::self", "").replace("self", "")), m))
    for p in super_re.finditer(text):
        targets.add(resolve(under(p.group(1)[2:]), m))
    edges[m] = {t for t in targets if t and t != m and t != "crate"}

def circles(edges):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sccs

def print_circles(title, edges, sccs):
    print(f"== {title}: {len(sccs)}")
    for c in sccs:
        inner = [f"{a} -> {b}" for a in c for b in sorted(edges[a]) if b in c]
        print(f"- {' , '.join(c)}")
        for e in inner:
            print(f"    {e}")

sys.setrecursionlimit(10000)
sccs = circles(edges)
# The layers: each top-level module or folder of src/ as one node.
top = lambda m: m.split("::")[0]
layers = {top(m): set() for m in names if m != "crate"}
for m in names:
    if m == "crate":
        continue
    layers[top(m)] |= {top(t) for t in edges[m] if top(t) != top(m)}
layer_sccs = circles(layers)

if mode != "--circles":
    print("== imports (module -> modules it uses)")
    for m in sorted(names):
        if edges[m]:
            print(f"{m} -> {', '.join(sorted(edges[m]))}")
print_circles("circles", edges, sccs)
if mode != "--circles":
    print("== layers (top-level module or folder -> those it uses)")
    for m in sorted(layers):
        if layers[m]:
            print(f"{m} -> {', '.join(sorted(layers[m]))}")
print_circles("circles between layers", layers, layer_sccs)
if mode != "--circles":
    cli = sorted(m for m in names if any(t == "cli" or t.startswith("cli::") for t in edges[m]))
    print("== modules importing the CLI layer: " + (", ".join(cli) or "none"))
    clap = sorted(m for m, f in mods.items() if re.search(r"\bclap\b", re.sub(r"//[^\n]*", "", open(f).read())))
    print("== modules naming clap: " + (", ".join(clap) or "none"))
sys.exit(1 if mode == "--circles" and (sccs or layer_sccs) else 0)
PY
done
exit $status
