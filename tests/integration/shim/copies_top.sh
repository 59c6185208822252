#!/usr/bin/env bash
# End to end: a program's copies (copy_hold.c, against fakecuda) run through
# `spillway run` show in its stats segment by direction, as
# `spillway-top --json` and `--prometheus` show them; the refused copy is not
# counted.
set -u
. "$(dirname "$0")/../../unit/tools/lib.sh"
LIB=$B/libspillway.so
HOLD=$B/tests/integration/shim_copy_hold
[ -f "$LIB" ] || { echo "FAIL: $LIB not built"; exit 1; }
MiB=1048576
export LD_LIBRARY_PATH="$B/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="$STATS_DIR/.hold"
"$SPW" run --lib "$LIB" --limit 64M -- "$HOLD" >"$out" &
H=$!
writers+=("$H")
check "program starts under spillway" poll 10 grep -qs '^ready' "$out"
check "the driver refused the bad copy" grep -q 'refused=1' "$out"
check "a segment appears" poll 5 test -e "$STATS_DIR/spillway.$(id -u).$H"
json=$("$TOP" --json)
proc=$(grep "\"pid\":$H," <<<"$json")
dev0=$(sed -E 's/.*"devices":\[\{"index":0,([^}]*)\}.*/\1/' <<<"$proc")
field() { grep -oE "\"$2\":[0-9]+" <<<"$1" | cut -d: -f2; }
for kv in copy_htod_bytes=$((3 * MiB + 1)) copy_dtoh_bytes=$((2 * MiB + 3)) \
          copy_dtod_bytes=$((1 * MiB + 5)) allocs=2 underflows=0; do
    k=${kv%%=*}; v=${kv#*=}
    check "--json device 0 $k = $v" [ "$(field "$dev0" "$k")" = "$v" ]
done
prom=$("$TOP" --prometheus | grep "pid=\"$H\"")
check "--prometheus copy_htod_bytes_total" \
    grep -q "^spillway_copy_htod_bytes_total{.*gpu=\"0\".*} $((3 * MiB + 1))\$" <<<"$prom"
kill -TERM "$H"; wait "$H"
check "program exits 0" [ $? -eq 0 ]
finish
