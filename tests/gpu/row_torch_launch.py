#!/usr/bin/env python3
"""PyTorch row of "runtime launches reach the gate" (issue 10; a stage of
scripts/gpu-check.sh, beside tests/gpu/launch_count's CUDA C rows): every
kernel PyTorch launches must be counted by spillway (the stats segment's
`launches`), else it reached the driver past spillway's work gate.

Run under LD_PRELOAD=libspillway.so. A contiguous float32 CUDA tensor of
--numel elements is created and warmed up with one x.add_(1) (the first op
loads the kernel's module; nothing of it is counted here), then this
process's own segment is read (tests/gpu/swstats.py, os.getpid()), N
in-place adds x.add_(1) are made (one elementwise kernel each, nothing
else: no allocation, no copy, no sync between them), torch.cuda.synchronize(),
and the segment is read again. Passes when the launches counted between
the two readings are exactly N, no graph launch was counted, and every
element holds N + 1 (checked after the second reading: the comparison
launches kernels of its own).

  row_torch_launch.py [--launches 1000] [--numel 1048576]

One line (rowlib.result), the CUDA C rows' fields:
  RESULT fw=torch launches=N counted=.. graph_launches=0 graph_counted=..
         data_ok=0|1 err=none|no_stats_segment|no_torch|<exception> torch=<version>
Exit 0 only on a pass."""
import argparse
import os
import sys

import rowlib
import swstats


def counts():
    """(launches, graph_launches) of this process's segment, summed over
    its devices; (None, why) without one."""
    seg, why = swstats.read_pid(os.getpid())
    if not seg:
        return None, why
    return (sum(d.get("launches", 0) for d in seg["devices"]),
            sum(d.get("graph_launches", 0) for d in seg["devices"])), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launches", type=int, default=1000)
    ap.add_argument("--numel", type=int, default=1 << 20)
    a = ap.parse_args()
    if not 0 <= a.launches < (1 << 24) - 1 or a.numel <= 0:
        ap.error("--launches must be in [0, 2^24 - 1) (float32 counts exactly) and --numel positive")
    out = dict(fw="torch", launches=a.launches, counted="n/a", graph_launches=0, graph_counted="n/a",
               data_ok=0, err="none", torch="n/a")
    ok = False
    try:
        import torch
        out["torch"] = torch.__version__
        x = torch.zeros(a.numel, device="cuda")
        x.add_(1)  # warm-up: module loading, the allocator, the segment
        torch.cuda.synchronize()
        before, why = counts()
        for _ in range(a.launches):
            x.add_(1)
        torch.cuda.synchronize()
        after, why_after = counts()
        want = torch.full((a.numel,), float(a.launches + 1), device="cuda")
        out["data_ok"] = int(torch.equal(x, want))
        if before is None or after is None:
            out["err"] = "no_stats_segment"
            print("row_torch_launch: %s" % (why or why_after), file=sys.stderr)
        else:
            out["counted"], out["graph_counted"] = after[0] - before[0], after[1] - before[1]
            ok = out["counted"] == a.launches and out["graph_counted"] == 0 and out["data_ok"] == 1
    except ModuleNotFoundError as e:  # torch not installed here: gpu-check.sh skips the row
        out["err"] = "no_%s" % (e.name or "module").split(".")[0]
        print("row_torch_launch: %s" % e, file=sys.stderr)
    except Exception as e:  # no CUDA: the row says why
        out["err"] = type(e).__name__
        print("row_torch_launch: %s: %s" % (type(e).__name__, e), file=sys.stderr)
    rowlib.result(**out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
