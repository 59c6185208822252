#!/bin/sh
# The parameter-scan suite (test_params.c) under spillway against fakecuda:
# two 256 MiB devices, a 64 MiB limit, spill on (launches scan their
# arguments only then). Then with a driver that describes no kernel's
# parameters (SPW_PARAMS_REFUSED): the launches run, and spillway says once
# that their arguments are not scanned. Then a program releasing its
# primary context more than it retained: refused, one warning naming the
# device however often it recurs.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_params FAKECUDA_DEVICES=2
suite_says_once "unscanned kernel arguments" "are not scanned" shim_params SPW_PARAMS_REFUSED=1 \
    SPILLWAY_LOG=warn \
    FAKECUDA_FAIL=cuFuncGetParamInfo:1-:CUDA_ERROR_NOT_SUPPORTED,cuKernelGetParamInfo:1-:CUDA_ERROR_NOT_SUPPORTED
suite_says_once "primary releases beyond the program's retains" \
    "device 0: cuDevicePrimaryCtxRelease without a retain" shim_params SPW_PARAMS_PRIMARY_WARN=1 \
    SPILLWAY_LOG=warn
