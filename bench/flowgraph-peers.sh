#!/usr/bin/env bash
# flowgraph-peers.sh - run the seed's SDR flowgraph (sdr-runtimes.rst) in
# xferbench and in its peers on this machine, in one run, and print ours vs
# theirs:
#
#   Dummy Source (claims output items without writing them)
#     -> M Saxpy blocks (y = a*x + b on float32, out of place)
#     -> Benchmark Sink (consumes without reading, rate after a warm-up)
#
# on N cores, N = 1..min(2, nproc), M = N..3N. The runs:
#
#   xferbench   `xferbench flowgraph --cores N --blocks M --format json` at
#               each point, right before the peers' runs of that point (all
#               its schedulers: seq, static, thread-per-block, tokio,
#               async-executor, each on circular and on handoff edges
#               ("static+handoff"), and the ring reference); its kernel-only
#               figure from one full buffer-size scan first;
#   GNU Radio   Debian's gnuradio 3.10 (flowgraph/gnuradio_saxpy.py, run by
#               /usr/bin/python3), the seed's two placements: "default" (every
#               block's affinity = CPUs 0..N-1) and "custom" (consecutive
#               groups, each block pinned to its group's CPU). GNU Radio has no
#               one-block a*x+b, so its "saxpy" is multiply_const_ff alone
#               (one multiply per item: cheaper, in GNU Radio's favour);
#   FutureSDR   0.8 from crates.io (flowgraph/futuresdr/, nightly toolchain):
#               "smol" = SmolScheduler with N pinned executors (the seed's
#               default), "flow" = FlowScheduler with the seed's custom
#               groups; run under `taskset -c 0-(N-1)`;
#   C kernel    flowgraph/saxpy.c, cc -O3 -march=native, 16 KiB buffers, one
#               core (cpu 0): the kernel with no runtime around it; median of
#               three runs. On a CPU with AVX-512, also built with
#               -mprefer-vector-width=512 (GCC's -march=native keeps to 256).
#
# Checks (informational PASS/FAIL; the exit status is 0 unless a step failed
# to run):
#   seq at N=1, M=1 >= 0.85 x xferbench's kernel_only_sps (and, for the
#   runtime's own cost, x its kernel_at_buffer_sps: the same --buffer-size)
#   seq at N=1, M=1 >= 0.8 x the C -march=native saxpy
#   static >= 0.85 x ring at N=2, M=2..6, on each kind of edge
#   best of static/seq (either edges) >= 20 x best GNU Radio 3.10 strategy,
#   at each (N, M)
#
# Environment:
#   XB_CORES      cores, "A..B" or "N" (default 1..min(2, nproc))
#   XB_BLOCKS     blocks, "A..B" or "M", for every N (default N..3N); also
#                 passed to xferbench as --blocks when set
#   XB_DURATION   measuring window per point (default 2s; "500ms", "2s", "2")
#   XB_WARMUP     peers' warm-up before the window (default 0.5s)
#   XB_PEERS      which peers to run (default "c gnuradio futuresdr")
#   XB_BIN        xferbench binary to use (default: cargo build --release)
#   XB_FLOWGRAPH_JSON  use this saved `xferbench flowgraph --format json`
#                 file instead of building and running xferbench
#   XB_FSDR_RUSTFLAGS  RUSTFLAGS for the FutureSDR build (default
#                 "-Zcrate-attr=feature(float_algebraic) -C target-cpu=native")
#   CC            C compiler for saxpy.c (default cc)
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

FG=$HERE/flowgraph
PY=/usr/bin/python3   # Debian's gnuradio bindings load only here
NPROC=$(nproc)

