#!/usr/bin/env bash
# What SPILLWAY_LOG=info says of each device at its first use (README, "The
# log"), against fakecuda, under the options that change it:
#  - one line per device with the limit, where it comes from, what programs
#    are told the device has (cuMemGetInfo, cuDeviceTotalMem) and why: the
#    limit, or SPILLWAY_OVERSUBSCRIBE x it (the line said nothing of what
#    programs were told);
#  - with spill, one line with what spill may pin (SPILLWAY_HOST_LIMIT);
#    without spill none: a host limit means nothing then (it was said,
#    auto's figure and all, with SPILLWAY_SPILL=0);
#  - sizes as shim/size_text.c writes them, never a bare count of 1024
#    bytes or more ("limit 67108864 bytes of 268435456");
#  - each line once, in that order, before the pool's.
set -u
B=${SPW_TEST_BUILD:-$(pwd)/build}
LIB=$B/libspillway.so PROBE=$B/tests/integration/shim_probe DLPROBE=$B/tests/integration/shim_dlprobe
# shellcheck disable=SC2046 # names, one word each
unset LD_PRELOAD $(env | sed -n 's/^\([Ss][Pp][Ii][Ll][Ll][Ww][Aa][Yy]_[A-Za-z0-9_]*\)=.*/\1/p')
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
export SPILLWAY_STATS_DIR=$stats SPILLWAY_LOG=info
export LD_LIBRARY_PATH=$B/fakecuda FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M
M=$((1 << 20))
failed=0
check() { if [ "$2" = 0 ]; then echo "ok - $1"; else echo "not ok - $1"; failed=$((failed + 1)); fi; }
all=""

# run VAR=VALUE... -- PROBE-ARGS...: the probe's output and spillway's, in $out.
run() {
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    out=$(env "${envs[@]}" LD_PRELOAD="$LIB" "$PROBE" "$@" 2>&1)
    all+=$out$'\n'
}
# has COUNT TEXT: TEXT is on exactly COUNT lines of $out (fixed string).
has() { [ "$(grep -cF -- "$2" <<<"$out")" = "$1" ]; }
# show BAD: the output when a check failed.
show() { [ "$1" = 0 ] || printf '%s\n' "$out" | sed 's/^/    /'; }

# The default fraction, spill on, the automatic host limit.
run -- info
bad=0
has 1 "spillway: device 0: limit 192 MiB of the device's 256 MiB, by SPILLWAY_MEM_FRACTION=0.75; programs are told the device has 192 MiB, the limit" || bad=1
has 1 "dev 0 total $((192 * M)) free $((192 * M)) devtotal $((192 * M))" || bad=1
has 1 "spillway: device 0: spill may pin up to " || bad=1
has 1 " of host memory, by SPILLWAY_HOST_LIMIT=auto, half of the machine's " || bad=1
show $bad
check "defaults: the limit and its fraction, told the limit; what spill may pin, auto's origin" $bad

# Spill off: the pool takes no host page, so the host limit is not said.
run SPILLWAY_SPILL=0 SPILLWAY_MEM_LIMIT=64M -- fill 0 $((16 * M))
bad=0
has 1 "spillway: device 0: limit 64 MiB of the device's 256 MiB, by SPILLWAY_MEM_LIMIT=64M; programs are told the device has 64 MiB, the limit" || bad=1
has 0 "HOST_LIMIT" || bad=1
has 0 "spill may pin" || bad=1
has 1 "spillway: device 0: page pool of 64 MiB: preallocated, no spill" || bad=1
has 1 "spillway: device 0: out of memory: 16 MiB refused (limit): it would pass the limit of 64 MiB, with 64 MiB in use; later refusals are logged at debug level" || bad=1
show $bad
check "SPILLWAY_SPILL=0: no host limit said; pool and refusal in MiB" $bad

# An explicit host limit, and unlimited.
run SPILLWAY_MEM_LIMIT=64M SPILLWAY_HOST_LIMIT=1G -- info
bad=0
has 1 "spillway: device 0: spill may pin up to 1 GiB of host memory, by SPILLWAY_HOST_LIMIT" || bad=1
show $bad
run SPILLWAY_MEM_LIMIT=64M SPILLWAY_HOST_LIMIT=unlimited -- info
has 1 "spillway: device 0: spill may pin host memory without a limit, by SPILLWAY_HOST_LIMIT=unlimited" || bad=1
show $bad
check "SPILLWAY_HOST_LIMIT=1G and unlimited: said as set" $bad

# Oversubscribed: the line says what the program is told (and the probe
# sees it), and why.
run SPILLWAY_MEM_LIMIT=64M SPILLWAY_OVERSUBSCRIBE=2 SPILLWAY_HOST_LIMIT=1G -- info
bad=0
has 1 "spillway: device 0: limit 64 MiB of the device's 256 MiB, by SPILLWAY_MEM_LIMIT=64M; programs are told the device has 128 MiB, SPILLWAY_OVERSUBSCRIBE=2 x the limit: the 64 MiB past it live in pinned host memory" || bad=1
has 1 "dev 0 total $((128 * M)) free $((128 * M)) devtotal $((128 * M))" || bad=1
show $bad
check "SPILLWAY_OVERSUBSCRIBE=2: told 128 MiB, 2 x the limit, the rest in host memory" $bad

