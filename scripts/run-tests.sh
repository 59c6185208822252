#!/usr/bin/env bash
# Runs each test program given as argument, prints its output, and ends with
# one total line "tests: N passed, M failed", after the slowest programs
# with their wall times (what to look at first when the suite grows past
# its ten minutes). A Check suite contributes its
# own counts (from its summary lines); any other program counts as one test
# that passes when it exits 0. Each program gets RUN_TESTS_TIMEOUT seconds
# (300 run alone, 600 side by side with others, which may slow it by half
# or more on a loaded machine; make tsan gives more: TSan's slowness is not
# what it checks): the limit catches a hang, not a slow program.
#
# RUN_TESTS_JOBS programs (default 1) run at once, in the order given, so
# put the longest first; each one's output is printed whole, in that order,
# as soon as it and all before it have ended. Every program keeps to its
# own files, ports and stats directory, so side by side they change nothing
# but each other's times; but those times matter to suites that wait on
# deadlines (the pool's 500 ms patience, 50 ms in some unit suites): on a
# machine without cores to spare (2 CPUs, the fault sweep using both) some
# then take the deadline's path and fail. So CI runs one at a time; more is
# for a developer's machine with cores to spare.
set -u
BUILD=${BUILD:-build}
case $BUILD in
/*) export SPW_TEST_BUILD="$BUILD" ;;
*) export SPW_TEST_BUILD="$PWD/$BUILD" ;;
esac
export LD_LIBRARY_PATH="$SPW_TEST_BUILD/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
JOBS=${RUN_TESTS_JOBS:-1}
case $JOBS in
'' | *[!0-9]* | 0) echo "run-tests.sh: RUN_TESTS_JOBS must be a positive number, not '$JOBS'" >&2; exit 2 ;;
esac
if [ "$JOBS" -gt 1 ]; then TIMEOUT=${RUN_TESTS_TIMEOUT:-600}; else TIMEOUT=${RUN_TESTS_TIMEOUT:-300}; fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/run-tests.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# children_ms: the CPU time (user + system) of this shell's waited-for
# children so far, in ms, into the variable named $1: fields 16 and 17 of
# /proc/$BASHPID/stat, in clock ticks (read by the shell itself, which runs
# each program in a subshell of its own: a $(...) would report its own).
TICK_MS=$((1000 / $(getconf CLK_TCK)))
children_ms() {
    local st
    read -r -a st <"/proc/$BASHPID/stat"
    printf -v "$1" '%d' $(((st[15] + st[16]) * TICK_MS))
}
# seconds MS: "12.3"
seconds() { printf '%d.%01d' $(($1 / 1000)) $(($1 % 1000 / 100)); }

# run_one I PROGRAM: runs it, leaving its output in $TMP/I.out and
# "RC WALL_MS CPU_MS" in $TMP/I.res (written last: its presence means done).
run_one() {
    local t0 c0 c1 rc
    t0=$(date +%s%N); children_ms c0
    timeout "$TIMEOUT" "$2" >"$TMP/$1.out" 2>&1 </dev/null; rc=$?
    children_ms c1
    echo "$rc $((($(date +%s%N) - t0) / 1000000)) $((c1 - c0))" >"$TMP/$1.part"
    mv "$TMP/$1.part" "$TMP/$1.res"
}

passed=0 failed=0 bad=() times=()
# report I PROGRAM: prints a finished program's output and adds up its counts.
report() {
    local t=$2 rc ms cpu out summaries n f line c cn cf ce
    read -r rc ms cpu <"$TMP/$1.res"
    out=$(cat "$TMP/$1.out")
    echo "== $t"
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
}

progs=("$@")
next=0 # the first program not yet reported
# flush: reports, in order, every program that has ended and has no
# unfinished one before it.
flush() {
    while [ $next -lt ${#progs[@]} ] && [ -e "$TMP/$next.res" ]; do
        report $next "${progs[$next]}"
        next=$((next + 1))
    done
}
running=0
for i in "${!progs[@]}"; do
    if [ $running -ge "$JOBS" ]; then
        wait -n; running=$((running - 1))
        flush
    fi
    run_one "$i" "${progs[$i]}" &
    running=$((running + 1))
done
wait
flush

echo
echo "slowest:"
printf '%s\n' "${times[@]+"${times[@]}"}" | sort -rn | head -10 |
    while read -r ms cpu t; do printf '  %6s s  (cpu %6s s)  %s\n' "$(seconds "$ms")" "$(seconds "$cpu")" "$t"; done
for b in "${bad[@]+"${bad[@]}"}"; do echo "FAILED: $b"; done
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
