#!/usr/bin/env python3
"""CuPy row of the GPU acceptance (see rowlib.py for the modes). Checks
here: a matmul loop gives the exact answer; reported: memGetInfo()'s total,
bytes reached before cupy's OutOfMemoryError, the memory pool's total."""
import rowlib

a = rowlib.args(__doc__)
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

free0, total = cp.cuda.runtime.memGetInfo()
rng = np.random.default_rng(0)
ma = rng.integers(-2, 3, (512, 512)).astype(np.float32)
mb = rng.integers(-2, 3, (512, 512)).astype(np.float32)
A, B = cp.asarray(ma), cp.asarray(mb)
c = cp.zeros((512, 512), cp.float32)
for _ in range(10):
    c += A @ B
matmul_ok = int(np.array_equal(cp.asnumpy(c), 10 * (ma @ mb)))
del c, A, B
pool = cp.get_default_memory_pool()


def alloc(nbytes):
    x = cp.empty(nbytes, dtype=cp.uint8)
    x.fill(1)
    cp.cuda.Device().synchronize()
    return x


def is_oom(e):
    return isinstance(e, cp.cuda.memory.OutOfMemoryError)


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
held = pool.total_bytes()
rowlib.hold(a)
keep.clear()
extra = {k: r[k] for k in ("oom", "oom_kind", "capped", "unexpected") if k in r}
rowlib.result(fw="cupy", mode=a.mode, matmul_ok=matmul_ok, reported=total, free0=free0,
              driver_total=rowlib.driver_total(), reached=r["reached"], fw_reserved=held, held=held,
              cupy=cp.__version__, **extra)
