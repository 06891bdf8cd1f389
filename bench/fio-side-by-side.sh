#!/usr/bin/env bash
# fio-side-by-side.sh - every fio job file in the given directories run by
# fio and then by `xferbench stream`, from the same rewritten copy, and a
# table of who ran what. This is how a fio user tries xferbench on their
# corpus: a file fio runs here must run under xferbench too.
#
#   bench/fio-side-by-side.sh DIR [DIR...]      (e.g. fio's examples/)
#
# Each file is copied, and the copy is what both tools run, each in a fresh
# scratch directory of its own (its cwd; fio's is removed before xferbench
# runs, so neither sees the other's files or disk use):
#   - filename= and directory= entries under /dev, or absolute paths that do
#     not exist here, point into the scratch directory instead;
#   - size=, filesize=, io_size=/io_limit=, offset=, offset_increment= above
#     XB_CAP (default 8m) are cut to it (fio lays out a file up to the last
#     job's offset: 30 jobs 124g apart fill a disk), runtime=, ramp_time=, startdelay=, ss_dur= above 1 s cut
#     to 1 s, loops= to 1; a [global] at the top of the copy gives every
#     job runtime=2s (a bound: rate-limited jobs such as 1mbs_clients.fio
#     would run for hours), and size=XB_CAP to a file with no size= (fio
#     needs one for a file that is not there).
# Each run has a wall-clock limit (XB_LIMIT, default 60 s).
#
# Outcomes per file: both, fio-only (xferbench did not run what fio ran:
# the gap to close), xb-only, neither; and xferbench's own PANIC/HANG
# (bugs whatever the file says). Exit status: 1 if any file is fio-only,
# or xferbench panicked or hung; 0 otherwise.
#
# Environment: XB_BIN (binary; default a release build), XB_CAP, XB_LIMIT,
# XB_FIO (fio binary, default fio; installed from Debian if missing),
# XB_VERBOSE=1 (print both tools' stderr for files that did not run in both).
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
CAP=${XB_CAP:-8m}
FIO=${XB_FIO:-fio}
command -v "$FIO" >/dev/null || install_deb fio fio || report_errors
build_xb "$ROOT"
[[ -n $XB ]] && XB=$(realpath "$XB")
report_errors
PARENT=$(mktemp -d "${XB_SCRATCH:-/var/tmp}/fio-side-by-side.XXXXXX")
trap 'rm -rf "$PARENT"' EXIT

# rewrite SRC DST SCRATCH: the capped, remapped copy.
rewrite() {
    python3 - "$1" "$2" "$3" "$CAP" <<'PY'
import os, re, sys
src, dst, scratch, cap = sys.argv[1:5]
UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}

def size(v):
    m = re.fullmatch(r"(\d+)\s*([kmgtp]?)(i?b)?", v.strip().lower())
    return int(m.group(1)) * UNITS[m.group(2)] if m else None

def seconds(v):
    m = re.fullmatch(r"(\d+)\s*(us|ms|s|m|h|d)?", v.strip().lower())
    if not m:
        return None
    mult = {"us": 1e-6, "ms": 1e-3, None: 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    return int(m.group(1)) * mult

cap_b = size(cap)
n = [0]

def local(path, key):
    if path.startswith("/dev/") or (path.startswith("/") and not os.path.exists(path)):
        n[0] += 1
        p = os.path.join(scratch, f"{key}-{n[0]}")
        if key == "directory":
            os.makedirs(p, exist_ok=True)
            return p
        os.makedirs(p, exist_ok=True)
        return os.path.join(p, os.path.basename(path) or "f")
    return path

out, has_size = [], False
for line in open(src, errors="replace"):
    m = re.match(r"^(\s*)([A-Za-z_]+)(\s*=\s*)([^#;]*?)(\s*([#;].*)?)$", line.rstrip("\n"))
    if not m:
        out.append(line.rstrip("\n"))
        continue
    ind, key, eq, val, rest = m.group(1), m.group(2).lower(), m.group(3), m.group(4), m.group(5) or ""
    if key in ("filename", "directory") and not val.startswith("$"):
        parts = val.split(":")
        val = ":".join(local(p, key) if p else p for p in parts)
    elif key in ("size", "filesize", "io_size", "io_limit", "offset", "offset_increment"):
        has_size |= key == "size"
        if "%" not in val:
            lo = [size(x) for x in val.split("-")]
            if all(x is not None for x in lo) and any(x > cap_b for x in lo):
                val = "-".join(cap if x > cap_b else x.__str__() for x in lo)
    elif key in ("runtime", "ramp_time", "startdelay", "ss_dur"):
        s = seconds(val)
        if s is not None and s > 1:
            val = "1s"
    elif key == "loops":
        val = "1"
    out.append(f"{ind}{key}{eq}{val}{rest}")
head = ["[global]", "runtime=2s"] + ([] if has_size else [f"size={cap}"])
out = head + [""] + out
open(dst, "w").write("\n".join(out) + "\n")
PY
}