# range SPEC: "A..B" or "N" -> "A B"; empty when malformed.
range() {
    if [[ $1 =~ ^([1-9][0-9]*)\.\.([1-9][0-9]*)$ ]] && ((BASH_REMATCH[1] <= BASH_REMATCH[2])); then
        echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
    elif [[ $1 =~ ^[1-9][0-9]*$ ]]; then
        echo "$1 $1"
    fi
}
# seconds D: "2s", "500ms", "1.5", "1m" -> seconds; empty when malformed.
seconds() {
    awk -v d="$1" 'BEGIN {
        if (match(d, /^[0-9]*\.?[0-9]+/)) { v = substr(d, 1, RLENGTH); u = substr(d, RLENGTH + 1) } else exit
        if (u == "" || u == "s") f = 1; else if (u == "ms") f = 0.001; else if (u == "us") f = 1e-6; else if (u == "m") f = 60; else exit
        if (v * f > 0) print v * f }'
}
# giga X: X / 1e9 with 3 decimals, "-" when missing.
giga() { if [[ -n $1 ]]; then awk -v v="$1" 'BEGIN { printf "%.3f", v / 1e9 }'; else echo -; fi; }

DEF_MAXCORES=$((NPROC < 2 ? NPROC : 2))
read -r C_LO C_HI <<<"$(range "${XB_CORES:-1..$DEF_MAXCORES}")"
[[ -n ${C_LO:-} ]] || { echo "XB_CORES must be A..B or N (got '${XB_CORES:-}')" >&2; exit 2; }
((C_HI <= NPROC)) || { echo "XB_CORES=$XB_CORES: this machine has $NPROC cpus" >&2; exit 2; }
B_LO= B_HI=
if [[ -n ${XB_BLOCKS:-} ]]; then
    read -r B_LO B_HI <<<"$(range "$XB_BLOCKS")"
    [[ -n ${B_LO:-} ]] || { echo "XB_BLOCKS must be A..B or M (got '$XB_BLOCKS')" >&2; exit 2; }
fi
DURATION=${XB_DURATION:-2s}
DUR_S=$(seconds "$DURATION")
[[ -n $DUR_S ]] || { echo "XB_DURATION must be a duration like 2s or 500ms (got '$DURATION')" >&2; exit 2; }
WARMUP_S=$(seconds "${XB_WARMUP:-0.5s}")
[[ -n $WARMUP_S ]] || { echo "XB_WARMUP must be a duration like 0.5s (got '$XB_WARMUP')" >&2; exit 2; }
PEERS=" ${XB_PEERS:-c gnuradio futuresdr} "
FSDR_RUSTFLAGS=${XB_FSDR_RUSTFLAGS:--Zcrate-attr=feature(float_algebraic) -C target-cpu=native}
# every peer run gets this long before `timeout` ends it
STEP_LIMIT=$(awk -v d="$DUR_S" -v w="$WARMUP_S" 'BEGIN { printf "%d", d + w + 60 }')

