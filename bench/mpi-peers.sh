#!/usr/bin/env bash
# mpi-peers.sh - `xferbench curve -t mpi` beside NetPIPE's MPI module
# (NPopenmpi), both as two ranks of `mpirun -n 2` on this machine,
# alternating in the same run:
#   latency 1..64 B:   xferbench one-way p50 / NPopenmpi time (target <= 1.1)
#   bandwidth 1..8 MiB: xferbench MB/s / NPopenmpi MB/s      (target >= 0.9)
# Installs openmpi-bin, libopenmpi-dev, libclang and netpipe-openmpi from
# Debian if missing, and builds xferbench with `--features mpi` into
# target/mpi. PASS/FAIL is informational; the exit status says whether
# every step ran.
#
#   bench/mpi-peers.sh
#   XB_ROUNDS=4 bench/mpi-peers.sh
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
ROUNDS=${XB_ROUNDS:-2}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# mpirun as root on a machine with fewer slots than ranks needs both flags.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -n 2)

install_deb openmpi-bin mpirun || report_errors
install_deb libopenmpi-dev mpicc || report_errors
[[ -e /usr/lib/x86_64-linux-gnu/libclang-14.so.1 || -e /usr/lib/llvm-14/lib/libclang.so.1 ]] ||
    install_deb libclang1-14 /usr/lib/llvm-14/lib/libclang.so.1 >/dev/null 2>&1 ||
    apt-get install -y -q libclang1-14 libclang-common-14-dev >/dev/null 2>&1
install_deb netpipe-openmpi NPopenmpi || error "NPopenmpi (Debian netpipe-openmpi) is not available"

echo "-- building xferbench with the mpi feature (target/mpi)"
if ! (cd "$ROOT" && CARGO_TARGET_DIR=target/mpi cargo build --release --quiet --features mpi); then
    error "cargo build --features mpi failed"
    report_errors
fi
XB=$ROOT/target/mpi/release/xferbench

LAT="1,2,4,8,16,32,64"
BW="1M,2M,4M,8M"
# xb NAME SIZES: writes "size oneway_ns MBps" lines.
xb() {
    timeout 300 "${MPIRUN[@]}" "$XB" curve -t mpi --sizes "$2" --duration 300ms --format json -q \
        >"$TMP/$1.json" 2>"$TMP/$1.err" || { error "xferbench curve -t mpi failed: $(tail -n 2 "$TMP/$1.err" | tr '\n' ' ')"; return 1; }
    python3 - "$TMP/$1.json" >"$TMP/$1.txt" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["points"]:
    print(p["size_bytes"], p["oneway"]["p50_ns"], "%.1f" % p["bandwidth_MBps"])
PY
}
# np NAME LO HI: writes the same from NPopenmpi (its time is half a round trip).
np() {
    (cd "$TMP" && timeout 300 "${MPIRUN[@]}" NPopenmpi -l "$2" -u "$3" -p 0 -o "$1.np" >"$1.log" 2>&1) ||
        { error "NPopenmpi failed: $(tail -n 2 "$TMP/$1.log" | tr '\n' ' ')"; return 1; }
    awk '{ printf "%d %.1f %.1f\n", $1, $3 * 1e9, $1 / $3 / 1e6 }' "$TMP/$1.np" >"$TMP/$1.txt"
}
col() { awk -v s="$2" -v c="$3" '$1 == s { print $c; exit }' "$1" 2>/dev/null; }

LAT_R=() BW_R=()
for ((r = 1; r <= ROUNDS; r++)); do
    echo
    echo "== round $r/$ROUNDS"
    xb xl "$LAT" && np nl 1 64
    xb xb "$BW" && np nb 1048576 8388608
    q=()
    printf '  %9s %14s %14s %8s\n' "size B" "NPopenmpi µs" "xferbench µs" "ratio"
    for s in 1 2 4 8 16 32 64; do
        a=$(col "$TMP/xl.txt" $s 2) b=$(col "$TMP/nl.txt" $s 2)
        q+=("$(ratio "$a" "$b")")
        printf '  %9s %14s %14s %8s\n' $s "$(awk -v x="$b" 'BEGIN { if (x != "") printf "%.3f", x / 1000 }')" \
            "$(awk -v x="$a" 'BEGIN { if (x != "") printf "%.3f", x / 1000 }')" "$(shown "${q[-1]}")"
    done
    LAT_R+=("$(geomean "${q[@]}")")
    q=()
    printf '  %9s %14s %14s %8s\n' "size B" "NPopenmpi MB/s" "xferbench MB/s" "ratio"
    for s in 1048576 2097152 4194304 8388608; do
        a=$(col "$TMP/xb.txt" $s 3) b=$(col "$TMP/nb.txt" $s 3)
        q+=("$(ratio "$a" "$b")")
        printf '  %9s %14s %14s %8s\n' $s "$(shown "$b")" "$(shown "$a")" "$(shown "${q[-1]}")"
    done
    BW_R+=("$(geomean "${q[@]}")")
    echo "  latency ratio (geomean) ${LAT_R[-1]:--}, bandwidth ratio (geomean) ${BW_R[-1]:--}"
done
LAT_MED=$(median "${LAT_R[@]}") BW_MED=$(median "${BW_R[@]}")
echo
echo "== summary ($ROUNDS rounds, median of per-round geometric means)"
printf '%-52s %7s %8s  %s\n' "mpi latency 1..64 B, xferbench p50 / NPopenmpi" "$(shown "$LAT_MED")" "<= 1.1" "$(verdict "$LAT_MED" 1.1 le)"
printf '%-52s %7s %8s  %s\n' "mpi bandwidth 1..8 MiB, xferbench / NPopenmpi" "$(shown "$BW_MED")" ">= 0.9" "$(verdict "$BW_MED" 0.9 ge)"
echo "(NPopenmpi's time is the best of its trials; xferbench's is the median.)"
report_errors
