#!/usr/bin/env python3
"""Issue 12 rows: a jitted JAX MLP training step (as bench/jax_step.py: SGD
on an MSE loss, batch drawn inside the step) with XLA's command buffers
(CUDA graphs) as JAX leaves them by default. features.py runs it natively
and under a spillway limit below the step's working set, with JAX told to
size itself past the limit, and compares the two dumps.

Command buffers: the row never touches XLA_FLAGS; the harness sets and logs
them. The row counts the command buffers XLA outlined into the compiled
step (its optimized HLO, Compiled.as_text()): 0 means the step runs without
CUDA graphs, and the row would not test what it claims.

--micro-steps M (the jax-while row): each jitted call runs M SGD
micro-steps in a jax.lax.fori_loop whose bound is an argument (a traced
int32, so the loop is an HLO while with no known trip count: XLA can
neither unroll it nor record it unrolled), the call's loss the mean of
theirs. With WHILE among XLA's command buffer types the loop can run on
the device as a CUDA WHILE conditional node, which spillway records when
cuGraphAddNode makes it. The row reports what tells where XLA put the
loop: while loops in the optimized HLO and how many sit inside
command_buffer computations; spillway_graph_conditionals() (the
conditional nodes libspillway holds a record of; -1 natively) at the end
and its peak after each checked call; and, from this process's stats
segment, the kernel and graph launches per call over the timed blocks (a
loop run from the host launches at least once per iteration; one inside a
graph does not).

  RESULT fw=jax steps=.. step_ms=<median block / steps> loss0=.. loss=..
         fp_len=.. cmdbuf=<command buffers in the step's HLO>
         bytes_limit=.. xla_flags=.. jax=..
         [micro_steps=M whiles=.. cb_whiles=.. known_trip=.. conditionals=..
          conditionals_peak=.. launches_per_call=.. graphs_per_call=..]
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
import swstats

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--width", type=int, default=4096)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--batch", type=int, default=256)
ap.add_argument("--steps", type=int, default=8, help="checked steps (each loss kept)")
ap.add_argument("--blocks", type=int, default=5, help="timed blocks")
ap.add_argument("--per-block", type=int, default=4, help="steps per timed block")
ap.add_argument("--lr", type=float, default=1e-3)
ap.add_argument("--micro-steps", type=int, default=0,
                help="SGD micro-steps per call in a lax.fori_loop (0: the plain step)")
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


def train_loop(params, key, n):
    """n micro-steps of train_step in a fori_loop (n traced: an HLO while
    without a known trip count); the mean of their losses."""
    def body(i, carry):
        params, total = carry
        params, loss = train_step(params, jax.random.fold_in(key, i))
        return params, total + loss
    params, total = jax.lax.fori_loop(0, n, body, (params, jnp.zeros((), jnp.float32)))
    return params, total / n


def spillway_conditionals():
    """spillway_graph_conditionals() of the libspillway preloaded into this
    process (shim/introspect.c: the conditional graph nodes whose bodies it
    holds a record of); -1 without it (a native run)."""
    return rowlib.spillway_count("spillway_graph_conditionals")


def launch_counts():
    """(kernel launches, graph launches) of this process's stats segment,
    summed over its devices; None without one (a native run)."""
    seg, _ = swstats.read_pid(os.getpid())
    if not seg:
        return None
    return (sum(d.get("launches", 0) for d in seg["devices"]),
            sum(d.get("graph_launches", 0) for d in seg["devices"]))


def run(step, params, key, extra, loop):
    """Checked steps, then timed blocks; (params, losses, s per step).
    loop (a dict, --micro-steps): the conditionals' peak after each checked
    step, the launches per call over the timed blocks."""
    losses = []
    for i in range(a.steps):
        params, loss = step(params, jax.random.fold_in(key, i), *extra)
        losses.append(loss)
        if loop is not None:
            loss.block_until_ready()
            loop["conditionals_peak"] = max(loop["conditionals_peak"], spillway_conditionals())
    losses = [float(v) for v in losses]
    before = launch_counts() if loop is not None else None
    n, blocks = a.steps, []
    for _ in range(a.blocks):
        t0 = time.perf_counter()
        for _ in range(a.per_block):
            params, loss = step(params, jax.random.fold_in(key, n), *extra)
            n += 1
        loss.block_until_ready()
        blocks.append((time.perf_counter() - t0) / a.per_block)
    after = launch_counts() if before is not None else None
    if after is not None:
        calls = a.blocks * a.per_block
        loop["launches_per_call"] = round((after[0] - before[0]) / calls, 2)
        loop["graphs_per_call"] = round((after[1] - before[1]) / calls, 2)
    return params, losses, statistics.median(blocks)


def fingerprint(params, losses):
    fp = list(losses)
    for w, b in params:
        fp += np.asarray(w.sum(0)).ravel().tolist() + np.asarray(jnp.abs(w).sum(0)).ravel().tolist()
        fp += np.asarray(b).ravel().tolist()
    return fp


def command_buffers(text):
    """Command buffers in the compiled step: XLA's CommandBufferScheduling
    outlines runs of kernels into computations named command_buffer* and
    calls them. The calls are counted (the computations, in a printing
    without to_apply=); newer XLA forms them on thunks, after this HLO
    (features.py then takes spillway's graph launch count). Also a digest of
    the program: XLA schedules for the memory it is told of, so the native
    and the spillway run may compile different programs, which features.py
    says when their results differ."""
    n = len(re.findall(r"to_apply=%?command_buffer", text)) or \
        len(re.findall(r"^%?command_buffer[\w.]* ", text, re.M))
    return n, hashlib.sha1(text.encode()).hexdigest()[:12]


def hlo_loops(text):
    """(while loops in the optimized HLO, those inside command_buffer
    computations, those with a known_trip_count). A computation starts at
    an unindented line ending in "{" ("[ENTRY ]%name (...) -> ... {", the %
    gone in newer printings) and ends at a line "}"; a while is an
    instruction "... while(...), condition=..., body=...". Where command
    buffers are formed in the HLO (CommandBufferScheduling), a while XLA
    records as a command sits inside a command_buffer computation."""
    whiles = inside = known = 0
    comp = None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith("{"):
            comp = line.split()[1 if line.startswith("ENTRY") else 0].lstrip("%")
        elif line.startswith("}"):
            comp = None
        elif comp is not None and re.search(r"\swhile\(", line):
            whiles += 1
            inside += comp.startswith("command_buffer")
            known += "known_trip_count" in line
    return whiles, inside, known


def main():
    if a.micro_steps:
        step, extra = jax.jit(train_loop, donate_argnums=0), (jnp.asarray(a.micro_steps, dtype=jnp.int32),)
        loop = {"micro_steps": a.micro_steps, "conditionals_peak": spillway_conditionals(),
                "launches_per_call": "n/a", "graphs_per_call": "n/a"}
    else:
        step, extra, loop = jax.jit(train_step, donate_argnums=0), (), None
    params, key = init(jax.random.PRNGKey(0)), jax.random.PRNGKey(1)
    text = step.lower(params, key, *extra).compile().as_text()
    cmdbuf, hlo = command_buffers(text)
    params, losses, s = run(step, params, key, extra, loop)
    fp = fingerprint(params, losses)
    if a.dump:
        rowlib.write_floats(a.dump, fp)
    stats = rowlib.jax_memory_stats(jax.devices()[0])
    fields = {}
    if loop is not None:
        whiles, inside, known = hlo_loops(text)
        # At the end: the step (its executable, XLA's command buffers) still alive.
        fields = dict(micro_steps=a.micro_steps, whiles=whiles, cb_whiles=inside, known_trip=known,
                      conditionals=spillway_conditionals(), conditionals_peak=loop["conditionals_peak"],
                      launches_per_call=loop["launches_per_call"], graphs_per_call=loop["graphs_per_call"])
    rowlib.hold(a)
    rowlib.result(fw="jax", steps=a.steps, step_ms=round(s * 1e3, 3), loss0=fp[0], loss=fp[a.steps - 1],
                  fp_len=len(fp), cmdbuf=cmdbuf, hlo=hlo, bytes_limit=stats.get("bytes_limit", "n/a"),
                  xla_flags=os.environ.get("XLA_FLAGS", "").replace(" ", ",") or "none", jax=jax.__version__,
                  **fields)


main()
