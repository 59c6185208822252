#!/usr/bin/env python3
"""Issue 12 row torch-tma: a weight that Hopper's TMA GEMMs reach only
through a CUtensorMap, squeezed out to the host and filled back by the
next GEMM. features.py runs it natively and under a spillway limit (spill
on) and compares the two products bit for bit.

Two bf16 N x N matrices A and W on the GPU (fixed seeds); C1 = torch.mm(A,
W) (cuBLASLt picks an sm90 TMA kernel on an H100/H200: its operands reach
it as descriptors the host encodes, cuTensorMapEncodeTiled, inside the
kernel's Params); spillway_tensor_maps() (the descriptors libspillway
recorded; -1 natively) read after it. Then the squeeze, under spillway
only (SPILLWAY_MEM_LIMIT set): a uint8 buffer of the limit (or up to 8
MiB less, as much as spillway gives) allocated and written, freed and given back to the driver
(torch.cuda.empty_cache(): PyTorch's cache would keep its pages taken, and
a fill needs free ones), everything else spilled to host pages. W's pages
on the device (rowlib.device_resident: the driver's own answer) and the
stats segment's spilled_bytes and fill_events are read before and after
one more GEMM, C2 = torch.mm(A, W), whose only way to W is the descriptor
(A's as well): spillway must find it in the launch's arguments and fill W
back first.

  RESULT fw=torch cc=9.0 n=.. tensor_maps=<after the first GEMM>
         tensor_maps_end=.. squeeze=<bytes> w_bytes=.. w_resident_before=..
         w_resident_after=.. spilled_before=.. spilled_after=..
         fills_before=.. fills_after=.. same=<C2 equals C1 bitwise: 1/0>
         digest=<sha256 of C2's bytes, 16 hex digits> gemm_ms=.. torch=..
Residency and stats are n/a natively (no pool, no segment). The dump
(--dump): float32 column sums of C2 and of |C2| (how far off, when the
digests differ).
"""
import argparse
import ctypes
import hashlib
import os
import time

import rowlib
import swstats

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--n", type=int, default=4096, help="the matrices' side")
ap.add_argument("--dump", help="write the fingerprint here (float32, little-endian)")
ap.add_argument("--no-hold", action="store_true")
a = ap.parse_args()

import torch  # noqa: E402  (after argparse: --help needs no GPU)


def digest(t):
    """sha256 of a tensor's bytes (its contiguous host copy), 16 hex digits."""
    cpu = t.contiguous().cpu()
    return hashlib.sha256(ctypes.string_at(cpu.data_ptr(), cpu.numel() * cpu.element_size())).hexdigest()[:16]


def stats():
    """(spilled_bytes, fill_events) of device 0 in this process's stats
    segment; ("n/a", "n/a") without one (a native run)."""
    seg, _ = swstats.read_pid(os.getpid())
    if not seg:
        return "n/a", "n/a"
    d = seg["devices"][0]
    return d.get("spilled_bytes", "n/a"), d.get("fill_events", "n/a")


def resident(t):
    n = rowlib.device_resident(t.data_ptr(), t.numel() * t.element_size())
    return "n/a" if n is None else n


def squeeze():
    """Every other buffer sent to the host: as much of the limit as
    spillway gives one allocation (the whole limit, else 2 MiB less at a
    time, down to 8 MiB less: memory that may not move), written, freed and
    returned to the driver, then a sync (as tests/integration/shim's
    rig_squeeze). Its bytes; 0 (none) natively."""
    limit = os.environ.get("SPILLWAY_MEM_LIMIT")
    if not limit or "=" in limit:
        return 0
    x = None
    for less in range(5):
        n = rowlib.size(limit) - less * rowlib.PAGE
        try:
            x = torch.empty(n, dtype=torch.uint8, device="cuda")
            break
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
    if x is None:
        return 0
    x.fill_(0x33)
    torch.cuda.synchronize()
    del x
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    return n


def main():
    major, minor = torch.cuda.get_device_capability()
    g = torch.Generator().manual_seed(0)  # on the CPU: the same bytes in both runs
    A = torch.randn(a.n, a.n, generator=g, dtype=torch.bfloat16).cuda()
    W = torch.randn(a.n, a.n, generator=g, dtype=torch.bfloat16).cuda()
    C1 = torch.mm(A, W)
    torch.cuda.synchronize()
    out = {"fw": "torch", "cc": "%d.%d" % (major, minor), "n": a.n,
           "tensor_maps": rowlib.spillway_count("spillway_tensor_maps")}
    out["squeeze"] = squeeze()
    w_bytes = W.numel() * W.element_size()
    out["w_bytes"] = w_bytes
    out["w_resident_before"] = resident(W)
    out["spilled_before"], out["fills_before"] = stats()
    t0 = time.perf_counter()
    C2 = torch.mm(A, W)
    torch.cuda.synchronize()
    out["gemm_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
    out["spilled_after"], out["fills_after"] = stats()
    out["w_resident_after"] = resident(W)
    out["tensor_maps_end"] = rowlib.spillway_count("spillway_tensor_maps")
    out["same"] = int(bool(torch.equal(C1, C2)))
    out["digest"] = digest(C2)
    if a.dump:
        f = C2.float()
        rowlib.write_floats(a.dump, torch.cat([f.sum(0), f.abs().sum(0)]).cpu().tolist())
    out["torch"] = torch.__version__
    rowlib.hold(a)
    rowlib.result(**out)


main()
