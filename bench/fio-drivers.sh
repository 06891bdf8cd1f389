#!/usr/bin/env bash
# fio-drivers.sh - what a fio user runs, run unchanged with xferbench as
# `fio` first on PATH, beside fio 3.33 itself:
#
#   corpus   every line of bench/fio-corpus.txt (published fio command
#            lines: cloud providers' disk benchmarks, fio's HOWTO, blogs),
#            each tool in a fresh directory; a table of exit codes, the
#            output format each wrote and whether the job shape agrees
#            (jobs, groups, directions; I/Os or bytes each way where the
#            line is bounded by size, not time)
#   tools    fio-plot's bench-fio (a matrix of iodepths and numjobs) then
#            fio-plot's charts from its JSON and logs; cdmpy, auto-fio and
#            disk-bench (PyPI tools that run fio and read its JSON)
#   helpers  fio's own scripts on the outputs: fio_generate_plots,
#            fio2gnuplot -b/-i/-g, fio_jsonplus_clat2csv,
#            fiologparser_hist.py
#
#   bench/fio-drivers.sh                  # all three, ~6 min plus the build
#   XB_WHAT="corpus" bench/fio-drivers.sh
#
# Installs what it lacks: Debian's fio and gnuplot-nox (apt-get), and a
# virtual environment (XB_VENV, default /var/tmp/xferbench-fio-drivers-venv)
# with fio-plot, pandas, cdmpy, auto-fio and disk-bench (pip).
# Exit status: 1 when a line fio runs fails under xferbench, when a tool or
# helper that works with fio fails with xferbench, or when a step could not
# run; 0 otherwise. Differences of shape are reported, not failed on.
#
# Environment: XB_BIN (binary; default a release build), XB_WHAT, XB_VENV,
# XB_LIMIT (seconds per command, default 120), XB_SCRATCH (parent of the
# scratch directory, default /var/tmp), XB_KEEP=1 (keep it, and say where).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

WHAT=${XB_WHAT:-corpus tools helpers}
LIMIT=${XB_LIMIT:-120}
VENV=${XB_VENV:-/var/tmp/xferbench-fio-drivers-venv}
CORPUS=$HERE/fio-corpus.txt

install_deb fio fio || error "fio is not installed and could not be"
build_xb "$ROOT"
report_errors
XB=$(realpath "$XB")
REAL_FIO=$(command -v fio)
if [[ $(realpath "$REAL_FIO") == "$XB" ]]; then
    echo "the fio first on PATH is xferbench; put fio 3.33 first" >&2
    exit 2
fi
echo "   fio: $REAL_FIO ($("$REAL_FIO" --version))"
WORK=$(mktemp -d "${XB_SCRATCH:-/var/tmp}/fio-drivers.XXXXXX")
if [[ ${XB_KEEP:-0} == 1 ]]; then
    echo "   scratch: $WORK (kept)"
else
    trap 'rm -rf "$WORK"' EXIT
fi
# Each tool's `fio` comes first on PATH from a directory of its own.
mkdir -p "$WORK/bin/fio" "$WORK/bin/xb"
ln -s "$REAL_FIO" "$WORK/bin/fio/fio"
ln -s "$XB" "$WORK/bin/xb/fio"
TOOLS=(fio xb)
FAILS=0

# with TOOL CMD...: CMD with TOOL's fio (and the venv's programs) on PATH.
with() {
    local t=$1
    shift
    PATH="$WORK/bin/$t:$VENV/bin:$PATH" timeout "$LIMIT" "$@" </dev/null
}

# bare TOOL CMD...: CMD with TOOL's fio first on PATH, and the system's
# python3 (fio's own scripts need Debian's python3-six).
bare() {
    local t=$1
    shift
    PATH="$WORK/bin/$t:$PATH" timeout "$LIMIT" "$@" </dev/null
}