declare -A COUNT=()
BAD=0
N=0
printf '%-9s %-44s %-5s %-5s %s\n' outcome file fio xb "xferbench's first line"
while IFS= read -r -d '' f; do
    N=$((N + 1))
    d="$PARENT/$N"
    mkdir -p "$d/fio" "$d/xb"
    for t in fio xb; do
        rewrite "$f" "$d/$t.fio" "$d/$t/scratch" || { error "could not rewrite $f"; continue 2; }
    done
    # Output to files, not a pipe: a job process fio forked and the limit
    # did not reach would hold a pipe open; whatever is left of a run is
    # killed by its job file's name.
    (cd "$d/fio" && timeout -k 5 "$LIMIT" "$FIO" --output-format=json --output="$d/fio.json" \
        "$d/fio.fio" >"$d/fio.out" 2>&1)
    frc=$?
    pkill -9 -f -- "$d/fio.fio" 2>/dev/null
    fout=$(cat "$d/fio.out")
    rm -rf "$d/fio"
    (cd "$d/xb" && timeout -k 5 "$LIMIT" "$XB" stream "$d/xb.fio" --quiet --format json \
        -o "$d/xb.json" >/dev/null 2>"$d/xb.out")
    xrc=$?
    pkill -9 -f -- "$d/xb.fio" 2>/dev/null
    xout=$(cat "$d/xb.out")
    if grep -q panicked <<<"$xout"; then
        kind=PANIC
    elif ((xrc == 124 || xrc == 137)); then
        kind=HANG
    elif ((frc == 0 && xrc == 0)); then
        kind=both
    elif ((frc == 0)); then
        kind=fio-only
    elif ((xrc == 0)); then
        kind=xb-only
    else
        kind=neither
    fi
    COUNT[$kind]=$((${COUNT[$kind]:-0} + 1))
    case $kind in PANIC | HANG | fio-only) BAD=$((BAD + 1)) ;; esac
    first=$(grep -v '^xferbench: warning' <<<"$xout" | grep -v '^- ' | head -n 1)
    printf '%-9s %-44s %-5s %-5s %s\n' "$kind" "$(basename "$f" | cut -c1-44)" "$frc" "$xrc" \
        "$(cut -c1-120 <<<"$first")"
    if [[ ${XB_VERBOSE:-0} == 1 && $kind != both ]]; then
        echo "    fio: $(grep -iE 'error|fio:' <<<"$fout" | head -n 2 | tr '\n' ' ')"
        sed 's/^/    xb: /' <<<"$xout" | head -n 5
    fi
    rm -rf "$d"
done < <(find "$@" -type f -name '*.fio' -print0 | sort -z)

echo
echo "== $N job files:"
for k in both fio-only xb-only neither PANIC HANG; do
    printf '  %-9s %4d\n' "$k" "${COUNT[$k]:-0}"
done
fio_ran=$((${COUNT[both]:-0} + ${COUNT[fio-only]:-0}))
echo "  fio ran $fio_ran; xferbench ran ${COUNT[both]:-0} of those, and ${COUNT[xb-only]:-0} that fio did not"
exit $((BAD > 0))
