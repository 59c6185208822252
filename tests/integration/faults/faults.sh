#!/usr/bin/env bash
# The fault test (issue 11): workload.c under spillway against fakecuda, one
# driver call made to fail per run (FAKECUDA_FAIL=fn:n), then two: a first
# fault and a call of the error path it led to.
#
# For each variant (spill: SPILLWAY_SPILL=1, pool preallocated; nospill:
# SPILLWAY_SPILL=0, pages created on demand), both with a 16 MiB limit on a
# 64 MiB fakecuda device:
#  1. two clean runs: they must pass, give the program the same results
#     and, with spill, spill and fill (else the sweep would test nothing);
#     they should make the same driver calls, so that a call number means
#     the same call in every run: functions whose counts vary (calls from
#     spillway's own threads, timing-dependent) are named in a note;
#  2. controls: FAKECUDA_FAIL reaches the program and the fault is
#     attributed to its operation; a bad specification stops the run; with
#     SPILLWAY_DISABLE=1 the stats check must fail (a check that cannot
#     fail is no check);
#  3. for every driver function the clean run called, injection points (see
#     pick_points: every call of a function called at most 10 times, else
#     the first 3, the last, and the first and last call of each code path
#     that calls it; FAULTS_ALL=1: every call); each run is classified:
#       ok         the workload's checks all held (workload.c says which)
#       unreached  the call did not happen in that run (spillway took
#                  another path): not a failure
#       degraded   (soft) an allocation failed with OUT_OF_MEMORY after the
#                  fault although it succeeded in the clean run: spillway
#                  had less room (documented for a pool that could not be
#                  set up: pass-through, capped)
#       grew(x)    (soft) spillway keeps more of x (va_bytes, streams,
#                  events) after teardown than in the clean run: its arena
#                  grew, or it made more streams or events, for a program
#                  that held more (legitimate), or they leaked (its public
#                  counters do not say which)
#       failures   hang (timeout), crash (signal), hazard (fakecuda's
#                  FAKECUDA_CHECK_UNMAP caught an unmap of memory a copy the
#                  host has not seen complete still uses: on a GPU, a
#                  context-killing fault), data (a byte the program
#                  wrote is not there), wrongerr (the failing operation
#                  returned another error than the injected one), late (an
#                  operation failed after the fault, with no fault of its
#                  own, that did not fail in the clean run), stats, leak,
#                  ctx (context stack changed), pointer, abort (no result);
#     a run with two faults is judged the same way against the run with its
#     first fault alone;
#  4. error paths (see pick_pairs): calls the clean run never made from
#     their code path — a teardown after a failed set-up, the pass-through
#     that follows, what a failed move does to undo itself — each made to
#     fail once, after the first fault that leads there;
#  5. tables per variant: function, calls in the clean run, points tried,
#     reached, failures (and soft results), with the failing points and
#     the first FAIL line of each. Logs of failing runs stay in
#     $FAULTS_LOG_DIR (default $SPW_TEST_BUILD/tests/integration/faults/log);
#     FAULTS_TRACE=1 reruns each failing point with FAKECUDA_FAIL_TRACE=1
#     (a backtrace of the injected call in its log).
# Exit status 0 when nothing failed. FAULTS_VARIANTS="spill nospill",
# FAULTS_JOBS (default: the CPU count), FAULTS_TIMEOUT (20 s per run).
set -u
B=${SPW_TEST_BUILD:-$(pwd)/build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
PROG=$B/tests/integration/faults/workload
ALL=${FAULTS_ALL:-0}
JOBS=${FAULTS_JOBS:-$(nproc 2>/dev/null || echo 2)}
TIMEOUT=${FAULTS_TIMEOUT:-20}
VARIANTS=${FAULTS_VARIANTS:-spill nospill}
LOGDIR=${FAULTS_LOG_DIR:-$B/tests/integration/faults/log}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/stats"
for v in $VARIANTS; do rm -rf "${LOGDIR:?}/$v" "${LOGDIR:?}/$v.2"; done
export B PROG TIMEOUT WORK LOGDIR

# The environment of every run of a variant.
variant_env() {
    echo "LD_PRELOAD=$B/libspillway.so LD_LIBRARY_PATH=$B/fakecuda FAKECUDA_DEVICES=1"
    echo "FAKECUDA_MEM=64M SPILLWAY_MEM_LIMIT=16M FAULTS_LIMIT_MIB=16 SPILLWAY_HOST_LIMIT=64M"
    echo "SPILLWAY_LOG=error SPILLWAY_STATS_DIR=$WORK/stats FAKECUDA_CHECK_UNMAP=1"
    case $1 in
    spill) echo "SPILLWAY_SPILL=1 SPILLWAY_PREALLOCATE=1" ;;
    nospill) echo "SPILLWAY_SPILL=0 SPILLWAY_PREALLOCATE=0" ;;
    esac
}
export -f variant_env

