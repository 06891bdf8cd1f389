#!/usr/bin/env bash
# gpu-mmio.sh - the mmio runs of issue 39 on a GPU: the round trip with 1
# to 8 polling warps (cuda:pollers=N), four passes (drift shows as a
# difference between passes), the whole matrix and the latency
# curve at the default, and the CUDA tests. Binaries from .gpu/ as
# gpu-run.sh.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-out}
res=/tmp/gpu-mmio
mkdir -p "$out" "$res"
exec > >(tee "$out/log.txt") 2>&1
source "$root/bench/lib.sh"
gpu_binaries "$root"
xb=$XB_GPU
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
echo "=== tests"
timeout -k 10 -s INT 120 "$root/.gpu/cuda-tests" --test-threads=1 2>&1 | grep -E '^test |test result'
echo "tests exit: ${PIPESTATUS[0]}"
i=0
for pass in 1 2 3 4; do
    for p in 1 2 4 8; do
        i=$((i + 1))
        timeout -k 10 -s INT 40 "$xb" roundtrip -q -t "cuda:pollers=$p" --buffers mmio --unit bf16 \
            --in 32,64,512 --out 32 --samples 10000 \
            --format json --output "$res/mmio-$i-p$p.json" || echo "ERROR: pollers=$p exit $?"
    done
done
timeout -k 10 -s INT 90 "$xb" roundtrip -q -t cuda --buffers mmio --unit bf16 --in 32..8192 --out 32..8192 \
    --samples 2000 --format json --output "$res/matrix-mmio.json" || echo "ERROR: mmio matrix exit $?"
timeout -k 10 -s INT 60 "$xb" curve -q -t cuda --buffers mmio --sizes 4..32k \
    --format json --output "$res/mmio-curve.json" || echo "ERROR: mmio curve exit $?"
tar -C /tmp -czf "$out/results.tar.gz" gpu-mmio
echo "=== mmio p50/min in µs (run, in B, out B)"
python3 - "$res" <<'PY'
import json, sys, glob, os
print("file: in/out min/p50/p90")
for f in sorted(glob.glob(sys.argv[1] + "/mmio-[0-9]*.json"), key=lambda f: int(os.path.basename(f).split("-")[1])):
    d = json.load(open(f))
    cells = [f"{p['in_bytes']}/{p['out_bytes']}:" + "/".join(f"{p['summary'][k]/1e3:.2f}" for k in ("min_ns", "p50_ns", "p90_ns"))
             for p in d["points"] if p["out_bytes"] == 64]
    print(os.path.basename(f), "complete" if d["complete"] else "INCOMPLETE", *cells)
for name in ["mmio-curve.json", "matrix-mmio.json"]:
    d = json.load(open(f"{sys.argv[1]}/{name}"))
    if "oneway" in d["points"][0]:
        print(name, *[f"{p['size_bytes']}:{p['oneway']['p50_ns']/1e3:.2f}" for p in d["points"]])
    else:
        print(name, *[f"{p['in_bytes']}/{p['out_bytes']}:{p['summary']['p50_ns']/1e3:.2f}" for p in d["points"] if p["in_bytes"] == p["out_bytes"]])
PY
