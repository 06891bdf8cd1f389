#!/usr/bin/env bash
# gpu-run.sh - everything a lent GPU machine is asked in one go (issues 39,
# 49): the card's facts and its link's limit (`xferbench limits`), the CUDA
# tests against the real driver, the quick and then the full bench/cuda.sh,
# each step under its own time limit so the whole run ends inside the
# lease. Results go to $OUT (one log and one tarball, as the device tool
# brings back few files).
#
#   bench/gpu-run.sh            (binaries from .gpu/, built by bench/gpu-prepare.sh)
#
# Environment: OUT (default: gpu-out), GPU_FULL_S (seconds for the full
# cuda.sh, default 200), GPU_QUICK_S (default 100; 0 skips the quick run).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-out}
res=/tmp/gpu-results
mkdir -p "$out" "$res"
exec > >(tee "$out/log.txt") 2>&1
pack() { tar -C /tmp -czf "$out/results.tar.gz" gpu-results 2>/dev/null; }
step() { echo; echo "=== $* ($(date +%T))"; }

source "$root/bench/lib.sh"
gpu_binaries "$root"
xb=$XB_GPU

step facts
uname -a
nvidia-smi
nvidia-smi --query-gpu=name,driver_version,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.sm,clocks.max.sm,memory.total --format=csv
nvidia-smi -q | grep -iA12 'GPU Link Info'
nproc; lscpu | grep -E 'Model name|NUMA'
ldconfig -p | grep -E 'libcuda\.so'
"$xb" --version
"$xb" list --format csv | grep -E '^(name|cuda),'
# The links' ceilings as xferbench reads them (issue 49): the GPU's trained
# PCIe link beside nvidia-smi's, memory copy and the core-to-core floor.
timeout -k 5 60 "$xb" limits --refresh | tee "$res/limits.txt"
timeout -k 5 60 "$xb" limits --format json -o "$res/limits.json"
{ uname -a; nvidia-smi -q; } >"$res/nvidia-smi-q.txt" 2>&1

step "cuda tests against the real driver"
timeout -k 15 -s INT 120 "$root/.gpu/cuda-tests" --test-threads=1 2>&1 | tee "$res/tests.txt"
echo "tests exit: ${PIPESTATUS[0]}"
pack

if [[ ${GPU_QUICK_S:-100} != 0 ]]; then
    step "quick bench/cuda.sh"
    XB=$xb XB_QUICK=1 timeout -k 15 -s INT "${GPU_QUICK_S:-100}" "$root/bench/cuda.sh" "$res/quick"
    echo "quick exit: $?"
    pack
fi

step "full bench/cuda.sh"
XB=$xb timeout -k 15 -s INT "${GPU_FULL_S:-200}" "$root/bench/cuda.sh" "$res/full"
echo "full exit: $?"
pack
step done
ls -la "$res" "$res"/*
# Last, what the reply's tail must carry even if no file comes back.
step summary
grep -E '^test |test result' "$res/tests.txt"
for f in "$res"/full/bandwidth-1g.json; do
    [[ -s $f ]] && "$xb" report "$f" | grep -vE '^Each point|^$' | head -40
done
# Each figure beside its path's limit (the headline's share of the link).
for f in "$res"/full/bandwidth.json "$res"/full/bandwidth-1g.json; do
    [[ -s $f ]] && "$xb" report "$f" | grep -E '^Limit|of limit|faster than|NUMA' | head -12
done