# F x the limit rounded down to whole pages (9 MiB -> 8), and a factor
# that adds less than a page (told the limit).
run SPILLWAY_MEM_LIMIT=6M SPILLWAY_OVERSUBSCRIBE=1.5 SPILLWAY_HOST_LIMIT=3M -- info
bad=0
has 1 "programs are told the device has 8 MiB, SPILLWAY_OVERSUBSCRIBE=1.5 x the limit in whole pages: the 2 MiB past it live in pinned host memory" || bad=1
has 1 "dev 0 total $((8 * M)) " || bad=1
show $bad
run SPILLWAY_MEM_LIMIT=2M SPILLWAY_OVERSUBSCRIBE=1.4 SPILLWAY_HOST_LIMIT=3M -- info
has 1 "programs are told the device has 2 MiB, the limit: SPILLWAY_OVERSUBSCRIBE=1.4 x the limit is less than a page more" || bad=1
has 1 "dev 0 total $((2 * M)) " || bad=1
show $bad
check "SPILLWAY_OVERSUBSCRIBE=1.5 and 1.4: whole pages, said" $bad

# Two devices, a limit for one: a line each, each with its own source.
run FAKECUDA_DEVICES=2 SPILLWAY_MEM_LIMIT=1=32M SPILLWAY_MEM_FRACTION=0.5 SPILLWAY_OVERSUBSCRIBE=2 -- info
bad=0
has 1 "spillway: device 0: limit 128 MiB of the device's 256 MiB, by SPILLWAY_MEM_FRACTION=0.5; programs are told the device has 256 MiB, SPILLWAY_OVERSUBSCRIBE=2 x the limit: the 128 MiB past it live in pinned host memory" || bad=1
has 1 "spillway: device 1: limit 32 MiB of the device's 256 MiB, by SPILLWAY_MEM_LIMIT (1=32M); programs are told the device has 64 MiB, SPILLWAY_OVERSUBSCRIBE=2 x the limit: the 32 MiB past it live in pinned host memory" || bad=1
has 2 " among 2 devices" || bad=1
has 2 "spill may pin up to" || bad=1
# In order: device 0's limit, its host limit, then device 1's.
[ "$(grep -E '^spillway: device [01]: (limit|spill may)' <<<"$out" | cut -c1-30 | tr '\n' '|')" = \
    "spillway: device 0: limit 128 |spillway: device 0: spill may |spillway: device 1: limit 32 M|spillway: device 1: spill may |" ] || bad=1
show $bad
check "two devices, SPILLWAY_MEM_LIMIT for one: a line each, in order" $bad

# A driver without virtual memory management: no pool, so the factor does
# not apply and nothing spills: told the limit, and no host limit said.
out=$(env LD_LIBRARY_PATH="$B/fakecuda/old" SPILLWAY_MEM_LIMIT=64M SPILLWAY_OVERSUBSCRIBE=2 \
    SPILLWAY_HOST_LIMIT=16M LD_PRELOAD="$LIB" "$DLPROBE" fill $((8 * M)) 2>&1)
all+=$out$'\n'
bad=0
has 1 "spillway: device 0: limit 64 MiB of the device's 256 MiB, by SPILLWAY_MEM_LIMIT=64M; programs are told the device has 64 MiB, the limit: SPILLWAY_OVERSUBSCRIBE=2 does not apply without the page pool" || bad=1
has 0 "spill may pin" || bad=1
has 1 "cannot set up the page pool for 64 MiB (error " || bad=1
show $bad
check "no pool (old driver): told the limit, why, and no host limit" $bad

# The README's example ("The log") is what spillway prints: its command,
# with PROGRAM using device 1 past what it is told.
SPW=$B/tools/spillway
out=$(env FAKECUDA_DEVICES=2 SPILLWAY_LIB="$LIB" "$SPW" run --log info --fraction 0.5 --limit 1=32M \
    --oversubscribe 2 --host-limit 1G -- "$PROBE" fill 1 $((16 * M)) 2>&1)
all+=$out$'\n'
readme=$(sed -n '/^### The log$/,/^## /p' "$(dirname "$0")/../../../README.md" | grep '^spillway: device')
bad=0
[ "$(wc -l <<<"$readme")" -ge 5 ] || bad=1
while IFS= read -r line; do has 1 "$line" || { bad=1; echo "    README only: $line"; }; done <<<"$readme"
show $bad
check "README, \"The log\": its example lines are what spillway prints" $bad

# Every size above in words: no count of 1024 bytes or more stands alone
# (one follows its rounded figure, "15.9 GiB (17071734784 bytes)").
bare=$(grep '^spillway: ' <<<"$all" | grep -E '(^|[^(0-9])[0-9]{4,} bytes')
[ -z "$bare" ] || printf '    %s\n' "$bare"
check "no bare byte counts in the info and warning lines" "$([ -z "$bare" ]; echo $?)"

echo "startlog.sh: $failed failed"
[ $failed = 0 ]
