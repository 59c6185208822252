#!/bin/sh
# make check-layers (also one of make test's programs): the layers of
# docs/design.md hold in the built objects. Each object's undefined symbols
# are matched with the objects that define them (their symbol tables, read
# with readelf -s: nm's information plus visibility), and every edge
# between layers must point down:
#   shim/      -> policy/, the stats writer, shim/options.o
#   policy/    -> nothing outside policy/; the driver only through the
#                 backend's ops table (policy/backend.h): no cu* symbol
#   stats/     writer and reader -> stats/procinfo.o, stats/dirlock.o only
#   tools/     -> the stats reader, shim/options.o (the launcher's parser)
#   bench/     -> policy/ (bench-spill), shim/options.o (the size parser)
#   shim/options.o, options_names.o, options_limits.o and size_text.o (the
#                 option layer), stats/procinfo.o, stats/dirlock.o -> nothing
# Circles between files inside shim/ and inside policy/ (A uses a symbol
# of B and B one of A, or longer loops) are errors too (issue 15: there
# are none); --warn-circles (make check-layers STRICT_LAYERS=0) lists them
# as warnings instead, for a refactoring under way.
#
#   scripts/check-layers.sh [--warn-circles] [--no-self-test]
# reads $SPW_TEST_BUILD (or $BUILD, default build). Before the tree, it
# checks itself: objects made to break a layer on purpose must fail.
# POSIX sh, awk, readelf and cc.
set -eu
cd "$(dirname "$0")/.."
B=${SPW_TEST_BUILD:-${BUILD:-build}}
STRICT=1 SELFTEST=1
for a in "$@"; do
    case $a in
    --strict) STRICT=1 ;; # the default; kept for old command lines
    --warn-circles) STRICT=0 ;;
    --no-self-test) SELFTEST=0 ;;
    *) echo "usage: $0 [--warn-circles] [--no-self-test]" >&2; exit 2 ;;
    esac
done
[ "${STRICT_LAYERS:-1}" = 0 ] && STRICT=0