# run VARIANT OUT [VAR=value...]: the workload's exit status, output in OUT.
run() {
    local variant=$1 out=$2
    shift 2
    # shellcheck disable=SC2046 # the environment words split on purpose
    timeout -s KILL "$TIMEOUT" env $(variant_env "$variant") "$@" "$PROG" >"$out" 2>&1
}
export -f run

# classify OUT RC REF EXPECT: "status categories" for one run; REF is the
# run it is compared with (the clean run, or the run with the first fault
# alone), EXPECT the number of faults it asked for. One awk over both
# files: a few hundred runs, and each process more costs ~10 ms here.
#   hard   the workload's FAIL categories; "late": an operation with no
#          fault of its own failed that had not failed in REF; abort: no
#          "done" line
#   soft   degraded: that late failure was an allocation's OUT_OF_MEMORY;
#          grew(x): what the pool keeps besides pages ("kept" x=n) is more
#          than in REF (its arena may grow, its streams and events be
#          made, for a program that held more; or they leaked: its
#          counters do not say which)
classify() {
    local out=$1 rc=$2 clean=$3 expect=$4
    if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then
        echo "fail hang"
        return
    fi
    awk -v rc="$rc" -v expect="$expect" '
        NR == FNR {
            if ($1 == "op") clean_op[$4] = $5
            else if ($1 == "kept") for (i = 2; i <= NF; i++) { split($i, kv, "="); kept[kv[1]] = kv[2] }
            next
        }
        /^fakecuda: HAZARD/ { hazard = 1 }
        $1 == "FAIL" { c = $2; sub(":", "", c); if (!(c in seen)) { seen[c] = 1; cats[++ncats] = c } }
        $1 == "op" && $5 != "rc=0" && $6 == "fault=0" && clean_op[$4] != $5 {
            if ($3 == "alloc" && $5 == "rc=2") degraded = 1; else late = 1
        }
        $1 == "kept" { for (i = 2; i <= NF; i++) { split($i, kv, "=")
            if (kv[1] != "reservations" && kv[2] + 0 > kept[kv[1]] + 0) grew = grew " grew(" kv[1] ")" } }
        $1 == "injected" { injected = $2; has_injected = 1 }
        $1 == "done" { done = 1 }
        END {
            if (hazard) { print "fail hazard"; exit }
            if (rc > 128) { print "fail crash(signal-" rc - 128 ")"; exit }
            for (i = 2; i <= ncats; i++)   # sorted, as the tables list them
                for (j = i; j > 1 && cats[j - 1] > cats[j]; j--) { t = cats[j]; cats[j] = cats[j - 1]; cats[j - 1] = t }
            hard = ""
            for (i = 1; i <= ncats; i++) hard = hard " " cats[i]
            if (late) hard = hard " late"
            if (!done) hard = hard " abort(exit-" rc ")"
            soft = (degraded ? " degraded" : "") grew
            if (hard != "") print "fail" hard soft
            else if (has_injected && injected + 0 < expect + 0) print "unreached" soft
            else if (soft != "") print "soft" soft
            else print "ok"
        }' "$clean" "$out"
}
export -f classify

