#!/bin/sh
# diffgen checks itself, and the data under spillway; passes on 04f325f and
# on later main (in UNIT_TESTS):
#  - it reads the reason out of every refusal line spillway has written;
#  - the driver alone: every API, 4 threads, every byte read back right;
#  - a seed gives the same sequence twice (what op-by-op comparison needs);
#  - a byte changed behind its back is reported, with seed, op, allocation
#    and offset;
#  - under spillway, spill off and on: only the data is judged here (the
#    refusals are the business of diff.sh and the repro scripts).
set -eu
. "$(dirname "$0")/lib.sh"

classify() {
    got=$(env LD_LIBRARY_PATH="$FAKE" "$G" --classify "$2")
    [ "$got" = "$1" ] || { echo "classify: got '$got', expected '$1' for: $2"; return 1; }
}

reasons() {
    p="spillway: device 0: out of memory:"
    classify "limit 4096" "$p allocating 4096 bytes would pass the limit of 67108864 bytes (0 in use)" &&
    classify "limit 4096" "$p 4096 bytes refused (limit): it would pass the limit of 67108864 bytes (0 in use)" &&
    classify "too-large 1099511627776" "$p 1099511627776 bytes refused (too-large): one allocation larger than the limit of 67108864 bytes (0 in use)" &&
    classify "limit 8607" "$p the pool has no room for 8607 bytes (1 in use, limit 67108864; allocations take whole pages from 1 page up)" &&
    classify "host-limit 97435" "$p the pool has no room for 97435 bytes (2 in use, limit 67108864; allocations take whole pages from 1 page up; spill found no host memory within SPILLWAY_HOST_LIMIT)" &&
    classify "too-large 1099511627776" "$p 1099511627776 bytes refused (too-large): one allocation larger than the limit of 67108864 bytes (with spill: than the limit and SPILLWAY_HOST_LIMIT together) (0 bytes in use)" &&
    classify "address-space 4194304" "$p 4194304 bytes refused (address-space): the driver refused more virtual address space (1 bytes in use)" &&
    classify "host-limit 2097152" "$p 2097152 bytes refused (host-limit): spill found no pinned host memory left within SPILLWAY_HOST_LIMIT (1 bytes in use)" &&
    classify "driver 2097152" "$p 2097152 bytes refused (driver): the driver has no memory left to give (1 bytes in use)" &&
    classify "not a refusal" "spillway: device 0: page pool of 67108864 bytes" &&
    # Sizes as shim/size_text.c writes them: exact, or rounded with the count.
    classify "limit 33554432" "$p 32 MiB refused (limit): it would pass the limit of 64 MiB, with 64 MiB in use" &&
    classify "limit 1610612736" "$p 1.5 GiB refused (limit): it would pass the limit of 64 MiB, with 0 bytes in use" &&
    classify "host-limit 4097" "$p 4.0 KiB (4097 bytes) refused (host-limit): spill found no pinned host memory left within SPILLWAY_HOST_LIMIT, with 1 byte in use" &&
    classify "too-large 1099511627776" "$p 1 TiB refused (too-large): one allocation larger than the limit of 64 MiB (with spill: than the limit and SPILLWAY_HOST_LIMIT together), with 2 MiB in use" &&
    classify "driver 100" "$p 100 bytes refused (driver): the driver has no memory left to give, with 1.5 GiB (1610612737 bytes) in use" &&
    classify "not a refusal" "spillway: device 0: page pool of 64 MiB: preallocated, no spill"
}

determinism() {
    args="--ops 1500 --threads 2 --live 0.9"
    # shellcheck disable=SC2086
    alone 64 $args --trace "$work/a" >/dev/null && alone 64 $args --trace "$work/b" >/dev/null &&
        cmp -s "$work/a" "$work/b" && alone 64 $args --seed 2 --trace "$work/c" >/dev/null &&
        ! cmp -s "$work/a" "$work/c"
}

corruption() {
    if alone 64 --ops 1000 --corrupt-at 999 --verify-window 0 >"$work/out"; then
        echo "the corrupted byte went unnoticed"
        return 1
    fi
    grep -E "^diffgen: self-test|data mismatch" "$work/out"
    grep -q "data mismatch in allocation .* first bad byte at offset" "$work/out"
}

cheap="--init 0.2 --op-max 64K --verify-window 32K"
data="--threads 2 --ops 6000 --judge data --no-reasons $cheap"
check "refusal lines: the reason and the size of each" reasons
# shellcheck disable=SC2086
check "the driver alone: every API, 4 threads, data" alone 64 --threads 4 --ops 10000 --live 0.6 $cheap
check "a seed plans the same operations every time" determinism
check "a byte corrupted behind the shadow's back is reported" corruption
# shellcheck disable=SC2086
check "under spillway, spill off: data" under 0 64 1G $data --live 0.6
# shellcheck disable=SC2086
check "under spillway, spill on: data" under 1 64 1G $data --live 1.5
finish
