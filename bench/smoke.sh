#!/usr/bin/env bash
# `make bench-smoke`, and the first half of tests/gpu/selftest.sh: the
# driver-API builds of the benchmarks run briefly under the shim against
# fakecuda (no GPU): the random workload with every block's data checked, in
# both call modes, the latency loop and the preallocation probe. Pure bash:
# CI needs no Python for it.
set -u
B=${SPW_TEST_BUILD:-${BUILD:-build}}
case $B in /*) ;; *) B=$PWD/$B ;; esac
LIB=$B/libspillway.so
for f in "$LIB" "$B/bench/drv/alloc_random" "$B/bench/drv/alloc_lat" "$B/bench/drv/prealloc" "$B/fakecuda/libcuda.so.1"; do
    [ -e "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
STATS=$(mktemp -d "${TMPDIR:-/tmp}/spw-bench-smoke.XXXXXX")
trap 'rm -rf "$STATS"' EXIT
export LD_LIBRARY_PATH=$B/fakecuda SPILLWAY_STATS_DIR=$STATS FAKECUDA_MEM=256M
failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "FAIL - $1"; failures=$((failures + 1)); }
# expect DESCRIPTION REGEX OUTPUT
expect() { if grep -qE "$2" <<<"$3"; then ok "$1"; else not_ok "$1: got '$3'"; fi; }

for mode in sync async; do
    out=$(LD_PRELOAD=$LIB SPILLWAY_MEM_LIMIT=192M timeout 60 "$B/bench/drv/alloc_random" \
        --mode "$mode" --ops 1000 --max 4M --cap 64M --verify 2>&1)
    expect "random workload ($mode) under spillway: every block reads back its data" \
        "^RESULT bench=alloc_random .*mode=$mode ops=1000 .*verify=ok errors=0" "$out"
    allocs=$(grep -oE ' allocs=[0-9]+' <<<"$out" | cut -d= -f2)
    frees=$(grep -oE ' frees=[0-9]+' <<<"$out" | cut -d= -f2)
    if [ $((${allocs:-0} + ${frees:-0})) -eq 1000 ]; then ok "random workload ($mode): 1000 operations done"
    else not_ok "random workload ($mode): allocs=$allocs frees=$frees"; fi
done
# The same seed gives the same sequence natively: the workload is a fixed one.
native=$(timeout 60 "$B/bench/drv/alloc_random" --mode sync --ops 1000 --max 4M --cap 64M 2>&1)
spw=$(LD_PRELOAD=$LIB SPILLWAY_MEM_LIMIT=192M timeout 60 "$B/bench/drv/alloc_random" --mode sync --ops 1000 --max 4M --cap 64M 2>&1)
seq() { grep -oE 'allocs=[0-9]+ frees=[0-9]+ forced_frees=[0-9]+ total_ns=[0-9]+ peak_requested=[0-9]+' <<<"$1" | sed -E 's/total_ns=[0-9]+ //'; }
if [ -n "$(seq "$native")" ] && [ "$(seq "$native")" = "$(seq "$spw")" ]; then ok "same sequence natively and under spillway"
else not_ok "sequences differ: native '$(seq "$native")' spillway '$(seq "$spw")'"; fi

out=$(LD_PRELOAD=$LIB SPILLWAY_MEM_LIMIT=192M timeout 60 "$B/bench/drv/alloc_lat" --scale 0.01 --sizes 256,64K,1M,16M 2>&1)
n=$(grep -c '^RESULT bench=alloc_lat .*median_ns=[0-9]' <<<"$out")
if [ "$n" -eq 4 ]; then ok "latency loop under spillway: 4 sizes"; else not_ok "latency loop: $out"; fi

out=$(LD_PRELOAD=$LIB timeout 60 "$B/bench/drv/prealloc" 2>&1)
expect "preallocation probe under spillway" "^RESULT bench=prealloc .*first_ns=[0-9]+ total=[0-9]+ pool_bytes=" "$out"
out=$(timeout 60 "$B/bench/drv/prealloc" --bulk 0.75 2>&1)
expect "preallocation probe natively, with the bulk allocation" "^RESULT bench=prealloc .*pool_bytes=n/a bulk_bytes=[0-9]+ bulk_ns=" "$out"

[ "$failures" -eq 0 ] && echo "bench smoke: all passed" || echo "bench smoke: $failures failed"
[ "$failures" -eq 0 ]
