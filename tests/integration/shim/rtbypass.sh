#!/bin/sh
# The path suite again, with a runtime that reaches the driver behind
# spillway's back (FAKECUDART_BYPASS=1): its cudaMalloc is then counted,
# limited and released by spillway's runtime wrappers instead of the driver
# handlers, still exactly once.
set -eu
FAKECUDART_BYPASS=1 exec "$(dirname "$0")/paths.sh"
