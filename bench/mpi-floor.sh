#!/usr/bin/env bash
# mpi-floor.sh - xferbench's MPI path against the osu_latency-style C
# program (bench/mpi_pingpong.c), two ranks of `mpirun -n 2`, alternating
# in the same run over XB_ROUNDS rounds (which goes first alternates too):
#
#   curve 16 B   one-way p50 and min: `curve -t mpi --sizes 16,1M`
#                against the C round trip halved      (p50 ≤ 1.05×, min ≤ +30 ns)
#   mesh 16 B    the same from `mesh -t mpi --sizes 16` (non-blocking calls
#                polled with MPI_Test, where curve's are blocking)
#
# Each xferbench run sits between two runs of the C program, compared with
# their mean, and counts only if those two agree within 20% (see the loop).
#   curve 1 MiB  bandwidth, 1 MiB / one-way p50, against the C program's
#                1 MiB ping-pong the same way            (≥ 0.95×)
#
# It prints each round's figures and the median of each ratio over the
# rounds, with a verdict. Needs Open MPI (installed from Debian if missing)
# and an xferbench built with --features mpi (built into target/mpi unless
# XB_MPI names one).
#
# Environment:
#   XB_ROUNDS  rounds kept (default 7; up to three times as many are tried)
#   XB_MPI     an xferbench binary built with --features mpi
#   XB_RT=1    run both sides under `chrt -f 20` (real-time priority), which
#              keeps other processes of a busy machine off the two cores;
#              both sides get it alike
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
ROUNDS=${XB_ROUNDS:-7}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "XB_ROUNDS must be a positive integer" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mpi-floor.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM
RUN=(mpirun --allow-run-as-root --oversubscribe -n 2)
[[ ${XB_RT:-0} == 1 ]] && RUN=(chrt -f 20 "${RUN[@]}")

install_deb openmpi-bin mpirun || report_errors
install_deb libopenmpi-dev mpicc || report_errors
mpicc -O2 -o "$TMP/mpi_pingpong" "$HERE/mpi_pingpong.c" || { error "mpicc mpi_pingpong.c failed"; report_errors; }
XB=${XB_MPI:-}
if [[ -z $XB ]]; then
    echo "-- building xferbench with the mpi feature (target/mpi)"
    (cd "$ROOT" && CARGO_TARGET_DIR=target/mpi cargo build --release --quiet --features mpi) ||
        { error "cargo build --features mpi failed (needs Debian's libclang-dev too)"; report_errors; }
    XB=$ROOT/target/mpi/release/xferbench
fi

# c_side: "p50 min bw" — one-way ns of 16 B (half the round trip) and MB/s of 1 MiB.
c_side() {
    local small big
    small=$(timeout 300 "${RUN[@]}" "$TMP/mpi_pingpong" -b 16 -n 200000 -w 20000 2>/dev/null) &&
        big=$(timeout 300 "${RUN[@]}" "$TMP/mpi_pingpong" -b 1048576 -n 2000 -w 200 2>/dev/null) ||
        { error "the C program failed"; return 1; }
    local p m b
    read -r p m < <(sed -n 's/.*p50=\([0-9]*\) min=\([0-9]*\).*/\1 \2/p' <<<"$small")
    b=$(sed -n 's/.*p50=\([0-9]*\).*/\1/p' <<<"$big")
    awk -v p="$p" -v m="$m" -v b="$b" 'BEGIN { printf "%.1f %.1f %.1f\n", p / 2, m / 2, 1048576 / (b / 2) * 1000 }'
}

# xb_curve: "p50 min bw" from curve -t mpi (16 B one-way, 1 MiB MB/s).
xb_curve() {
    timeout 300 "${RUN[@]}" "$XB" curve -t mpi --sizes 16,1M --duration 300ms --cpus none \
        --format json -q >"$TMP/curve.json" 2>"$TMP/curve.err" ||
        { error "xferbench curve -t mpi failed: $(tail -n 1 "$TMP/curve.err")"; return 1; }
    python3 -c '
import json, sys
p = {q["size_bytes"]: q for q in json.load(open(sys.argv[1]))["points"]}
print(p[16]["oneway"]["p50_ns"], p[16]["oneway"]["min_ns"], "%.1f" % p[1 << 20]["bandwidth_MBps"])' "$TMP/curve.json"
}

# xb_mesh: "p50 min" one-way of 16 B from mesh -t mpi.
xb_mesh() {
    timeout 300 "${RUN[@]}" "$XB" mesh -t mpi --sizes 16 --duration 300ms --format json -q \
        >"$TMP/mesh.json" 2>"$TMP/mesh.err" ||
        { error "xferbench mesh -t mpi failed: $(tail -n 1 "$TMP/mesh.err")"; return 1; }
    python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["points"][0]["latency"][0]["oneway"]
print(o["p50_ns"], o["min_ns"])' "$TMP/mesh.json"
}