# blocks_for N: the M values swept at N.
blocks_for() {
    local lo=${B_LO:-$1} hi=${B_HI:-$((3 * $1))}
    seq "$lo" "$hi"
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/flowgraph-peers.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

declare -A SPS   # "runtime/scheduler/N/M" -> samples/s
get() { echo "${SPS[$1]:-}"; }
# sps_of LINE: the samples_per_s of one JSON result line.
sps_of() { sed -n 's/.*"samples_per_s": *\([0-9.eE+]*\).*/\1/p' <<<"$1" | head -n 1; }

# peer KEY NAME CMD...: runs one peer measurement under `timeout`; stores its
# samples/s under SPS[KEY] and prints its JSON line, or reports an error.
peer() {
    local key=$1 name=$2 out sps
    shift 2
    if out=$(timeout -k 5 "$STEP_LIMIT" "$@" 2>"$TMP/peer.err"); then
        sps=$(sps_of "$out")
        if [[ -n $sps ]]; then
            SPS[$key]=$sps
            echo "   $out"
            return 0
        fi
        error "$name: no samples_per_s in its output: $(head -c 200 <<<"$out")"
    else
        local rc=$?
        if ((rc == 124 || rc == 137)); then
            error "$name: timed out after ${STEP_LIMIT}s"
        else
            error "$name failed (exit $rc): $(tail -n 3 "$TMP/peer.err" | tr '\n' ' ')"
        fi
    fi
    return 1
}

echo "== flowgraph vs SDR runtimes: cores $C_LO..$C_HI, blocks ${XB_BLOCKS:-N..3N}, $DURATION per point (peers warm up ${WARMUP_S}s), $NPROC cpus"

# ---- setup: peers ---------------------------------------------------------
HAVE_C= HAVE_C512= HAVE_GR= HAVE_FSDR=
if [[ $PEERS == *" c "* ]]; then
    echo "-- C kernel: ${CC:-cc} -O3 -march=native $FG/saxpy.c"
    if "${CC:-cc}" -O3 -march=native -o "$TMP/saxpy" "$FG/saxpy.c" 2>"$TMP/cc.err"; then
        HAVE_C=1
    else
        error "cc could not build saxpy.c: $(tail -n 3 "$TMP/cc.err" | tr '\n' ' ')"
    fi
    # GCC keeps to 256-bit vectors under -march=native even where the CPU
    # has AVX-512; where it does, the same kernel with 512-bit vectors too,
    # the fair match for xferbench's AVX-512 kernel.
    if [[ -n $HAVE_C ]] && grep -qw avx512f /proc/cpuinfo; then
        echo "-- C kernel, 512-bit: ${CC:-cc} -O3 -march=native -mprefer-vector-width=512 $FG/saxpy.c"
        if "${CC:-cc}" -O3 -march=native -mprefer-vector-width=512 -o "$TMP/saxpy512" "$FG/saxpy.c" 2>"$TMP/cc.err"; then
            HAVE_C512=1
        else
            error "cc could not build saxpy.c with 512-bit vectors: $(tail -n 3 "$TMP/cc.err" | tr '\n' ' ')"
        fi
    fi
fi
if [[ $PEERS == *" gnuradio "* ]]; then
    echo "-- GNU Radio 3.10 (Debian gnuradio, $PY)"
    if ! install_deb gnuradio gnuradio-config-info; then
        error "GNU Radio is not available (apt-get install gnuradio failed)"
    elif [[ ! -x $PY ]]; then
        error "GNU Radio: $PY is missing (Debian's gnuradio bindings need the system python)"
    elif ! grv=$(timeout 60 "$PY" -c 'from gnuradio import gr, blocks; print(gr.version())' 2>"$TMP/gr.err"); then
        error "GNU Radio's Python bindings do not load in $PY: $(tail -n 2 "$TMP/gr.err" | tr '\n' ' ')"
    else
        echo "   gnuradio $grv; per-block kernel: multiply_const_ff (GNU Radio 3.10 has no one-block a*x+b)"
        HAVE_GR=1
    fi
fi
if [[ $PEERS == *" futuresdr "* ]]; then
    FSDR_DIR=$FG/futuresdr
    FSDR_BIN=$FSDR_DIR/target/release/xb-futuresdr-flowgraph
    echo "-- FutureSDR 0.8 (cargo +nightly build --release in $FSDR_DIR; the first build takes ~3 min)"
    if ! nightly=$(timeout 60 cargo +nightly --version 2>&1); then
        error "FutureSDR needs the nightly toolchain, and 'cargo +nightly' does not run: $nightly"
    elif ! (cd "$FSDR_DIR" && RUSTFLAGS="$FSDR_RUSTFLAGS" CARGO_TARGET_DIR="$FSDR_DIR/target" \
            timeout 1800 cargo +nightly build --release --quiet) >"$TMP/fsdr.log" 2>&1; then
        tail -n 15 "$TMP/fsdr.log" >&2
        error "FutureSDR 0.8 did not build with $nightly: $(grep -m 1 -E '^error' "$TMP/fsdr.log" || tail -n 1 "$TMP/fsdr.log")"
    elif [[ ! -x $FSDR_BIN ]]; then
        error "FutureSDR built, but $FSDR_BIN is missing"
    else
        echo "   $nightly; RUSTFLAGS=$FSDR_RUSTFLAGS"
        HAVE_FSDR=1
    fi
fi

# ---- xferbench --------------------------------------------------------------
# read_xb FILE: reads an xferbench flowgraph JSON into SPS["xb/<series>/N/M"]
# (series: the scheduler, "+handoff" when on handoff edges, as in its table),
# KERNEL_ONLY and KERNEL_AT_BUFFER (when the file has them) and XB_SCHEDS (first-seen order).
KERNEL_ONLY= KERNEL_AT_BUFFER= XB_SCHEDS=()
read_xb() {
    local lines kind a b c d
    if ! lines=$("$PY" - "$1" 2>"$TMP/json.err" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if d.get("experiment") != "flowgraph":
    sys.exit(f"experiment is {d.get('experiment')!r}, not 'flowgraph'")
k = d.get("kernel_only_sps")
print("kernel", "" if k is None else k)
k = d.get("kernel_at_buffer_sps")
print("kernel16", "" if k is None else k)
for p in d["points"]:
    s, e = p["scheduler"], p.get("edges", "circular")
    name = s + "+handoff" if e == "handoff" and s != "ring" else s
    print("point", name, int(p["cores"]), int(p["blocks"]), p["samples_per_s"])
PY
    ); then
        error "xferbench's JSON $1 is unparsable: $(tail -n 1 "$TMP/json.err")"
        return 1
    fi
    while read -r kind a b c d; do
        if [[ $kind == kernel ]]; then
            [[ -n $a && -z $KERNEL_ONLY ]] && KERNEL_ONLY=$a
        elif [[ $kind == kernel16 ]]; then
            [[ -n $a && -z $KERNEL_AT_BUFFER ]] && KERNEL_AT_BUFFER=$a
        else
            SPS["xb/$a/$b/$c"]=$d
            [[ " ${XB_SCHEDS[*]} " == *" $a "* ]] || XB_SCHEDS+=("$a")
        fi
    done <<<"$lines"
}

# xb_run OUT ARGS...: one xferbench flowgraph run under `timeout`.
xb_run() {
    local out=$1 lim rc
    shift
    lim=$(awk -v d="$DUR_S" 'BEGIN { printf "%d", 6 * 3 * (2 * d + 2) + 120 }')
    timeout -k 5 "$lim" "$XB" flowgraph "$@" --format json -o "$out" --quiet 2>"$TMP/xb.err"
    rc=$?
    if ((rc == 124 || rc == 137)); then
        error "xferbench flowgraph $* timed out after ${lim}s"
    elif ((rc != 0)); then
        error "xferbench flowgraph $* failed (exit $rc): $(tail -n 3 "$TMP/xb.err" | tr '\n' ' ')"
    fi
    return $rc
}

# xferbench runs point by point, right beside the peers at the same (N, M),
# so a slow minute on this VM hits both sides of a ratio alike. Its
# kernel-only rate (the full buffer-size scan) is measured once, first.
XB_PAIRED=
if [[ -n ${XB_FLOWGRAPH_JSON:-} ]]; then
    if [[ -r $XB_FLOWGRAPH_JSON ]]; then
        echo "-- xferbench: the saved run $XB_FLOWGRAPH_JSON (XB_FLOWGRAPH_JSON)"
        read_xb "$XB_FLOWGRAPH_JSON"
    else
        error "XB_FLOWGRAPH_JSON=$XB_FLOWGRAPH_JSON is not readable"
    fi
else
    echo "-- xferbench"
    build_xb "$ROOT"
    if [[ -n $XB ]]; then
        if ! "$XB" flowgraph --help >/dev/null 2>&1; then
            error "this xferbench has no 'flowgraph' subcommand"
        elif xb_run "$TMP/xb-kernel.json" --cores 1 --blocks 1 --scheduler seq --duration "$DURATION"; then
            read_xb "$TMP/xb-kernel.json"
            XB_PAIRED=1
            echo "   kernel_only_sps $(shown "$KERNEL_ONLY") (scan 256 B..8 MiB, one core)"
        fi
    fi
fi

# ---- peers, point by point ----------------------------------------------------
echo
echo "== peer runs"
# c_kernel KEY LABEL BINARY: three runs on cpu 0, their median in
# SPS[KEY/kernel/1/1] (this kernel alone moves by 1.5x minute to minute on a VM).
c_kernel() {
    local r
    for r in 1 2 3; do
        peer "$1/run$r" "$2 (run $r)" taskset -c 0 "$3" "$DUR_S" "$WARMUP_S"
    done
    SPS[$1/kernel/1/1]=$(median "$(get "$1/run1")" "$(get "$1/run2")" "$(get "$1/run3")")
    echo "   $2: median of 3 runs $(giga "$(get "$1/kernel/1/1")") Gsamples/s"
}
[[ -n $HAVE_C ]] && c_kernel c "C saxpy" "$TMP/saxpy"
[[ -n $HAVE_C512 ]] && c_kernel c512 "C saxpy, 512-bit" "$TMP/saxpy512"
for ((n = C_LO; n <= C_HI; n++)); do
    cpus="0-$((n - 1))"
    for m in $(blocks_for "$n"); do
        if [[ -n $XB_PAIRED ]]; then
            echo "   xferbench N=$n M=$m: every scheduler"
            xb_run "$TMP/xb-$n-$m.json" --cores "$n" --blocks "$m" --duration "$DURATION" \
                --kernel-sizes 16k && read_xb "$TMP/xb-$n-$m.json"
        fi
        if [[ -n $HAVE_GR ]]; then
            for s in default custom; do
                peer "gr/$s/$n/$m" "GNU Radio $s N=$n M=$m" \
                    "$PY" "$FG/gnuradio_saxpy.py" --cores "$n" --blocks "$m" --strategy "$s" \
                    --duration "$DUR_S" --warmup "$WARMUP_S"
            done
        fi
        if [[ -n $HAVE_FSDR ]]; then
            for s in smol flow; do
                peer "fsdr/$s/$n/$m" "FutureSDR $s N=$n M=$m" \
                    taskset -c "$cpus" "$FSDR_BIN" --cores "$n" --blocks "$m" --scheduler "$s" \
                    --duration "$DUR_S" --warmup "$WARMUP_S"
            done
        fi
    done
done

# ---- tables -----------------------------------------------------------------
short() {
    case $1 in
        thread-per-block) echo tpb ;;
        thread-per-block+handoff) echo tpb+h ;;
        async-executor) echo async ;;
        async-executor+handoff) echo async+h ;;
        *+handoff) echo "${1%handoff}h" ;;
        *) echo "$1" ;;
    esac
}

