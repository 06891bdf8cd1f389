#!/usr/bin/env bash
# cuda.sh - the GPU measurements of issue #7 on a machine with an NVIDIA GPU:
# the Vollo IO round-trip matrix (32..8192 x 32..8192 bf16) in user, raw,
# mmio and graph modes, poll and block completion, and the host<->device
# bandwidth curve (4 B .. 512 MiB; h2d, d2h, bidir; pinned and pageable;
# copy engine and SM copy program). Writes JSON and an HTML report.
#
#   bench/cuda.sh [OUTDIR]          (default: cuda-results)
#
# Environment: XB (the xferbench binary; default: build it with cargo),
# XB_SAMPLES (round trips per cell, default 2000), XB_QUICK=1 (a small
# matrix and curve, for a first look), XB_DEVICE (GPU number, default 0).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
out=${1:-cuda-results}
mkdir -p "$out"
if [[ -z ${XB:-} ]]; then
    (cd "$here/.." && cargo build --release -q) || { echo "cuda.sh: cargo build failed" >&2; exit 1; }
    XB="$here/../target/release/xferbench"
fi
dev=${XB_DEVICE:-0}
samples=${XB_SAMPLES:-2000}
sizes=32..8192
curve_sizes=4..512M
if [[ ${XB_QUICK:-0} == 1 ]]; then
    sizes=32,64,512,8192
    curve_sizes=4,4k,1M,64M
    samples=300
fi

if "$XB" list --no-probe --format csv | grep '^cuda,' | grep -q 'not available'; then
    "$XB" list --no-probe --format csv | grep '^cuda,' >&2
    echo "cuda.sh: no usable GPU here" >&2
    exit 1
fi
# Ctrl-C (or timeout -s INT) stops the script after the step in flight has
# written its partial results, rather than going on to the next step.
trap 'echo "cuda.sh: interrupted; partial results are in $out" >&2; report_errors; exit 130' INT
command -v nvidia-smi >/dev/null && nvidia-smi -L && nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.width.current --format=csv

# Round trips: poll in every mode, block where it exists (mmio only polls).
"$XB" roundtrip -q -t "cuda:device=$dev" --buffers user,raw,mmio,graph --completion poll \
    --unit bf16 --in "$sizes" --out "$sizes" --samples "$samples" \
    --format json --output "$out/roundtrip-poll.json" --compare vollo-ia420f-user,vollo-ia420f-raw,vollo-ia420f-mmio \
    || error "roundtrip, poll"
"$XB" roundtrip -q -t "cuda:device=$dev" --buffers user,raw,graph --completion block \
    --unit bf16 --in "$sizes" --out "$sizes" --samples "$samples" \
    --format json --output "$out/roundtrip-block.json" || error "roundtrip, block"
# Bandwidth, nvbandwidth's method.
"$XB" curve -q -t "cuda:device=$dev" --mode stream --sizes "$curve_sizes" \
    --format json --output "$out/bandwidth.json" || error "bandwidth curve"
# Pinned copy-engine bandwidth at 1 GiB, the figure to set against the link.
"$XB" curve -q -t "cuda:device=$dev,host=pinned,engine=ce" --mode stream --sizes 1G \
    --format json --output "$out/bandwidth-1g.json" || error "bandwidth at 1 GiB"
# One-way latency over size for the round-trip modes (pingpong curve).
"$XB" curve -q -t "cuda:device=$dev" --buffers raw,mmio,graph --sizes 4..16M \
    --format json --output "$out/curve-latency.json" || error "latency curve"

for f in "$out"/*.json; do
    [[ -s $f ]] && "$XB" report "$f"
done
"$XB" report "$out"/*.json --html "$out/html" --compare vollo-ia420f-raw,vollo-ia420f-mmio >/dev/null || error "report"
echo "-- wrote $out/*.json and $out/html/index.html"
report_errors
