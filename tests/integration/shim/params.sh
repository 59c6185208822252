#!/bin/sh
# The parameter-scan suite (test_params.c) under spillway against fakecuda:
# one 256 MiB device, a 64 MiB limit, spill on (launches scan their
# arguments only then).
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_params
