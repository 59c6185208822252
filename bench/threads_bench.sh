#!/usr/bin/env bash
# bench-threads (issue 14 item 6): the alloc+free hot path from 1 and 2
# threads under spillway, on fakecuda, as counts a CPU host can trust:
# instructions per pair (callgrind, the whole process: the bench, the shim
# and fakecuda) and lock acquisitions per pair, split into the pool's
# device lock (the one all threads of a device share) and the rest (size
# class and free-queue shard locks, fakecuda's own). Wall-clock pairs per
# second natively and under spillway follow, for what they are worth on
# this machine (the GPU host's figures: scripts/gpu-check.sh, threads table).
# Ends with the line a script checks:
#   bench-threads: device-lock acquisitions per pair at 2 threads = L (64 KiB), M (4 KiB)
set -euo pipefail
BUILD=${BUILD:-build}
BIN=$BUILD/bench/drv/alloc_threads
case $BUILD in
/*) LIB=$BUILD/libspillway.so ;;
*) LIB=$PWD/$BUILD/libspillway.so ;;
esac
[ -f "$LIB" ] && [ -x "$BIN" ] || { echo "bench-threads: no $LIB or $BIN (make first)" >&2; exit 1; }
PAIRS=${PAIRS:-20000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { # native|spw args...
    local how=$1
    shift
    if [ "$how" = spw ]; then
        LD_LIBRARY_PATH=$BUILD/fakecuda SPILLWAY_MEM_LIMIT=192M SPILLWAY_STATS_DIR=$out LD_PRELOAD=$LIB "$@"
    else
        LD_LIBRARY_PATH=$BUILD/fakecuda "$@"
    fi
}
echo "bench-threads on $(uname -n) ($(nproc) cores), $(date -u +%F): alloc_threads under spillway over fakecuda, $PAIRS pairs per thread"
summary=""
if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
    printf '| size | threads | instructions per pair | device-lock acquisitions per pair | other lock acquisitions per pair |\n'
    printf '|---|---|---|---|---|\n'
    for size in 65536 4096; do
        for t in 1 2; do
            f=$out/cg.$size.$t
            run spw valgrind --tool=callgrind --callgrind-out-file="$f" "$BIN" --threads "$t" --pairs "$PAIRS" \
                --size "$size" >/dev/null 2>&1
            ir=$(awk '/^summary:/ {print $2}' "$f")
            # Callers of pthread_mutex_lock with their call counts; the pool's
            # device lock is taken only through sw_dev_lock (never inlined).
            callgrind_annotate --tree=caller --threshold=100 "$f" >"$f.tree" 2>/dev/null
            awk '/^ *[0-9,]+ \([ 0-9.]+%\)  <.*/ {buf = buf "\n" $0; next}
                     /\*  .*pthread_mutex_lock@@/ {print buf; exit} {buf = ""}' "$f.tree" |
                sed -n 's/.*< \(.*\) (\([0-9,]*\)x).*/\2 \1/p' | tr -d , >"$f.locks"
            dev=$(awk '$2 ~ /:sw_dev_lock$/ {n += $1} END {print n + 0}' "$f.locks")
            all=$(awk '{n += $1} END {print n + 0}' "$f.locks")
            pairs=$((PAIRS * t))
            dpp=$(awk -v a="$dev" -v p="$pairs" 'BEGIN{printf "%.3f", a / p}')
            opp=$(awk -v a="$((all - dev))" -v p="$pairs" 'BEGIN{printf "%.2f", a / p}')
            printf '| %d | %d | %d | %s | %s |\n' "$size" "$t" $((ir / pairs)) "$dpp" "$opp"
            [ "$t" = 2 ] && summary="$summary $dpp"
        done
    done
else
    echo "(no valgrind: counts skipped)"
fi
echo
printf '| size | threads | native pairs/s | spillway pairs/s | spillway efficiency |\n|---|---|---|---|---|\n'
for size in 65536 4096; do
    run native "$BIN" --threads 1,2 --pairs "$PAIRS" --size "$size" >"$out/n.$size"
    run spw "$BIN" --threads 1,2 --pairs "$PAIRS" --size "$size" >"$out/s.$size"
    for t in 1 2; do
        get() { grep -o "threads=$t .*" "$1" | sed -E "s/.* $2=([0-9.]+).*/\\1/"; }
        printf '| %d | %d | %s | %s | %s |\n' "$size" "$t" "$(get "$out/n.$size" pairs_per_s)" \
            "$(get "$out/s.$size" pairs_per_s)" "$(get "$out/s.$size" efficiency)"
    done
done
set -- $summary
echo "bench-threads: device-lock acquisitions per pair at 2 threads = ${1:-n/a} (64 KiB), ${2:-n/a} (4 KiB)"
