#!/usr/bin/env bash
# jobfile-corpus.sh - runs every fio job file in a directory through
# `xferbench stream` the way a new user would try them, and says how many
# run, how many are refused and why, and whether any panicked, hung or
# wrote more to the disk than it was allowed.
#
#   bench/jobfile-corpus.sh DIR [DIR...]
#
# Each file runs in a fresh scratch directory (its cwd, where fio's default
# file names land) with:
#   --map DEV=SCRATCH/dev-N   for every filename=/dev/… (and a directory=
#                             or filename= under /mnt, /data, …: any absolute
#                             directory that does not exist here)
#   --set size=8m --set runtime=1s  (XB_SET overrides: "size=8m runtime=1s")
# and a wall-clock limit (XB_LIMIT, default 60 s) so a hang shows as one.
#
# Outcomes: ran (exit 0), refused (exit 2: a usage error, one line), failed
# (exit 1: ran and failed, e.g. verify or a target error), PANIC (a Rust
# panic), HANG (killed at the limit), DISK (scratch grew past XB_DISK_MB,
# default 2048). The summary ends with the share that ran and the refusal
# reasons, most common first. Exit status: 0 unless a file panicked, hung or
# overran the disk (those are bugs whatever the job file says).
#
# Environment: XB_BIN (binary; default a release build), XB_SET, XB_LIMIT,
# XB_DISK_MB, XB_SCRATCH (parent of the scratch dirs; default a temp dir on
# /var/tmp), XB_VERBOSE=1 (print each file's stderr).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

(($#)) || { echo "usage: $0 DIR [DIR...]  (directories of fio job files)" >&2; exit 2; }
for d in "$@"; do
    [[ -d $d ]] || { echo "$d is not a directory of job files" >&2; exit 2; }
done
LIMIT=${XB_LIMIT:-60}
DISK_MB=${XB_DISK_MB:-2048}
read -r -a SETS <<<"${XB_SET:-size=8m runtime=1s}"
build_xb "$ROOT"
report_errors
PARENT=$(mktemp -d "${XB_SCRATCH:-/var/tmp}/xferbench-corpus.XXXXXX")
trap 'rm -rf "$PARENT"' EXIT

declare -A COUNT=()
REASONS=$(mktemp)
BAD=0
N=0
printf '%-8s %-60s %s\n' outcome file "first line of stderr"
while IFS= read -r -d '' f; do
    N=$((N + 1))
    scratch="$PARENT/$N"
    mkdir -p "$scratch"
    args=()
    for s in "${SETS[@]}"; do args+=(--set "$s"); done
    # Every device the file names, and every absolute directory that does
    # not exist here, goes to the scratch directory.
    i=0
    while IFS=' ' read -r key path; do
        [[ -z $path ]] && continue
        i=$((i + 1))
        if [[ $path == /dev/* ]]; then
            args+=(--map "$path=$scratch/dev-$i")
        elif [[ $path == /* && ! -e $path && $key == directory ]]; then
            mkdir -p "$scratch/dir-$i"
            args+=(--map "$path=$scratch/dir-$i")
        elif [[ $path == /* && ! -e $path ]]; then
            mkdir -p "$scratch/file-$i"
            args+=(--map "$path=$scratch/file-$i/$(basename "$path")")
        fi
    done < <(grep -E '^[[:space:]]*(filename|directory)[[:space:]]*=' "$f" |
        sed -E 's/^[[:space:]]*([a-z]+)[[:space:]]*=[[:space:]]*/\1 /; s/[[:space:]]+[#;].*$//; s/[[:space:]]+$//' |
        awk '{ n = split($2, p, ":"); for (i = 1; i <= n; i++) if (p[i] != "") print $1, p[i] }' | sort -u)
    out=$(cd "$scratch" && timeout -k 5 "$LIMIT" "$XB" stream --job "$f" "${args[@]}" \
        --quiet --format json -o "$scratch/.result.json" 2>&1 >/dev/null)
    rc=$?
    used=$(du -sm "$scratch" 2>/dev/null | cut -f1)
    first=$(grep -v '^xferbench: warning' <<<"$out" | head -n 1)
    if grep -q 'panicked' <<<"$out"; then
        kind=PANIC
    elif ((rc == 124 || rc == 137)); then
        kind=HANG
    elif ((used > DISK_MB)); then
        kind=DISK
    elif ((rc == 0)); then
        kind=ran
    elif ((rc == 2)); then
        kind=refused
    else
        kind=failed
    fi
    COUNT[$kind]=$((${COUNT[$kind]:-0} + 1))
    case $kind in PANIC | HANG | DISK) BAD=$((BAD + 1)) ;; esac
    if [[ $kind != ran ]]; then
        # The reason without the file:line and values, so alike ones group.
        sed -E 's/^xferbench: (error: )?//; s#^[^ ]*:[0-9]+: ##; s/[0-9]+/N/g' <<<"$first" |
            cut -c1-110 >>"$REASONS"
    fi
    printf '%-8s %-60s %s\n' "$kind" "$(basename "$f" | cut -c1-60)" "$(cut -c1-160 <<<"$first")"
    [[ ${XB_VERBOSE:-0} == 1 ]] && sed 's/^/    /' <<<"$out"
    rm -rf "$scratch"
done < <(find "$@" -type f ! -name '*.png' ! -name '*.md' -print0 | sort -z)

echo
echo "== $N job files:"
for k in ran refused failed PANIC HANG DISK; do
    printf '  %-8s %4d\n' "$k" "${COUNT[$k]:-0}"
done
if ((N)); then
    awk -v r="${COUNT[ran]:-0}" -v n="$N" 'BEGIN { printf "  share that ran: %.0f%%\n", 100 * r / n }'
fi
echo
echo "== why the rest did not run (most common first):"
sort "$REASONS" | uniq -c | sort -rn | head -n 40
rm -f "$REASONS"
exit $((BAD > 0))