# point VARIANT DIR SPEC REF FN N EXPECT: one run with FAKECUDA_FAIL=SPEC,
# compared with REF; its result line "FN N status categories" in
# DIR/FN.N.res. The log of a failed run is kept (and traced with
# FAULTS_TRACE=1).
point() {
    local variant=$1 dir=$2 spec=$3 ref=$4 fn=$5 n=$6 expect=$7
    local out=$dir/$fn.$n.out rc res keep
    # Braces: the shell's own "Segmentation fault" note goes nowhere.
    { run "$variant" "$out" FAKECUDA_FAIL="$spec"; } 2>/dev/null
    rc=$?
    res=$(classify "$out" "$rc" "$ref" "$expect")
    echo "$fn $n $res" >"$dir/$fn.$n.res"
    echo "$ref" >"$dir/$fn.$n.ref"
    case $res in
    fail*)
        keep=$LOGDIR/$(basename "$dir")
        mkdir -p "$keep"
        cp "$out" "$keep/$fn.$n.out"
        if [ "${FAULTS_TRACE:-0}" = 1 ]; then
            { run "$variant" "$keep/$fn.$n.trace" FAKECUDA_FAIL="$spec" \
                FAKECUDA_FAIL_TRACE=1 SPILLWAY_LOG=debug FAULTS_VERBOSE=1; } 2>/dev/null
        fi
        ;;
    esac
}
export -f point

# The injection points of a variant, "fn n" per line, from the clean run's
# call log (FAKECUDA_CALL_LOG: "fn n frames..." per call, the caller's
# stack as object+offset). A site is the stack up to the workload's own
# frames: a code path of spillway (or of the program, for its own calls).
# Every call of a function called at most 10 times; otherwise the first 3,
# the last, and the first and last call of every site, so that every code
# path that calls the driver fails at least once. FAULTS_ALL=1: all.
pick_points() {
    awk -v all="$ALL" '
        { fn = $1; n = $2; site = ""
          for (i = 3; i <= NF && $i !~ /^workload\+/; i++) site = site " " $i
          k = fn SUBSEP site
          if (!(k in first)) first[k] = n
          last[k] = n
          if (n > total[fn]) total[fn] = n }
        END {
            for (k in first) {
                split(k, a, SUBSEP)
                pick[a[1] " " first[k]] = 1
                pick[a[1] " " last[k]] = 1
            }
            for (fn in total) {
                lo = all == 1 || total[fn] <= 10 ? total[fn] : 3
                for (i = 1; i <= lo; i++) pick[fn " " i] = 1
                pick[fn " " total[fn]] = 1
            }
            for (p in pick) print p
        }' "$1" | sort -k1,1 -k2,2n
}
failures=0
bad() { echo "FAIL - $*"; failures=$((failures + 1)); }
ok() { echo "ok - $*"; }

# Two clean runs that pass and agree; with spill, spill and fill happened.
clean_runs() {
    local v=$1 dir=$WORK/$1
    for i in 1 2; do
        if ! run "$v" "$dir/clean$i.out" FAKECUDA_CALL_LOG="$dir/calls$i.log"; then
            bad "$v: clean run $i fails:"
            sed 's/^/    /' "$dir/clean$i.out" | grep -v '^    op ' | head -20
            return 1
        fi
    done
    cp "$dir/clean1.out" "$dir/clean.out"
    if ! diff <(grep '^op ' "$dir/clean1.out") <(grep '^op ' "$dir/clean2.out") >/dev/null; then
        bad "$v: two clean runs give the program different results"
        return 1
    fi
    # Calls from spillway's own threads (a syncer, movers) may vary with
    # timing: a call number of such a function is then an approximate
    # place, not a fault to skip the test for.
    local varying
    varying=$(diff <(grep '^calls ' "$dir/clean1.out") <(grep '^calls ' "$dir/clean2.out") |
        awk '/^[<>] calls/ { print $3 }' | sort -u | tr '\n' ' ')
    ok "$v: clean runs pass and give the same results"
    [ -z "$varying" ] || echo "note - $v: call counts vary from run to run for: $varying"
    if [ "$v" = spill ] && ! grep -Eq '^pool up=1 .* spill_events=[1-9][0-9]* fill_events=[1-9]' "$dir/clean.out"; then
        bad "$v: the clean run neither spills nor fills: $(grep '^pool ' "$dir/clean.out")"
        return 1
    fi
}

