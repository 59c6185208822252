#!/usr/bin/env bash
# spillway-top with the device's own figures (NVML), against
# tests/fakenvml: the line under each GPU in --once and on the screen
# (tmux at 80x24 and 120x30), the devices in --json, UUID labels and
# spillway_gpu_info in --prometheus, CUDA_VISIBLE_DEVICES mapped to the
# host's GPU numbers, and nothing at all when NVML is missing, fails or is
# turned off. Then NVML's process lists (FAKENVML_PROCS): each process's
# figure beside its in use (GPUMEM, nvml_used_bytes, the detail view), and
# the processes not under spillway as rows, in --json's other_processes
# and in spillway_gpu_other_processes_used_bytes, filtered like the rest,
# through every kind of driver the fake can be (current, R535, R470, R418).
set -u
. "$(dirname "$0")/lib.sh"
FAKENVML=$B/fakenvml
[ -f "$FAKENVML/libnvidia-ml.so.1" ] || { echo "FAIL: $FAKENVML/libnvidia-ml.so.1 not built"; exit 1; }
UA=GPU-aaaaaaaa-0000-4000-8000-000000000001
UB=GPU-bbbbbbbb-0000-4000-8000-000000000002
export FAKENVML_DEVICES="name=NVIDIA H100 80GB HBM3,uuid=$UA,util=45,used=30G,total=80G,temp=67,power=250000,plimit=700000;name=NVIDIA H100 80GB HBM3,uuid=$UB,util=3,used=1G,total=80G,temp=na,power=71400,plimit=na"
export FAKENVML_PROCS=$STATS_DIR/.procs
: >"$FAKENVML_PROCS"
with_nvml() { LD_LIBRARY_PATH="$FAKENVML:${LD_LIBRARY_PATH:-}" "$@"; }
ME=$(id -un)

start_writer --cmd "alpha job" --inuse 2147483648; A=$WPID
# Its CUDA devices 0 and 1 are the host's 1 and 0.
CUDA_VISIBLE_DEVICES=1,0 start_writer --cmd "swapped job" --inuse 1073741824; S=$WPID

once=$(with_nvml "$TOP" --once --sort pid)
hw0='       NVIDIA H100 80GB HBM3  util 45%  mem 30G/80G all procs  67C  250W/700W'
hw1='       NVIDIA H100 80GB HBM3  util 3%  mem 1.0G/80G all procs  71W'
check "--once: GPU 0's own figures under its line" grep -qxF -A1 "$hw0" <<<"$once"
check "--once: the figures follow the GPU 0 line" bash -c 'grep -A1 "^GPU 0 " <<<"$1" | tail -1 | grep -qxF "$2"' _ "$once" "$hw0"
check "--once: GPU 1's, without what NVML does not support" bash -c 'grep -A1 "^GPU 1 " <<<"$1" | tail -1 | grep -qxF "$2"' _ "$once" "$hw1"
# NVML lists no process yet: GPUMEM says "-" for each.
check "--once: the swapped process's device 0 is host GPU 1" grep -qE "^ +$S +[^ ]+ +1 +1\.0G +- +8\.0G " <<<"$once"
check "--once: its device 1 is host GPU 0" grep -qE "^ +$S +[^ ]+ +0 +100M +- +4\.0G " <<<"$once"
check "--once: the other process keeps its numbers" grep -qE "^ +$A +[^ ]+ +0 +2\.0G +- +8\.0G " <<<"$once"

no_line() { ! grep -q 'util ' <<<"$1"; }
check "--once without NVML: no device line" no_line "$("$TOP" --once)"
check "--once --no-nvml: no device line" no_line "$(with_nvml "$TOP" --once --no-nvml)"
check "--once --no-nvml: no GPUMEM column" bash -c '! grep -q GPUMEM <<<"$1"' _ "$(with_nvml "$TOP" --once --no-nvml)"
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
check "--json without NVML: no nvml_used_bytes" bash -c '! grep -q nvml_used_bytes <<<"$1"' _ "$("$TOP" --json)"

prom=$(with_nvml "$TOP" --prometheus)
check "--prometheus: UUID of the host GPU" grep -qE "^spillway_in_use_bytes\{pid=\"$A\",[^}]*gpu=\"0\",cuda_device=\"0\",UUID=\"$UA\"" <<<"$prom"
check "--prometheus: mapped through CUDA_VISIBLE_DEVICES" grep -qE "^spillway_in_use_bytes\{pid=\"$S\",[^}]*gpu=\"1\",cuda_device=\"0\",UUID=\"$UB\"[^}]*\} 1073741824$" <<<"$prom"
check "--prometheus: spillway_gpu_info" grep -qE "^spillway_gpu_info\{gpu=\"1\",UUID=\"$UB\",model_name=\"NVIDIA H100 80GB HBM3\",Hostname=\"[^\"]+\"\} 1$" <<<"$prom"
if command -v promtool >/dev/null; then
    check "--prometheus with NVML passes promtool check metrics" bash -c 'promtool check metrics <<<"$1"' _ "$prom"
