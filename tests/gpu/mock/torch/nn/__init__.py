"""torch.nn stand-in: Linear (weights from torch's seeded generator), ReLU,
Sequential."""
import math

import torch
from mockdev import N, Mat

from . import functional, utils  # noqa: F401


class Module:
    def parameters(self):
        return []

    def cuda(self):
        for name, p in list(vars(self).items()):
            if isinstance(p, torch.Tensor):
                q = p.cuda()
                q.requires_grad = True
                setattr(self, name, q)
        return self


class Linear(Module):
    def __init__(self, fan_in, fan_out):
        k = 1 / math.sqrt(max(fan_in, 1))
        u = lambda: round(torch._RNG.uniform(-k, k), 4)  # noqa: E731
        self.weight = torch.Tensor(Mat([[u() for _ in range(N)] for _ in range(N)]), shape=(fan_out, fan_in))
        self.bias = torch.Tensor(Mat([[u() for _ in range(N)]] * N), shape=(fan_out,))
        self.weight.requires_grad = self.bias.requires_grad = True

    def parameters(self):
        return [self.weight, self.bias]

    def __call__(self, x):
        return torch._op(lambda a, w, b: a @ w.t() + b, x, self.weight, self.bias,
                         shape=(x.shape[0], self.weight.shape[0]))


class ReLU(Module):
    def __call__(self, x):
        return torch._op(lambda a: a.relu(), x)


class Sequential(Module):
    def __init__(self, *mods):
        self.mods = list(mods)

    def parameters(self):
        return [p for m in self.mods for p in m.parameters()]

    def cuda(self):
        for m in self.mods:
            m.cuda()
        return self

    def __call__(self, x):
        for m in self.mods:
            x = m(x)
        return x