echo
echo "== xferbench per scheduler (Gsamples/s)"
printf '%2s %2s' N M
for s in "${XB_SCHEDS[@]}"; do printf ' %8s' "$(short "$s")"; done
printf ' %8s %8s %8s\n' ideal-dyn ideal-st kernel
# the seed's ideal schedulers over one saxpy block's rate: the fastest
# single kernel measured here (xferbench's alone, or C's)
c=$(max "$(get c/kernel/1/1)" "$(get c512/kernel/1/1)")
c=$(max "$c" "$KERNEL_ONLY")
for ((n = C_LO; n <= C_HI; n++)); do
    for m in $(blocks_for "$n"); do
        printf '%2d %2d' "$n" "$m"
        for s in "${XB_SCHEDS[@]}"; do printf ' %8s' "$(giga "$(get "xb/$s/$n/$m")")"; done
        idyn= ist=
        if [[ -n $c ]]; then
            idyn=$(awk -v c="$c" -v n="$n" -v m="$m" 'BEGIN { printf "%.0f", c * (n < m ? n / m : 1) }')
            ist=$(awk -v c="$c" -v n="$n" -v m="$m" 'BEGIN { k = int((m + n - 1) / n); printf "%.0f", c / k }')
        fi
        printf ' %9s %8s %8s\n' "$(giga "$idyn")" "$(giga "$ist")" "$(giga "$c")"
    done