# The product's objects, from its sources (a stale object of a deleted
# source must not count). bench/gpuapi_rt.c is built only on the GPU host,
# with the CUDA runtime's headers.
objects() {
    for c in shim/*.c policy/*.c stats/*.c tools/*.c bench/*.c; do
        [ "$c" = bench/gpuapi_rt.c ] && continue
        o=$B/${c%.c}.o
        [ -f "$o" ] || { echo "check-layers: $o is missing (make first)" >&2; return 1; }
        echo "$o"
    done
}

# symbols OBJECT...: one line per global symbol, "dir/file.o D|U VIS NAME".
symbols() {
    for o in "$@"; do
        readelf -sW "$o" | awk -v obj="$(basename "$(dirname "$o")")/$(basename "$o")" '
            $1 ~ /^[0-9]+:$/ && NF >= 8 && $5 != "LOCAL" && $4 != "FILE" && $4 != "SECTION" {
                print obj, ($7 == "UND" ? "U" : "D"), $6, $8
            }'
    done
}

# check STRICT < symbols: the report; exits 1 on an upward edge (or, when
# STRICT is 1, on a circle).
check() {
    awk -v strict="$1" '
        function layer(o,   d, f) {
            d = o; sub(/\/.*/, "", d); f = o; sub(/.*\//, "", f)
            if (o == "shim/options.o" || o == "shim/options_names.o" || o == "shim/options_limits.o" || \
                o == "shim/size_text.o") return "options"
            if (d == "stats") return f == "writer.o" ? "stats-writer" : \
                                     (f == "reader.o" || f == "decode.o") ? "stats-reader" : "stats-common"
            return d
        }
        # Layers that are programs of their own, not linked with the shim:
        # a name the shim exports (dlsym, cu*) reaches the real one there.
        function outside_library(l) { return l == "tools" || l == "bench" }
        function allowed(from, to) { return index(" " allow[from] " ", " " to " ") > 0 }
        BEGIN {
            allow["shim"] = "shim policy stats-writer stats-common options"
            allow["policy"] = "policy"
            allow["stats-writer"] = "stats-writer stats-common"
            allow["stats-reader"] = "stats-reader stats-common"
            allow["stats-common"] = "stats-common"
            allow["options"] = "options"
            allow["tools"] = "tools stats-reader stats-common options"
            allow["bench"] = "bench policy options"
        }
        $2 == "D" { defs[$4] = defs[$4] " " $1; exported[$4, $1] = ($3 == "DEFAULT"); objs[$1] = 1; next }
        $2 == "U" { nref++; rfrom[nref] = $1; rsym[nref] = $4; objs[$1] = 1 }
        END {
            for (i = 1; i <= nref; i++) resolve(rfrom[i], rsym[i])
            report_layers()
            report_circles("shim"); report_circles("policy")
            printf "check-layers: %d objects, %d edges between layers, %d upward\n", length_of(objs), nlayer_edges, errors
            if (ngroups)
                printf "check-layers: warning: %d circle%s inside shim/ and policy/ (%d mutual pair%s)%s\n", \
                    ngroups, ngroups == 1 ? "" : "s", npairs, npairs == 1 ? "" : "s", \
                    strict ? "" : "; STRICT_LAYERS=1 makes them errors"
            exit (errors || (strict && ngroups)) ? 1 : 0
        }
        function length_of(a,   k, n) { n = 0; for (k in a) n++; return n }
        # One reference: to the object(s) defining the name; a name defined
        # in the referrer'"'"'s own layer resolves there (main, for one).
        function resolve(from, sym,   n, d, i, lf, local, to) {
            lf = layer(from)
            if (lf == "policy" && sym ~ /^cu[A-Z]/)
                error(from " uses the driver'"'"'s " sym ": policy/ reaches the driver only through its backend (policy/backend.h)")
            if (!(sym in defs)) return
            n = split(defs[sym], d, " ")
            local = 0
            for (i = 1; i <= n; i++) if (layer(d[i]) == lf) local = 1
            for (i = 1; i <= n; i++) {
                to = d[i]
                if (to == from || (local && layer(to) != lf)) continue
                if (outside_library(lf) && layer(to) == "shim" && exported[sym, to]) continue
                edge(from, to, sym)
            }
        }
        function edge(from, to, sym,   lf, lt) {
            lf = layer(from); lt = layer(to)
            if (!((from, to) in via)) via[from, to] = sym
            else if (index(via[from, to], ",") == 0) via[from, to] = via[from, to] ", ..."
            if (lf == lt) { intra[lf, from, to] = 1; node[lf, from] = 1; node[lf, to] = 1; return }
            if (!((lf, lt) in layer_refs)) nlayer_edges++
            layer_refs[lf, lt]++
            if (!allowed(lf, lt) && !((from, to) in told)) {
                told[from, to] = 1
                error(from " -> " to " (" sym "): " lf " may use only " allow[lf])
            }
        }
        function error(msg) { printf "check-layers: ERROR %s\n", msg; errors++ }
        function report_layers(   order, n, i, j) {
            n = split("shim options policy stats-writer stats-reader stats-common tools bench", order, " ")
            for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) if ((order[i], order[j]) in layer_refs)
                printf "check-layers: %-12s -> %-12s %4d references%s\n", order[i], order[j], \
                    layer_refs[order[i], order[j]], allowed(order[i], order[j]) ? "" : "  UPWARD"
        }
        # Circles of one layer: each mutual pair, then each group of files
        # that reach each other (strongly connected: transitive closure over
        # a few dozen files), in name order.
        function report_circles(l,   k, p, a, b, n, i, j, m, t, names, reach, seen, group, gn) {
            n = 0
            for (k in node) { split(k, p, SUBSEP); if (p[1] == l) names[++n] = p[2] }
            for (i = 2; i <= n; i++) for (j = i; j > 1 && names[j - 1] > names[j]; j--) {
                t = names[j]; names[j] = names[j - 1]; names[j - 1] = t
            }
            for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) reach[i, j] = ((l, names[i], names[j]) in intra)
            for (m = 1; m <= n; m++) for (i = 1; i <= n; i++) if (reach[i, m]) for (j = 1; j <= n; j++) if (reach[m, j]) reach[i, j] = 1
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) {
                a = names[i]; b = names[j]
                if (!((l, a, b) in intra && (l, b, a) in intra)) continue
                printf "check-layers: warning: circle: %s <-> %s (%s uses %s; %s uses %s)\n", a, b, a, via[a, b], b, via[b, a]
                npairs++
            }
            for (i = 1; i <= n; i++) {
                if (seen[i] || !reach[i, i]) continue
                group = ""; gn = 0
                for (j = 1; j <= n; j++) if (reach[i, j] && reach[j, i]) { seen[j] = 1; group = group " " names[j]; gn++ }
                printf "check-layers: warning: circle in %s/ through %d files:%s\n", l, gn, group
                ngroups++
            }
        }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
