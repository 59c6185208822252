#!/usr/bin/env bash
# End to end: a CUDA program (against fakecuda) run through `spillway run`
# publishes a stats segment whose counters equal what it did, and
# spillway-top --once/--json show it. Skips, saying why, while
# libspillway.so does not contain the stats writer yet.
set -u
. "$(dirname "$0")/../../unit/tools/lib.sh"
LIB=$B/libspillway.so
HOLD=$B/tests/integration/tools/cuda_hold
[ -f "$LIB" ] || { echo "FAIL: $LIB not built"; exit 1; }
if ! grep -q SPILLWAY_STATS_DIR "$LIB"; then
    echo "SKIP: $LIB does not include the stats writer yet (the shim does not publish stats)"
    exit 0
fi
MiB=1048576
export LD_LIBRARY_PATH="$B/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="$STATS_DIR/.hold"
"$SPW" run --lib "$LIB" --limit 64M --no-spill -- "$HOLD" $((8 * MiB)) >"$out" &
H=$!
writers+=("$H")
check "program starts under spillway" poll 10 grep -qs '^ready' "$out"
check "the driver refused the 1 TiB allocation" grep -q 'oom=1' "$out"
check "a segment appears" poll 5 test -e "$STATS_DIR/spillway.$(id -u).$H"
json=$("$TOP" --json)
proc=$(grep "\"pid\":$H," <<<"$json")
dev0=$(sed -E 's/.*"devices":\[\{"index":0,([^}]*)\}.*/\1/' <<<"$proc")
field() { grep -oE "\"$2\":[0-9]+" <<<"$1" | cut -d: -f2; }
for kv in limit_bytes=$((64 * MiB)) in_use_bytes=$((16 * MiB)) peak_bytes=$((24 * MiB)) allocs=3 frees=1 ooms=1 underflows=0; do
    k=${kv%%=*}; v=${kv#*=}
    check "segment device 0 $k = $v" [ "$(field "$dev0" "$k")" = "$v" ]
done
check "config published" grep -qi '"config":"[^"]*limit' <<<"$proc"
row=$("$TOP" --once | awk -v p="$H" '$1 == p && $3 == 0')
check "--once row: 16M of 64M" grep -qE " 16M +64M +24M " <<<"$row"
check "--once row: command" grep -q "cuda_hold" <<<"$row"
check "--json: the command whole" grep -q '"command":"[^"]*cuda_hold [0-9]*","command_truncated":false' <<<"$proc"
kill -TERM "$H"; wait "$H"
check "program exits 0" [ $? -eq 0 ]
check "its segment is removed at exit" [ ! -e "$STATS_DIR/spillway.$(id -u).$H" ]
# A config longer than the segment's field (a SPILLWAY_STATS_DIR of ~2800
# bytes; options take 4095) ended inside the path with the later entries
# gone, unmarked: now the limits come first and the cut is marked.
long=$STATS_DIR
for i in $(seq 14); do long=$long/$(printf 'd%.0s' $(seq 200)); done
mkdir -p "$long"
: >"$out" # the last program's "ready" must not pass for this one's
SPILLWAY_STATS_DIR=$long "$SPW" run --lib "$LIB" --limit 64M --no-spill -- "$HOLD" $((8 * MiB)) >"$out" &
H=$!
writers+=("$H")
check "long dir: program starts" poll 10 grep -qs '^ready' "$out"
proc=$(SPILLWAY_STATS_DIR=$long "$TOP" --json | grep "\"pid\":$H,")
check "long dir: the limits come first" grep -q '"config":"device.0.limit=67108864\\nSPILLWAY_MEM_FRACTION=[^"]*\\nSPILLWAY_MEM_LIMIT=67108864\\n' <<<"$proc"
check "long dir: the cut is marked" grep -q '\\n\.\.\.(truncated)\\n","config_truncated":true' <<<"$proc"
kill -TERM "$H"; wait "$H"
# A command line longer than the segment's 1023 bytes (an argument of 600
# two-byte characters) was cut at the 1023rd byte, inside a character (the
# reader showed its half as '?'), with nothing to say so: now it is cut
# between characters, marked, and --json says so.
arg=x$(printf '\xc3\xa9%.0s' $(seq 600))
: >"$out" # the last program's "ready" must not pass for this one's
"$SPW" run --lib "$LIB" --limit 64M --no-spill -- "$HOLD" $((8 * MiB)) "$arg" >"$out" &
H=$!
writers+=("$H")
check "long command: program starts" poll 10 grep -qs '^ready' "$out"
proc=$("$TOP" --json | grep "\"pid\":$H,")
check "long command: the cut is marked and said" grep -q "\"command\":\"[^\"]*cuda_hold $((8 * MiB)) xé\(é\)*\.\.\.(truncated)\",\"command_truncated\":true" <<<"$proc"
check "long command: no character cut in two" bash -c '! grep -o "\"command\":\"[^\"]*\"" <<<"$1" | grep -q "?"' _ "$proc"
kill -TERM "$H"; wait "$H"
# A device the program has a CUDA context on but has not allocated on: its
# counters show nothing, while NVML (tests/fakenvml) says the program holds
# memory there. That device is a row with NVML's figure: it was nobody's
# row (nor one of the processes not under spillway, which leaves
# spillway's pids out), though the GPU's memory was held.
FAKENVML=$B/fakenvml
if [ -f "$FAKENVML/libnvidia-ml.so.1" ]; then
    : >"$out" # the last program's "ready" must not pass for this one's
    FAKECUDA_DEVICES=2 "$SPW" run --lib "$LIB" --limit 64M --no-spill -- "$HOLD" $((8 * MiB)) >"$out" &
    H=$!
    writers+=("$H")
    check "idle device: program starts" poll 10 grep -qs '^ready' "$out"
    printf '0 %s 200M\n1 %s 300M\n' "$H" "$H" >"$STATS_DIR/.procs"
    nv() { LD_LIBRARY_PATH="$FAKENVML:$LD_LIBRARY_PATH" FAKENVML_DEVICES="name=NVIDIA H100,uuid=GPU-a;name=NVIDIA H100,uuid=GPU-b" \
        FAKENVML_PROCS="$STATS_DIR/.procs" "$@"; }
    once=$(nv "$TOP" --once)
    check "idle device: its row on GPU 0 with NVML's figure" grep -qE "^ +$H +[^ ]+ +0 +16M +200M +64M " <<<"$once"
    check "idle device: a row on GPU 1 too, with NVML's figure" grep -qE "^ +$H +[^ ]+ +1 +0B +300M +64M " <<<"$once"
    check "idle device: not without NVML's figure" bash -c '! awk -v p="$1" "\$1 == p && \$3 == 1" <<<"$2" | grep -q .' \
        _ "$H" "$(nv "$TOP" --once --no-nvml)"
    kill -TERM "$H"; wait "$H"
fi
# SPILLWAY_STATS_DIR unset: the library and spillway-top both take the
# option table's default (the stats layer has none of its own).
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    : >"$out" # the last program's "ready" must not pass for this one's
    env -u SPILLWAY_STATS_DIR "$SPW" run --lib "$LIB" --limit 64M --no-spill -- "$HOLD" $((8 * MiB)) >"$out" &
    H=$!
    writers+=("$H")
    check "unset: program starts" poll 10 grep -qs '^ready' "$out"
    check "unset: its segment is in /dev/shm" poll 5 test -e "/dev/shm/spillway.$(id -u).$H"
    check "unset: spillway-top reads /dev/shm" grep -q "\"pid\":$H," <<<"$(env -u SPILLWAY_STATS_DIR "$TOP" --json)"
    kill -TERM "$H"; wait "$H"
    check "unset: its segment is removed at exit" [ ! -e "/dev/shm/spillway.$(id -u).$H" ]
else
    echo "ok - unset: skipped, /dev/shm is not a writable directory here"
fi
finish