controls() {
    local v=$1 dir=$WORK/$1
    run "$v" "$dir/ctl1.out" FAKECUDA_FAIL=cuMemcpyHtoD:1
    if grep -q '^op [0-9]* other write:A rc=999 fault=1$' "$dir/ctl1.out" &&
        grep -q '^injected 1 cuMemcpyHtoD 1 999$' "$dir/ctl1.out"; then
        ok "$v: control: FAKECUDA_FAIL=cuMemcpyHtoD:1 fails the program's first write"
    else
        bad "$v: control: FAKECUDA_FAIL=cuMemcpyHtoD:1 not seen as the first write's failure"
    fi
    run "$v" "$dir/ctl2.out" FAKECUDA_FAIL=cuNoSuchCall:1
    local rc=$?
    if [ "$rc" -eq 2 ] && grep -q 'fakecuda: FAKECUDA_FAIL' "$dir/ctl2.out"; then
        ok "$v: control: a bad FAKECUDA_FAIL stops the run"
    else
        bad "$v: control: FAKECUDA_FAIL=cuNoSuchCall:1 exited $rc"
    fi
    run "$v" "$dir/ctl3.out" SPILLWAY_DISABLE=1
    if grep -q '^FAIL stats ' "$dir/ctl3.out"; then
        ok "$v: control: without spillway's accounting (SPILLWAY_DISABLE=1) the stats check fails"
    else
        bad "$v: control: SPILLWAY_DISABLE=1 passed the stats check"
    fi
}