# venv: the PyPI tools, installed once into $VENV.
venv() {
    local log=$WORK/pip.log
    if [[ ! -x $VENV/bin/bench-fio ]] || [[ ! -x $VENV/bin/disk-bench ]]; then
        echo "-- installing fio-plot, pandas, cdmpy, auto-fio, disk-bench into $VENV"
        python3 -m venv "$VENV" >"$log" 2>&1 &&
            "$VENV/bin/pip" install -q fio-plot pandas cdmpy auto-fio disk-bench 'sh<2' >>"$log" 2>&1 ||
            { tail -n 5 "$log" >&2; error "pip install into $VENV failed"; return 1; }
    fi
}

# prepare DIR: what every corpus line may name: $DEV, a 64 MiB file for a
# device; basic-verify.fio as stressant rewrites fio's example (filename=
# commented out); cdm.jobfile as cdmpy 0.3.2 writes it (runtime 5 -> 2).
prepare() {
    local d=$1 j name rw bs q t
    mkdir -p "$d"
    head -c 64M /dev/zero >"$d/dev"
    printf '%s\n' '[write-and-verify]' rw=randwrite bs=4k direct=1 ioengine=libaio \
        iodepth=16 verify=crc32c '#filename=/dev/XXX' >"$d/basic-verify.fio"
    {
        printf '%s\n' '[global]' ioengine=posixaio filename=.fio_testmark "directory=$d" \
            size=16777216.0 direct=1 runtime=2 refill_buffers norandommap randrepeat=0 \
            allrandrepeat=0 group_reporting ''
        for j in seq-read-1m-q8-t1:read:1m:8:1 seq-write-1m-q8-t1:write:1m:8:1 \
            rnd-read-4k-q32-t2:randread:4k:32:2 rnd-write-4k-q32-t2:randwrite:4k:32:2 \
            rnd-rw-4k-q32-t2:randrw:4k:32:2; do
            IFS=: read -r name rw bs q t <<<"$j"
            printf '%s\n' "[$name]" "rw=$rw" "bs=$bs" rwmixread=70.0 "iodepth=$q" \
                "numjobs=$t" loops=1 stonewall ''
        done
    } >"$d/cdm.jobfile"
}

