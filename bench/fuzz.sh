#!/usr/bin/env bash
# fuzz.sh - a short `cargo fuzz` run of each target in fuzz/: the remote
# wire parsers (hello, welcome, control-frame body) and the fio job-file
# parser. Prints, per target, the executions run and the crashes found.
# Installs cargo-fuzz (crates.io) if missing; needs the nightly toolchain.
#
#   bench/fuzz.sh              # 60 s per target
#   XB_FUZZ_SECONDS=600 bench/fuzz.sh
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
SECONDS_EACH=${XB_FUZZ_SECONDS:-60}

if ! rustup toolchain list 2>/dev/null | grep -q nightly; then
    error "cargo fuzz needs the nightly toolchain (rustup toolchain install nightly)"
    report_errors
fi
if ! cargo +nightly fuzz --help >/dev/null 2>&1; then
    echo "-- installing cargo-fuzz from crates.io"
    cargo install --quiet cargo-fuzz || { error "cargo install cargo-fuzz failed"; report_errors; }
fi

cd "$ROOT/fuzz" || exit 1
printf '%-10s %12s %9s %8s  %s\n' target executions exec/s crashes artifacts
for t in wire jobfile; do
    mkdir -p "corpus/$t"
    cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null
    log=$(mktemp)
    timeout -k 10 $((SECONDS_EACH + 300)) cargo +nightly fuzz run "$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    crashes=$(find "artifacts/$t" -type f 2>/dev/null | wc -l)
    printf '%-10s %12s %9s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$crashes" "fuzz/artifacts/$t"
    if ((rc != 0 && crashes == 0)); then
        error "$t: cargo fuzz exited $rc without a crash artifact: $(tail -n 3 "$log" | tr '\n' ' ')"
    fi
    rm -f "$log"
done
report_errors
