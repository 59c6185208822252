#!/usr/bin/env python3
"""PyTorch row of the GPU acceptance (see rowlib.py for the modes). The
allocator comes from PYTORCH_CUDA_ALLOC_CONF, set by the harness. Checks
here: a matmul loop gives the exact answer; reported: mem_get_info()'s
total, bytes reached before torch.OutOfMemoryError, memory_reserved and
memory_allocated at the peak."""
import os

import rowlib

a = rowlib.args(__doc__)
import torch  # noqa: E402

free0, total = torch.cuda.mem_get_info()
g = torch.Generator().manual_seed(0)
ma = torch.randint(-2, 3, (512, 512), generator=g).float()
mb = torch.randint(-2, 3, (512, 512), generator=g).float()
A, B = ma.cuda(), mb.cuda()
c = torch.zeros(512, 512, device="cuda")
for _ in range(10):
    c += A @ B
matmul_ok = int(torch.equal(c.cpu(), 10 * (ma @ mb)))
del c, A, B


def alloc(nbytes):
    x = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    x.fill_(1)
    torch.cuda.synchronize()
    return x


OOM_ERROR = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError


def is_oom(e):
    return isinstance(e, OOM_ERROR)


keep = []
if a.mode == "oom":
    r = rowlib.alloc_until_refused(alloc, is_oom, a, keep)
elif a.mode == "hold":
    r = {"reached": 0}
    while r["reached"] < a.hold_bytes:
        keep.append(alloc(a.chunk))
        r["reached"] += a.chunk
else:
    r = {"reached": 0}
reserved, allocated = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
rowlib.hold(a)
keep.clear()
extra = {k: r[k] for k in ("oom", "oom_kind", "capped", "unexpected") if k in r}
rowlib.result(fw="torch", mode=a.mode, alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default"),
              matmul_ok=matmul_ok, reported=total, free0=free0, driver_total=rowlib.driver_total(),
              reached=r["reached"], fw_reserved=reserved, fw_allocated=allocated, held=reserved,
              torch=torch.__version__, **extra)
