#!/usr/bin/env bash
# mesh-peers.sh - a single pair of `xferbench mesh -t mpi` (mpirun -n 2)
# beside today's 2-rank `xferbench curve -t mpi` and NetPIPE's NPopenmpi, in
# alternating rounds of the same run:
#   mesh latency 16 B / curve latency 16 B        (target 0.9..1.1)
#   mesh bandwidth 1 MiB / curve stream 1 MiB     (target 0.9..1.1; window 64)
#   curve latency 16 B / NPopenmpi 16 B           (target <= 1.15)
#   mesh latency 16 B / NPopenmpi 16 B            (target <= 1.15)
# then a 4-rank mesh with an injected slow rank, to show what it reports.
# Installs Open MPI, libclang and netpipe-openmpi from Debian if missing and
# builds with `--features mpi` into target/mpi. PASS/FAIL is informational;
# the exit status says whether every step ran.
#
#   bench/mesh-peers.sh
#   XB_ROUNDS=5 XB_DURATION=500ms bench/mesh-peers.sh
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
ROUNDS=${XB_ROUNDS:-3}
DUR=${XB_DURATION:-300ms}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)

install_deb openmpi-bin mpirun || report_errors
install_deb libopenmpi-dev mpicc || report_errors
ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || install_deb libclang-dev /usr/lib/llvm-14/lib/libclang.so || report_errors
install_deb netpipe-openmpi NPopenmpi || error "NPopenmpi (Debian netpipe-openmpi) is not available"

echo "-- building xferbench with the mpi feature (target/mpi)"
(cd "$ROOT" && CARGO_TARGET_DIR=target/mpi cargo build --release --quiet --features mpi) ||
    { error "cargo build --features mpi failed"; report_errors; }
XB=$ROOT/target/mpi/release/xferbench

# run NAME CMD...: stdout to $TMP/NAME, or an error naming the step.
run() {
    local name=$1
    shift
    timeout 300 "$@" >"$TMP/$name" 2>"$TMP/$name.err" ||
        { error "$name failed: $(tail -n 2 "$TMP/$name.err" | tr '\n' ' ')"; return 1; }
}
py() { python3 -c "$1" "$TMP/$2" 2>/dev/null; }

MC=() MB=() CN=() MN=()
for ((r = 1; r <= ROUNDS; r++)); do
    echo
    echo "== round $r/$ROUNDS"
    run mesh "${MPIRUN[@]}" -n 2 "$XB" mesh -t mpi --sizes 16,1M --latency-size 16 --duration "$DUR" --no-retest --format json -q &&
        mesh_lat=$(py 'import json,sys; d=json.load(open(sys.argv[1])); print(d["matrices"]["latency_p50_us"][0][1]*1000)' mesh) &&
        mesh_bw=$(py 'import json,sys; d=json.load(open(sys.argv[1])); print(d["matrices"]["bandwidth_MBps"][0][1])' mesh)
    run curl "${MPIRUN[@]}" -n 2 "$XB" curve -t mpi --sizes 16 --duration "$DUR" --format json -q &&
        curve_lat=$(py 'import json,sys; print(json.load(open(sys.argv[1]))["points"][0]["oneway"]["p50_ns"])' curl)
    run curb "${MPIRUN[@]}" -n 2 "$XB" curve -t mpi --mode stream --window 64 --sizes 1M --duration "$DUR" --format json -q &&
        curve_bw=$(py 'import json,sys; print(json.load(open(sys.argv[1]))["points"][0]["bandwidth_MBps"])' curb)
    (cd "$TMP" && timeout 300 "${MPIRUN[@]}" -n 2 NPopenmpi -l 16 -u 16 -p 0 -o np.out >np.log 2>&1) ||
        error "NPopenmpi failed: $(tail -n 2 "$TMP/np.log" | tr '\n' ' ')"
    np_lat=$(awk '$1 == 16 { printf "%.1f", $3 * 1e9 }' "$TMP/np.out" 2>/dev/null)
    MC+=("$(ratio "${mesh_lat:-}" "${curve_lat:-}")")
    MB+=("$(ratio "${mesh_bw:-}" "${curve_bw:-}")")
    CN+=("$(ratio "${curve_lat:-}" "${np_lat:-}")")
    MN+=("$(ratio "${mesh_lat:-}" "${np_lat:-}")")
    printf '  16 B one-way ns: mesh %s, curve %s, NPopenmpi %s\n' "$(shown "${mesh_lat:-}")" "$(shown "${curve_lat:-}")" "$(shown "${np_lat:-}")"
    printf '  1 MiB MB/s:      mesh %s, curve stream %s\n' "$(shown "${mesh_bw:-}")" "$(shown "${curve_bw:-}")"
done

echo
echo "== 4 ranks, rank 1 slowed by 200 µs per message (what mesh reports)"
run slow "${MPIRUN[@]}" -n 4 "$XB" mesh -t mpi --duration 20ms --inject-delay 1:200us &&
    sed -n '1,/^## Latency p50/p' "$TMP/slow" | head -n 20

echo
echo "== summary ($ROUNDS rounds, medians)"
row() { printf '%-48s %7s %10s  %s\n' "$1" "$(shown "$2")" "$3" "$4"; }
m=$(median "${MC[@]}")
row "mesh / curve, latency 16 B" "$m" "0.9..1.1" "$(verdict "$m" 0.9 ge) $(verdict "$m" 1.1 le)"
m=$(median "${MB[@]}")
row "mesh / curve stream, bandwidth 1 MiB" "$m" "0.9..1.1" "$(verdict "$m" 0.9 ge) $(verdict "$m" 1.1 le)"
m=$(median "${CN[@]}")
row "curve / NPopenmpi, latency 16 B" "$m" "<= 1.15" "$(verdict "$m" 1.15 le)"
m=$(median "${MN[@]}")
row "mesh / NPopenmpi, latency 16 B" "$m" "<= 1.15" "$(verdict "$m" 1.15 le)"
echo "(xferbench: median one-way (half round trip) and median window; NPopenmpi: best of its trials.)"
report_errors
