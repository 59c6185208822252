#!/usr/bin/env bash
# spillway-top with the device's own figures (NVML), against
# tests/fakenvml: the line under each GPU in --once and on the screen
# (tmux at 80x24), the devices in --json, UUID labels and spillway_gpu_info
# in --prometheus, CUDA_VISIBLE_DEVICES mapped to the host's GPU numbers,
# and nothing at all when NVML is missing, fails or is turned off.
set -u
. "$(dirname "$0")/lib.sh"
FAKENVML=$B/fakenvml
[ -f "$FAKENVML/libnvidia-ml.so.1" ] || { echo "FAIL: $FAKENVML/libnvidia-ml.so.1 not built"; exit 1; }
UA=GPU-aaaaaaaa-0000-4000-8000-000000000001
UB=GPU-bbbbbbbb-0000-4000-8000-000000000002
export FAKENVML_DEVICES="name=NVIDIA H100 80GB HBM3,uuid=$UA,util=45,used=30G,total=80G,temp=67,power=250000,plimit=700000;name=NVIDIA H100 80GB HBM3,uuid=$UB,util=3,used=1G,total=80G,temp=na,power=71400,plimit=na"
with_nvml() { LD_LIBRARY_PATH="$FAKENVML:${LD_LIBRARY_PATH:-}" "$@"; }

start_writer --cmd "alpha job" --inuse 2147483648; A=$WPID
# Its CUDA devices 0 and 1 are the host's 1 and 0.
CUDA_VISIBLE_DEVICES=1,0 start_writer --cmd "swapped job" --inuse 1073741824; S=$WPID

once=$(with_nvml "$TOP" --once --sort pid)
hw0='       NVIDIA H100 80GB HBM3  util 45%  mem 30G/80G all procs  67C  250W/700W'
hw1='       NVIDIA H100 80GB HBM3  util 3%  mem 1.0G/80G all procs  71W'
check "--once: GPU 0's own figures under its line" grep -qxF -A1 "$hw0" <<<"$once"
check "--once: the figures follow the GPU 0 line" bash -c 'grep -A1 "^GPU 0 " <<<"$1" | tail -1 | grep -qxF "$2"' _ "$once" "$hw0"
check "--once: GPU 1's, without what NVML does not support" bash -c 'grep -A1 "^GPU 1 " <<<"$1" | tail -1 | grep -qxF "$2"' _ "$once" "$hw1"
check "--once: the swapped process's device 0 is host GPU 1" grep -qE "^ +$S +[^ ]+ +1 +1\.0G +8\.0G " <<<"$once"
check "--once: its device 1 is host GPU 0" grep -qE "^ +$S +[^ ]+ +0 +100M +4\.0G " <<<"$once"
check "--once: the other process keeps its numbers" grep -qE "^ +$A +[^ ]+ +0 +2\.0G +8\.0G " <<<"$once"

no_line() { ! grep -q 'util ' <<<"$1"; }
check "--once without NVML: no device line" no_line "$("$TOP" --once)"
check "--once --no-nvml: no device line" no_line "$(with_nvml "$TOP" --once --no-nvml)"
out=$(FAKENVML_INIT=9 with_nvml "$TOP" --once 2>&1); rc=$?
check "NVML init failing: exit 0, no device line, no message" bash -c '[ "$1" -eq 0 ] && ! grep -qE "util |NVML" <<<"$2"' _ $rc "$out"

json=$(with_nvml "$TOP" --json)
if command -v python3 >/dev/null; then
    check "--json: the devices' own figures" python3 - "$json" "$UA" "$UB" <<'EOF'
import json, sys
doc = json.loads(sys.argv[1])
g = doc["gpus"]
assert [d["uuid"] for d in g] == sys.argv[2:4], g
assert g[0]["utilization_gpu_percent"] == 45 and g[0]["memory_used_bytes"] == 30 << 30, g[0]
assert g[0]["temperature_celsius"] == 67 and g[0]["power_limit_watts"] == 700.0, g[0]
assert "temperature_celsius" not in g[1] and "power_limit_watts" not in g[1], g[1]
EOF
fi
check "--json without NVML: no gpus" bash -c '! grep -q "\"gpus\"" <<<"$1"' _ "$("$TOP" --json)"

prom=$(with_nvml "$TOP" --prometheus)
check "--prometheus: UUID of the host GPU" grep -qE "^spillway_in_use_bytes\{pid=\"$A\",[^}]*gpu=\"0\",cuda_device=\"0\",UUID=\"$UA\"" <<<"$prom"
check "--prometheus: mapped through CUDA_VISIBLE_DEVICES" grep -qE "^spillway_in_use_bytes\{pid=\"$S\",[^}]*gpu=\"1\",cuda_device=\"0\",UUID=\"$UB\"[^}]*\} 1073741824$" <<<"$prom"
check "--prometheus: spillway_gpu_info" grep -qE "^spillway_gpu_info\{gpu=\"1\",UUID=\"$UB\",model_name=\"NVIDIA H100 80GB HBM3\",Hostname=\"[^\"]+\"\} 1$" <<<"$prom"
if command -v promtool >/dev/null; then
    check "--prometheus with NVML passes promtool check metrics" bash -c 'promtool check metrics <<<"$1"' _ "$prom"
fi

# The screen at 80x24: the device line under GPU0, whole.
if command -v tmux >/dev/null 2>&1; then
    SOCK="spw-nvml-$$"
    T() { tmux -L "$SOCK" -f /dev/null "$@"; }
    trap 'T kill-server 2>/dev/null; cleanup' EXIT
    EXIT_FILE="$STATS_DIR/.top-exit"
    T new-session -d -s top -x 80 -y 24 \
        "env LD_LIBRARY_PATH='$FAKENVML' FAKENVML_DEVICES='$FAKENVML_DEVICES' SPILLWAY_STATS_DIR='$STATS_DIR' '$TOP' --interval 0.2 --no-color; echo \$? >'$EXIT_FILE'"
    screen() { T capture-pane -p -t top; }
    below_gpu() { screen | grep -A1 "^GPU$1 " | tail -1 | grep -qxF "$2"; }
    check "80x24: GPU0's own figures under its line" poll 10 below_gpu 0 '      NVIDIA H100 80GB HBM3  util 45%  mem 30G/80G all procs  67C  250W/700W'
    check "80x24: GPU1's" poll 5 below_gpu 1 '      NVIDIA H100 80GB HBM3  util 3%  mem 1.0G/80G all procs  71W'
    check "80x24: rows still shown" poll 5 bash -c "tmux -L '$SOCK' capture-pane -p -t top | grep -qE '^ +$A +[^ ]+ +0 .*alpha job'"
    check "80x24: no line wider than the screen" bash -c '[ "$(tmux -L "$1" capture-pane -p -t top | awk "{ if (length > m) m = length } END { print m }")" -le 80 ]' _ "$SOCK"
    screen > "$STATS_DIR/.screen"
    T send-keys -t top q
    check "80x24: quits with status 0" poll 5 grep -qsx 0 "$EXIT_FILE"
    echo "--- screen at 80x24 with the fake NVML:"
    cat "$STATS_DIR/.screen"
else
    echo "SKIP: tmux is not installed; the screen's device line is not tested"
fi
finish
