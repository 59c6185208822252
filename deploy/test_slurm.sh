#!/usr/bin/env bash
# The Slurm TaskProlog with a fake Slurm environment (and a fake
# nvidia-smi): the limit it exports for shards, whole GPUs, GPUs shared by
# tasks (this node's count, from a layout that differs across nodes);
# nothing for a job without GPUs; a note instead of a limit when the GPU's
# memory cannot be told; a refused task (exit 1, the reason printed) for a
# setting or a layout it cannot read; sizes in spillway's own grammar; and
# what it exports is accepted by spillway's own strict parser. Run under
# dash, as Slurm runs it with /bin/sh.
set -u
. "$(dirname "$0")/../tests/unit/tools/lib.sh"
PROLOG=$(cd "$(dirname "$0")" && pwd)/slurm/spillway-taskprolog.sh
SH=$(command -v dash || echo sh)
LIB=$B/libspillway.so
FAKEBIN="$STATS_DIR/bin"
mkdir -p "$FAKEBIN"
# nvidia-smi answering for two 80 GB GPUs (81559 MiB, as an H100 reports).
cat >"$FAKEBIN/nvidia-smi" <<'SMI'
#!/bin/sh
case "$*" in *memory.total*) echo 81559; echo 81559 ;; *) exit 6 ;; esac
SMI
chmod +x "$FAKEBIN/nvidia-smi"

# prolog VAR=value...: runs the prolog with only these Slurm variables (and
# no configuration file), prints what it prints.
prolog() { env -i PATH="$FAKEBIN:/usr/bin:/bin" SPW_SLURM_CONF=/nonexistent SPW_SLURM_LIB= "$@" "$SH" "$PROLOG"; }
is() { local want=$1; shift; local got; got=$(prolog "$@"); [ "$got" = "$want" ] || { echo "  got: $got"; return 1; }; }

check "shards: 2 of 8 of an 80G GPU is 20G" \
    is $'export SPILLWAY_MEM_LIMIT=20480M\nexport SPILLWAY_SPILL=1' SLURM_SHARDS_ON_NODE=2 SPW_SLURM_GPU_MEMORY=80G
check "shards per GPU from the settings" \
    is $'export SPILLWAY_MEM_LIMIT=40960M\nexport SPILLWAY_SPILL=1' SLURM_SHARDS_ON_NODE=2 SPW_SLURM_SHARDS_PER_GPU=4 SPW_SLURM_GPU_MEMORY=80G
check "a whole GPU, its memory from nvidia-smi" \
    is $'export SPILLWAY_MEM_LIMIT=81559M\nexport SPILLWAY_SPILL=1' SLURM_JOB_GPUS=0 SLURM_TASKS_PER_NODE=1
check "one GPU shared by 4 tasks: a quarter each" \
    is $'export SPILLWAY_MEM_LIMIT=20480M\nexport SPILLWAY_SPILL=1' SLURM_STEP_GPUS=3 SLURM_STEP_TASKS_PER_NODE='4(x2)' SPW_SLURM_GPU_MEMORY=80G
check "two GPUs, two tasks: a whole GPU each" \
    is $'export SPILLWAY_MEM_LIMIT=81920M\nexport SPILLWAY_SPILL=1' SLURM_JOB_GPUS=0,1 SLURM_TASKS_PER_NODE=2 SPW_SLURM_GPU_MEMORY=80G
check "two GPUs, eight tasks" \
    is $'export SPILLWAY_MEM_LIMIT=20480M\nexport SPILLWAY_SPILL=1' SLURM_JOB_GPUS=0,1 SLURM_TASKS_PER_NODE=8 SPW_SLURM_GPU_MEMORY=80G
check "spill off from the settings" \
    is $'export SPILLWAY_MEM_LIMIT=81920M\nexport SPILLWAY_SPILL=0' SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY=80G SPW_SLURM_SPILL=0
check "no GPU: nothing" is "" SLURM_JOB_ID=7 SLURM_TASKS_PER_NODE=4
check "GPU memory unknown: a note, no limit" \
    is "print spillway: cannot tell the GPU's memory (set SPW_SLURM_GPU_MEMORY in /nonexistent); no GPU memory limit set" \
    SLURM_JOB_GPUS=0 PATH=/usr/bin:/bin
