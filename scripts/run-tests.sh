#!/usr/bin/env bash
# Runs each test program given as argument, prints its output, and ends with
# one total line "tests: N passed, M failed". A Check suite contributes its
# own counts (from its summary line); any other program counts as one test
# that passes when it exits 0.
set -u
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH="$PWD/$BUILD/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SPILLWAY_BUILD="$PWD/$BUILD"
passed=0 failed=0 bad=()
for t in "$@"; do
    echo "== $t"
    out=$(timeout 300 "$t" 2>&1); rc=$?
    printf '%s\n' "$out"
    summary=$(printf '%s\n' "$out" | grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' | tail -1)
    if [ -n "$summary" ]; then
        n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$summary")
        f=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$summary")
        e=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$summary")
        passed=$((passed + n - f - e)); failed=$((failed + f + e))
        [ $((f + e)) -eq 0 ] && [ $rc -eq 0 ] || bad+=("$t")
        [ $((f + e)) -eq 0 ] && [ $rc -ne 0 ] && failed=$((failed + 1))
    elif [ $rc -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); bad+=("$t (exit $rc)")
    fi
done
echo
for b in "${bad[@]+"${bad[@]}"}"; do echo "FAILED: $b"; done
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
