#!/usr/bin/env bash
# gpu-prepare.sh - builds what bench/gpu-run.sh carries to a GPU machine
# that has no Rust toolchain: the stripped release binary and the CUDA test
# binary, in .gpu/ (ignored by git; name it in the device tool's carry).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release -q
tests=$(cargo test --release --test cuda --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="cuda" and m.get("executable"): print(m["executable"])')
mkdir -p .gpu
strip -o .gpu/xferbench target/release/xferbench
strip -o .gpu/cuda-tests "$tests"
echo "$root/target/release/xferbench" >.gpu/built-at
# .gpu/ is in .gitignore: the device tool carries it only when asked (carry).
ls -la .gpu
