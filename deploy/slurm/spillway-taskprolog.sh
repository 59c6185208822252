#!/bin/sh
# Slurm TaskProlog for spillway: gives each task a GPU memory limit from
# its share of the GPUs and preloads spillway, so that unmodified programs
# in the job stay within their share (and spill past it instead of
# failing). In slurm.conf:
#     TaskProlog=/etc/slurm/spillway-taskprolog.sh
# A TaskProlog, not a Prolog: slurmstepd runs it as the job's user before
# each task, with the task's environment, and applies the "export
# NAME=value" lines it prints ("print ..." lines go to the task's output).
# A Prolog= (slurmd, as root, once per job on each node) has neither the
# per-task variables below nor a way to set the task's environment.
# What it reads of the task's environment:
#   SLURM_STEP_GPUS, else SLURM_JOB_GPUS  the GPUs (the step's under srun,
#                            the job's in a batch script)
#   SLURM_SHARDS_ON_NODE     shards of a gres/shard job on this node
#   SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE
#                            tasks on each node, in node order, with
#                            repeats compressed: "2(x3),1" is 2,2,2,1
#   SLURM_NODEID             this node's place in that list (the step's
#                            nodes, which SLURM_STEP_TASKS_PER_NODE counts;
#                            srun sets SLURM_TASKS_PER_NODE to the same)
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
#   SPW_SLURM_GPU_MEMORY     a GPU's memory, in spillway's size grammar
#                            (80G, 80Gi, 80GiB, 81920M, bytes); default:
#                            asked of nvidia-smi for the task's GPUs
#   SPW_SLURM_SHARDS_PER_GPU shards gres.conf gives each GPU (default 8)
#   SPW_SLURM_LIB            the library to preload (default
#                            /opt/spillway/lib/libspillway.so; "" = none)
#   SPW_SLURM_SPILL          1 (default) or 0: SPILLWAY_SPILL for the task
#   SPW_SLURM_VERBOSE        1: say the limit in each task's output
# Never SPILLWAY_* names here: spillway refuses names it does not know.
#
# A setting it cannot read, or a task layout it cannot place this node in,
# stops the task: a "print" line says why in the task's output, and the
# exit status 1 makes slurmstepd fail the task ("TaskProlog failed
# status=1" in slurmd's log). Not a warning and no limit: tasks sharing a
# GPU would each take all of it, the job running against the operator's
# intent with one line in its output to show for it, while a refusal is
# seen and fixed at the first job. A GPU whose memory cannot be told at
# all (no setting, no nvidia-smi) is a note and no limit, as before.

conf=${SPW_SLURM_CONF:-/etc/spillway/slurm.conf}
# shellcheck disable=SC1090
[ -r "$conf" ] && . "$conf"
GPU_MEMORY=${SPW_SLURM_GPU_MEMORY:-}
SHARDS_PER_GPU=${SPW_SLURM_SHARDS_PER_GPU:-8}
LIB=${SPW_SLURM_LIB-/opt/spillway/lib/libspillway.so}
SPILL=${SPW_SLURM_SPILL:-1}
VERBOSE=${SPW_SLURM_VERBOSE:-0}

say() { echo "print spillway: $*"; }

# Stops the task: why goes to its output (slurmstepd applies print lines
# before it looks at the status).
refuse() { say "$*; the task is not started"; exit 1; }

