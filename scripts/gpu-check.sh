#!/usr/bin/env bash
# GPU check: builds spillway's test programs with gcc on a GPU host and runs
# them against the real driver, then prints one markdown table (device,
# driver, date, one row per check) for the README. Writes the table and the
# full log to $OUT (or build-gpu/) as gpu-check.md and gpu-check.log.
#
#   scripts/gpu-check.sh            build + every check
#
# Needs gcc, make, the CUDA headers and a driver; not Check (the suites fall
# back to tests/unit/minicheck.h) and not ncurses (the tools are not built).
set -u
cd "$(dirname "$0")/.."
BUILD=build-gpu
OUT=${OUT:-$BUILD}
mkdir -p "$OUT" "$BUILD"
LOG="$OUT/gpu-check.log"
TABLE="$OUT/gpu-check.md"
: >"$LOG"
rows=()

row() { # check, result, detail
    rows+=("| $1 | $2 | $3 |")
    printf '%-40s %-6s %s\n' "$1" "$2" "$3"
}

# --- build ----------------------------------------------------------------
if ! make -j"$(nproc)" BUILD="$BUILD" gpu-build >>"$LOG" 2>&1; then
    echo "gpu-check: build failed, see $LOG" >&2
    tail -30 "$LOG" >&2
    exit 1
fi

# The real driver must be the one loaded: never fakecuda.
unset LD_LIBRARY_PATH LD_PRELOAD
device=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
[ -n "$device" ] || { echo "gpu-check: no GPU (nvidia-smi found none)" >&2; exit 1; }

# --- driver conformance: the suites CI runs against fakecuda -------------
for t in "$BUILD"/tests/unit/driver_*; do
    [ -x "$t" ] || continue
    name=${t##*/}
    out=$(timeout 300 "$t" 2>&1); rc=$?
    printf '== %s (exit %d)\n%s\n' "$name" "$rc" "$out" >>"$LOG"
    summary=$(grep -E '^[0-9]+%: Checks:' <<<"$out" | tail -1)
    if [ "$rc" -eq 0 ] && [ -n "$summary" ]; then
        row "conformance: $name" pass "${summary#*: }"
    else
        row "conformance: $name" FAIL "${summary:-exit $rc}; $(grep -m3 -E 'failed|Assertion' <<<"$out" | tr '\n' ' ')"
    fi
done

# --- table ----------------------------------------------------------------
{
    echo "GPU check on $device, driver $driver, $(date -u +%Y-%m-%d)"
    echo
    echo "| check | result | detail |"
    echo "| --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
} >"$TABLE"
echo
cat "$TABLE"
! grep -q '| FAIL |' "$TABLE"
