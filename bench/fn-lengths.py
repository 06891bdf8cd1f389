#!/usr/bin/env python3
"""Lists Rust functions longer than a limit (rustfmt'd code: a fn ends at the
first line that is its own indentation plus '}').

Usage: bench/fn-lengths.py LIMIT PATH...   (PATH: a folder or a .rs file)
Prints "LINES FILE:LINE NAME" for each function over LIMIT lines. Exit
status: 0 when none is, 1 when some are (CI's guard), 2 on a usage error,
a PATH that does not exist, or no function found at all."""
import re, sys, os

def refuse(why):
    print(f"fn-lengths: {why}", file=sys.stderr)
    sys.exit(2)

if len(sys.argv) < 3 or not sys.argv[1].isdigit():
    refuse(__doc__.split('\n\n')[1].split('\n')[0])
limit = int(sys.argv[1]); roots = sys.argv[2:]
pat = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)')
seen = over = 0
for root in roots:
    if not os.path.exists(root):
        refuse(f"{root}: no such file or folder")
    walk = [(os.path.dirname(root), [], [os.path.basename(root)])] if os.path.isfile(root) else os.walk(root)
    for d, _, fs in walk:
        for f in sorted(fs):
            if not f.endswith('.rs'): continue
            p = os.path.join(d, f); lines = open(p).read().split('\n')
            for i, l in enumerate(lines):
                m = pat.match(l)
                if not m: continue
                ind = m.group(1)
                # one-line or declaration-only
                j = i
                while j < len(lines) and not lines[j].rstrip().endswith('{') and not lines[j].rstrip().endswith(';') and not lines[j].rstrip().endswith('}'):
                    j += 1
                if j >= len(lines) or not lines[j].rstrip().endswith('{'): continue
                seen += 1
                k = j + 1
                while k < len(lines) and lines[k] != ind + '}': k += 1
                n = k - i + 1
                if n > limit:
                    over += 1
                    print(f"{n:5d} {p}:{i+1} {m.group(8)}")
if seen == 0:
    refuse(f"no function found under {' '.join(roots)}")
if over:
    print(f"fn-lengths: {over} of {seen} functions are over {limit} lines; split them", file=sys.stderr)
    sys.exit(1)
