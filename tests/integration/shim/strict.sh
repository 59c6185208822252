#!/usr/bin/env bash
# Issue 11, strict configuration, through both doors: every mistake the
# issue reproduced is refused before the program runs, by `spillway run`
# (with and without -v) and by the preloaded library alone, with exit status
# 2 and the same one line; a limit below one page, above the device, or for
# a device the machine lacks runs, with one warning saying what is used.
set -u
B=${SPW_TEST_BUILD:-$(pwd)/build}
SPW=$B/tools/spillway LIB=$B/libspillway.so PROBE=$B/tests/integration/shim_probe
# shellcheck disable=SC2046 # names, one word each
unset LD_PRELOAD $(env | sed -n 's/^\([Ss][Pp][Ii][Ll][Ll][Ww][Aa][Yy]_[A-Za-z0-9_]*\)=.*/\1/p')
export LD_LIBRARY_PATH=$B/fakecuda FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M
STATS=$(mktemp -d)
trap 'rm -rf "$STATS"' EXIT
export SPILLWAY_STATS_DIR=$STATS
failed=0
check() { if [ "$2" = 0 ]; then echo "ok - $1"; else echo "not ok - $1"; failed=$((failed + 1)); fi; }

# refused 'NAME=VALUE' WANT: the launcher, the launcher with -v and the
# library each exit 2 before main with one identical line containing WANT.
refused() {
    local var=$1 want=$2 a b c ra rb rc
    a=$(env "$var" SPILLWAY_LIB="$LIB" "$SPW" run -- "$PROBE" info 2>&1); ra=$?
    b=$(env "$var" SPILLWAY_LIB="$LIB" "$SPW" run -v -- "$PROBE" info 2>&1); rb=$?
    c=$(env "$var" LD_PRELOAD="$LIB" "$PROBE" info 2>&1); rc=$?
    local bad=0
    [ $ra = 2 ] && [ $rb = 2 ] && [ $rc = 2 ] || bad=1
    [ "$a" = "$c" ] && [ "$b" = "$c" ] || bad=1
    [ "$(printf '%s\n' "$c" | wc -l)" = 1 ] && [[ $c == "spillway: "*"$want"* ]] || bad=1
    [ $bad = 0 ] || printf '  %s: exit %s/%s/%s\n  launcher: %s\n  -v:       %s\n  library:  %s\n' \
        "$var" $ra $rb $rc "$a" "$b" "$c"
    check "$var refused: $want" $bad
}

refused SPILLWAY_MEM_LIMT=8G "unknown variable SPILLWAY_MEM_LIMT (set to '8G'): did you mean SPILLWAY_MEM_LIMIT?"
refused spillway_mem_limit=8G "did you mean SPILLWAY_MEM_LIMIT?"
refused SPILLWAY_VERBOSE=1 "spillway's variables are SPILLWAY_MEM_FRACTION, SPILLWAY_MEM_LIMIT,"
refused SPILLWAY_MEM_LIMIT= "invalid SPILLWAY_MEM_LIMIT='': empty; unset it for the default (none)"
refused SPILLWAY_LOG= "invalid SPILLWAY_LOG='': empty; unset it for the default (warn)"
refused SPILLWAY_MEM_FRACTION=1e-300 "invalid SPILLWAY_MEM_FRACTION='1e-300': accepted: a decimal number from 0.000001 to 1"
# The launcher's own options go through the same check.
out=$(SPILLWAY_LIB=$LIB "$SPW" run --fraction 1e-300 -- "$PROBE" info 2>&1); rc=$?
[ $rc = 2 ] && [ "$out" = "spillway: invalid SPILLWAY_MEM_FRACTION='1e-300': accepted: a decimal number from 0.000001 to 1, e.g. 0.5" ]
check "--fraction 1e-300 refused" $?
# One number grammar: hex (strtod's 0x0.8) and an exponent refused the
# same by the library, the launcher and its -v.
refused SPILLWAY_MEM_FRACTION=0x0.8 "invalid SPILLWAY_MEM_FRACTION='0x0.8': accepted: a decimal number from 0.000001 to 1"
refused SPILLWAY_MEM_LIMIT=8e9 "invalid SPILLWAY_MEM_LIMIT='8e9': accepted:"
refused SPILLWAY_MEM_LIMIT=0=8G,0=4G "invalid SPILLWAY_MEM_LIMIT='0=8G,0=4G': device 0 is named twice; accepted:"

# warned ARGS -- WANT...: spillway run ARGS -- probe alloc 0 1M succeeds,
# and its stderr has each WANT exactly once.
warned() {
    local args=() out rc bad=0
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    out=$(SPILLWAY_LIB=$LIB "$SPW" run "${args[@]}" -- "$PROBE" alloc 0 1048576 2>&1); rc=$?
    [ $rc = 0 ] && [[ $out == *"alloc 0 err 0"* ]] || bad=1
    for w in "$@"; do [ "$(grep -cF -- "$w" <<<"$out")" = 1 ] || bad=1; done
    [ $bad = 0 ] || printf '  %s: exit %s\n%s\n' "${args[*]}" $rc "$out"
    check "run ${args[*]} warns: $1" $bad
}

