#!/usr/bin/env python3
"""The same MLP training step as jax_step.py in PyTorch (caching allocator,
or whatever PYTORCH_CUDA_ALLOC_CONF sets): SGD on an MSE loss, a fresh
random batch each step, timed in blocks after a warm-up. bench/run.py runs
it natively and under spillway and takes the ratio.

  RESULT bench=torch_step alloc_conf=.. step_us=<median block / steps> loss=..
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

import torch  # noqa: E402

WIDTHS = [1024, 4096, 4096, 4096, 1024]
BATCH = 512
torch.manual_seed(0)
layers = []
for m, n in zip(WIDTHS[:-1], WIDTHS[1:]):
    layers += [torch.nn.Linear(m, n), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers[:-1]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)


def step():
    x = torch.randn(BATCH, WIDTHS[0], device="cuda")
    y = torch.randn(BATCH, WIDTHS[-1], device="cuda")
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range(a.warmup):
    loss = step()
torch.cuda.synchronize()
blocks = []
for _ in range(a.blocks):
    t0 = time.perf_counter()
    for _ in range(a.steps_per_block):
        loss = step()
    torch.cuda.synchronize()
    blocks.append((time.perf_counter() - t0) / a.steps_per_block)
lv = loss.item()
print("RESULT bench=torch_step alloc_conf=%s step_us=%.1f min_us=%.1f loss=%.5f finite=%d" % (
    os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default"), statistics.median(blocks) * 1e6, min(blocks) * 1e6, lv,
    int(lv == lv and abs(lv) < float("inf"))), flush=True)
