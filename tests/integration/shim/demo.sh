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
