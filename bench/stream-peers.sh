#!/usr/bin/env bash
# stream-peers.sh - compare `xferbench stream` against fio (Debian `fio`) in
# one run: the same job (one worker, sequential write and read, iodepth 1)
# at bs 4k and 1m, with ioengine psync and io_uring, on a file in each of
# XB_DIRS (by default a tmpfs and a directory on the root file system, where
# I/O is buffered as fio's default is, unless XB_DIRECT asks for direct=1).
# With direct=1 the queued cases follow: 4k random reads through libaio and
# io_uring at each iodepth of XB_QDS (1, 8 and 32), the queue kept as fio
# keeps it (one submission per I/O, refilled as each completes).
#
# Target: the geometric mean of the cases' ratios (xferbench's bandwidth
# over fio's) >= 1.0 and no case below 0.90; XB_PIN pins both tools' jobs
# to one CPU (cpus_allowed=N), which is how a wake-up-bound case (io_uring
# 4k on tmpfs) is judged: every case of a pinned run is held to >= 0.95.
# Each case runs the two tools on the same pre-written file as a chain,
# fio, xferbench, fio, xferbench, …, fio: each xferbench run is a round,
# compared with the mean of the fio runs on either side of it, so neither
# tool always inherits the other's leftovers (cache state, writeback) and
# the VM's drift cancels. A round whose two fio runs differ by more than
# 20% happened across a change of the machine's state (this VM's I/O and
# wake-up costs flip every few seconds) and is dropped and counted; the
# chain goes on until XB_ROUNDS rounds are kept (3 x XB_ROUNDS tried at
# most). Before every run the file is synced, so no run pays for the
# previous one's dirty pages. Each kept round's ratio is printed and the
# verdict uses their median. The exit status is 0 unless a step failed to
# run (build error, fio missing, unparsable output); PASS/FAIL is
# information.
#
# Buffers: both tools get page-aligned buffers of the same kind. xferbench
# page-aligns every iomem= kind; fio aligns its buffers only when asked, so
# fio's job (and only fio's: xferbench would warn that it ignores the
# option) carries iomem_align=4096. Without it fio's malloc buffers sit 16
# bytes past a page boundary, and 1m copies run ~3x slower on AMD hosts.
#
# Environment:
#   XB_ROUNDS   kept rounds per case (default 3)
#   XB_SIZE     bytes per run, the file's size (default 4g, so that most
#               runs last a second or more on a 2-core VM; fio suffixes).
#               Runs shorter than a second are flagged.
#   XB_RUNTIME  if set (e.g. 3s): every run is time_based for this long,
#               going round the XB_SIZE file as often as it takes, so fast
#               and slow cases alike run long enough without huge files
#   XB_DIRS     directories for the test files, space-separated (default
#               "/dev/shm /var/tmp": a tmpfs and the root file system);
#               XB_DIR, if set, is a single directory instead
#   XB_DIRECT   "0" (buffered, default), "1" (O_DIRECT) or "0 1" (both); a
#               directory whose file system refuses O_DIRECT gets a
#               "skipped" row
#   XB_IOMEM    buffers for both tools (default mmap, as the XDMA job files
#               use; malloc works too, as both tools then page-align)
#   XB_QDS      queue depths of the direct=1 random-read cases (default
#               "1 8 32"; empty: none)
#   XB_PIN      a CPU number: every job of both tools runs there
#               (cpus_allowed=N); unset: the scheduler places them
#   XB_ENGINES  only the cases of these engines (e.g. "io_uring"; default:
#               all of psync, io_uring and, with direct=1, libaio)
#   XB_BS       only the sequential cases of these block sizes (default
#               "4k 1m"); the queued random reads are 4k whatever it says
#   XB_BIN      xferbench binary to use (default: cargo build --release)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

