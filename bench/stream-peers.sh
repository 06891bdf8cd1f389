#!/usr/bin/env bash
# stream-peers.sh - compare `xferbench stream` against fio (Debian `fio`) on
# one tmpfs file, in one run: the same job (one worker, sequential write and
# read, iodepth 1) at bs 4k and 1m, with ioengine psync and io_uring.
#
# Target: xferbench's aggregate bandwidth >= 0.95 x fio's for each engine and
# block size. Each case alternates fio and xferbench for XB_ROUNDS rounds on
# the same pre-written file; each round's ratio is printed and the verdict
# uses the median of the per-round ratios (pairing cancels most of this
# VM's minute-to-minute drift). The exit status is 0 unless a step failed to
# run (build error, fio missing, unparsable output); PASS/FAIL is information.
#
# Environment:
#   XB_ROUNDS   rounds of alternation (default 3)
#   XB_SIZE     bytes per run (default 1g; fio suffixes)
#   XB_DIR      directory for the test file (default /dev/shm, a tmpfs)
#   XB_IOMEM    buffers for both tools (default mmap, as the XDMA job files
#               use; with malloc, fio's buffers sit 16 bytes past a page
#               boundary and its 1m copies run ~3x slower on AMD hosts,
#               while xferbench page-aligns every kind)
#   XB_BIN      xferbench binary to use (default: cargo build --release)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

ROUNDS=${XB_ROUNDS:-3}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "XB_ROUNDS must be a positive integer" >&2; exit 2; }
SIZE=${XB_SIZE:-1g}
DIR=${XB_DIR:-/dev/shm}
IOMEM=${XB_IOMEM:-mmap}
[[ -d $DIR && -w $DIR ]] || { echo "XB_DIR=$DIR is not a writable directory" >&2; exit 2; }

echo "== stream vs fio: $SIZE per run, $ROUNDS rounds, file in $DIR, iomem=$IOMEM"
install_deb fio fio || error "fio is not available"
build_xb "$ROOT"
command -v python3 >/dev/null || error "python3 is needed to read the JSON outputs"
report_errors

FILE=$(mktemp "$DIR/xferbench-stream-peers.XXXXXX")
JOB=$(mktemp --suffix=.fio)
OUT=$(mktemp)
trap 'rm -f "$FILE" "$JOB" "$OUT"' EXIT
# Write the whole file once, so neither tool pays for tmpfs page allocation.
fio --name=layout --filename="$FILE" --size="$SIZE" --bs=1m --rw=write \
    --ioengine=psync --output=/dev/null || { error "fio could not lay out $FILE"; report_errors; }

# bw_bytes FILE: the summed read+write bw_bytes of the jobs in a fio-shaped JSON.
bw_bytes() {
    python3 - "$1" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print(sum(j["read"]["bw_bytes"] + j["write"]["bw_bytes"] for j in d["jobs"]))
except Exception as e:
    sys.exit(f"unparsable: {e}")
PY
}

printf '\n%-9s %-5s %-6s %12s %12s %7s  %s\n' engine bs rw "fio MB/s" "xfer MB/s" ratio verdict
ALL=()
for engine in psync io_uring; do
    for bs in 4k 1m; do
        for rw in write read; do
            cat >"$JOB" <<JOBFILE
[global]
ioengine=$engine
bs=$bs
size=$SIZE
iodepth=1
iomem=$IOMEM
allow_file_create=0

[peer]
rw=$rw
filename=$FILE
JOBFILE
            ratios=() fios=() xbs=()
            for ((r = 1; r <= ROUNDS; r++)); do
                f= x=
                if fio --output-format=json --output="$OUT" "$JOB" >/dev/null 2>&1; then
                    f=$(bw_bytes "$OUT") || error "fio $engine $bs $rw: unparsable JSON"
                else
                    error "fio $engine $bs $rw failed"
                fi
                if "$XB" --quiet stream --job "$JOB" --format json -o "$OUT" 2>/dev/null; then
                    x=$(bw_bytes "$OUT") || error "xferbench $engine $bs $rw: unparsable JSON"
                else
                    error "xferbench $engine $bs $rw failed"
                fi
                ratios+=("$(ratio "$x" "$f")") fios+=("$f") xbs+=("$x")
            done
            med=$(median "${ratios[@]}")
            ALL+=("$med")
            printf '%-9s %-5s %-6s %12.0f %12.0f %7s  %s   (rounds: %s)\n' "$engine" "$bs" "$rw" \
                "$(awk -v v="$(median "${fios[@]}")" 'BEGIN{print v/1e6}')" \
                "$(awk -v v="$(median "${xbs[@]}")" 'BEGIN{print v/1e6}')" \
                "$(shown "$med")" "$(verdict "$med" 0.95 ge)" "${ratios[*]}"
        done
    done
done
echo
echo "geometric mean of the median ratios: $(shown "$(geomean "${ALL[@]}")") (target >= 0.95 per case)"
report_errors
