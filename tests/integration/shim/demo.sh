#!/bin/sh
# `make demo` keeps working: the demo against fakecuda must be stopped by
# spillway at the limit it reports (the demo exits 1 otherwise), hold 1.5x
# it with spill, and, oversubscribed, map a JAX-style arena of 384 MiB
# (0.75 of the 512 MiB it is told) over 256 MiB of device pages.
set -eu
here=$(dirname "$0")
out=$(SPW_DEMO_DRIVER=fakecuda BUILD="${SPW_TEST_BUILD:-build}" "$here/../../../demo/run.sh" 2>&1)
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -q 'cuMemGetInfo free 256 MiB of 256 MiB'
printf '%s\n' "$out" | grep -q 'failed with CUDA_ERROR_OUT_OF_MEMORY after 256 MiB'
printf '%s\n' "$out" | grep -q 'served it from its page pool: 256 MiB of device pages held'
printf '%s\n' "$out" | grep -q 'at start: cuDeviceTotalMem 512 MiB, cuMemGetInfo free 512 MiB of 512 MiB'
printf '%s\n' "$out" | grep -q 'arena of 384 MiB mapped, every word read back intact'
printf '%s\n' "$out" | grep -q 'backs 128 MiB of it with pinned host memory'
# Each run's line names every variable it sets (the spill run's host limit
# was missing: a user copying the line got another host limit).
printf '%s\n' "$out" | grep -q -- '-- with spillway, spill on (the default): LD_PRELOAD=.* SPILLWAY_HOST_LIMIT=4G$'
# Its chunk mode run by hand with spill on (the default) is never refused:
# it stops at its 64 chunks, says so, and exits 1. It said "allocation 65
# failed with CUDA_SUCCESS".
B=${SPW_TEST_BUILD:-build}
own=$(env LD_LIBRARY_PATH="$B/fakecuda" FAKECUDA_MEM=256M FAKECUDA_DEVICES=1 \
    LD_PRELOAD="$B/libspillway.so" SPILLWAY_MEM_LIMIT=16M SPILLWAY_LOG=error \
    "$B/demo/spillway-demo" 2>&1) && exit 1
printf '%s\n' "$own" | grep -q 'no allocation refused after 64 chunks of 2 MiB (128 MiB, the program was told 16 MiB)'
if printf '%s\n' "$own" | grep -q 'CUDA_SUCCESS'; then exit 1; fi
# Its spill mode refused by a host limit too small to hold the half past the
# limit: it says which chunk was refused, still reads back the chunks it
# holds (intact: a refusal loses nothing) and exits 1. It said "8 chunks
# held, every word read back NOT intact" without reading any of them.
spl=$(env LD_LIBRARY_PATH="$B/fakecuda" FAKECUDA_MEM=256M FAKECUDA_DEVICES=1 \
    LD_PRELOAD="$B/libspillway.so" SPILLWAY_MEM_LIMIT=16M SPILLWAY_HOST_LIMIT=2M \
    SPILLWAY_LOG=error "$B/demo/spillway-demo" spill 2>&1) && exit 1
printf '%s\n' "$spl"
printf '%s\n' "$spl" | grep -q 'chunk 10 failed with CUDA_ERROR_OUT_OF_MEMORY'
printf '%s\n' "$spl" | grep -q '9 chunks held, every word read back intact'