OBJS=$(objects)
# shellcheck disable=SC2086 # one object per word: paths have no spaces
symbols $OBJS >"$tmp/tree"

# make TMPOBJ C-SOURCE: a test object in $tmp/DIR/.
make_obj() {
    mkdir -p "$tmp/$(dirname "$1")"
    printf '%s\n' "$2" >"$tmp/$1.c"
    ${CC:-cc} -c -o "$tmp/$1.o" "$tmp/$1.c"
}

# expect WHAT STATUS STRICT FILE: check on FILE must exit with STATUS.
expect() {
    rc=0
    check "$3" <"$4" >"$tmp/out" || rc=$?
    if [ $rc -ne "$2" ]; then
        echo "check-layers: self-test failed: $1 (exit $rc, expected $2):"
        cat "$tmp/out"
        exit 1
    fi
    echo "check-layers: self-test: $1: $(grep -m1 -E 'ERROR|warning: circle' "$tmp/out" | sed 's/^check-layers: //')"
}

self_test() {
    # A hidden (internal) function of the shim, to be called from below.
    shim_sym=$(awk '$1 ~ /^shim\// && $1 !~ /^shim\/(options|size_text)/ && $2 == "D" && $3 == "HIDDEN" { print $4; exit }' "$tmp/tree")
    [ -n "$shim_sym" ] || { echo "check-layers: self-test: no shim symbol found"; exit 1; }
    make_obj policy/selftest_up "extern void $shim_sym(void); void spw_selftest_up(void) { $shim_sym(); }"
    make_obj policy/selftest_drv "extern int cuMemAlloc_v2(void *, unsigned long); int spw_selftest_drv(void *p) { return cuMemAlloc_v2(p, 1); }"
    make_obj policy/selftest_a "extern void spw_selftest_b(void); void spw_selftest_a(void) { spw_selftest_b(); }"
    make_obj policy/selftest_b "extern void spw_selftest_a(void); void spw_selftest_b(void) { spw_selftest_a(); }"
    { cat "$tmp/tree"; symbols "$tmp/policy/selftest_up.o"; } >"$tmp/up"
    symbols "$tmp/policy/selftest_drv.o" >"$tmp/drv"
    symbols "$tmp/policy/selftest_a.o" "$tmp/policy/selftest_b.o" >"$tmp/circle"
    expect "policy calling the shim fails" 1 0 "$tmp/up"
    expect "policy calling the driver fails" 1 0 "$tmp/drv"
    expect "a circle inside policy/ fails" 1 1 "$tmp/circle"
    expect "a circle inside policy/ only warns with --warn-circles" 0 0 "$tmp/circle"
}

[ $SELFTEST = 1 ] && self_test
check "$STRICT" <"$tmp/tree"
