#!/usr/bin/env python3
"""A jitted training step of a small MLP (1024-4096-4096-4096-1024, batch
512, SGD on an MSE loss, fresh random batch drawn inside the step), timed in
blocks of --steps-per-block after a warm-up. The allocator is whatever the
environment sets (XLA_PYTHON_CLIENT_ALLOCATOR...), so bench/run.py runs the
same script natively and under spillway and takes the ratio.

  RESULT bench=jax_step allocator=.. step_us=<median block / steps> loss=..
"""
import argparse
import os
import statistics
import time

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--blocks", type=int, default=10)
ap.add_argument("--steps-per-block", type=int, default=20)
ap.add_argument("--warmup", type=int, default=10)
a = ap.parse_args()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

WIDTHS = [1024, 4096, 4096, 4096, 1024]
BATCH = 512


def init(key):
    params = []
    for i, (m, n) in enumerate(zip(WIDTHS[:-1], WIDTHS[1:])):
        params.append((jax.random.normal(jax.random.fold_in(key, i), (m, n), jnp.float32) / m ** 0.5,
                       jnp.zeros((n,), jnp.float32)))
    return params


def loss_fn(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    return jnp.mean((h @ w + b - y) ** 2)


def step(params, key):
    k1, k2 = jax.random.split(key)
    x = jax.random.normal(k1, (BATCH, WIDTHS[0]), jnp.float32)
    y = jax.random.normal(k2, (BATCH, WIDTHS[-1]), jnp.float32)
    loss, g = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 1e-3 * d, params, g), loss


step = jax.jit(step, donate_argnums=0)
params = init(jax.random.PRNGKey(0))
key = jax.random.PRNGKey(1)
for i in range(a.warmup):
    params, loss = step(params, jax.random.fold_in(key, i))
loss.block_until_ready()
blocks = []
n = a.warmup
for _ in range(a.blocks):
    t0 = time.perf_counter()
    for _ in range(a.steps_per_block):
        params, loss = step(params, jax.random.fold_in(key, n))
        n += 1
    loss.block_until_ready()
    blocks.append((time.perf_counter() - t0) / a.steps_per_block)
lv = float(loss)
print("RESULT bench=jax_step allocator=%s preallocate=%s step_us=%.1f min_us=%.1f loss=%.5f finite=%d" % (
    os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default"), os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true"),
    statistics.median(blocks) * 1e6, min(blocks) * 1e6, lv, int(lv == lv and abs(lv) < float("inf"))), flush=True)
