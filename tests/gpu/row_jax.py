#!/usr/bin/env python3
"""JAX row of the GPU acceptance (see rowlib.py for the modes). The allocator
mode comes from the environment (XLA_PYTHON_CLIENT_PREALLOCATE/_ALLOCATOR),
set by the harness. Checks here: a jitted matmul loop gives the exact answer
(integer-valued matrices, HIGHEST precision); reported: the device's
bytes_limit, the driver's total, bytes reached before JAX's out-of-memory
error."""
import os

import rowlib

a = rowlib.args(__doc__)
import jax  # noqa: E402  (after argparse: --help needs no GPU)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

dev = jax.devices()[0]
rng = np.random.default_rng(0)
ma = rng.integers(-2, 3, (512, 512)).astype(np.float32)
mb = rng.integers(-2, 3, (512, 512)).astype(np.float32)


@jax.jit
def step(c, x, y):
    return c + jnp.dot(x, y, precision=jax.lax.Precision.HIGHEST)


A, B = jax.device_put(ma, dev), jax.device_put(mb, dev)
c = jnp.zeros((512, 512), jnp.float32)
for _ in range(10):
    c = step(c, A, B)
matmul_ok = int(np.array_equal(np.asarray(c), 10 * (ma @ mb)))
del c, A, B


def stat(key):
    return rowlib.jax_memory_stats(dev).get(key, "n/a")


bytes_limit = stat("bytes_limit")


def make(nbytes):
    return jnp.ones((nbytes // 4,), jnp.float32)


make_jit = jax.jit(make, static_argnums=0)


def alloc(nbytes):
    x = make_jit(nbytes)
    x.block_until_ready()
    return x


def is_oom(e):
    s = str(e)
    return "RESOURCE_EXHAUSTED" in s or "out of memory" in s.lower()


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
# What JAX says it holds at the peak: BFC reports pool_bytes (its arenas);
# other allocators report bytes_in_use only, or no stats at all.
in_use, pool = stat("bytes_in_use"), stat("pool_bytes")
reserved = stat("bytes_reserved")
held = next((v for v in (pool, reserved, in_use) if v != "n/a"), "n/a")
rowlib.hold(a)
keep.clear()
extra = {k: r[k] for k in ("oom", "oom_kind", "capped", "unexpected") if k in r}
rowlib.result(fw="jax", mode=a.mode, allocator=os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default"),
              preallocate=os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true"), matmul_ok=matmul_ok,
              reported=rowlib.driver_total(), bytes_limit=bytes_limit, reached=r["reached"], fw_in_use=in_use,
              fw_pool=pool, fw_reserved=reserved, held=held, jax=jax.__version__, **extra)
