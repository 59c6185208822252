#!/usr/bin/env python3
"""Issue 12 row: a jitted JAX MLP training step (as bench/jax_step.py: SGD
on an MSE loss, batch drawn inside the step) with XLA's command buffers
(CUDA graphs) as JAX leaves them by default. features.py runs it natively
and under a spillway limit below the step's working set, with JAX told to
size itself past the limit, and compares the two dumps.

Command buffers: the row never touches XLA_FLAGS; the harness sets and logs
them. The row counts the command buffers XLA outlined into the compiled
step (its optimized HLO, Compiled.as_text()): 0 means the step runs without
CUDA graphs, and the row would not test what it claims.

  RESULT fw=jax steps=.. step_ms=<median block / steps> loss0=.. loss=..
         fp_len=.. cmdbuf=<command buffers in the step's HLO>
         bytes_limit=.. xla_flags=.. jax=..
The dump (--dump): float32 fingerprint = the loss of each checked step,
then per weight its column sums and column sums of |w|, then the biases.
"""
import argparse
import hashlib
import os
import re
import statistics
import time

import rowlib

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--width", type=int, default=4096)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--batch", type=int, default=256)
ap.add_argument("--steps", type=int, default=8, help="checked steps (each loss kept)")
ap.add_argument("--blocks", type=int, default=5, help="timed blocks")
ap.add_argument("--per-block", type=int, default=4, help="steps per timed block")
ap.add_argument("--lr", type=float, default=1e-3)
ap.add_argument("--dump", help="write the fingerprint here (float32, little-endian)")
ap.add_argument("--no-hold", action="store_true")
a = ap.parse_args()

import jax  # noqa: E402  (after argparse: --help needs no GPU)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402


def init(key):
    params = []
    for i in range(a.layers):
        w = jax.random.normal(jax.random.fold_in(key, i), (a.width, a.width), jnp.float32) / a.width ** 0.5
        params.append((w, jnp.zeros((a.width,), jnp.float32)))
    return params


def loss_fn(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    return jnp.mean((h @ w + b - y) ** 2)


def train_step(params, key):
    k1, k2 = jax.random.split(key)
    x = jax.random.normal(k1, (a.batch, a.width), jnp.float32)
    y = jax.random.normal(k2, (a.batch, a.width), jnp.float32)
    loss, g = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - a.lr * d, params, g), loss


def run(step, params, key):
    """Checked steps, then timed blocks; (params, losses, s per step)."""
    losses = []
    for i in range(a.steps):
        params, loss = step(params, jax.random.fold_in(key, i))
        losses.append(loss)
    losses = [float(v) for v in losses]
    n, blocks = a.steps, []
    for _ in range(a.blocks):
        t0 = time.perf_counter()
        for _ in range(a.per_block):
            params, loss = step(params, jax.random.fold_in(key, n))
            n += 1
        loss.block_until_ready()
        blocks.append((time.perf_counter() - t0) / a.per_block)
    return params, losses, statistics.median(blocks)


def fingerprint(params, losses):
    fp = list(losses)
    for w, b in params:
        fp += np.asarray(w.sum(0)).ravel().tolist() + np.asarray(jnp.abs(w).sum(0)).ravel().tolist()
        fp += np.asarray(b).ravel().tolist()
    return fp


def command_buffers(step, params, key):
    """Command buffers in the compiled step: XLA's CommandBufferScheduling
    outlines runs of kernels into computations named command_buffer* and
    calls them. The calls are counted (the computations, in a printing
    without to_apply=); newer XLA forms them on thunks, after this HLO
    (features.py then takes spillway's graph launch count). Also a digest of
    the program: XLA schedules for the memory it is told of, so the native
    and the spillway run may compile different programs, which features.py
    says when their results differ."""
    text = step.lower(params, key).compile().as_text()
    n = len(re.findall(r"to_apply=%?command_buffer", text)) or \
        len(re.findall(r"^%?command_buffer[\w.]* ", text, re.M))
    return n, hashlib.sha1(text.encode()).hexdigest()[:12]


def main():
    step = jax.jit(train_step, donate_argnums=0)
    params, key = init(jax.random.PRNGKey(0)), jax.random.PRNGKey(1)
    cmdbuf, hlo = command_buffers(step, params, key)
    params, losses, s = run(step, params, key)
    fp = fingerprint(params, losses)
    if a.dump:
        rowlib.write_floats(a.dump, fp)
    stats = rowlib.jax_memory_stats(jax.devices()[0])
    rowlib.hold(a)
    rowlib.result(fw="jax", steps=a.steps, step_ms=round(s * 1e3, 3), loss0=fp[0], loss=fp[a.steps - 1],
                  fp_len=len(fp), cmdbuf=cmdbuf, hlo=hlo, bytes_limit=stats.get("bytes_limit", "n/a"),
                  xla_flags=os.environ.get("XLA_FLAGS", "").replace(" ", ",") or "none", jax=jax.__version__)


main()