# Calls only error paths make: calls, in a run with one fault, from a code
# path the clean run never took — the teardown of a pool that could not be
# set up, the pass-through paths that follow, what an error handler calls.
# A path here is the call's innermost 4 frames (the backend wrapper, the
# policy function and two callers): the same path reached from elsewhere is
# not new. The first-fault runs are grouped by the functions they call
# more often than the clean run; one run of each group (FAULTS_ALL=1: every
# run) is made again with the call log, and the first call of each new path
# (FAULTS_ALL=1: every call) is made to fail too, after the first fault
# ("F N G M" per line). A first fault that failed already is no way in:
# what a second one breaks could not be told from what the first did.
pick_pairs() {
    local v=$1 dir=$WORK/$1 fn n status
    for res in "$dir"/*.res; do
        read -r fn n status _ <"$res"
        [ "$status" = fail ] && continue
        awk -v p="$fn $n" 'NR == FNR { if ($1 == "calls") c[$2] = $3; next }
            $1 == "calls" && $3 > c[$2] + 0 { sig = sig " " $2 }
            END { if (sig != "") print sig "\t" p }' "$dir/clean.out" "$dir/$fn.$n.out"
    done | awk -F'\t' -v all="$ALL" 'all == 1 || !seen[$1]++ { print $2 }' >"$dir/reruns"
    # The reruns side by side, as the sweep's runs; then their call logs.
    xargs -P "$JOBS" -L 1 bash -c 'run "$0" "$1/$2.$3.rerun" FAKECUDA_FAIL="$2:$3" \
        FAKECUDA_CALL_LOG="$1/$2.$3.calls" || true' "$v" "$dir" <"$dir/reruns"
    while read -r fn n; do
        awk -v f="$fn $n" -v all="$ALL" '
            function path(   i, s) {
                for (i = 3; i <= 6 && i <= NF && $i !~ /^workload\+/; i++) s = s " " $i
                return $1 SUBSEP s }
            NR == FNR { known[path()] = 1; next }
            !(path() in known) { print path() "\t" f " " $1 " " $2 }' \
            "$dir/calls1.log" "$dir/$fn.$n.calls"
    done <"$dir/reruns" | awk -F'\t' -v all="$ALL" 'all == 1 || !seen[$1]++ { print $2 }' | sort -u
}

# All injection points of a variant, in parallel: every first fault, then
# the error paths' calls with their first fault (in DIR.2).
sweep() {
    local v=$1 dir=$WORK/$1
    pick_points "$dir/calls1.log" |
        awk -v v="$v" -v d="$dir" '{ print v, d, $1 ":" $2, d "/clean.out", $1, $2, 1 }' \
        >"$dir/points"
    xargs -P "$JOBS" -L 1 bash -c 'point "$@"' _ <"$dir/points"
    mkdir -p "$dir.2"
    pick_pairs "$v" |
        awk -v v="$v" -v d="$dir" '{ print v, d ".2", $1 ":" $2 "," $3 ":" $4,
                                     d "/" $1 "." $2 ".out", $3, $4 "@" $1 ":" $2, 2 }' \
        >"$dir/pairs"
    xargs -P "$JOBS" -L 1 bash -c 'point "$@"' _ <"$dir/pairs"
}

# details LOG REF: what a failed run's log says, in at most 3 lines: the
# fault, its first FAIL or HAZARD lines, else its first late errors.
details() {
    local log=$1 ref=$2
    grep -m 1 '^op .* fault=1$' "$log"
    grep -m 2 -E '^(FAIL |fakecuda: HAZARD)' "$log" ||
        awk 'NR == FNR { if ($1 == "op") clean[$4] = $5; next }
            $1 == "op" && $5 != "rc=0" && $6 == "fault=0" && clean[$4] != $5 && k++ < 2 {
                print $0 " (reference run: " (clean[$4] == "" ? "not done" : clean[$4]) ")" }' \
            "$ref" "$log"
}

# table TITLE DIR ROWS: one row per "function calls" line of ROWS from the
# results in DIR, then the failing points; their number in FAILED_POINTS.
table() {
    local title=$1 dir=$2 rows=$3 nfail=0 fn n
    printf '\n%-42s %7s %6s %7s %8s %5s  %s\n' "$title" calls tried reached failures soft \
        categories
    while read -r fn n; do
        local tried reached failed soft cats
        tried=$(cat "$dir/$fn".*.res 2>/dev/null | wc -l)
        reached=$(cat "$dir/$fn".*.res 2>/dev/null | awk '$3 != "unreached"' | wc -l)
        failed=$(cat "$dir/$fn".*.res 2>/dev/null | awk '$3 == "fail"' | wc -l)
        soft=$(cat "$dir/$fn".*.res 2>/dev/null | awk '$3 == "soft"' | wc -l)
        cats=$(cat "$dir/$fn".*.res 2>/dev/null |
            awk '$3 == "fail" || $3 == "soft" { for (i = 4; i <= NF; i++) print $i }' |
            sort | uniq -c | awk '{ printf "%s%s x%d", sep, $2, $1; sep = ", " }')
        printf '%-42s %7s %6s %7s %8s %5s  %s\n' "$fn" "$n" "$tried" "$reached" "$failed" "$soft" "$cats"
        nfail=$((nfail + failed))
    done <"$rows"
    echo "$title: $(cat "$dir"/*.res 2>/dev/null | wc -l) injection points, $nfail failed"
    if [ "$nfail" -gt 0 ]; then
        echo "$title: failing points (logs in $LOGDIR/$(basename "$dir")):"
        cat "$dir"/*.res | awk '$3 == "fail"' | sort -k1,1 -k2,2n | while read -r fn n _ rest; do
            printf '  %s:%s  %s\n' "$fn" "$n" "$rest"
            details "$LOGDIR/$(basename "$dir")/$fn.$n.out" "$(cat "$dir/$fn.$n.ref")" |
                cut -c1-220 | sed 's/^/      /'
        done
    fi
    FAILED_POINTS=$nfail
}

for v in $VARIANTS; do
    mkdir -p "$WORK/$v"
    echo "== variant $v: $(variant_env "$v" | tr '\n' ' ' | sed "s|$B|\$B|g")"
    clean_runs "$v" || continue
    controls "$v"
    start=$(date +%s)
    sweep "$v"
    grep '^calls ' "$WORK/$v/clean.out" | cut -d' ' -f2- >"$WORK/$v/rows"
    table "$v: function" "$WORK/$v" "$WORK/$v/rows"
    n=$FAILED_POINTS
    # The error paths' functions, with the most calls a first fault led to.
    awk '{ m = $6; sub(/@.*/, "", m); if (m + 0 > max[$5]) max[$5] = m + 0 }
        END { for (g in max) print g, max[g] }' "$WORK/$v/pairs" | sort >"$WORK/$v/rows.2"
    table "$v: error paths, second fault in" "$WORK/$v.2" "$WORK/$v/rows.2"
    n=$((n + FAILED_POINTS))
    echo "$v: sweep took $(($(date +%s) - start)) s"
    if [ "$n" -gt 0 ]; then
        bad "$v: $n injection points failed"
    else
        ok "$v: every injection point held"
    fi
done
echo "faults: $failures failed"
[ "$failures" -eq 0 ]