# A size in spillway's grammar (shim/options.c spw_parse_bytes): digits,
# then K/M/G/T (powers of 1024) and an optional i, B or iB, in any case;
# bare digits are bytes. In MiB (rounded down); empty when it is not one.
# The shape is checked whole before any arithmetic ("8GG" or "8G8" reached
# $((...)) and the shell's "Illegal number" went to slurmd's log), leading
# zeros go (the shell reads 080 as octal), and at most 18 digits (the
# shell's arithmetic is signed 64-bit); a size past 2^64 bytes is refused,
# as spillway refuses it.
to_mib() {
    v=$1
    case $v in
    *[KMGTkmgt][Ii][Bb]) v=${v%??} ;;
    *[KMGTkmgt][IiBb]) v=${v%?} ;;
    esac
    n=${v%[KMGTkmgt]}
    case $n in "" | *[!0-9]*) return ;; esac
    while :; do case $n in 0?*) n=${n#0} ;; *) break ;; esac; done
    [ ${#n} -le 18 ] || return
    case $v in
    *[Kk]) [ "$n" -lt 18014398509481984 ] && echo $((n / 1024)) ;;
    *[Mm]) [ "$n" -lt 17592186044416 ] && echo "$n" ;;
    *[Gg]) [ "$n" -lt 17179869184 ] && echo $((n * 1024)) ;;
    *[Tt]) [ "$n" -lt 16777216 ] && echo $((n * 1024 * 1024)) ;;
    *) echo $((n / 1048576)) ;;
    esac
}

# How many items a comma list has ("0,1,3" -> 3; "" -> 0).
count_list() {
    [ -n "$1" ] || { echo 0; return; }
    echo "$1" | tr ',' '\n' | grep -c .
}

# Entry $2 (from 0) of a Slurm per-node count list, whose repeats are
# compressed ("2(x3),1" is 2,2,2,1: entry 3 is 1); with $2 empty, the
# count when every node has the same one. Empty when the list is not one,
# or is shorter, or (no $2) its nodes differ. The whole list is checked
# before any entry is believed.
node_count() {
    list=$1 want=$2 at=0 found="" differ=""
    case $list in "" | *[!0-9x,\(\)]*) return ;; esac
    set -f
    old_ifs=$IFS
    IFS=,
    # shellcheck disable=SC2086 # split on commas, globbing off
    set -- $list
    IFS=$old_ifs
    set +f
    for item in "$@"; do
        case $item in
        *"(x"*")") c=${item%%"(x"*} rep=${item#*"(x"} rep=${rep%")"} ;;
        *) c=$item rep=1 ;;
        esac
        case $c$rep in "" | *[!0-9]*) return ;; esac
        case $c in "" | 0*) return ;; esac
        case $rep in "" | 0*) return ;; esac
        if [ -n "$want" ]; then
            [ -z "$found" ] && [ "$want" -lt $((at + rep)) ] && found=$c
        else
            [ -n "$found" ] && [ "$found" != "$c" ] && differ=1
            found=$c
        fi
        at=$((at + rep))
    done
    [ -z "$differ" ] && echo "$found"
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
    if [ -z "$gpu_mib" ] || [ "$gpu_mib" -eq 0 ]; then
        refuse "SPW_SLURM_GPU_MEMORY='$GPU_MEMORY' is not a size of at least 1M (80G, 80Gi, 81920M)"
    fi
elif command -v nvidia-smi >/dev/null 2>&1; then
    gpu_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits ${gpus:+-i "$gpus"} 2>/dev/null |
              sort -n | head -1 | tr -dc 0-9)
fi
if [ -z "$gpu_mib" ] || [ "$gpu_mib" -eq 0 ]; then
    say "cannot tell the GPU's memory (set SPW_SLURM_GPU_MEMORY in $conf); no GPU memory limit set"
    exit 0
fi

if [ "$shards" -gt 0 ]; then
    case $SHARDS_PER_GPU in *[!0-9]* | "" | 0*) refuse "SPW_SLURM_SHARDS_PER_GPU='$SHARDS_PER_GPU' is not a count" ;; esac
    limit=$((gpu_mib * shards / SHARDS_PER_GPU))
    [ "$shards" -gt "$SHARDS_PER_GPU" ] && limit=$gpu_mib
    why="$shards of $SHARDS_PER_GPU shards"
else
    layout=${SLURM_STEP_TASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-1}}
    node=${SLURM_NODEID:-}
    case $node in *[!0-9]*) refuse "SLURM_NODEID='$node' is not a node number" ;; esac
    tasks=$(node_count "$layout" "$node")
    [ -n "$tasks" ] || refuse "cannot tell this node's tasks from tasks per node '$layout' (SLURM_NODEID ${node:-not set})"
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
