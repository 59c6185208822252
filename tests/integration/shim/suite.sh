# Sourced by the suite scripts here (POSIX sh): what running a suite under
# spillway against fakecuda takes, in one place.
#
#   suite_run SUITE [VAR=VALUE ...]
#
# runs $B/tests/integration/SUITE under LD_PRELOAD=libspillway.so with one
# 256 MiB fakecuda device, a 64 MiB limit, errors only in the log and the
# stats published into a scratch directory (removed at exit); each VAR=VALUE
# is added to, or overrides, that environment. SUITE_TIMEOUT (seconds,
# default 280) bounds one run: a deadlock fails it instead of hanging make
# test.
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
suite_run() {
    suite=$1
    shift
    env LD_PRELOAD="$B/libspillway.so" FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M \
        SPILLWAY_MEM_LIMIT=64M SPILLWAY_LOG=error SPILLWAY_STATS_DIR="$stats" "$@" \
        timeout "${SUITE_TIMEOUT:-280}" "$B/tests/integration/$suite"
}

#   suite_says_once WHAT TEXT SUITE [VAR=VALUE ...]
#
# runs SUITE as suite_run does, its output kept, and fails unless it passes
# and its output holds TEXT on exactly one line: a warning spillway gives
# once however often its cause recurs. WHAT names the cause for the
# messages.
suite_says_once() {
    what=$1 text=$2
    shift 2
    log=$stats/says_once.log
    if ! suite_run "$@" >"$log" 2>&1; then
        cat "$log"
        exit 1
    fi
    n=$(grep -c "$text" "$log" || true)
    if [ "$n" != 1 ]; then
        cat "$log"
        echo "FAIL: $what were reported $n times, not once"
        exit 1
    fi
    echo "$what: reported once"
}
