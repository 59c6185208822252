#!/usr/bin/env python3
"""Issue 12 row: PyTorch with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
(set by the harness) under a spillway limit. Its segments are cuMemCreate
handles mapped into one growing reservation, asked with a shareable
handle type (FABRIC, else POSIX file descriptor) and GPUDirect RDMA where
the device has it: spillway must serve them from its pool, not pass them
through as IPC memory. The row allocates --hold-bytes in --chunk tensors,
each filled with its own value, runs an exact matmul, checks every
tensor's sum, and holds while features.py reads the stats segment: pool
in-use against pass-through bytes per reason.

  RESULT fw=torch alloc_conf=.. expandable=1 expandable_seen=1 held_tensors=.. reserved=..
         allocated=.. data_ok=1 matmul_ok=1 torch=..
"""
import argparse
import os

import rowlib

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--hold-bytes", type=rowlib.size, default=1 << 30)
ap.add_argument("--chunk", type=rowlib.size, default=64 << 20)
ap.add_argument("--no-hold", action="store_true")
a = ap.parse_args()

import torch  # noqa: E402  (after argparse: --help needs no GPU)


def matmul_ok():
    """Integer-valued matrices: float32 sums are exact."""
    g = torch.Generator().manual_seed(0)
    ma = torch.randint(-2, 3, (512, 512), generator=g).float()
    mb = torch.randint(-2, 3, (512, 512), generator=g).float()
    c = ma.cuda() @ mb.cuda()
    return int(torch.equal(c.cpu(), ma @ mb))


def fill(n):
    """n chunks, tensor i filled with i % 251 + 1 (never 0: a page that
    reads back zeros is caught)."""
    keep = []
    for i in range(n):
        x = torch.empty(a.chunk, dtype=torch.uint8, device="cuda")
        x.fill_(i % 251 + 1)
        keep.append(x)
    torch.cuda.synchronize()
    return keep


def data_ok(keep):
    return int(all(int(x.sum(dtype=torch.int64)) == a.chunk * (i % 251 + 1) for i, x in enumerate(keep)))


def expandable_seen(n):
    """Whether PyTorch's own snapshot shows expandable segments in force (1)
    or not (0), -1 when it cannot tell: the variable can be read and
    ignored (PYTORCH_ALLOC_CONF was, in PyTorch 2.9-2.11), and the other
    checks pass without it (cudaMalloc memory is pooled too). Each segment
    says so where the snapshot has `is_expandable`; else n tensors of one
    chunk each, allocated and never freed, have n segments of their own
    without it and share one growing segment with it."""
    try:
        segs = torch.cuda.memory_snapshot()
    except Exception:  # noqa: BLE001  (any failure: cannot tell)
        return -1
    flags = [s["is_expandable"] for s in segs if "is_expandable" in s]
    if flags:
        return int(any(flags))
    big = [s for s in segs if s.get("total_size", 0) >= a.chunk]
    return int(len(big) < n) if big else -1


def main():
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    mm = matmul_ok()
    keep = fill(max(1, a.hold_bytes // a.chunk))
    ok = data_ok(keep)
    reserved, allocated = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
    seen = expandable_seen(len(keep))
    rowlib.hold(a)
    rowlib.result(fw="torch", alloc_conf=conf or "default", expandable=int("expandable_segments:true" in conf.lower()),
                  expandable_seen=seen, held_tensors=len(keep), reserved=reserved, allocated=allocated, data_ok=ok, matmul_ok=mm,
                  torch=torch.__version__)


main()
