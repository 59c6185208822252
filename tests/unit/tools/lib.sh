# Shared by the tools' test scripts: paths, a private stats directory,
# writers with known counters, polling with a timeout, and the verdict.
B=${SPW_TEST_BUILD:-$PWD/build}
# run-tests.sh prefixes $PWD to BUILD; an absolute BUILD is used as is.
case "${BUILD:-}" in /*) [ -d "$B" ] || B=$BUILD ;; esac
TOP=$B/tools/spillway-top
SPW=$B/tools/spillway
WRITER=$B/tests/unit/tools/stats_writer
EMPTY_LIB=$B/tests/unit/tools/libempty.so
for f in "$TOP" "$WRITER"; do
    [ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
STATS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/spw-tools-test.XXXXXX")
export SPILLWAY_STATS_DIR=$STATS_DIR
export NO_COLOR=
failures=0
writers=()

cleanup() {
    for p in "${writers[@]+"${writers[@]}"}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$STATS_DIR"
}
trap cleanup EXIT

ok() { echo "ok - $1"; }
not_ok() { echo "FAIL - $1"; failures=$((failures + 1)); }
# check DESCRIPTION COMMAND...: runs the command, passes when it succeeds.
check() {
    local desc=$1; shift
    if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# Polls COMMAND... every 0.05 s for up to SECONDS; true when it succeeded.
poll() {
    local secs=$1; shift
    local n=$((secs * 20))
    while [ $n -gt 0 ]; do
        "$@" && return 0
        sleep 0.05
        n=$((n - 1))
    done
    return 1
}

# start_writer ARGS...: starts a writer, waits for its segment, sets WPID.
start_writer() {
    local out="$STATS_DIR/.writer.$RANDOM$RANDOM"
    "$WRITER" "$@" >"$out" &
    WPID=$!
    writers+=("$WPID")
    if ! poll 10 grep -qs '^ready ' "$out"; then
        echo "FAIL: writer $* did not start"; exit 1
    fi
}

finish() {
    if [ "$failures" -eq 0 ]; then echo "all checks passed"; exit 0; fi
    echo "$failures check(s) failed"; exit 1
}
