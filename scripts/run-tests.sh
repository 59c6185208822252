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
# children_ms: the CPU time (user + system) of the shell's waited-for
# children so far, in ms: fields 16 and 17 of /proc/$$/stat, in clock
# ticks (read by the shell itself: a subshell would report its own).
TICK_MS=$((1000 / $(getconf CLK_TCK)))
children_ms() {
    local st
    read -r -a st </proc/$$/stat
    echo $(((st[15] + st[16]) * TICK_MS))
}
# seconds MS: "12.3"
seconds() { printf '%d.%01d' $(($1 / 1000)) $(($1 % 1000 / 100)); }
passed=0 failed=0 bad=() times=()
for t in "$@"; do
    echo "== $t"
    t0=$(date +%s%N) c0=$(children_ms)
    out=$(timeout "${RUN_TESTS_TIMEOUT:-300}" "$t" 2>&1); rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000)) cpu=$(($(children_ms) - c0))
    times+=("$ms $cpu $t")
    printf '%s\n' "$out"
    # CPU time below the wall time: the program waited (timeouts, sleeps).
    printf -- '-- %s: %s s (cpu %s s)\n' "$t" "$(seconds "$ms")" "$(seconds "$cpu")"
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
    while read -r ms cpu t; do printf '  %6s s  (cpu %6s s)  %s\n' "$(seconds "$ms")" "$(seconds "$cpu")" "$t"; done
for b in "${bad[@]+"${bad[@]}"}"; do echo "FAILED: $b"; done
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
