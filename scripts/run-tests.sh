#!/usr/bin/env bash
# Runs each test program given as argument, prints its output, and ends with
# one total line "tests: N passed, M failed", after the slowest programs
# with their wall times (what to look at first when the suite grows past
# its ten minutes). A Check suite contributes its
# own counts (from its summary lines); any other program counts as one test
# that passes when it exits 0. Each program gets RUN_TESTS_TIMEOUT seconds
# (300; make tsan gives more: TSan's slowness is not what it checks).
set -u
BUILD=${BUILD:-build}
case $BUILD in
/*) export SPW_TEST_BUILD="$BUILD" ;;
*) export SPW_TEST_BUILD="$PWD/$BUILD" ;;
esac
export LD_LIBRARY_PATH="$SPW_TEST_BUILD/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
passed=0 failed=0 bad=() times=()
for t in "$@"; do
    echo "== $t"
    t0=$(date +%s%N)
    out=$(timeout "${RUN_TESTS_TIMEOUT:-300}" "$t" 2>&1); rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    times+=("$ms $t")
    printf '%s\n' "$out"
    printf -- '-- %s: %d.%01d s\n' "$t" $((ms / 1000)) $((ms % 1000 / 100))
    # A program may run several suites: add up every summary line.
    summaries=$(printf '%s\n' "$out" | grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+')
    if [ -n "$summaries" ]; then
        n=0 f=0
        while read -r line; do
            c=$(sed -E 's/.*Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/' <<<"$line")
            read -r cn cf ce <<<"$c"
            n=$((n + cn)); f=$((f + cf + ce))
        done <<<"$summaries"
        passed=$((passed + n - f)); failed=$((failed + f))
        if [ $f -ne 0 ] || [ $rc -ne 0 ]; then bad+=("$t"); fi
        if [ $f -eq 0 ] && [ $rc -ne 0 ]; then failed=$((failed + 1)); fi
    elif [ $rc -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); bad+=("$t (exit $rc)")
    fi
done
echo
echo "slowest:"
printf '%s\n' "${times[@]+"${times[@]}"}" | sort -rn | head -10 |
    while read -r ms t; do printf '  %6d.%01d s  %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$t"; done
for b in "${bad[@]+"${bad[@]}"}"; do echo "FAILED: $b"; done
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
