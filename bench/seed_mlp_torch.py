#!/usr/bin/env python3
"""The seed's MLP (bench/seed_mlp_jax.py) as a PyTorch training step of the
same size: 4 weights of 7168x7168 float32 (no bias), x -> gelu(x @ w)
through each (tanh approximation, the seed's formula), loss = mean((out -
x)^2) + 0.001 x sum of squared weights, loss.backward(),
torch.nn.utils.clip_grad_norm_(params, 1.0), torch.optim.Adam(lr=0.1)
(betas 0.9/0.999, eps 1e-8: optax.adam's). The input is DIM x DIM.
Weights, Adam's two moments and the gradients are 4 x 4 x 196 MiB = 3.06 GiB;
with the activations autograd keeps and Adam's temporaries the caching
allocator reserves ~5 GiB. Issue 13's GPU rows run it unmodified under
spillway (tests/gpu/oversub.py).

Data: deterministic (torch.randn from a seeded CUDA generator, weights
scaled by 1/sqrt(DIM)). Matmuls: --matmul-precision high (default: TF32,
what JAX does with float32 matmuls on this GPU, so the two programs do
comparable work) or highest (full float32, ~6x slower on an H100).

Prints each step's loss and time, the median step time after --warmup
steps, the final loss (repr of the float64 value of the float32 loss) and
the peak device memory PyTorch reports, then one line for harnesses:

  RESULT bench=seed_mlp_torch step_ms=<median after warm-up> loss=<final>
         losses=<each step's, comma-separated> finite=0|1 peak_bytes=..
         reserved_peak=.. told_total=.. alloc_conf=.. ...

--hold: print SWGPU_HOLD after the warm-up steps and again after the last
step, each time waiting for a line on stdin (the GPU rows read spillway's
stats segment at both: the bytes moved between them are the settled steps'
moves; NVML is sampled all along). Step times never include a hold.
"""
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed_common  # noqa: E402

ap = seed_common.parser(__doc__, "clip_grad_norm_'s bound")
ap.add_argument("--matmul-precision", choices=("high", "highest"), default="high")
a = seed_common.parse(ap)

T0 = time.perf_counter()
import torch  # noqa: E402  (after argparse: --help needs no GPU)

GiB = seed_common.GiB
gib = seed_common.gib


def compute_loss(params, x):
    h = x
    for w in params:
        h = torch.nn.functional.gelu(h @ w, approximate="tanh")
    return ((h - x) ** 2).mean() + a.l2 * sum((w * w).sum() for w in params)


def build():
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    x = torch.randn(a.batch, a.dim, device="cuda", generator=g)
    params = [(torch.randn(a.dim, a.dim, device="cuda", generator=g) / math.sqrt(a.dim)).requires_grad_()
              for _ in range(a.layers)]
    return x, params, torch.optim.Adam(params, lr=a.lr)


def step(x, params, opt):
    opt.zero_grad(set_to_none=True)
    loss = compute_loss(params, x)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, a.max_norm)
    opt.step()
    return loss.detach()


def main():
    torch.set_float32_matmul_precision(a.matmul_precision)
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default")
    print("seed MLP (PyTorch %s): %d x %dx%d f32, input %dx%d, Adam(lr=%g) after clip_grad_norm_(%g), "
          "matmul precision %s, allocator %s" % (torch.__version__, a.layers, a.dim, a.dim, a.batch, a.dim, a.lr,
                                                 a.max_norm, a.matmul_precision, conf), flush=True)
    x, params, opt = build()
    torch.cuda.synchronize()
    times, losses = [], []
    for i in range(a.steps):
        if a.hold and i == a.warmup:
            seed_common.hold()
        t = time.perf_counter()
        loss = step(x, params, opt)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
        losses.append(loss.item())
        print("step %d: loss %r, %.2f ms" % (i + 1, losses[-1], times[-1] * 1e3), flush=True)
    med = statistics.median(times[a.warmup:])
    finite = int(all(math.isfinite(v) for v in losses))
    peak, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    told = torch.cuda.mem_get_info()[1]
    print("median step: %.2f ms over %d steps after %d warm-up" % (med * 1e3, a.steps - a.warmup, a.warmup))
    print("final loss: %r" % losses[-1])
    print("peak device memory (torch.cuda.max_memory_allocated): %s; reserved at most %s" % (gib(peak), gib(reserved)))
    if a.hold:
        seed_common.hold()
    fields = dict(
        bench="seed_mlp_torch", dim=a.dim, layers=a.layers, batch=a.batch, steps=a.steps, warmup=a.warmup,
        precision=a.matmul_precision, alloc_conf=conf, step_ms=round(med * 1e3, 3),
        min_ms=round(min(times[a.warmup:]) * 1e3, 3), first_ms=round(times[0] * 1e3, 3), loss=repr(losses[-1]),
        losses=",".join(repr(v) for v in losses), finite=finite, peak_bytes=peak, reserved_peak=reserved,
        told_total=told, wall_s=round(time.perf_counter() - T0, 2), torch=torch.__version__)
    seed_common.result(fields)
    return 0 if finite else 1


if __name__ == "__main__":
    sys.exit(main())
