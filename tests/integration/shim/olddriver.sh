#!/bin/sh
# spillway in front of a driver older than what it hooks
# (tests/fakecuda/old_driver.map: no VMM, no cuGetProcAddress, no
# stream-ordered allocation, graphs or capture), reached as frameworks
# reach it (dlopen, RTLD_LOCAL): the program runs, the limit holds without
# a pool (pass-through, capped), and the pool that cannot be set up is
# said once, not once per try.
set -u
B=${SPW_TEST_BUILD:-$(pwd)/build}
LIB=$B/libspillway.so DLPROBE=$B/tests/integration/shim_dlprobe
# shellcheck disable=SC2046 # names, one word each
unset LD_PRELOAD $(env | sed -n 's/^\([Ss][Pp][Ii][Ll][Ll][Ww][Aa][Yy]_[A-Za-z0-9_]*\)=.*/\1/p')
export LD_LIBRARY_PATH=$B/fakecuda/old FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
export SPILLWAY_STATS_DIR=$stats
failed=0
check() { if [ "$2" = 0 ]; then echo "ok - $1"; else echo "not ok - $1"; failed=$((failed + 1)); fi; }
M=1048576

out=$("$DLPROBE" fill $((8 * M)) 2>&1)
case $out in *"fill bytes $((256 * M)) err 2"*) r=0 ;; *) r=1; printf '%s\n' "$out" ;; esac
check "the old driver alone: the whole 256 MiB device" $r

for spill in 1 0; do
    out=$(env LD_PRELOAD="$LIB" SPILLWAY_MEM_LIMIT=64M SPILLWAY_SPILL=$spill \
        "$DLPROBE" fill $((8 * M)) 2>&1)
    r=0
    case $out in *"dlprobe: devtotal $((64 * M))"*) ;; *) r=1 ;; esac
    case $out in *"dlprobe: fill bytes $((64 * M)) err 2"*) ;; *) r=1 ;; esac
    [ "$(printf '%s\n' "$out" | grep -c 'cannot set up the page pool')" = 1 ] || r=1
    case $out in *"will try again"*) r=1 ;; esac
    [ $r = 0 ] || printf '%s\n' "$out"
    check "SPILLWAY_SPILL=$spill on the old driver: told 64 MiB, stopped at 64 MiB, one warning" $r
done

# Memory past the limit would live in the pool's host pages, and there is
# no pool here: SPILLWAY_OVERSUBSCRIBE does not apply (one warning), the
# program is told the limit from its first question (a program sized to
# more, as JAX is, failed past the limit), and the host limit need not hold
# (F - 1) x the limit (that would have stopped the program with status 2).
out=$(env LD_PRELOAD="$LIB" SPILLWAY_MEM_LIMIT=64M SPILLWAY_OVERSUBSCRIBE=2 SPILLWAY_HOST_LIMIT=16M \
    "$DLPROBE" fill $((8 * M)) 2>&1); rc=$?
r=0
[ $rc = 0 ] || r=1
case $out in *"dlprobe: devtotal $((64 * M))"*) ;; *) r=1 ;; esac
case $out in *"dlprobe: fill bytes $((64 * M)) err 2"*) ;; *) r=1 ;; esac
case $out in *"dlprobe: devtotal after $((64 * M))"*) ;; *) r=1 ;; esac
[ "$(printf '%s\n' "$out" | grep -c 'SPILLWAY_OVERSUBSCRIBE=2 does not apply: the driver or the device lacks virtual memory management')" = 1 ] || r=1
[ $r = 0 ] || printf '%s\n' "$out"
check "SPILLWAY_OVERSUBSCRIBE=2 on the old driver: told the limit, 64 MiB, one warning" $r

[ $failed = 0 ] && echo "all checks passed"
[ $failed = 0 ]
