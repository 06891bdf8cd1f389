#!/usr/bin/env bash
# ci-under-load.sh - the test suite on a busy machine: `cargo test --release`
# N times in a row while two CPU hogs (busy shell loops) run beside it.
#
#   bench/ci-under-load.sh [N] [CARGO-TEST-ARGS...]
#
# N (default 10) is the number of runs; anything after it goes to both
# `cargo test --release --no-run` and `cargo test --release --no-fail-fast`
# (e.g. `--test serve`); --no-fail-fast only makes a failing run go on to
# the other test binaries, so its log names every failure. The tests are built once, before the hogs start.
# Each run's pass/fail and duration go to stderr; a failing run's whole
# output is kept in target/ci-under-load/run-K.log. The last line (stdout) is
#
#   passed K of N runs with 2 CPU hogs
#
# Exit status: 0 if every run passed, 1 if one failed (or the build did),
# 2 for bad arguments. The hogs die with the script (EXIT, INT, TERM).
#
# Environment:
#   XB_HOGS         number of CPU hogs (default 2)
#   XB_RUN_TIMEOUT  wall-clock limit of one run, seconds (default 1200); a
#                   run past it is killed and counts as failed
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

N=${1:-10}
(($#)) && shift
HOGS=${XB_HOGS:-2}
RUN_TIMEOUT=${XB_RUN_TIMEOUT:-1200}
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "N must be a positive integer (got '$N')" >&2; exit 2; }
[[ $HOGS =~ ^[0-9]+$ ]] || { echo "XB_HOGS must be a whole number (got '$HOGS')" >&2; exit 2; }
[[ $RUN_TIMEOUT =~ ^[1-9][0-9]*$ ]] || { echo "XB_RUN_TIMEOUT must be whole seconds (got '$RUN_TIMEOUT')" >&2; exit 2; }

LOGS=$ROOT/target/ci-under-load
mkdir -p "$LOGS"
rm -f "$LOGS"/run-*.log
CURRENT=$(mktemp "${TMPDIR:-/tmp}/ci-under-load.XXXXXX")

HOG_PIDS=()
CHILD=
cleanup() {
    local p
    # The running `cargo test` is a session of its own (setsid): end all of it.
    if [[ -n $CHILD ]]; then kill -TERM -- "-$CHILD" 2>/dev/null || true; fi
    for p in "${HOG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${HOG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -f "$CURRENT"
}
trap cleanup EXIT
trap 'echo "interrupted" >&2; exit 130' INT
trap 'echo "terminated" >&2; exit 143' TERM

cd "$ROOT"
echo "-- building the tests (cargo test --release --no-run $*)" >&2
if ! cargo test --release --no-run "$@" >"$CURRENT" 2>&1; then
    cp "$CURRENT" "$LOGS/build.log"
    tail -n 20 "$CURRENT" >&2
    echo "build failed; whole output in $LOGS/build.log" >&2
    echo "passed 0 of $N runs with $HOGS CPU hogs"
    exit 1
fi

for ((h = 0; h < HOGS; h++)); do
    sh -c 'while :; do :; done' &
    HOG_PIDS+=("$!")
done
echo "-- $HOGS CPU hogs running (pids ${HOG_PIDS[*]:-none}) on $(nproc) cpus" >&2

passed=0
for ((k = 1; k <= N; k++)); do
    start=$(date +%s)
    setsid timeout -k 30 "$RUN_TIMEOUT" cargo test --release --no-fail-fast "$@" >"$CURRENT" 2>&1 &
    CHILD=$!
    if wait "$CHILD"; then rc=0; else rc=$?; fi
    CHILD=
    secs=$(($(date +%s) - start))
    if ((rc == 0)); then
        passed=$((passed + 1))
        echo "run $k of $N: pass (${secs} s)" >&2
    else
        cp "$CURRENT" "$LOGS/run-$k.log"
        why="exit $rc"
        ((rc == 124 || rc == 137)) && why="timed out after ${RUN_TIMEOUT} s"
        echo "run $k of $N: FAIL ($why, ${secs} s): $LOGS/run-$k.log" >&2
        # The failing tests' names: libtest lists them, one per line, in the
        # last "failures:" block before each binary's "test result" line.
        awk '/^failures:$/ { n = 0; next }
             /^    [^ ]+$/ { names[n++] = $1; next }
             /^test result: FAILED/ { for (i = 0; i < n; i++) print "    " names[i]; n = 0 }
             /^test result/ { n = 0 }' "$CURRENT" >&2 || true
    fi
done

echo "passed $passed of $N runs with $HOGS CPU hogs"
((passed == N))
