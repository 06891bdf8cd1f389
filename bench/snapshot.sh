#!/usr/bin/env bash
# Snapshot of what users see, for diffing before and after a restructure:
# every subcommand's --help, the key paths of each experiment's JSON (values
# vary run to run, the shape must not), the stream's fio JSON/terse/table
# shapes, and `report` of every fixture. Usage: bench/snapshot.sh BIN OUTDIR
# then `diff -r OUTDIR_before OUTDIR_after`.
set -uo pipefail
bin=${1:?binary}; out=${2:?out dir}
mkdir -p "$out"; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fix=$(cd "$(dirname "$0")/../tests/fixtures" && pwd)
# Key paths of a JSON document (array indices folded), one per line, sorted.
paths() { python3 -c '
import json,sys
def walk(v,p,out):
    if isinstance(v,dict):
        for k,x in v.items(): walk(x,p+"."+("N" if k.isdigit() else k),out)
    elif isinstance(v,list):
        for x in v[:3]: walk(x,p+"[]",out)
    out.add(p)
try: d=json.load(sys.stdin)
except Exception as e: print("not json:",e); sys.exit()
s=set(); walk(d,"",s); print("\n".join(sorted(s)))'; }
"$bin" --help > "$out/help.txt" 2>&1
for c in roundtrip curve stream report compare load mesh flowgraph list serve reference plugin; do
    "$bin" "$c" --help > "$out/help-$c.txt" 2>&1
done
"$bin" plugin check --help > "$out/help-plugin-check.txt" 2>&1
q=(-q --format json)
"$bin" roundtrip -t thread --in 64 --out 64,1024 --samples 200 "${q[@]}" 2>/dev/null | paths > "$out/roundtrip.paths"
"$bin" curve -t pipe --sizes 64,4096 --samples 200 "${q[@]}" 2>/dev/null | paths > "$out/curve.paths"
"$bin" load -t thread --sizes 64 --load idle --direction read --cell-time 0.2s "${q[@]}" 2>/dev/null | paths > "$out/load.paths"
"$bin" flowgraph --duration 0.2s "${q[@]}" 2>/dev/null | paths > "$out/flowgraph.paths"
f="$tmp/f"; truncate -s 8m "$f"
cat > "$tmp/j.fio" <<JOB
[global]
filename=$f
size=4m
bs=4k
ioengine=psync
[r]
rw=read
[w]
rw=randwrite
numjobs=2
group_reporting
stonewall
JOB
for fmt in json json+; do
    "$bin" stream -q --job "$tmp/j.fio" --output-format "$fmt" 2>/dev/null | paths > "$out/stream-$fmt.paths"
done
"$bin" stream -q --job "$tmp/j.fio" --output-format terse 2>/dev/null | awk -F';' '{print NF, $1, $3, $4}' > "$out/stream-terse.fields"
"$bin" stream -q --job "$tmp/j.fio" 2>/dev/null | sed "s#$tmp#TMP#g" | sed -E 's/[0-9]+(\.[0-9]+)?/N/g' > "$out/stream-table.shape"
"$bin" stream -q --filename "$f" --rw read --bs 4k,64k --size 1m --format json 2>/dev/null | paths > "$out/stream-sweep.paths"
for j in "$fix"/*.json; do
    n=$(basename "$j" .json)
    "$bin" report "$j" > "$out/report-$n.txt" 2>&1
    "$bin" report "$j" --format json 2>/dev/null | paths > "$out/report-$n.paths"
done
echo "snapshot in $out"