fi

# ---- NVML's process lists ----
# A process not under spillway (started without the library), one whose pid
# no process has here, and NVML's figures for the two under spillway: each
# holds more than its in use (its CUDA context, its pool).
bash -c 'exec -a other-job sleep 120' & O=$!; writers+=("$O")
GHOST=4194303 # the largest pid Linux gives: nobody's here
cat >"$FAKENVML_PROCS" <<EOF
0 $A 2560M
1 $A 300M
1 $S 1536M
0 $S 200M
0 $O 3G cg
1 $GHOST na
EOF
once=$(with_nvml "$TOP" --once)
check "--once: GPUMEM beside USED" grep -qE '^ +PID +USER +GPU +USED +GPUMEM +LIMIT ' <<<"$once"
check "--once: NVML's figure of alpha on GPU 0" grep -qE "^ +$A +[^ ]+ +0 +2\.0G +2\.5G +8\.0G " <<<"$once"
check "--once: of alpha on GPU 1" grep -qE "^ +$A +[^ ]+ +1 +100M +300M +4\.0G " <<<"$once"
check "--once: of the swapped process, mapped to host GPU 1" grep -qE "^ +$S +[^ ]+ +1 +1\.0G +1\.5G +8\.0G " <<<"$once"
check "--once: and to host GPU 0" grep -qE "^ +$S +[^ ]+ +0 +100M +200M +4\.0G " <<<"$once"
check "--once: a process not under spillway is a row, marked" \
    grep -qE "^ +$O +$ME +0 +3\.0G +3\.0G +not under spillway +other-job 120$" <<<"$once"
check "--once: a pid nobody has here: '?', its figure unknown" \
    grep -qE "^ *$GHOST +\? +1 +- +- +not under spillway +\?$" <<<"$once"
check "--once: GPU 0 counts it beside spillway's" grep -qE "^GPU 0 .* 2 procs, 1 not under spillway using 3\.0G$" <<<"$once"
check "--once: GPU 1 too (an unknown figure counts nothing)" grep -qE "^GPU 1 .* 2 procs, 1 not under spillway using 0B$" <<<"$once"
check "--once: the device's own line still follows its GPU line" bash -c 'grep -A1 "^GPU 0 " <<<"$1" | tail -1 | grep -qxF "$2"' _ "$once" "$hw0"
rows() { grep -E '^ +[0-9]+ ' <<<"$1"; }
for kind in r535 r470 r418; do
    check "--once through a $kind driver: the same rows" \
        [ "$(rows "$(LD_LIBRARY_PATH="$FAKENVML/$kind" "$TOP" --once)")" = "$(rows "$once")" ]
done
filtered=$(with_nvml "$TOP" --once --filter other-job)
check "--filter keeps a process not under spillway by its command" \
    bash -c '[ "$(grep -cE "^ +[0-9]+ " <<<"$1")" = 1 ] && grep -qE "^ +$2 .*other-job 120$" <<<"$1"' _ "$filtered" "$O"
check "--filter: and by its pid" grep -qE "^ *$GHOST " <<<"$(with_nvml "$TOP" --once --filter "$GHOST")"
check "--once: a GPU with only processes not under spillway has no sums of spillway's" \
    grep -qxE "GPU 0  0 procs, 1 not under spillway using 3\.0G" <<<"$filtered"
check "--sort gpu-mem: NVML's figures, largest first" \
    [ "$(with_nvml "$TOP" --once --sort gpu-mem | awk '$1 ~ /^[0-9]+$/ {print $1}' | head -3 | tr '\n' ' ')" = "$O $A $S " ]
# One refresh asks each device once for each list (the cost of a refresh:
# 2 calls per GPU, whatever the processes).
FAKENVML_LOG=$STATS_DIR/.nvml-log with_nvml "$TOP" --once >/dev/null
check "one refresh: one call per list and device" [ "$(wc -l <"$STATS_DIR/.nvml-log")" = 4 ]