# Tasks per node differ across nodes: each node's own count, found by
# SLURM_NODEID in the list, compressed repeats ("2(x3),1") expanded.
check "3 tasks on node 0, 1 on node 1: node 1's task has the whole GPU" \
    is $'export SPILLWAY_MEM_LIMIT=81920M\nexport SPILLWAY_SPILL=1' SLURM_NODEID=1 SLURM_TASKS_PER_NODE='3,1' SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY=80G
check "3 tasks on node 0, 1 on node 1: node 0's a third" \
    is $'export SPILLWAY_MEM_LIMIT=27306M\nexport SPILLWAY_SPILL=1' SLURM_NODEID=0 SLURM_TASKS_PER_NODE='3,1' SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY=80G
check "2(x3),1: node 2 of the repeat has 2 tasks" \
    is $'export SPILLWAY_MEM_LIMIT=40960M\nexport SPILLWAY_SPILL=1' SLURM_NODEID=2 SLURM_STEP_TASKS_PER_NODE='2(x3),1' SLURM_STEP_GPUS=0 SPW_SLURM_GPU_MEMORY=80G
check "2(x3),1: node 3, after the repeat, has 1" \
    is $'export SPILLWAY_MEM_LIMIT=81920M\nexport SPILLWAY_SPILL=1' SLURM_NODEID=3 SLURM_STEP_TASKS_PER_NODE='2(x3),1' SLURM_STEP_GPUS=0 SPW_SLURM_GPU_MEMORY=80G
check "the step's layout wins over the job's" \
    is $'export SPILLWAY_MEM_LIMIT=81920M\nexport SPILLWAY_SPILL=1' SLURM_NODEID=1 SLURM_STEP_TASKS_PER_NODE='4,1' SLURM_TASKS_PER_NODE='4,4' SLURM_STEP_GPUS=0 SPW_SLURM_GPU_MEMORY=80G
# What it cannot read stops the task (exit 1) with the reason in its
# output, and nothing on stderr: no limit is never the silent outcome of a
# typo, and the shell's own "Illegal number" went to slurmd's log before.
refused() {
    local want=$1; shift
    local got rc
    got=$(prolog "$@" 2>&1); rc=$?
    [ $rc -eq 1 ] && [ "$got" = "print spillway: $want; the task is not started" ] ||
        { echo "  rc $rc, got: $got"; return 1; }
}
check "a node past the layout: refused" \
    refused "cannot tell this node's tasks from tasks per node '2(x3),1' (SLURM_NODEID 4)" \
    SLURM_NODEID=4 SLURM_TASKS_PER_NODE='2(x3),1' SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY=80G
check "nodes that differ and no SLURM_NODEID: refused" \
    refused "cannot tell this node's tasks from tasks per node '3,1' (SLURM_NODEID not set)" \
    SLURM_TASKS_PER_NODE='3,1' SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY=80G
for bad in '2(x)' '2(x3' '0' '2,,1' '2(x3)(x2)' 'a'; do
    check "tasks per node '$bad': refused" \
        refused "cannot tell this node's tasks from tasks per node '$bad' (SLURM_NODEID 0)" \
        SLURM_NODEID=0 SLURM_TASKS_PER_NODE="$bad" SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY=80G
done
check "a shard count that is not one: refused" \
    refused "SPW_SLURM_SHARDS_PER_GPU='eight' is not a count" SLURM_SHARDS_ON_NODE=2 SPW_SLURM_SHARDS_PER_GPU=eight SPW_SLURM_GPU_MEMORY=80G
# Sizes in spillway's grammar (shim/options.c spw_parse_bytes, README
# "Configuration"): K/M/G/T then an optional i, B or iB in any case, bare
# digits as bytes; leading zeros are decimal, as spillway reads them.
same_as_80G() { [ "$(prolog SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY="$1")" = $'export SPILLWAY_MEM_LIMIT=81920M\nexport SPILLWAY_SPILL=1' ]; }
for good in 80G 80Gi 80GiB 80GB 80gib 80gI 80Gb 81920M 83886080K 85899345920 080G; do
    check "$good is 80 GiB" same_as_80G "$good"