done
echo "(kernel = the fastest single kernel measured: xferbench's kernel_only_sps $(giga "$KERNEL_ONLY"), C $(giga "$(get c/kernel/1/1)"), C 512-bit $(giga "$(get c512/kernel/1/1)");"
echo " ideal-dyn = kernel x N/M, ideal-st = kernel / ceil(M/N): the seed's ideal schedulers)"

echo
echo "== peers (Gsamples/s) and ratios; ours = best of static/seq on either kind of edge"
printf '%2s %2s %8s %8s %8s %8s %8s %9s %9s\n' N M ours gr-def gr-cust fsdr-smol fsdr-flow ours/gr ours/fsdr
declare -A OURS GRBEST
for ((n = C_LO; n <= C_HI; n++)); do
    for m in $(blocks_for "$n"); do
        ours=
        for s in static static+handoff seq seq+handoff; do
            ours=$(max "$ours" "$(get "xb/$s/$n/$m")")
        done
        grb=$(max "$(get "gr/default/$n/$m")" "$(get "gr/custom/$n/$m")")
        fsb=$(max "$(get "fsdr/smol/$n/$m")" "$(get "fsdr/flow/$n/$m")")
        OURS[$n/$m]=$ours GRBEST[$n/$m]=$grb
        printf '%2d %2d %8s %8s %8s %9s %9s %9s %9s\n' "$n" "$m" "$(giga "$ours")" \
            "$(giga "$(get "gr/default/$n/$m")")" "$(giga "$(get "gr/custom/$n/$m")")" \
            "$(giga "$(get "fsdr/smol/$n/$m")")" "$(giga "$(get "fsdr/flow/$n/$m")")" \
            "$(shown "$(ratio "$ours" "$grb")")" "$(shown "$(ratio "$ours" "$fsb")")"
    done
