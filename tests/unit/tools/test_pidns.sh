#!/usr/bin/env bash
# A writer in a pid namespace of its own (as in a pod, which sees only its
# own pids) is found by its namespace: spillway-top shows it under its pid
# here, alive, with its cgroup and environment read, and once it is killed
# its segment is judged dead and removed. Skips where namespaces cannot be
# made (not root, or a sandbox that forbids them).
set -u
. "$(dirname "$0")/lib.sh"
if ! unshare -p -f --mount-proc true 2>/dev/null; then
    echo "SKIP: cannot create a pid namespace here (unshare -p needs root and a sandbox that allows it)"
    exit 0
fi
out="$STATS_DIR/.nswriter"
CUDA_VISIBLE_DEVICES=1 unshare -p -f --mount-proc "$WRITER" --cmd "namespaced job" --inuse 1073741824 >"$out" &
U=$!; writers+=("$U")
check "writer starts in its own pid namespace" poll 10 grep -qs '^ready ' "$out"
seg=$(sed -n 's/^ready //p' "$out")
check "it sees itself as pid 1" [ "$(basename "$seg")" = "spillway.$(id -u).1" ]
# The writer is the child unshare forked.
W=$(pgrep -P "$U" -f stats_writer | head -1)
check "its pid here is known" [ -n "$W" ]
json=$("$TOP" --json)
check "--json shows it under its pid here" grep -q "\"pid\":$W,\"ns_pid\":1," <<<"$json"
check "--json: alive" grep -q "\"pid\":$W,[^}]*\"liveness\":\"alive\"" <<<"$json"
check "--once lists it" grep -qE "^ +$W +[^ ]+ +1 .*namespaced job" <<<"$("$TOP" --once)"
check "--prometheus: its environment was read (CUDA_VISIBLE_DEVICES=1: device 0 is GPU 1)" \
    grep -qE "^spillway_in_use_bytes\{pid=\"$W\",[^}]*gpu=\"1\",cuda_device=\"0\"" <<<"$("$TOP" --prometheus)"
kill -9 "$W"; wait "$U" 2>/dev/null
err=$("$TOP" --once 2>&1 >/dev/null)
check "killed: its segment is judged dead and removed" [ ! -e "$seg" ]
check "and the removal is noted" grep -q "spillway.$(id -u).1: owner pid 1 is gone; removed" <<<"$err"

# Pods on one node share its stats directory, and each pod's program is
# pid 1 of its own namespace: two of them at once must both publish (the
# second was refused, "File exists", and ran without stats) and both show.
outs=()
for i in 1 2; do
    outs[$i]="$STATS_DIR/.podwriter$i"
    unshare -p -f --mount-proc "$WRITER" --cmd "pod job $i" --inuse $((i << 30)) >"${outs[$i]}" 2>"${outs[$i]}.err" &
    writers+=("$!")
done
for i in 1 2; do
    check "pod writer $i publishes beside the other pid 1" poll 10 grep -qs '^ready ' "${outs[$i]}"
done
json=$("$TOP" --json)
for i in 1 2; do
    check "--json shows pod job $i, alive" grep -qE "\"ns_pid\":1,[^}]*\"command\":\"pod job $i\",[^}]*\"liveness\":\"alive\"" <<<"$json"
done
# An exporter that cannot see the pods' pids (no hostPID) shows both as pid
# 1: each must keep its series (one was dropped as a duplicate), told apart
# by the pid namespace.
prom=$(unshare -p -f --mount-proc "$TOP" --prometheus 2>/dev/null)
for i in 1 2; do
    check "--prometheus from another pid namespace: pod job $i's series" \
        grep -qE "^spillway_in_use_bytes\{pid=\"1\",[^}]*command=\"pod\",[^}]*\} $((i << 30))$" <<<"$prom"
done
check "--prometheus from another pid namespace: no two series with one label set" \
    bash -c '[ -z "$(grep -E "^spillway_[a-z_]+\{" <<<"$1" | sed -E "s/\} .*/}/" | sort | uniq -d)" ]' _ "$prom"
# An NVML pid that is no process of spillway-top's pid namespace (a
# driver that reports the host's pids to a container without them) is
# listed as NVML has it, not under spillway, with '?' for who it is.
if [ -f "$B/fakenvml/libnvidia-ml.so.1" ]; then
    echo "0 $$ 1G" >"$STATS_DIR/.procs"
    nvtop() { LD_LIBRARY_PATH="$B/fakenvml" FAKENVML_PROCS="$STATS_DIR/.procs" "$@"; }
    check "NVML's pid here: this shell, not under spillway" \
        grep -qE "^ *$$ +$(id -un) .* not under spillway +.*bash" <<<"$(nvtop "$TOP" --once)"
    check "from another pid namespace, where it is nobody: '?'" \
        grep -qE "^ *$$ +\? +0 +1\.0G +1\.0G +not under spillway +\?$" <<<"$(nvtop unshare -p -f --mount-proc "$TOP" --once 2>/dev/null)"
fi
for i in 1 2; do
    P=$(pgrep -f "stats_writer --cmd pod job $i" | while read -r p; do [ "$(ps -o comm= -p "$p")" = stats_writer ] && echo "$p"; done | head -1)
    [ -n "$P" ] && kill "$P"
done
check "both segments go when their writers exit" poll 10 sh -c "! ls '$STATS_DIR' | grep -q '^spillway\\.'"
finish
