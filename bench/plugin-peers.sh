#!/usr/bin/env bash
# plugin-peers.sh - what the plugin ABI costs, measured in one run:
#
#   (a) roundtrip 64 B, poll, raw buffers: the echo example plugin
#       (-t plugin:path=echo.so) against the built-in thread transport
#       (-t thread, raw buffers). Both are a cross-core handoff between the
#       measuring thread and one worker; the function-table call should cost
#       nothing measurable. Target: plugin / thread p50 <= 1.15.
#   (b) --responder-delay 20us through the echo plugin: p50 moves by 20 us
#       (target 20 +- 2 us).
#
# Runs alternate (thread, plugin, thread, plugin, ...) for XB_ROUNDS rounds;
# the ratio printed is the median of the per-round ratios, beside the best
# figure of each side. PASS/FAIL is informational: exit 0 unless something
# failed to run.
#
# Environment:
#   XB_CPUS      two cpus, initiator first (default "0,1")
#   XB_DURATION  timed duration of every run (default 3s)
#   XB_ROUNDS    rounds of alternation (default 5)
#   XB_BIN       xferbench binary (default: cargo build --release)
#   CC           C compiler for the plugin (default cc)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

parse_cpus "${XB_CPUS:-0,1}"
CPUS="$CPU_A,$CPU_B"
ROUNDS=${XB_ROUNDS:-5}
DUR=${XB_DURATION:-3s}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "XB_ROUNDS must be a positive integer" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/plugin-peers.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

if [[ -z ${XB_BIN:-} ]]; then
    (cd "$ROOT" && cargo build --release --quiet) || { echo "cargo build failed" >&2; exit 1; }
    XB_BIN=$ROOT/target/release/xferbench
fi
ECHO=$TMP/echo.so
${CC:-cc} -O2 -shared -fPIC -I"$ROOT/include" "$ROOT/examples/plugins/echo.c" -o "$ECHO" -lpthread \
    || { echo "building echo.so failed" >&2; exit 1; }

# p50 SPEC [ARGS...]: prints the p50 (ns) of a 64 B round trip.
p50() {
    local spec=$1; shift
    local out=$TMP/run.json
    if ! "$XB_BIN" roundtrip -q -t "$spec" --in 64 --out 64 --cpus "$CPUS" \
        --duration "$DUR" --format json -o "$out" "$@" 2>"$TMP/err"; then
        error "xferbench -t $spec $*: $(tail -n 2 "$TMP/err" | tr '\n' ' ')"
        echo 0; return
    fi
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["points"][0]["summary"]["p50_ns"])' "$out"
}

echo "== (a) 64 B round trip, poll, raw buffers, cpus $CPUS, $DUR per run, $ROUNDS rounds"
RATIOS=()
BEST_T=; BEST_P=
for ((r = 1; r <= ROUNDS; r++)); do
    t=$(p50 "thread:buffers=raw,completion=poll")
    p=$(p50 "plugin:path=$ECHO,buffers=raw,completion=poll")
    ratio=$(python3 -c "import sys; t,p=map(float,sys.argv[1:]); print(f'{p/t:.3f}' if t>0 else 'nan')" "$t" "$p")
    printf '  round %d: thread p50 %6.0f ns   plugin echo p50 %6.0f ns   ratio %s\n' "$r" "$t" "$p" "$ratio"
    RATIOS+=("$ratio")
    BEST_T=$(python3 -c "import sys; v=[float(x) for x in sys.argv[1:] if x]; print(min(v))" "$t" $BEST_T)
    BEST_P=$(python3 -c "import sys; v=[float(x) for x in sys.argv[1:] if x]; print(min(v))" "$p" $BEST_P)
done
MED=$(python3 -c "import sys,statistics; print(f'{statistics.median(map(float,sys.argv[1:])):.3f}')" "${RATIOS[@]}")
verdict=$(python3 -c "import sys; print('PASS' if float(sys.argv[1]) <= 1.15 else 'FAIL')" "$MED")
BEST_R=$(python3 -c "import sys; t,p=map(float,sys.argv[1:]); print(f'{p/t:.3f}')" "$BEST_T" "$BEST_P")
printf '  best: thread %.0f ns, plugin %.0f ns (ratio %s); median per-round ratio %s (target <= 1.15): %s\n' \
    "$BEST_T" "$BEST_P" "$BEST_R" "$MED" "$verdict"
echo "  (on a VM whose cross-core latency flips between states, compare rounds where both sides agree)"

echo "== (b) --responder-delay 20us through the echo plugin (poll, raw)"
DELTAS=()
for ((r = 1; r <= ROUNDS; r++)); do
    z=$(p50 "plugin:path=$ECHO,buffers=raw,completion=poll")
    d=$(p50 "plugin:path=$ECHO,buffers=raw,completion=poll" --responder-delay 20us)
    delta=$(python3 -c "import sys; z,d=map(float,sys.argv[1:]); print(f'{(d-z)/1000:.3f}')" "$z" "$d")
    printf '  round %d: p50 %6.0f ns without, %6.0f ns with: moved %s us\n' "$r" "$z" "$d" "$delta"
    DELTAS+=("$delta")
done
MEDD=$(python3 -c "import sys,statistics; print(f'{statistics.median(map(float,sys.argv[1:])):.3f}')" "${DELTAS[@]}")
verdict=$(python3 -c "import sys; print('PASS' if abs(float(sys.argv[1])-20)<=2 else 'FAIL')" "$MEDD")
printf '  median shift %s us (target 20 +- 2): %s\n' "$MEDD" "$verdict"
report_errors
