#!/usr/bin/env python3
"""The seed's example (../shared/seeds: JAX's "Memories and Host Offloading"
tutorial, "Optimizer state offloading", basic implementation), written from
its description: 4 layers of 7168x7168 float32 weights, x -> gelu(x @ w)
through each, loss = mean((out - x)^2) + 0.001 x sum of squared weights,
Adam (learning rate 0.1) after clip_by_global_norm(1.0), one jitted step
with params and optimizer state donated. The input is DIM x DIM, as there.
Natively on an H100 the tutorial measured 25.6 ms per step using 4.05 GB;
with the optimizer state offloaded to pinned host memory by hand, 380 ms
(14.8x). Issue 13's GPU rows run this program unmodified under spillway
(tests/gpu/oversub.py).

Data: deterministic. --init normal (default): input and weights from
jax.random.normal with fixed keys, weights scaled by 1/sqrt(DIM), so that
every value stays finite. --init ones is the tutorial's jnp.ones verbatim:
its activations reach ~7168^4, the squared gradients overflow float32 and
the clipped update is 0 (the loss never changes) - fine for timing, useless
for checking results.

Optimizer: --optimizer jnp (default) is optax.chain(clip_by_global_norm,
adam) written in plain jax.numpy with optax's definitions (the GPU host may
lack optax); --optimizer optax uses optax itself.

Prints each step's loss and time, the median step time after --warmup steps,
the final loss (repr of the float64 value of the float32 loss), XLA's memory
analysis of the step and JAX's peak device memory (memory_stats), then one
line for harnesses:

  RESULT bench=seed_mlp_jax step_ms=<median after warm-up> loss=<final>
         losses=<each step's, comma-separated> finite=0|1 peak_bytes=..
         bytes_limit=.. pool_bytes=.. told_total=.. allocator=.. ...

--hold: print SWGPU_HOLD after the warm-up steps and again after the last
step, each time waiting for a line on stdin (the GPU rows read spillway's
stats segment at both: the bytes moved between them are the settled steps'
moves; NVML is sampled all along). Step times never include a hold.
"""
import ctypes
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed_common  # noqa: E402

ap = seed_common.parser(__doc__, "clip_by_global_norm's bound")
ap.add_argument("--init", choices=("normal", "ones"), default="normal")
ap.add_argument("--optimizer", choices=("jnp", "optax"), default="jnp")
a = seed_common.parse(ap)

T0 = time.perf_counter()
import jax  # noqa: E402  (after argparse: --help needs no GPU)
import jax.numpy as jnp  # noqa: E402

GiB = seed_common.GiB
gib = seed_common.gib


# --- the model, as the tutorial's ---------------------------------------------
def gelu(x):
    return 0.5 * x * (1 + jnp.tanh(jnp.sqrt(2 / jnp.pi) * (x + 0.044715 * x ** 3)))


def forward(params, x):
    for w in params:
        x = gelu(x @ w)
    return x


def compute_loss(params, inputs):
    outputs = forward(params, inputs)
    loss = jnp.mean((outputs - inputs) ** 2)
    l2_reg = a.l2 * sum(jnp.sum(w ** 2) for w in params)
    return loss + l2_reg


# --- optax.chain(clip_by_global_norm(max_norm), adam(lr)) in jax.numpy --------
B1, B2, EPS, EPS_ROOT = 0.9, 0.999, 1e-8, 0.0  # optax.adam's defaults


def jnp_init(params):
    """ScaleByAdamState: count (int32), mu and nu (zeros like params)."""
    return (jnp.zeros([], jnp.int32), [jnp.zeros_like(p) for p in params], [jnp.zeros_like(p) for p in params])


def jnp_update(grads, state, params):
    # optax.clip_by_global_norm: g_norm = sqrt(sum of every leaf's sum of
    # squares); leaves scaled by max_norm / g_norm unless g_norm < max_norm.
    g_norm = jnp.sqrt(sum(jnp.sum(g * g) for g in grads))
    trigger = g_norm < a.max_norm
    grads = [jnp.where(trigger, g, (g / g_norm) * a.max_norm) for g in grads]
    # optax.scale_by_adam: moments, count + 1, bias corrections, then
    # optax.scale_by_learning_rate (x -lr) and optax.apply_updates (p + u).
    count, mu, nu = state
    mu = [(1 - B1) * g + B1 * m for g, m in zip(grads, mu)]
    nu = [(1 - B2) * (g * g) + B2 * v for g, v in zip(grads, nu)]
    count = count + 1
    bc1, bc2 = 1 - B1 ** count, 1 - B2 ** count
    updates = [(m / bc1) / (jnp.sqrt(v / bc2 + EPS_ROOT) + EPS) for m, v in zip(mu, nu)]
    params = [p + (-a.lr) * u for p, u in zip(params, updates)]
    return params, (count, mu, nu)


if a.optimizer == "optax":
    import optax  # noqa: E402

    tx = optax.chain(optax.clip_by_global_norm(a.max_norm), optax.adam(learning_rate=a.lr))

    def opt_init(params):
        return tx.init(params)

    def opt_update(grads, state, params):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state