ROUNDS=${XB_ROUNDS:-3}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "XB_ROUNDS must be a positive integer" >&2; exit 2; }
SIZE=${XB_SIZE:-4g}
RUNTIME=${XB_RUNTIME:-}
[[ -z $RUNTIME || $RUNTIME =~ ^[1-9][0-9]*(ms|s|m)?$ ]] || { echo "XB_RUNTIME must be a duration such as 3s or 1500ms (got '$RUNTIME')" >&2; exit 2; }
TIMED=
[[ -z $RUNTIME ]] || TIMED=$'time_based=1\nruntime='"$RUNTIME"
if [[ -n ${XB_DIR:-} ]]; then DIRS=$XB_DIR; else DIRS=${XB_DIRS:-/dev/shm /var/tmp}; fi
read -r -a DIRS <<<"$DIRS"
((${#DIRS[@]})) || { echo "XB_DIRS names no directory" >&2; exit 2; }
for d in "${DIRS[@]}"; do
    [[ -d $d && -w $d ]] || { echo "XB_DIRS: $d is not a writable directory" >&2; exit 2; }
done
read -r -a DIRECTS <<<"${XB_DIRECT:-0}"
for v in "${DIRECTS[@]}"; do
    [[ $v == 0 || $v == 1 ]] || { echo "XB_DIRECT must be 0, 1 or \"0 1\" (got '$v')" >&2; exit 2; }
done
read -r -a QDS <<<"${XB_QDS-1 8 32}"
for q in "${QDS[@]}"; do
    [[ $q =~ ^[1-9][0-9]*$ ]] || { echo "XB_QDS must be queue depths such as \"1 8 32\" (got '$q')" >&2; exit 2; }
done
PIN=
if [[ -n ${XB_PIN:-} ]]; then
    [[ $XB_PIN =~ ^[0-9]+$ ]] || { echo "XB_PIN must be a CPU number (got '$XB_PIN')" >&2; exit 2; }
    PIN="cpus_allowed=$XB_PIN"
fi
# A pinned run judges the wake-up-bound cases, so each case is held to 0.95.
FLOOR=0.90
[[ -z $PIN ]] || FLOOR=0.95
read -r -a ENGINES <<<"${XB_ENGINES:-psync io_uring libaio}"
for e in "${ENGINES[@]}"; do
    [[ $e =~ ^(psync|io_uring|libaio)$ ]] || { echo "XB_ENGINES must name psync, io_uring or libaio (got '$e')" >&2; exit 2; }
done
read -r -a BSS <<<"${XB_BS:-4k 1m}"
for b in "${BSS[@]}"; do
    [[ $b =~ ^[1-9][0-9]*[kKmM]?$ ]] || { echo "XB_BS must be block sizes such as \"4k 1m\" (got '$b')" >&2; exit 2; }
done
# wanted ENGINE: whether XB_ENGINES names it.
wanted() { [[ " ${ENGINES[*]} " == *" $1 "* ]]; }
IOMEM=${XB_IOMEM:-mmap}
[[ $IOMEM =~ ^(malloc|mmap)$ ]] || { echo "XB_IOMEM must be malloc or mmap (got '$IOMEM')" >&2; exit 2; }

PER="per run"
[[ -z $RUNTIME ]] || PER="file, runs of $RUNTIME"
echo "== stream vs fio: $SIZE $PER, $ROUNDS rounds, files in ${DIRS[*]}, direct=${DIRECTS[*]}, iomem=$IOMEM (fio: iomem_align=4096)${PIN:+, $PIN}"
echo "   load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cpus)"
install_deb fio fio || error "fio is not available"
build_xb "$ROOT"
command -v python3 >/dev/null || error "python3 is needed to read the JSON outputs"
report_errors

FILES=()
TMP=$(mktemp -d)
trap 'rm -f "${FILES[@]}"; rm -rf "$TMP"' EXIT
JOB=$TMP/xferbench.fio FIOJOB=$TMP/fio.fio OUT=$TMP/out.json

# run_bw TOOL: runs the case's job with TOOL (fio or xb) and prints
# "BW_BYTES RUNTIME_MS" (read+write of all jobs; the longer runtime), or
# fails having said why.
run_bw() {
    if [[ $1 == fio ]]; then
        fio --output-format=json --output="$OUT" "$FIOJOB" >/dev/null 2>&1 || return 1
    else
        "$XB" --quiet stream --job "$JOB" --format json -o "$OUT" 2>/dev/null || return 1
    fi
    python3 - "$OUT" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    bw = sum(j["read"]["bw_bytes"] + j["write"]["bw_bytes"] for j in d["jobs"])
    ms = max(max(j["read"]["runtime"], j["write"]["runtime"]) for j in d["jobs"])
    print(bw, ms)
except Exception as e:
    sys.exit(f"unparsable: {e}")
PY
}

# measure TOOL ROW: the bandwidth of one run of TOOL (empty if it failed,
# which is counted as an error); the file is synced first, so no run pays
# for the previous one's dirty pages.
measure() {
    local res bw ms
    sync "$FILE"
    if res=$(run_bw "$1"); then
        read -r bw ms <<<"$res"
        ((ms >= 1000)) || echo short >>"$TMP/short"
        echo "$bw"
    else
        # In a subshell: the failure is handed to the main shell by file.
        echo "ERROR: $1 $2 failed" >&2
        echo "$1 $2 failed" >>"$TMP/failed"
    fi
}

# direct_ok FILE: whether FILE opens with O_DIRECT (tmpfs before Linux 6.6
# does not).
direct_ok() {
    python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT))' "$1" 2>/dev/null
}

HEAD=$(printf '%-10s %-3s %-9s %-5s %-8s %10s %10s %7s  %-7s %-5s  %s' \
    dir dio engine bs rw/depth "fio MB/s" "xfer MB/s" ratio verdict load "per-round ratios")
ALL=() CASES=()
for dir in "${DIRS[@]}"; do
    FILE=$(mktemp "$dir/xferbench-stream-peers.XXXXXX")
    FILES+=("$FILE")
    # Write the whole file once, so neither tool pays for block allocation.
    if ! fio --name=layout --filename="$FILE" --size="$SIZE" --bs=1m --rw=write \
        --ioengine=psync --end_fsync=1 --output=/dev/null; then
        error "fio could not lay out $FILE"
        report_errors
    fi
    printf '\n%s\n' "$HEAD"
    for direct in "${DIRECTS[@]}"; do
        # Each case: engine, bs, rw, iodepth.
        cases=()
        for engine in psync io_uring; do
            wanted "$engine" || continue
            for bs in "${BSS[@]}"; do
                for rw in write read; do
                    cases+=("$engine $bs $rw 1")
                done
            done
        done
        if [[ $direct == 1 ]]; then
            for engine in libaio io_uring; do
                wanted "$engine" || continue
                for q in "${QDS[@]}"; do
                    cases+=("$engine 4k randread $q")
                done
            done
        fi
        for c in "${cases[@]}"; do
                    read -r engine bs rw depth <<<"$c"
                    row=$(printf '%-10s %-3s %-9s %-5s %-8s' "$dir" "$direct" "$engine" "$bs" "$rw/$depth")
                    if [[ $direct == 1 ]] && ! direct_ok "$FILE"; then
                        printf '%s %10s %10s %7s  %-7s\n' "$row" - - - "skipped (O_DIRECT refused by this file system)"
                        continue
                    fi
                    cat >"$JOB" <<JOBFILE
[global]
ioengine=$engine
bs=$bs
size=$SIZE
iodepth=$depth
iomem=$IOMEM
$PIN
direct=$direct
allow_file_create=0
$TIMED

[peer]
rw=$rw
filename=$FILE
JOBFILE
                    sed 's/^\[peer\]$/iomem_align=4096\n&/' "$JOB" >"$FIOJOB"
                    # A chain fio, xb, fio, xb, fio…: each xferbench run is
                    # compared with the mean of the fio runs either side of
                    # it, and kept only if those two agree within 20%.
                    ratios=() fios=() xbs=() dropped=0 tries=0
                    fprev=$(measure fio "$row")
                    while ((${#ratios[@]} < ROUNDS && tries < 3 * ROUNDS)); do
                        tries=$((tries + 1))
                        x=$(measure xb "$row") fnext=$(measure fio "$row")
                        if agree "$fprev" "$fnext" && [[ -n $x ]]; then
                            f=$(awk -v a="$fprev" -v b="$fnext" 'BEGIN { printf "%.0f", (a + b) / 2 }')
                            ratios+=("$(ratio "$x" "$f")") fios+=("$f") xbs+=("$x")
                        else
                            dropped=$((dropped + 1))
                        fi
                        fprev=$fnext
                    done
                    if ((${#ratios[@]} == 0)); then
                        error "$row: no round had fio runs that agreed on either side ($dropped dropped)"
                        continue
                    fi
                    note=
                    ((dropped == 0)) || note=" ($dropped dropped: fio changed >20% across them)"
                    med=$(median "${ratios[@]}")
                    ALL+=("$med")
                    CASES+=("$med $dir direct=$direct $engine $bs $rw iodepth=$depth")
                    printf '%s %10.0f %10.0f %7s  %-7s %-5s  %s\n' "$row" \
                        "$(awk -v v="$(median "${fios[@]}")" 'BEGIN{print v/1e6}')" \
                        "$(awk -v v="$(median "${xbs[@]}")" 'BEGIN{print v/1e6}')" \
                        "$(shown "$med")" "$(verdict "$med" "$FLOOR" ge)" \
                        "$(cut -d' ' -f1 /proc/loadavg)" "${ratios[*]}$note"
        done
    done
done
echo
gm=$(geomean "${ALL[@]}")
echo "geometric mean of the median ratios: $(shown "$gm") ($(verdict "$gm" 1.0 ge) against >= 1.0)"
worst=$(printf '%s\n' "${CASES[@]}" | grep -v '^ ' | sort -g | head -n 1)
echo "worst case: ${worst#* } at $(shown "${worst%% *}") ($(verdict "${worst%% *}" "$FLOOR" ge) against >= $FLOOR)"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
SHORT=0
[[ ! -f $TMP/short ]] || SHORT=$(wc -l <"$TMP/short")
[[ ! -f $TMP/failed ]] || mapfile -t -O "${#ERRORS[@]}" ERRORS <"$TMP/failed"
((SHORT == 0)) || echo "note: $SHORT run(s) lasted under 1 s; raise XB_SIZE or set XB_RUNTIME for steadier figures"
report_errors