json=$(with_nvml "$TOP" --json)
if command -v python3 >/dev/null; then
    check "--json: nvml_used_bytes per device, other_processes per GPU" python3 - "$json" "$A" "$S" "$O" "$ME" "$GHOST" <<'PY'
import json, sys
doc = json.loads(sys.argv[1])
a, s, o, me, ghost = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
procs = {str(p["pid"]): p for p in doc["processes"]}
assert [d["nvml_used_bytes"] for d in procs[a]["devices"]] == [2560 << 20, 300 << 20], procs[a]["devices"]
assert [d["nvml_used_bytes"] for d in procs[s]["devices"]] == [1536 << 20, 200 << 20], procs[s]["devices"]
assert o not in procs, "a process not under spillway is none of spillway's processes"
g0, g1 = doc["gpus"]
assert g0["other_processes"] == [{"pid": int(o), "used_bytes": 3 << 30, "type": "C+G", "user": me,
                                  "command": "other-job 120", "command_truncated": False}], g0
assert g1["other_processes"] == [{"pid": ghost, "used_bytes": None, "type": "C"}], g1
PY
    check "--json --filter: other_processes filtered too" python3 - "$(with_nvml "$TOP" --json --filter other-job)" "$O" <<'PY'
import json, sys
doc = json.loads(sys.argv[1])
assert doc["processes"] == [], doc["processes"]
assert [p["pid"] for p in doc["gpus"][0]["other_processes"]] == [int(sys.argv[2])], doc["gpus"][0]
assert doc["gpus"][1]["other_processes"] == [], doc["gpus"][1]
PY
fi
prom=$(with_nvml "$TOP" --prometheus)
check "--prometheus: memory of GPU 0's processes not under spillway" \
    grep -qE "^spillway_gpu_other_processes_used_bytes\{gpu=\"0\",UUID=\"$UA\",Hostname=\"[^\"]+\"\} 3221225472$" <<<"$prom"
check "--prometheus: GPU 1's (its one process has no figure)" \
    grep -qE "^spillway_gpu_other_processes_used_bytes\{gpu=\"1\",UUID=\"$UB\",Hostname=\"[^\"]+\"\} 0$" <<<"$prom"
check "--prometheus --filter: those the filter keeps" \
    grep -qE '^spillway_gpu_other_processes_used_bytes\{gpu="0",[^}]*\} 0$' <<<"$(with_nvml "$TOP" --prometheus --filter alpha)"
check "--prometheus without NVML: no such family" bash -c '! grep -q other_processes <<<"$1"' _ "$("$TOP" --prometheus)"
if command -v promtool >/dev/null; then
    check "--prometheus with NVML's processes passes promtool check metrics" bash -c 'promtool check metrics <<<"$1"' _ "$prom"
fi

# NVML refuses GPU 0's list: nothing is said of its processes, and why is
# in --json; GPU 1's stay.
sed -i '1i 0 error 4' "$FAKENVML_PROCS"
if command -v python3 >/dev/null; then
    check "--json: a list NVML refuses is unknown, and says why" python3 - "$(with_nvml "$TOP" --json)" "$A" <<'PY'
import json, sys
doc = json.loads(sys.argv[1])
g0, g1 = doc["gpus"]
assert g0["processes_error"] == "compute processes: Insufficient Permissions" and "other_processes" not in g0, g0
assert "other_processes" in g1, g1
a = [p for p in doc["processes"] if p["pid"] == int(sys.argv[2])][0]
assert [d["nvml_used_bytes"] for d in a["devices"]] == [None, 300 << 20], a["devices"]
PY
fi
check "--prometheus: no series for a GPU whose list NVML refuses" \
    bash -c '! grep -q "^spillway_gpu_other_processes_used_bytes{gpu=\"0\"" <<<"$1"' _ "$(with_nvml "$TOP" --prometheus)"
sed -i '1d' "$FAKENVML_PROCS"

# A process not under spillway whose command line is longer than a
# segment's: cut as the stats writer cuts one (between two characters,
# marked "...(truncated)") and said in --json, as for spillway's own.
long="longjob $(printf '\xc3\xa9%.0s' $(seq 600))"
bash -c 'exec -a "$1" sleep 120' _ "$long" & L=$!; writers+=("$L")
poll 5 grep -qa '^longjob' "/proc/$L/cmdline" || echo "  (the long command did not start)"
echo "0 $L 1G" >>"$FAKENVML_PROCS"
if command -v python3 >/dev/null; then
    check "--json: a process not under spillway's long command, cut between characters and marked" \
        python3 - "$(with_nvml "$TOP" --json)" "$L" <<'PY'