else:
    opt_init, opt_update = jnp_init, jnp_update


def step(params, opt_state, inputs):
    loss, grads = jax.value_and_grad(compute_loss)(params, inputs)
    params, opt_state = opt_update(grads, opt_state, params)
    return params, opt_state, loss


# --- running --------------------------------------------------------------------
def init_data():
    if a.init == "ones":
        return jnp.ones((a.batch, a.dim)), [jnp.ones((a.dim, a.dim)) for _ in range(a.layers)]
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(jax.random.fold_in(key, 0), (a.batch, a.dim), jnp.float32)
    ws = [jax.random.normal(jax.random.fold_in(key, i + 1), (a.dim, a.dim), jnp.float32) / math.sqrt(a.dim)
          for i in range(a.layers)]
    return x, ws


def driver_total():
    """cuDeviceTotalMem_v2 of device 0 as the driver (or spillway in front of
    it) tells it - what XLA sizes its allocator from; "n/a" without one."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        dev, total = ctypes.c_int(0), ctypes.c_size_t(0)
        if cu.cuInit(0) or cu.cuDeviceGet(ctypes.byref(dev), 0) or cu.cuDeviceTotalMem_v2(ctypes.byref(total), dev):
            return "n/a"
        return total.value
    except Exception:
        return "n/a"


def memory_analysis(compiled):
    try:
        m = compiled.memory_analysis()
    except Exception:
        m = None
    if m is None:
        return {}
    out = {k: getattr(m, k + "_size_in_bytes", None) for k in ("temp", "argument", "output", "alias")}
    return {k: v for k, v in out.items() if isinstance(v, int)}


def main():
    allocator = os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default")
    print("seed MLP (JAX %s): %d x %dx%d f32, input %dx%d, Adam(lr=%g) after clip_by_global_norm(%g) [%s], "
          "init %s, allocator %s" % (jax.__version__, a.layers, a.dim, a.dim, a.batch, a.dim, a.lr, a.max_norm,
                                     a.optimizer, a.init, allocator), flush=True)
    x, params = init_data()
    opt_state = opt_init(params)
    t = time.perf_counter()
    compiled = jax.jit(step, donate_argnums=(0, 1)).lower(params, opt_state, x).compile()
    compile_s = time.perf_counter() - t
    ma = memory_analysis(compiled)
    if ma:
        total = ma.get("temp", 0) + ma.get("argument", 0) + ma.get("output", 0) - ma.get("alias", 0)
        print("memory analysis: temp %s, arguments %s, outputs %s, aliased %s; total %s" % (
            gib(ma.get("temp")), gib(ma.get("argument")), gib(ma.get("output")), gib(ma.get("alias")), gib(total)))
    times, losses = [], []
    for i in range(a.steps):
        if a.hold and i == a.warmup:
            seed_common.hold()
        t = time.perf_counter()
        params, opt_state, loss = compiled(params, opt_state, x)
        loss.block_until_ready()
        times.append(time.perf_counter() - t)
        losses.append(float(loss))
        print("step %d: loss %r, %.2f ms" % (i + 1, losses[-1], times[-1] * 1e3), flush=True)
    med = statistics.median(times[a.warmup:])
    finite = int(all(math.isfinite(v) for v in losses))
    stats = seed_common.jax_memory_stats(jax.devices()[0])
    held = [stats[k] for k in ("peak_pool_bytes", "pool_bytes", "peak_bytes_reserved", "bytes_reserved") if k in stats]
    print("median step: %.2f ms over %d steps after %d warm-up" % (med * 1e3, a.steps - a.warmup, a.warmup))
    print("final loss: %r" % losses[-1])
    print("peak device memory (JAX memory_stats peak_bytes_in_use): %s%s" % (
        gib(stats.get("peak_bytes_in_use")), "" if stats else " (this allocator reports no memory_stats)"))
    if a.hold:
        seed_common.hold()
    fields = dict(
        bench="seed_mlp_jax", dim=a.dim, layers=a.layers, batch=a.batch, steps=a.steps, warmup=a.warmup,
        optimizer=a.optimizer, init=a.init, allocator=allocator,
        preallocate=os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "default"),
        step_ms=round(med * 1e3, 3), min_ms=round(min(times[a.warmup:]) * 1e3, 3),
        first_ms=round(times[0] * 1e3, 3), compile_s=round(compile_s, 2), loss=repr(losses[-1]),
        losses=",".join(repr(v) for v in losses), finite=finite,
        peak_bytes=stats.get("peak_bytes_in_use", "n/a"), bytes_limit=stats.get("bytes_limit", "n/a"),
        pool_bytes=max(held) if held else "n/a", told_total=driver_total(),
        ma_temp=ma.get("temp", "n/a"), ma_argument=ma.get("argument", "n/a"), ma_output=ma.get("output", "n/a"),
        ma_alias=ma.get("alias", "n/a"), wall_s=round(time.perf_counter() - T0, 2), jax=jax.__version__)
    seed_common.result(fields)
    return 0 if finite or a.init == "ones" else 1


if __name__ == "__main__":
    sys.exit(main())
