"""torch.nn.utils stand-in: clip_grad_norm_ as torch's (the norm of every
gradient's elements; each scaled by max_norm / (norm + 1e-6) when that is
below 1)."""
import math

import torch
from mockdev import Mat


def clip_grad_norm_(params, max_norm):
    grads = [p.grad for p in params if p.grad is not None]
    total = math.sqrt(sum(v * v for g in grads for v in g.mat.flat()))
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for g in grads:
            torch._op(lambda gm: gm * coef, g, out=g)
    return torch.Tensor(Mat.full(total), shape=())