run_corpus() {
    echo
    echo "== corpus: $(grep -c '^[^#]' "$CORPUS") published fio command lines"
    local name cmd d t
    while IFS='|' read -r name cmd; do
        name=${name//[[:space:]]/}
        [[ -z $name || $name == \#* ]] && continue
        for t in "${TOOLS[@]}"; do
            d=$WORK/corpus/$name/$t
            prepare "$d"
            (cd "$d" && DIR=$d DEV=$d/dev with "$t" bash -c "$cmd" </dev/null >"$d/out.txt" 2>"$d/err.txt")
            echo $? >"$d/rc"
        done
    done <"$CORPUS"
    python3 - "$CORPUS" "$WORK/corpus" <<'PY' || FAILS=$((FAILS + $?))
import json, os, re, sys

corpus, root = sys.argv[1:3]
lines = []
for raw in open(corpus):
    if raw.strip() and not raw.startswith("#"):
        name, cmd = raw.split("|", 1)
        lines.append((name.strip(), cmd.strip()))

def shape(out):
    """(format, [(job, group, {dir: amount})]) of what a run printed."""
    t = out.lstrip()
    if t.startswith("{"):
        try:
            d = json.loads(t)
        except ValueError:
            return "json?", []
        fmt = "json+" if any("bins" in j.get("read", {}).get("clat_ns", {}) for j in d["jobs"]) else "json"
        return fmt, [(j["jobname"], j["groupid"],
                      {k: j[k]["io_bytes"] for k in ("read", "write", "trim")}) for j in d["jobs"]]
    if re.match(r"3;fio-", t):
        jobs = []
        for l in t.splitlines():
            f = l.split(";")
            if len(f) > 90 and f[0] == "3":
                jobs.append((f[2], int(f[3]), {"read": int(f[5]), "write": int(f[46]), "trim": 0}))
        return "terse", jobs
    heads = list(re.finditer(r"^(\S[^\n]*?): \(groupid=(\d+), jobs=(\d+)\)", t, re.M))
    if heads:
        jobs = []
        for k, h in enumerate(heads):
            end = heads[k + 1].start() if k + 1 < len(heads) else len(t)
            m = re.search(r"issued rwts: total=(\d+),(\d+),(\d+)", t[h.start():end])
            io = [int(x) for x in m.groups()] if m else [0, 0, 0]
            jobs.append((h.group(1), int(h.group(2)), dict(zip(("read", "write", "trim"), io))))
        return "normal", jobs
    return "none", []

def compare(a, b, exact):
    if [(j, g) for j, g, _ in a] != [(j, g) for j, g, _ in b]:
        return "jobs/groups differ: fio %s, xferbench %s" % (
            [(j, g) for j, g, _ in a], [(j, g) for j, g, _ in b])
    for (j, _, x), (_, _, y) in zip(a, b):
        if {k for k in x if x[k]} != {k for k in y if y[k]}:
            return f"{j}: directions differ: fio {x}, xferbench {y}"
        # A mixed job's split between reads and writes is drawn at random:
        # its total is what must agree.
        if exact and sum(x.values()) != sum(y.values()):
            return f"{j}: amounts differ: fio {x}, xferbench {y}"
    return "agree" + (" (exact)" if exact else "")

gaps = 0
rows = []
for name, cmd in lines:
    r = {}
    for t in ("fio", "xb"):
        d = os.path.join(root, name, t)
        rc = int(open(os.path.join(d, "rc")).read())
        out = open(os.path.join(d, "out.txt"), errors="replace").read()
        err = open(os.path.join(d, "err.txt"), errors="replace").read()
        r[t] = (rc, out, err) + shape(out)
    (frc, _, ferr, ffmt, fjobs), (xrc, _, xerr, xfmt, xjobs) = r["fio"], r["xb"]
    if frc == 0 and xrc != 0:
        gaps += 1
        verdict = "GAP: " + (xerr.strip().splitlines() or ["(no stderr)"])[-1][:110]
    elif frc != 0:
        verdict = "fio failed: " + (ferr.strip().splitlines() or ["(no stderr)"])[-1][:90]
    else:
        exact = not re.search(r"time_based|runtime|ramp_time", cmd)
        verdict = compare(fjobs, xjobs, exact)
        if ffmt != xfmt:
            verdict = f"format fio {ffmt}, xferbench {xfmt}; " + verdict
    if xerr.strip() and not ferr.strip() and xrc == 0:
        verdict += " [stderr: xferbench only]"
    rows.append((name, frc, xrc, ffmt, verdict))

w = max(len(r[0]) for r in rows)
print(f"{'line':<{w}}  fio  xb  format  shape")
for name, frc, xrc, fmt, verdict in rows:
    print(f"{name:<{w}}  {frc:>3}  {xrc:>2}  {fmt:<6}  {verdict}")
ran = sum(1 for r in rows if r[1] == 0)
both = sum(1 for r in rows if r[1] == 0 and r[2] == 0)
agree = sum(1 for r in rows if r[4].startswith("agree"))
print(f"\n{len(rows)} lines: fio ran {ran}, xferbench ran {both} of those; shape agrees on {agree}; gaps: {gaps}")
sys.exit(min(gaps, 1))
PY
}

# tool_row NAME FIO_RC XB_RC DETAIL: a line of the tools table; a tool that
# works with fio and not with xferbench fails the script.
tool_row() {
    printf '%-34s %4s %4s  %s\n' "$1" "$2" "$3" "$4"
    if [[ $2 == 0 && $3 != 0 ]]; then FAILS=$((FAILS + 1)); fi
}

run_tools() {
    echo
    echo "== tools that drive fio"
    venv || return
    printf '%-34s %4s %4s  %s\n' tool fio xb detail
    local t d g k rc
    declare -A RC PNG
    for t in "${TOOLS[@]}"; do
        d=$WORK/tools/$t/bench-fio
        mkdir -p "$d"
        (cd "$d" && with "$t" bench-fio -d "$d/target.bin" -t file -s 64m -o "$d/out" \
            --iodepth 1 4 --numjobs 1 2 --runtime 2 --time-based --loginterval 500 -m randread randwrite \
            --destructive --quiet --create >"$d/log.txt" 2>&1)
        RC[bench-$t]=$?
        RC[json-$t]=$(find "$d/out" -name '*.json' 2>/dev/null | wc -l)
        k=0
        for g in "-l -n 1" "-N -d 1" "-L -t iops" "-L -t lat" "-H -d 4 -n 1" "-g -d 1 -n 1 -t bw iops lat"; do
            mkdir -p "$d/png$k"
            # shellcheck disable=SC2086
            (cd "$d/png$k" && with "$t" fio-plot -i "$d/out/target.bin/4k" -T "bench-fio ($t)" \
                -s xferbench -r randread $g >"$d/png$k/log.txt" 2>&1)
            rc=$?
            RC[plot$k-$t]=$rc
            PNG[plot$k-$t]=$(find "$d/png$k" -name '*.png' | wc -l)
            k=$((k + 1))
        done
    done
    tool_row "bench-fio (8 runs, json files)" "${RC[bench-fio]}" "${RC[bench-xb]}" \
        "json: fio ${RC[json-fio]}, xferbench ${RC[json-xb]}"
    k=0
    for g in "-l (iodepth bars)" "-N (numjobs bars)" "-L -t iops (3D)" "-L -t lat (3D)" "-H (histogram)" "-g (log graph)"; do
        tool_row "fio-plot $g" "${RC[plot$k-fio]}" "${RC[plot$k-xb]}" \
            "PNGs written: fio ${PNG[plot$k-fio]}, xferbench ${PNG[plot$k-xb]}"
        k=$((k + 1))
    done
    for t in "${TOOLS[@]}"; do
        d=$WORK/tools/$t/cdm
        mkdir -p "$d"
        (cd "$d" && with "$t" cdm -n 1 -s 16m -a seq,8,1 -a rnd,32,2 -x 70 "$d" >"$d/out.txt" 2>&1)
        RC[cdm-$t]=$?
        RC[cdmrows-$t]=$(grep -c '^|[SR]' "$d/out.txt")
        d=$WORK/tools/$t/auto-fio
        mkdir -p "$d"
        (cd "$d" && with "$t" auto-fio --backend fio --file-size 33554432 --json "$d" >"$d/out.json" 2>"$d/err.txt")
        RC[af-$t]=$?
        RC[afn-$t]=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["samples"]))' "$d/out.json" 2>/dev/null || echo 0)
        d=$WORK/tools/$t/disk-bench
        mkdir -p "$d"
        (cd "$d" && with "$t" disk-bench --seq-size 64m --rand-size 16m --direct "$d" >"$d/out.txt" 2>&1)
        RC[db-$t]=$?
        RC[dbout-$t]=$(grep -c seqread "$d/out.txt")
    done
    tool_row "cdmpy (cdm, --max-jobs=1, json)" "${RC[cdm-fio]}" "${RC[cdm-xb]}" \
        "result rows: fio ${RC[cdmrows-fio]}, xferbench ${RC[cdmrows-xb]}"
    tool_row "auto-fio (--backend fio)" "${RC[af-fio]}" "${RC[af-xb]}" \
        "block sizes measured: fio ${RC[afn-fio]}, xferbench ${RC[afn-xb]}"
    tool_row "disk-bench (7 jobs, stderr empty)" "${RC[db-fio]}" "${RC[db-xb]}" \
        "tables printed: fio ${RC[dbout-fio]}, xferbench ${RC[dbout-xb]}"
}

run_helpers() {
    echo
    echo "== fio's helper scripts on each tool's logs and json+"
    install_deb gnuplot-nox gnuplot || error "gnuplot-nox could not be installed"
    venv || return
    printf '%-34s %4s %4s  %s\n' helper fio xb detail
    local t d docs=/usr/share/doc/fio
    declare -A RC N
    for t in "${TOOLS[@]}"; do
        d=$WORK/helpers/$t
        mkdir -p "$d"
        (cd "$d" && bare "$t" fio --name=h --filename=f --size=16m --bs=4k --rw=randrw \
            --ioengine=libaio --iodepth=4 --time_based --runtime=2 --write_lat_log=h \
            --write_bw_log=h --write_iops_log=h --log_avg_msec=100 --write_hist_log=h \
            --log_hist_msec=100 --output-format=json+ --output=out.json >run.txt 2>&1)
        RC[run-$t]=$?
        mkdir -p "$d/gp" && cp "$d"/h_*.log "$d/gp/"
        (cd "$d/gp" && bare "$t" fio_generate_plots t >log.txt 2>&1)
        RC[gp-$t]=$?
        N[gp-$t]=$(find "$d/gp" -name '*.svg' | wc -l)
        for m in b i g; do
            mkdir -p "$d/f2g$m" && cp "$d/h_bw.1.log" "$d/h_iops.1.log" "$d/f2g$m/"
            local flags=(-"$m")
            [[ $m == g ]] && flags=(-b -g)
            (cd "$d/f2g$m" && bare "$t" fio2gnuplot "${flags[@]}" >log.txt 2>&1 && ! grep -q Traceback log.txt)
            RC[f2g$m-$t]=$?
        done
        N[f2gg-$t]=$(find "$d/f2gg" -name '*.png' | wc -l)
        (cd "$d" && bare "$t" fio_jsonplus_clat2csv out.json clat.csv >c2c.txt 2>&1)
        RC[c2c-$t]=$?
        N[c2c-$t]=$(cat "$d"/clat_job*.csv 2>/dev/null | wc -l)
        zcat "$docs/fiologparser_hist.py.gz" >"$d/fiologparser_hist.py" 2>/dev/null
        (cd "$d" && with "$t" "$VENV/bin/python3" fiologparser_hist.py h_clat_hist.1.log >hist.txt 2>&1)
        RC[hist-$t]=$?
        N[hist-$t]=$(($(wc -l <"$d/hist.txt") - 1))
    done
    tool_row "job with every log, json+" "${RC[run-fio]}" "${RC[run-xb]}" ""
    tool_row "fio_generate_plots" "${RC[gp-fio]}" "${RC[gp-xb]}" "SVGs: fio ${N[gp-fio]}, xferbench ${N[gp-xb]}"
    tool_row "fio2gnuplot -b" "${RC[f2gb-fio]}" "${RC[f2gb-xb]}" ""
    tool_row "fio2gnuplot -i" "${RC[f2gi-fio]}" "${RC[f2gi-xb]}" ""
    tool_row "fio2gnuplot -b -g" "${RC[f2gg-fio]}" "${RC[f2gg-xb]}" "PNGs: fio ${N[f2gg-fio]}, xferbench ${N[f2gg-xb]}"
    tool_row "fio_jsonplus_clat2csv" "${RC[c2c-fio]}" "${RC[c2c-xb]}" "CSV lines: fio ${N[c2c-fio]}, xferbench ${N[c2c-xb]}"
    tool_row "fiologparser_hist.py" "${RC[hist-fio]}" "${RC[hist-xb]}" "windows: fio ${N[hist-fio]}, xferbench ${N[hist-xb]}"
}

for w in $WHAT; do
    case $w in
        corpus) run_corpus ;;
        tools) run_tools ;;
        helpers) run_helpers ;;
        *) echo "XB_WHAT: unknown part '$w' (corpus, tools, helpers)" >&2; exit 2 ;;
    esac
done
report_errors
if ((FAILS)); then
    echo
    echo "$FAILS check(s) ran under fio but not under xferbench" >&2
    exit 1
fi
