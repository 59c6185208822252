#!/bin/sh
# make soak: the differential run of diff.sh at 10^6 operations, 8 threads
# (spill off and on, and the driver alone), then its results as a Markdown
# table for README.md. DIFF_OPS / DIFF_THREADS / DIFF_SEED override.
# Takes several minutes on two cores.
set -eu
here=$(dirname "$0")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
DIFF_OPS=${DIFF_OPS:-1000000} DIFF_THREADS=${DIFF_THREADS:-8} "$here/diff.sh" | tee "$out" || rc=$?
echo
tested=${DIFF_SHIM:-the build of $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')}
echo "soak result ($(date -u +%Y-%m-%d), spillway: $tested, $(nproc) cores):"
echo
echo "| run | threads | ops | allocations served | refused (stated reasons) | illegitimate / wrong reason | live peak MiB | device peak MiB | overhead peak MiB | spilled peak MiB | verified MiB | mismatches | time |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
sed -n 's/^  row: //p' "$out"
exit $rc
