#!/bin/sh
# `make demo` keeps working: the demo against fakecuda must be stopped by
# spillway at the limit it reports (the demo exits 1 otherwise).
set -eu
here=$(dirname "$0")
out=$(SPW_DEMO_DRIVER=fakecuda BUILD="${SPW_TEST_BUILD:-build}" "$here/../../../demo/run.sh" 2>&1)
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -q 'cuMemGetInfo free 256 MiB of 256 MiB'
printf '%s\n' "$out" | grep -q 'failed with CUDA_ERROR_OUT_OF_MEMORY after 256 MiB'
printf '%s\n' "$out" | grep -q 'served it from its page pool: 256 MiB of device pages held'