import json, sys
doc = json.loads(sys.argv[1])
o = [p for p in doc["gpus"][0]["other_processes"] if p["pid"] == int(sys.argv[2])][0]
# 1023 bytes at most, as a segment's: 8 + 2 x 500 + 14 (the cut falls
# inside the 501st e-acute, which goes whole).
assert o["command"] == "longjob " + "\u00e9" * 500 + "...(truncated)", o["command"][-40:]
assert o["command_truncated"] is True, o
PY
fi
check "--once: its row ends as its command is cut" \
    grep -qE "^ +$L .*not under spillway +longjob .*\.\.\.\(truncated\)$" <<<"$(with_nvml "$TOP" --once)"
sed -i '$d' "$FAKENVML_PROCS"
kill "$L" 2>/dev/null

# The screen at 80x24: the device line under GPU0, whole; the process not
# under spillway a row, marked, and counted on its GPU line; NVML's column
# given up for the command's room. At 120x30 the column is there, and the
# detail view puts NVML's figure beside spillway's.
if command -v tmux >/dev/null 2>&1; then
    SOCK="spw-nvml-$$"
    T() { tmux -L "$SOCK" -f /dev/null "$@"; }
    trap 'T kill-server 2>/dev/null; cleanup' EXIT
    EXIT_FILE="$STATS_DIR/.top-exit"
    start_top() {
        rm -f "$EXIT_FILE"
        T new-session -d -s top -x "$1" -y "$2" \
            "env LD_LIBRARY_PATH='$FAKENVML' FAKENVML_DEVICES='$FAKENVML_DEVICES' FAKENVML_PROCS='$FAKENVML_PROCS' SPILLWAY_STATS_DIR='$STATS_DIR' '$TOP' --interval 0.2 --no-color; echo \$? >'$EXIT_FILE'"
    }
    screen() { T capture-pane -p -t top; }
    shows() { screen | grep -qE "$1"; }
    below_gpu() { screen | grep -A1 "^GPU$1 " | tail -1 | grep -qxF "$2"; }
    start_top 80 24
    check "80x24: GPU0's own figures under its line" poll 10 below_gpu 0 '      NVIDIA H100 80GB HBM3  util 45%  mem 30G/80G all procs  67C  250W/700W'
    check "80x24: GPU1's" poll 5 below_gpu 1 '      NVIDIA H100 80GB HBM3  util 3%  mem 1.0G/80G all procs  71W'
    check "80x24: rows still shown" poll 5 shows "^ +$A +[^ ]+ +0 .*alpha job"
    check "80x24: GPU0's line counts the process not under spillway" poll 5 shows '^GPU0 .* 2p \+1 other$'
    check "80x24: its row, marked, its command whole" poll 5 shows "^ +$O +$ME +0 \[ +3\.0G\] not under spillway +other-job 120$"
    check "80x24: NVML's column gives way to the command" bash -c '! tmux -L "$1" capture-pane -p -t top | grep -q "GPU MEM"' _ "$SOCK"
    check "80x24: no line wider than the screen" bash -c '[ "$(tmux -L "$1" capture-pane -p -t top | awk "{ if (length > m) m = length } END { print m }")" -le 80 ]' _ "$SOCK"
    screen > "$STATS_DIR/.screen"
    T send-keys -t top Enter # the first row: the process not under spillway
    check "80x24: Enter on it says there is no more to see" poll 5 shows "^pid $O is not under spillway"
    T send-keys -t top K
    check "80x24: K does not signal it" poll 5 shows "^pid $O is not under spillway: K signals only"
    check "80x24: it still runs" kill -0 "$O"
    T send-keys -t top G Enter # the last row: the pid nobody has here, no figure
    check "80x24: Enter on one without a figure does not speak of one" poll 5 \
        shows "^pid $GHOST is not under spillway: its row is all there is$"
    T send-keys -t top g
    T send-keys -t top Down Enter # alpha's row on GPU 0
    check "80x24: the detail view's NVML line whole, without what does not fit" poll 5 \
        shows "^    NVML: 2\.5G on the device, 768M more than the 1\.8G in use there$"
    T send-keys -t top q q
    check "80x24: quits with status 0" poll 5 grep -qsx 0 "$EXIT_FILE"
    echo "--- screen at 80x24 with the fake NVML:"
    cat "$STATS_DIR/.screen"

    # --once on an 80-column terminal: a GPU line the terminal would wrap
    # puts the processes not under spillway on a line of their own.
    T new-session -d -s once -x 80 -y 40 \
        "env LD_LIBRARY_PATH='$FAKENVML' FAKENVML_DEVICES='$FAKENVML_DEVICES' FAKENVML_PROCS='$FAKENVML_PROCS' SPILLWAY_STATS_DIR='$STATS_DIR' '$TOP' --once; sleep 100"
    once_pane() { T capture-pane -p -J -t once; }
    after_gpu0() { once_pane | grep -A1 "^GPU 0 " | tail -1 | grep -qxE "$1"; }
    check "--once at 80 columns: GPU 0's processes not under spillway on a line of their own" \
        poll 10 after_gpu0 ' {7}1 not under spillway using 3\.0G'
    check "--once at 80 columns: no line wider than the terminal" \
        bash -c '[ "$(tmux -L "$1" capture-pane -p -J -t once | awk "{ if (length > m) m = length } END { print m }")" -le 80 ]' _ "$SOCK"
    T kill-session -t once

    start_top 120 30
    check "120x30: GPU MEM beside IN USE" poll 10 shows '^ +PID +USER +GPU +IN USE +GPU MEM +PEAK '
    check "120x30: alpha's NVML figure" poll 5 shows "^ +$A +[^ ]+ +0 \[[| ]+2\.0G\] +2\.5G +3\.0G "
    check "120x30: the other process's" poll 5 shows "^ +$O +$ME +0 \[ +3\.0G\] +3\.0G not under spillway +other-job 120$"
    check "120x30: the unknown one's" poll 5 shows "^ *$GHOST +\? +1 \[ +-\] +- not under spillway +\?$"
    screen > "$STATS_DIR/.screen"
    T send-keys -t top s
    check "120x30: s goes from IN USE to GPU MEM, a column here" poll 5 shows 'sort GPU MEM v'
    T send-keys -t top '<'
    check "120x30: and < back" poll 5 shows 'sort IN USE v'
    T send-keys -t top Down Enter # alpha's row on GPU 0, after the other's 3.0G
    check "120x30: the detail view has NVML's figure beside in use" poll 5 \
        shows "^    NVML: 2\.5G on the device, 768M more than the 1\.8G in use there \(context, pool\)$"
    check "120x30: for each device" shows "^    NVML: 300M on the device, 200M more than the 100M in use there"
    # Where there is no figure, the detail view says why; where NVML's is
    # the smaller, no context and pool explain the difference.
    sed -i '1i 0 error 4' "$FAKENVML_PROCS"
    check "120x30: no figure where NVML refuses the GPU's list, and why" poll 5 \
        shows "^    NVML: no figure: GPU 0's processes cannot be listed \(compute processes: Insufficient Permissions\)$"
    sed -i '1i 1 error 4' "$FAKENVML_PROCS"
    check "120x30: and where it refuses every GPU's (GPU MEM is no column then)" poll 5 \
        shows "^    NVML: no figure: GPU 1's processes cannot be listed \(compute processes: Insufficient Permissions\)$"
    check "120x30: GPU 0's reason stays" shows "^    NVML: no figure: GPU 0's processes cannot be listed"
    sed -i '1,2d' "$FAKENVML_PROCS"
    sed -i "s/^1 $A 300M\$/1 $A 50M/" "$FAKENVML_PROCS"
    check "120x30: NVML's figure below in use: less, and no context nor pool to explain it" poll 5 \
        shows "^    NVML: 50M on the device, 50M less than the 100M in use there$"
    sed -i "/^1 $A 50M\$/d" "$FAKENVML_PROCS"
    check "120x30: no figure where the process is not on the GPU's list" poll 5 \
        shows "^    NVML: no figure: not on GPU 1's list$"
    sed -i "1a 1 $A 300M" "$FAKENVML_PROCS"
    check "120x30: the figure back with the list" poll 5 shows "^    NVML: 300M on the device, 200M more than"
    T send-keys -t top q / o t h e r - j o b Enter
    check "120x30: a GPU with only processes not under spillway says so, with their count" poll 5 \
        shows '^GPU0  no process under spillway +0p \+1 other$'
    check "120x30: and no bar nor sums of spillway's (a limit of 0B)" bash -c '! tmux -L "$1" capture-pane -p -t top | grep -qE "^GPU0 .*(\[|lim)"' _ "$SOCK"
    T send-keys -t top q
    check "120x30: quits with status 0" poll 5 grep -qsx 0 "$EXIT_FILE"
    echo "--- screen at 120x30 with NVML's processes:"
    cat "$STATS_DIR/.screen"
else
    echo "SKIP: tmux is not installed; the screen's device line is not tested"
fi
finish