warned --limit 1 -- "spillway: device 0: SPILLWAY_MEM_LIMIT=1 is below one page (2 MiB): using 2 MiB"
warned --limit 99999T -- "spillway: device 0: SPILLWAY_MEM_LIMIT=99999T is more than the device's 256 MiB: using 256 MiB"
warned --limit 0=8G,5=1G -- \
    "spillway: SPILLWAY_MEM_LIMIT names device 5, but CUDA sees 1 device (0): its limit is unused" \
    "spillway: device 0: SPILLWAY_MEM_LIMIT (0=8G) is more than the device's 256 MiB: using 256 MiB"
warned --fraction 0.000001 -- "is below one page (2 MiB): using 2 MiB"

# The limit the program sees is what the warning says.
out=$(SPILLWAY_LIB=$LIB "$SPW" run --limit 1 -- "$PROBE" info 2>/dev/null)
[[ $out == *"dev 0 total 2097152 "*"devtotal 2097152"* ]]
check "--limit 1: the program sees one page" $?

# What the program is told is free it can allocate, spill off (TensorFlow's
# BFC takes what is reported free; the GPU rows' CUDA C stops within a
# granule of it): the pool holds whole pages, so a limit that is not a
# whole number of them (a fraction of the device, 3M of 2 MiB pages, a
# device's odd total) is rounded down to one that is. It was told the
# fraction's bytes and refused them, the pool holding a page less. On
# device 1, the current context's device.
for lim in "SPILLWAY_MEM_FRACTION=0.3" "SPILLWAY_MEM_LIMIT=3M" "SPILLWAY_MEM_LIMIT=1=255000000"; do
    out=$(env FAKECUDA_DEVICES=2 SPILLWAY_SPILL=0 "$lim" LD_PRELOAD="$LIB" "$PROBE" takefree 1 2>&1)
    bad=0
    [[ $out == *"takefree 1 bytes "*" err 0"* ]] || bad=1
    [ $bad = 0 ] || printf '%s\n' "$out"
    check "$lim, spill off: the free bytes reported can be allocated" $bad
done

# The same once allocations took their pages: the pool (as the driver)
# holds whole pages, so what is free is what no live data's page holds.
# It was the limit less the bytes requested: after 1000 x 100 bytes (one
# page of slabs) 67008864 bytes were reported free and refused; after 32 x
# (1 MiB + 1), each on a page of its own, 33.5 MB free and not 1 MiB to
# be had.
out=$(env SPILLWAY_SPILL=0 SPILLWAY_MEM_LIMIT=64M LD_PRELOAD="$LIB" "$PROBE" takefree 0 1000 100 2>&1)
bad=0
[[ $out == *"takefree 0 bytes $((62 << 20)) err 0"* ]] || { bad=1; printf '%s\n' "$out"; }
check "spill off, after 1000 x 100 bytes: the free bytes reported (62 MiB) can be allocated" $bad
out=$(env SPILLWAY_SPILL=0 SPILLWAY_MEM_LIMIT=64M LD_PRELOAD="$LIB" "$PROBE" takefree 0 32 1048577 2>&1)
bad=0
[[ $out == *"takefree 0 bytes 0 err -"* ]] || { bad=1; printf '%s\n' "$out"; }
check "spill off, after 32 x (1 MiB + 1) on 32 pages: nothing reported free" $bad

# SPILLWAY_DRIVER that cannot be loaded: "the driver the program loaded
# itself" (options.def) also when the program dlopened it into a local
# scope, as every framework does; before, such a program ran unlimited.
DLPROBE=$B/tests/integration/shim_dlprobe
out=$(env LD_PRELOAD="$LIB" SPILLWAY_DRIVER=/nonexistent/libcuda.so.1 SPILLWAY_MEM_LIMIT=32M \
    "$DLPROBE" 2>&1)
bad=0
[[ $out == *"dlprobe: devtotal $((32 << 20))"* ]] || bad=1
[[ $out == *"spillway: cannot load the CUDA driver '/nonexistent/libcuda.so.1'"* ]] || bad=1
[ $bad = 0 ] || printf '%s\n' "$out"
check "unloadable SPILLWAY_DRIVER, driver dlopened by the program: still limited" $bad
# A SPILLWAY_DRIVER that loads but is not a driver is one that cannot be
# loaded: before, the hooks handed the program's dlsym the driver's own
# functions (spillway had no driver) and it ran unlimited.
out=$(env LD_PRELOAD="$LIB" SPILLWAY_DRIVER=libc.so.6 SPILLWAY_MEM_LIMIT=32M "$DLPROBE" 2>&1)
bad=0
[[ $out == *"dlprobe: devtotal $((32 << 20))"* ]] || bad=1
[[ $out == *"spillway: cannot load the CUDA driver 'libc.so.6' (it is not a CUDA driver: it has no cuCtxGetDevice): using libcuda.so.1"* ]] || bad=1
[ $bad = 0 ] || printf '%s\n' "$out"
check "SPILLWAY_DRIVER not a CUDA driver, driver dlopened by the program: still limited" $bad

# One "stats:" prefix, not two.
out=$(SPILLWAY_LIB=$LIB SPILLWAY_STATS_DIR=/nonexistent/spillway-strict "$SPW" run -- "$PROBE" alloc 0 1048576 2>&1)
[[ $out == *"spillway: stats: cannot open directory /nonexistent/spillway-strict: "* ]] && [[ $out != *"stats: stats:"* ]]
check "stats failure said with one prefix" $?

[ $failed = 0 ] && echo "all checks passed"
[ $failed = 0 ]
