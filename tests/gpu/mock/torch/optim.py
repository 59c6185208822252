"""torch.optim stand-in: plain SGD and Adam (its two moments are CUDA
tensors like the parameters, made at the first step, as torch's)."""
import math

import torch


class SGD:
    def __init__(self, params, lr):
        self.params, self.lr = list(params), lr

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    def step(self):
        for p in self.params:
            if p.grad is not None:
                torch._op(lambda pm, gm: pm - self.lr * gm, p, p.grad, out=p)


class Adam(SGD):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, lr)
        self.b1, self.b2, self.eps, self.t, self.state = betas[0], betas[1], eps, 0, {}

    def step(self):
        self.t += 1
        bc1, bc2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        b1, b2, lr, eps = self.b1, self.b2, self.lr, self.eps
        for p in self.params:
            if p.grad is None:
                continue
            if id(p) not in self.state:
                self.state[id(p)] = (torch.zeros(*p.shape, device="cuda"), torch.zeros(*p.shape, device="cuda"))
            m, v = self.state[id(p)]
            torch._op(lambda mm, gm: mm * b1 + gm * (1 - b1), m, p.grad, out=m)
            torch._op(lambda vm, gm: vm * b2 + gm._zip(gm, lambda x, y: x * y) * (1 - b2), v, p.grad, out=v)
            torch._op(lambda pm, mm, vm: pm - (mm / bc1)._zip((vm / bc2)._map(math.sqrt) + eps,
                                                              lambda x, y: x / y) * lr, p, m, v, out=p)
