#!/bin/sh
# The parameter-scan suite (test_params.c) under spillway against fakecuda:
# two 256 MiB devices, a 64 MiB limit, spill on (launches scan their
# arguments only then). Then with a driver that describes no kernel's
# parameters (SPW_PARAMS_REFUSED): the launches run, and spillway says once
# that their arguments are not scanned.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_params FAKECUDA_DEVICES=2
suite_says_once "unscanned kernel arguments" "are not scanned" shim_params SPW_PARAMS_REFUSED=1 \
    SPILLWAY_LOG=warn \
    FAKECUDA_FAIL=cuFuncGetParamInfo:1-:CUDA_ERROR_NOT_SUPPORTED,cuKernelGetParamInfo:1-:CUDA_ERROR_NOT_SUPPORTED
