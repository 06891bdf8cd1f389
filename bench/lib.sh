# lib.sh - what the bench/*-peers.sh scripts share. Source it; it defines
# functions and the ERRORS array, nothing runs.

ERRORS=()
# error MESSAGE: prints and remembers a step that failed to run.
error() { echo "ERROR: $*" >&2; ERRORS+=("$*"); }

# report_errors: lists the failed steps; exits 1 if there were any.
report_errors() {
    if ((${#ERRORS[@]})); then
        echo
        echo "${#ERRORS[@]} step(s) failed to run:" >&2
        printf '  - %s\n' "${ERRORS[@]}" >&2
        exit 1
    fi
}

# parse_cpus "A,B": sets CPU_A and CPU_B, or exits 2.
parse_cpus() {
    CPU_A=$(cut -d, -f1 <<<"$1")
    CPU_B=$(cut -d, -f2 <<<"$1")
    if ! [[ $CPU_A =~ ^[0-9]+$ && $CPU_B =~ ^[0-9]+$ ]] || [[ $CPU_A == "$CPU_B" ]]; then
        echo "XB_CPUS must name two different cpus, e.g. 0,1 (got '$1')" >&2
        exit 2
    fi
}

# install_deb PACKAGE COMMAND: makes COMMAND available by installing the
# Debian PACKAGE if it is missing (as root, or with passwordless sudo).
# Returns 1, having said why, when it cannot.
install_deb() {
    local pkg=$1 cmd=$2 sudo= log
    command -v "$cmd" >/dev/null && return 0
    echo "-- $cmd not found; installing the Debian package '$pkg'"
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
            sudo="sudo -n"
        else
            echo "   cannot install $pkg: need root (or passwordless sudo). Run apt-get install $pkg and re-run." >&2
            return 1
        fi
    fi
    if ! command -v apt-get >/dev/null; then
        echo "   cannot install $pkg: no apt-get on this machine." >&2
        return 1
    fi
    log=$(mktemp)
    if ! { $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >"$log" 2>&1 ||
           { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$log" 2>&1 &&
             $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >>"$log" 2>&1; }; }; then
        tail -n 5 "$log" >&2
        echo "   apt-get install $pkg failed." >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
    command -v "$cmd" >/dev/null
}

# build_xb ROOT: sets XB to the xferbench binary (XB_BIN, or a release build).
build_xb() {
    XB=
    if [[ -n ${XB_BIN:-} ]]; then
        if [[ -x $XB_BIN ]]; then XB=$XB_BIN; else error "XB_BIN=$XB_BIN is not an executable"; fi
    elif (cd "$1" && cargo build --release --quiet); then
        XB="${CARGO_TARGET_DIR:-$1/target}/release/xferbench"
        [[ -x $XB ]] || { error "built, but $XB is missing"; XB=; }
    else
        error "cargo build --release failed"
    fi
    if [[ -n $XB ]]; then echo "   xferbench: $XB"; fi
}

# free_port: a loopback TCP port nobody listens on now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
        echo $((20000 + RANDOM % 20000))
}

# min A B: the lower of two numbers; an empty argument is ignored.
min() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print b; else if (b == "") print a; else print (a + 0 <= b + 0 ? a : b) }'; }
# max A B: the higher of two numbers; an empty argument is ignored.
max() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print b; else if (b == "") print a; else print (a + 0 >= b + 0 ? a : b) }'; }
# ratio A B: A / B with 3 decimals, empty if either is missing.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print ""; else printf "%.3f", a / b }'; }
# median X...: the median of the non-empty arguments, empty if none.
median() { printf '%s\n' "$@" | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
# geomean X...: the geometric mean of the non-empty arguments, empty if none.
geomean() { printf '%s\n' "$@" | grep -v '^$' | awk '$1 > 0 { s += log($1); n++ } END { if (n) printf "%.3f", exp(s / n) }'; }
# agree A B: whether two figures of one quantity agree within 20% (the
# machine stayed in one state between the runs that measured them).
agree() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 <= 0 || b + 0 <= 0) exit 1; d = a > b ? a / b : b / a; exit !(d <= 1.2) }'; }
# shown X: "-" when missing.
shown() { echo "${1:--}"; }
# verdict RATIO TARGET [le|ge]: PASS/FAIL against a ceiling (le, default) or
# a floor (ge); "info" without a target, ERROR without a ratio.
verdict() {
    awk -v r="$1" -v t="$2" -v d="${3:-le}" 'BEGIN {
        if (r == "") print "ERROR"; else if (t == "") print "info";
        else if (d == "ge") print (r + 0 >= t + 0 ? "PASS" : "FAIL");
        else print (r + 0 <= t + 0 ? "PASS" : "FAIL") }'
}

# gpu_binaries ROOT: sets XB_GPU to the xferbench bench/gpu-prepare.sh put
# in ROOT/.gpu, and gives the CUDA test binary there the path of the
# xferbench it was built beside (it runs that one).
gpu_binaries() {
    local root=$1 built_at
    XB_GPU=$root/.gpu/xferbench
    chmod +x "$root"/.gpu/* 2>/dev/null
    built_at=$(cat "$root/.gpu/built-at")
    if [[ ! -x $built_at ]]; then
        mkdir -p "$(dirname "$built_at")" && ln -sf "$XB_GPU" "$built_at"
    fi
}