CP=() CM=() CB=() XP=() XM=() XB_=() MP=() MM=() MCP=() MCM=()
RP=() RM=() RB=() RMP=() RMM=()
# steady A B: whether two C measurements ("p50 min bw") agree within 20% in
# p50 and bandwidth, i.e. the machine stayed in one state between them.
steady() {
    local -a x y
    read -r -a x <<<"$1"
    read -r -a y <<<"$2"
    agree "${x[0]}" "${y[0]}" && agree "${x[2]}" "${y[2]}"
}
# signed D: D with its sign (+5, -3.8).
signed() { awk -v d="$1" 'BEGIN { if (d == "") print "-"; else printf "%+.3g\n", d }'; }
# mid A B: the mean of two C measurements, field by field.
mid() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        printf "%.1f %.1f %.1f\n", (x[1] + y[1]) / 2, (x[2] + y[2]) / 2, (x[3] + y[3]) / 2
    }'
}
# A round brackets each xferbench run between two runs of the C program
# (C, first, C, second, C; curve and mesh take turns going first) and keeps
# a figure only if the C runs on either side of it agree: this VM's
# cross-core latency flips between states (~150 and ~450 ns one-way) every
# few seconds, and a ratio across a flip measures the flip.
kept=0 dropped=0 r=0
while ((kept < ROUNDS && r < 3 * ROUNDS)); do
    r=$((r + 1))
    first=xb_curve second=xb_mesh
    ((r % 2)) || { first=xb_mesh second=xb_curve; }
    c1=$(c_side) && o1=$($first) && c2=$(c_side) && o2=$($second) && c3=$(c_side) || continue
    if [[ $first == xb_curve ]]; then
        x=$o1 m=$o2 cx=($c1 $c2) cmsh=($c2 $c3)
    else
        m=$o1 x=$o2 cmsh=($c1 $c2) cx=($c2 $c3)
    fi
    cx_a="${cx[*]:0:3}" cx_b="${cx[*]:3:3}" cm_a="${cmsh[*]:0:3}" cm_b="${cmsh[*]:3:3}"
    if ! steady "$cx_a" "$cx_b" || ! steady "$cm_a" "$cm_b"; then
        dropped=$((dropped + 1))
        printf 'round %d: dropped, the machine changed state (C %s | %s | %s; curve %s, mesh %s)\n' \
            "$r" "$c1" "$c2" "$c3" "$x" "$m"
        continue
    fi
    kept=$((kept + 1))
    read -r cp cm cb <<<"$(mid "$cx_a" "$cx_b")"
    read -r mcp mcm _ <<<"$(mid "$cm_a" "$cm_b")"
    read -r xp xm xb <<<"$x"
    read -r mp mm <<<"$m"
    CP+=("$cp") CM+=("$cm") CB+=("$cb") XP+=("$xp") XM+=("$xm") XB_+=("$xb") MP+=("$mp") MM+=("$mm") MCP+=("$mcp") MCM+=("$mcm")
    RP+=("$(ratio "$xp" "$cp")") RB+=("$(ratio "$xb" "$cb")") RMP+=("$(ratio "$mp" "$mcp")")
    RM+=("$(awk -v a="$xm" -v b="$cm" 'BEGIN { print a - b }')")
    RMM+=("$(awk -v a="$mm" -v b="$mcm" 'BEGIN { print a - b }')")
    printf 'round %d: C one-way p50 %s min %s, 1 MiB %s MB/s | curve p50 %s min %s, 1 MiB %s MB/s | C %s %s | mesh p50 %s min %s\n' \
        "$r" "$cp" "$cm" "$cb" "$xp" "$xm" "$xb" "$mcp" "$mcm" "$mp" "$mm"
done
echo "kept $kept rounds, dropped $dropped across a change of machine state"
((kept > 0)) || { error "no round was steady enough to compare"; report_errors; }
echo
printf '%-22s %10s %10s %12s  %s\n' figure C xferbench "median of" verdict
printf '%-22s %10s %10s %12s  %s\n' "curve 16 B p50 (ns)" "$(shown "$(median "${CP[@]}")")" \
    "$(shown "$(median "${XP[@]}")")" "$(shown "$(median "${RP[@]}")")×" "$(verdict "$(median "${RP[@]}")" 1.05)"
printf '%-22s %10s %10s %12s  %s\n' "curve 16 B min (ns)" "$(shown "$(median "${CM[@]}")")" \
    "$(shown "$(median "${XM[@]}")")" "$(signed "$(median "${RM[@]}")") ns" \
    "$(awk -v d="$(median "${RM[@]}")" 'BEGIN { print (d != "" && d <= 30 ? "PASS (≤ +30 ns)" : "FAIL (> +30 ns)") }')"
printf '%-22s %10s %10s %12s  %s\n' "mesh 16 B p50 (ns)" "$(shown "$(median "${MCP[@]}")")" \
    "$(shown "$(median "${MP[@]}")")" "$(shown "$(median "${RMP[@]}")")×" "$(verdict "$(median "${RMP[@]}")" 1.05)"
printf '%-22s %10s %10s %12s  %s\n' "mesh 16 B min (ns)" "$(shown "$(median "${MCM[@]}")")" \
    "$(shown "$(median "${MM[@]}")")" "$(signed "$(median "${RMM[@]}")") ns" \
    "$(awk -v d="$(median "${RMM[@]}")" 'BEGIN { print (d != "" && d <= 30 ? "PASS (≤ +30 ns)" : "FAIL (> +30 ns)") }')"
printf '%-22s %10s %10s %12s  %s\n' "curve 1 MiB (MB/s)" "$(shown "$(median "${CB[@]}")")" \
    "$(shown "$(median "${XB_[@]}")")" "$(shown "$(median "${RB[@]}")")×" \
    "$(awk -v r="$(median "${RB[@]}")" 'BEGIN { print (r != "" && r >= 0.95 ? "PASS (≥ 0.95×)" : "FAIL (< 0.95×)") }')"
report_errors
