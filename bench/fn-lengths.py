#!/usr/bin/env python3
"""Lists Rust functions longer than a limit (rustfmt'd code: a fn ends at the
first line that is its own indentation plus '}')."""
import re, sys, os
limit = int(sys.argv[1]); roots = sys.argv[2:]
pat = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)')
for root in roots:
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
                k = j + 1
                while k < len(lines) and lines[k] != ind + '}': k += 1
                n = k - i + 1
                if n > limit: print(f"{n:5d} {p}:{i+1} {m.group(8)}")
