#!/usr/bin/env bash
# bench-spill (issue 14): cost per spilled page for pools of 1k, 10k and 40k
# pages (bench/spill_bench.c), instructions counted by callgrind inside the
# measured phase when valgrind is installed (a count, the same run to run
# on one machine), else wall time. Ends with the one line a script checks:
#   bench-spill: scaling 40k/1k = R, syncs per batch = S, critical-path host pages = H
set -euo pipefail
BUILD=${BUILD:-build}
BIN=$BUILD/bench/spill_bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
have_cg=0
command -v valgrind >/dev/null && have_cg=1
echo "bench-spill on $(uname -n) ($(nproc) cores), $(date -u +%F); policy over the fake backend (driver calls counted, no bytes moved), 2 MiB pages"
if [ $have_cg = 1 ]; then unit="instructions"; else unit="ns (no valgrind: wall time)"; fi
printf '| pool pages | spilled pages | spill events | device syncs | %s per spilled page | critical-path host pages |\n' "$unit"
printf '|---|---|---|---|---|---|\n'
declare -A cost
worst_sync=0 host=0
for n in 1024 10240 40960; do
    if [ $have_cg = 1 ]; then
        line=$(valgrind --tool=callgrind --toggle-collect=measured_phase \
            --callgrind-out-file="$out/cg.$n" "$BIN" "$n" 2>/dev/null)
        ir=$(awk '/^summary:/ {print $2}' "$out/cg.$n")
    else
        line=$("$BIN" "$n")
    fi
    get() { sed -E "s/.*$1=([0-9.]+).*/\\1/" <<<"$line"; }
    pages=$(get spilled_pages) events=$(get spill_events) syncs=$(get device_syncs)
    crit=$(get critical_host_pages) secs=$(get seconds)
    if [ $have_cg = 1 ]; then per=$((ir / pages)); else per=$(awk -v s="$secs" -v p="$pages" 'BEGIN{printf "%d", s*1e9/p}'); fi
    cost[$n]=$per
    # syncs per batch: device syncs over spill events (one quiesce each)
    s=$(awk -v a="$syncs" -v b="$events" 'BEGIN{printf "%.2f", b ? a/b : 0}')
    awk -v s="$s" -v w="$worst_sync" 'BEGIN{exit !(s > w)}' && worst_sync=$s
    host=$((host + crit))
    printf '| %d | %d | %d | %d | %d | %d |\n' "$n" "$pages" "$events" "$syncs" "$per" "$crit"
done
ratio=$(awk -v a="${cost[40960]}" -v b="${cost[1024]}" 'BEGIN{printf "%.2f", a/b}')
echo "bench-spill: scaling 40k/1k = $ratio, syncs per batch = $worst_sync, critical-path host pages = $host"
