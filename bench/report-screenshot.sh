#!/usr/bin/env bash
# report-screenshot.sh — looks at an xferbench HTML report as a person would:
# renders it in headless Chromium (Debian `chromium`, installed if missing)
# to one full-page PNG plus page-sized slices, and checks that the browser's
# DOM holds every figure and table of the file.
#
#   bench/report-screenshot.sh                      # quick default suite + the fixtures with --compare
#   bench/report-screenshot.sh xferbench-report     # an existing report (folder or index.html)
#   bench/report-screenshot.sh --mesh [RUN.json [PNG]]
#       a mesh run's report, and its first heat map (the suspects above it,
#       the caption under it) cut out as a palette PNG (default
#       $XB_OUT/mesh-heatmap.png); without RUN.json (or with ""), a synthetic
#       16-rank mesh from bench/mesh-fixture.py (4 hosts × 4 ranks, rank 6
#       slow, link 1 ↔ 13 slow). bench/mesh-heatmap-16.png is
#       `--mesh "" bench/mesh-heatmap-16.png`.
#
# Environment: XB_BIN (binary; default: cargo build --release), XB_OUT (where
# the PNGs go; default: a new temporary folder), XB_WIDTH (default 1100 px).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"

OUT=${XB_OUT:-$(mktemp -d /tmp/xferbench-shots.XXXXXX)}
WIDTH=${XB_WIDTH:-1100}
mkdir -p "$OUT"

install_deb chromium chromium || { error "chromium is needed to render the report"; report_errors; }
# have_pil: sets PIL_PY to a python3 that imports PIL: Debian's python3-pil
# serves /usr/bin/python3, which a pyenv or venv python3 first on PATH is not.
have_pil() {
    [[ -n ${PIL_PY:-} ]] && return 0
    local py
    for py in python3 /usr/bin/python3; do
        "$py" -c 'import PIL' 2>/dev/null && { PIL_PY=$py; return 0; }
    done
    return 1
}
if ! have_pil; then
    install_deb python3-pil /usr/lib/python3/dist-packages/PIL/__init__.py >/dev/null 2>&1 || true
    have_pil || echo "-- python3-pil not available: the full page is kept uncropped and unsliced"
fi

