# Shared by the scripts of tests/integration/diff (sourced, POSIX sh).
# Environment (all optional):
#   SPW_TEST_BUILD       the build directory (scripts/run-tests.sh sets it)
#   DIFF_SHIM            the spillway library under test ($SPW_TEST_BUILD/libspillway.so)
#   DIFF_FAKECUDA        the directory of fakecuda's libcuda.so.1 ($SPW_TEST_BUILD/fakecuda)
#   DIFF_ALLOWANCE       refusals within this many bytes of the limit are allowed ...
#   DIFF_ALLOWANCE_FRAC  ... plus this fraction of the limit (README.md: "The allowance")
B=${SPW_TEST_BUILD:-$(pwd)/build}
G=$B/tests/integration/diff/diffgen
SHIM=${DIFF_SHIM:-$B/libspillway.so}
FAKE=${DIFF_FAKECUDA:-$B/fakecuda}
ALLOWANCE=${DIFF_ALLOWANCE:-4M}
ALLOWANCE_FRAC=${DIFF_ALLOWANCE_FRAC:-0.0625}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# alone MIB ARGS...: the driver alone, its device exactly as large as the limit.
alone() {
    mib=$1
    shift
    env LD_LIBRARY_PATH="$FAKE" FAKECUDA_MEM="${mib}M" "$G" --limit "${mib}M" "$@"
}

# under SPILL MIB HOST_LIMIT ARGS...: under spillway, with a device 16 times
# the limit so that only spillway's limit binds. Every refusal is logged
# (SPILLWAY_LOG=debug): diffgen reads the reasons from there. $DIFF_ENV may
# add VAR=value words (SPILLWAY_PREALLOCATE=0).
under() {
    spill=$1 mib=$2 host=$3
    shift 3
    # shellcheck disable=SC2086
    env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" FAKECUDA_MEM="$((mib * 16))M" \
        SPILLWAY_MEM_LIMIT="${mib}M" SPILLWAY_SPILL="$spill" SPILLWAY_HOST_LIMIT="$host" \
        SPILLWAY_LOG=debug SPILLWAY_STATS_DIR="$work" ${DIFF_ENV:-} \
        "$G" --limit "${mib}M" --allowance "$ALLOWANCE" --allowance-frac "$ALLOWANCE_FRAC" "$@"
}

# check NAME CMD...: one check; a failure is counted, the script goes on.
check() {
    name=$1
    shift
    echo "-- $name"
    if "$@"; then
        echo "ok - $name"
    else
        echo "not ok - $name"
        failures=$((failures + 1))
    fi
}

# check_beside TAG NAME CMD...: check NAME CMD... in the background, for a
# run that needs nothing of the ones in between (each of which keeps about
# one of the two cores busy); check_joined TAG waits for it, shows its
# output then, and counts its failure (or one, if it left no count).
check_beside() {
    tag=$1
    shift
    (
        before=$failures
        check "$@" >"$work/$tag.out" 2>&1
        echo $((failures - before)) >"$work/$tag.failed"
    ) &
    echo $! >"$work/$tag.pid"
}

check_joined() {
    tag=$1
    wait "$(cat "$work/$tag.pid")"
    cat "$work/$tag.out"
    failures=$((failures + $(cat "$work/$tag.failed" 2>/dev/null || echo 1)))
}

finish() {
    echo "$(basename "$0"): $failures failed"
    [ "$failures" -eq 0 ]
}