done
echo "(gr-* = GNU Radio 3.10 default/custom placement, one multiply_const_ff per saxpy block;"
echo " fsdr-smol/flow = FutureSDR 0.8 SmolScheduler with N pinned executors / FlowScheduler with the custom groups;"
echo " ratios against the better strategy of each peer)"

# ---- checks -----------------------------------------------------------------
echo
echo "== checks (informational)"
printf '%-46s %8s %8s %7s %8s  %s\n' check ours theirs ratio target result
check() { # NAME OURS THEIRS TARGET
    local r
    r=$(ratio "$2" "$3")
    printf '%-46s %8s %8s %7s %8s  %s\n' "$1" "$(giga "$2")" "$(giga "$3")" "$(shown "$r")" ">= $4" "$(verdict "$r" "$4" ge)"
}
if ((C_LO == 1)) && [[ " $(blocks_for 1 | tr '\n' ' ') " == *" 1 "* ]]; then
    check "seq N=1 M=1 / xferbench kernel_only_sps" "$(get xb/seq/1/1)" "$KERNEL_ONLY" 0.85
    check "seq N=1 M=1 / kernel at the flowgraph's size" "$(get xb/seq/1/1)" "$KERNEL_AT_BUFFER" 0.85
    check "seq N=1 M=1 / C -march=native saxpy" "$(get xb/seq/1/1)" "$(get c/kernel/1/1)" 0.8
    [[ -n $HAVE_C512 ]] &&
        check "seq N=1 M=1 / C saxpy, 512-bit vectors" "$(get xb/seq/1/1)" "$(get c512/kernel/1/1)" 0.8
fi
if ((C_LO <= 2 && 2 <= C_HI)); then
    for m in $(blocks_for 2); do
        ((m >= 2 && m <= 6)) || continue
        for s in static static+handoff; do
            check "$s / ring, N=2 M=$m" "$(get "xb/$s/2/$m")" "$(get "xb/ring/2/$m")" 0.85
        done
    done
fi
for ((n = C_LO; n <= C_HI; n++)); do
    for m in $(blocks_for "$n"); do
        check "ours / GNU Radio 3.10, N=$n M=$m" "${OURS[$n/$m]}" "${GRBEST[$n/$m]}" 20
    done
done
echo "(figures in Gsamples/s; ERROR = a side is missing. PASS/FAIL is informational.)"
report_errors