done
not_size() { refused "SPW_SLURM_GPU_MEMORY='$1' is not a size of at least 1M (80G, 80Gi, 81920M)" SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY="$1"; }
# 16777216T is 2^64 bytes, past what spillway takes; 0 and 512K leave no
# MiB to give.
for bad in lots 8GG 8G8 80B G 1.5T 8iB 80GBi 80Gii ' 80G' '8*G' -8G 0x10G 16777216T 0 512K; do
    check "SPW_SLURM_GPU_MEMORY='$bad': refused, nothing on stderr" not_size "$bad"
done
check "verbose: says the limit" \
    bash -c '[ "$(env -i PATH=/usr/bin:/bin SPW_SLURM_CONF=/nonexistent SPW_SLURM_LIB= SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY=80G SPW_SLURM_VERBOSE=1 "$1" "$2" | tail -1)" = "print spillway: GPU memory limit 81920M (a whole GPU of 81920M)" ]' _ "$SH" "$PROLOG"
conf="$STATS_DIR/slurm.conf"
printf 'SPW_SLURM_GPU_MEMORY=40G\nSPW_SLURM_SHARDS_PER_GPU=2\n' >"$conf"
check "settings from the configuration file" \
    bash -c '[ "$(env -i PATH=/usr/bin:/bin SPW_SLURM_CONF="$3" SPW_SLURM_LIB= SLURM_SHARDS_ON_NODE=1 "$1" "$2" | head -1)" = "export SPILLWAY_MEM_LIMIT=20480M" ]' _ "$SH" "$PROLOG" "$conf"
# The task's LD_PRELOAD is loaded into the prolog's shell too, as under
# Slurm. In `make sanitize` that library is ASan-built and the shell is not:
# the suite's sanitizer settings (ASAN_OPTIONS: verify_asan_link_order=0),
# which every other test inherits, must survive env -i here as well.
san=()
for v in ASAN_OPTIONS UBSAN_OPTIONS; do [ -n "${!v:-}" ] && san+=("$v=${!v}"); done
out=$(env -i PATH=/usr/bin:/bin "${san[@]+"${san[@]}"}" SPW_SLURM_CONF=/nonexistent SPW_SLURM_LIB="$LIB" LD_PRELOAD="$EMPTY_LIB" SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY=16G "$SH" "$PROLOG")
check "preloads spillway first, keeping the task's LD_PRELOAD" grep -qxF "export LD_PRELOAD=$LIB:$EMPTY_LIB" <<<"$out"
out=$(env -i PATH=/usr/bin:/bin SPW_SLURM_CONF=/nonexistent SPW_SLURM_LIB=/nonexistent/libspillway.so SLURM_JOB_GPUS=0 SPW_SLURM_GPU_MEMORY=16G "$SH" "$PROLOG")
check "a missing library: a note, not preloaded" bash -c '! grep -q LD_PRELOAD= <<<"$1" && grep -q "not preloaded" <<<"$1"' _ "$out"

# What it exports is what spillway accepts: apply the lines as Slurm does
# and let the launcher's strict parser judge them.
accepts() {
    local lines; lines=$(prolog "$@")
    local -a vars=()
    while read -r word assign; do [ "$word" = export ] && vars+=("$assign"); done <<<"$lines"
    env "${vars[@]}" "$SPW" run --lib "$LIB" -v -- true >/dev/null 2>"$STATS_DIR/.accept" || { cat "$STATS_DIR/.accept"; return 1; }
}
check "spillway accepts the shard limit" accepts SLURM_SHARDS_ON_NODE=3 SPW_SLURM_GPU_MEMORY=80G
check "spillway accepts the whole-GPU limit" accepts SLURM_JOB_GPUS=0,1 SLURM_TASKS_PER_NODE=16 SPW_SLURM_GPU_MEMORY=24G
if command -v shellcheck >/dev/null; then
    check "shellcheck" shellcheck -s sh "$PROLOG"
fi
finish