# shot HTML NAME: renders HTML to $OUT/NAME.png (+ slices), checks the DOM.
shot() {
    local html=$1 name=$2 figures tables height dom
    html=$(realpath "$html")
    figures=$(grep -o '<figure>' "$html" | wc -l)
    tables=$(grep -o '<table>' "$html" | wc -l)
    # Tall enough for every figure; the blank tail is cropped below.
    height=$((2500 + figures * 1100 + tables * 120))
    ((height > 60000)) && height=60000
    dom=$(timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$html" 2>/dev/null)
    local svgs dtables
    svgs=$(grep -o '<svg' <<<"$dom" | wc -l)
    dtables=$(grep -o '<table>' <<<"$dom" | wc -l)
    echo "== $name: $html"
    echo "   in the file: $figures figures, $tables tables; in Chromium's DOM: $svgs SVGs, $dtables tables"
    if [[ $svgs -ne $figures || $dtables -ne $tables ]]; then
        error "$name: the browser's DOM does not hold every figure and table"
    fi
    if ! timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size="$WIDTH,$height" --screenshot="$OUT/$name.png" "file://$html" >/dev/null 2>&1; then
        error "$name: chromium could not take the screenshot"
        return
    fi
    have_pil || { echo "   $OUT/$name.png"; return; }
    "$PIL_PY" - "$OUT/$name.png" <<'EOF'
import sys
from PIL import Image
path = sys.argv[1]
im = Image.open(path).convert("RGB")
w, h = im.size
grey = im.convert("L")
px = grey.load()
# The last row with anything darker than the page background.
last = 0
for y in range(h - 1, 0, -4):
    if any(px[x, y] < 200 for x in range(20, w - 20, 3)):
        last = y
        break
if last == 0:
    print("   ERROR: the page rendered blank", file=sys.stderr)
    sys.exit(1)
im = im.crop((0, 0, w, min(h, last + 40)))
im.save(path)
stem = path[:-4]
n = 0
for top in range(0, im.size[1], 1500):
    n += 1
    im.crop((0, top, w, min(im.size[1], top + 1500))).save(f"{stem}-{n}.png")
print(f"   {path} ({w}x{im.size[1]} px) and {n} slices {stem}-1.png …")
EOF
    [[ $? -eq 0 ]] || error "$name: blank page"
}

# mesh_shot RUN.json PNG: the run's report, then its Mesh section's first
# heat map alone (lead, figure, caption) as a palette PNG small enough to
# commit.
mesh_shot() {
    local run=$1 png=$2 dir=$OUT/mesh
    if [[ -z $run ]]; then
        run=$OUT/mesh-16.json
        python3 "$ROOT/bench/mesh-fixture.py" --hosts 4 --per-host 4 --slow-rank 6 --slow-link 1,13 \
            --min-bandwidth 5000 >"$run" || { error "bench/mesh-fixture.py failed"; return; }
    fi
    echo "-- the mesh run $run into $dir"
    "$XB" report "$run" --html "$dir" || { error "xferbench report on $run failed"; return; }
    shot "$dir/index.html" mesh
    # The page's head, then its Mesh section from the heading to the end of
    # the first figure's table.
    python3 - "$dir/index.html" "$dir/heatmap.html" <<'EOF' || { error "no Mesh section in $dir/index.html"; return; }
import sys
html = open(sys.argv[1], encoding="utf-8").read()
start = html.index('<h2 id="mesh">')
end = html.index("</details>", html.index("<figure>", start)) + len("</details>")
head = html[: html.index("<main>") + len("<main>")]
open(sys.argv[2], "w", encoding="utf-8").write(head + html[start:end] + "\n</main>\n</body>\n</html>\n")
EOF
    shot "$dir/heatmap.html" mesh-heatmap
    if ! have_pil; then
        cp "$OUT/mesh-heatmap.png" "$png" && echo "   $png (full colour: no python3-pil)"
        return
    fi
    "$PIL_PY" - "$OUT/mesh-heatmap.png" "$png" <<'EOF' || error "cannot write $png"
import os, sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
im.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(sys.argv[2], optimize=True)
print(f"   {sys.argv[2]} ({im.size[0]}x{im.size[1]} px, {os.path.getsize(sys.argv[2]) // 1024} KiB)")
EOF
}

if [[ ${1:-} == --mesh ]]; then
    [[ -n ${2:-} && ! -f ${2:-} ]] && { echo "no mesh run at $2" >&2; exit 2; }
    build_xb "$ROOT"
    [[ -n $XB ]] || report_errors
    mesh_shot "${2:-}" "${3:-$OUT/mesh-heatmap.png}"
elif [[ $# -ge 1 ]]; then
    target=$1
    [[ -d $target ]] && target=$target/index.html
    [[ -f $target ]] || { echo "no report at $1 (give a folder with index.html, or the file)" >&2; exit 2; }
    shot "$target" report
else
    build_xb "$ROOT"
    [[ -n $XB ]] || report_errors
    echo "-- the quick default suite into $OUT/suite"
    "$XB" --quick --quiet --out "$OUT/suite" >"$OUT/suite-summary.txt" || error "the default suite failed"
    cat "$OUT/suite-summary.txt"
    [[ -f $OUT/suite/index.html ]] && shot "$OUT/suite/index.html" suite
    echo "-- every plot kind and every comparison, from tests/fixtures"
    "$XB" report "$ROOT"/tests/fixtures/*.json --html "$OUT/fixtures" \
        --compare vollo-ia420f-raw,bip-myrinet,xdma-aws-f1,rk11perf-basys3,qsdr-kv260 ||
        error "xferbench report on the fixtures failed"
    [[ -f $OUT/fixtures/index.html ]] && shot "$OUT/fixtures/index.html" fixtures
fi
echo
echo "Look at the slices: every figure drawn, axes labelled with units, legends readable, tables under each figure, warnings and environment present."
report_errors
