#!/usr/bin/env bash
# How often does `xferbench compare` call two runs of the same configuration
# "regressed"? Runs the same command twice per trial and compares the pair.
#   bench/compare-trials.sh TRIALS [compare flags --] EXPERIMENT ARGS...
# e.g. bench/compare-trials.sh 10 roundtrip -t thread --repeat 5
#      bench/compare-trials.sh 10 --noise 3% -- curve -t tcp --sizes 64,64k
# Prints one line per trial (verdict counts) and the share of trials with
# at least one regressed point: the false-alarm rate on this machine.
set -u
trials=${1:?trials}; shift
cmp=()
if [[ " $* " == *" -- "* ]]; then
  while [[ $1 != -- ]]; do cmp+=("$1"); shift; done; shift
fi
bin=${XFERBENCH:-target/release/xferbench}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
flagged=0
for t in $(seq 1 "$trials"); do
  "$bin" "$@" --quiet --format json -o "$dir/a.json" || exit 2
  "$bin" "$@" --quiet --format json -o "$dir/b.json" || exit 2
  "$bin" compare "${cmp[@]}" --format json "$dir/a.json" "$dir/b.json" > "$dir/c.json" 2>/dev/null
  rc=$?
  line=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1])); t=c['tally']; \
m=sorted({r['method'] for r in c['rows']}); \
print(f\"regressed {t['regressed']} improved {t['improved']} no_change {t['no_change']} inconclusive {t['inconclusive']} method {','.join(m)}\")" "$dir/c.json")
  echo "trial $t: exit $rc: $line"
  [[ $rc == 1 ]] && flagged=$((flagged+1))
done
echo "false alarms: $flagged of $trials trials had a point flagged regressed"
