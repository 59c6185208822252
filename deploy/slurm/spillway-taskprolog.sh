#!/bin/sh
# Slurm TaskProlog for spillway: gives each task a GPU memory limit from
# its share of the GPUs and preloads spillway, so that unmodified programs
# in the job stay within their share (and spill past it instead of
# failing). In slurm.conf:
#     TaskProlog=/etc/slurm/spillway-taskprolog.sh
# Slurm runs it before each task with the task's environment and applies
# the "export NAME=value" lines it prints; "print ..." lines go to the
# task's output.
#
# The share:
#   - a job with shards (gres/shard): shards on this node / SHARDS_PER_GPU
#     of one GPU (Slurm puts a task's shards on one GPU);
#   - a job with whole GPUs: its GPUs on this node divided among its tasks
#     on this node (a task per GPU gets a whole one; four tasks on one GPU
#     a quarter each);
#   - no GPU: nothing is printed, the task runs as it would.
# SPILLWAY_MEM_LIMIT = the GPU's memory x the share (the smallest GPU's,
# when the task sees several), in MiB.
#
# Settings (environment, or /etc/spillway/slurm.conf, shell syntax; the
# file's path itself from SPW_SLURM_CONF):
#   SPW_SLURM_GPU_MEMORY     a GPU's memory (e.g. 80G); default: asked of
#                            nvidia-smi for the task's GPUs
#   SPW_SLURM_SHARDS_PER_GPU shards gres.conf gives each GPU (default 8)
#   SPW_SLURM_LIB            the library to preload (default
#                            /opt/spillway/lib/libspillway.so; "" = none)
#   SPW_SLURM_SPILL          1 (default) or 0: SPILLWAY_SPILL for the task
#   SPW_SLURM_VERBOSE        1: say the limit in each task's output
# Never SPILLWAY_* names here: spillway refuses names it does not know.

conf=${SPW_SLURM_CONF:-/etc/spillway/slurm.conf}
# shellcheck disable=SC1090
[ -r "$conf" ] && . "$conf"
GPU_MEMORY=${SPW_SLURM_GPU_MEMORY:-}
SHARDS_PER_GPU=${SPW_SLURM_SHARDS_PER_GPU:-8}
LIB=${SPW_SLURM_LIB-/opt/spillway/lib/libspillway.so}
SPILL=${SPW_SLURM_SPILL:-1}
VERBOSE=${SPW_SLURM_VERBOSE:-0}

say() { echo "print spillway: $*"; }

# A size as spillway writes one (bytes, or K/M/G/T: powers of 1024, with an
# optional B or iB after the unit) in MiB; empty when it is not one. The
# shape is checked whole before any arithmetic: "8GG" or "8G8" reached
# $((...)) and the shell's "Illegal number" went to slurmd's log.
to_mib() {
    v=$1
    case $v in
    *[KMGTkmgt][Ii][Bb]) v=${v%??} ;;
    *[KMGTkmgt][Bb]) v=${v%?} ;;
    esac
    n=${v%[KMGTkmgt]}
    case $n in "" | *[!0-9]*) return ;; esac
    case $v in
    *[Kk]) echo $((n / 1024)) ;;
    *[Mm]) echo "$n" ;;
    *[Gg]) echo $((n * 1024)) ;;
    *[Tt]) echo $((n * 1024 * 1024)) ;;
    *) echo $((n / 1048576)) ;;
    esac
}

# How many items a comma list has ("0,1,3" -> 3; "" -> 0).
count_list() {
    [ -n "$1" ] || { echo 0; return; }
    echo "$1" | tr ',' '\n' | grep -c .
}

# The first number of a Slurm per-node count ("4(x2),1" -> 4).
first_count() {
    v=${1%%[!0-9]*}
    echo "${v:-0}"
}

# The task's GPUs as the node numbers them.
gpus=${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-}}
shards=${SLURM_SHARDS_ON_NODE:-0}
case $shards in *[!0-9]* | "") shards=0 ;; esac
ngpus=$(count_list "$gpus")
[ "$ngpus" -eq 0 ] && [ "$shards" -eq 0 ] && exit 0

# One GPU's memory, in MiB.
gpu_mib=""
if [ -n "$GPU_MEMORY" ]; then
    gpu_mib=$(to_mib "$GPU_MEMORY")
    [ -n "$gpu_mib" ] || { say "SPW_SLURM_GPU_MEMORY='$GPU_MEMORY' is not a size; no GPU memory limit set"; exit 0; }
elif command -v nvidia-smi >/dev/null 2>&1; then
    gpu_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits ${gpus:+-i "$gpus"} 2>/dev/null |
              sort -n | head -1 | tr -dc 0-9)
fi
if [ -z "$gpu_mib" ] || [ "$gpu_mib" -eq 0 ]; then
    say "cannot tell the GPU's memory (set SPW_SLURM_GPU_MEMORY in $conf); no GPU memory limit set"
    exit 0
fi

if [ "$shards" -gt 0 ]; then
    case $SHARDS_PER_GPU in *[!0-9]* | "" | 0) say "SPW_SLURM_SHARDS_PER_GPU='$SHARDS_PER_GPU' is not a count"; exit 0 ;; esac
    limit=$((gpu_mib * shards / SHARDS_PER_GPU))
    [ "$shards" -gt "$SHARDS_PER_GPU" ] && limit=$gpu_mib
    why="$shards of $SHARDS_PER_GPU shards"
else
    tasks=$(first_count "${SLURM_STEP_TASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-1}}")
    [ "$tasks" -gt 0 ] || tasks=1
    if [ "$tasks" -le "$ngpus" ]; then
        limit=$gpu_mib
        why="a whole GPU"
    else
        limit=$((gpu_mib * ngpus / tasks))
        why="$ngpus GPU(s) shared by $tasks tasks"
    fi
fi
[ "$limit" -ge 2 ] || limit=2 # one 2 MiB page: spillway's least

echo "export SPILLWAY_MEM_LIMIT=${limit}M"
echo "export SPILLWAY_SPILL=$SPILL"
if [ -n "$LIB" ]; then
    if [ -r "$LIB" ]; then
        echo "export LD_PRELOAD=$LIB${LD_PRELOAD:+:$LD_PRELOAD}"
    else
        say "$LIB not found; not preloaded"
    fi
fi
[ "$VERBOSE" = 1 ] && say "GPU memory limit ${limit}M ($why of ${gpu_mib}M)"
exit 0
