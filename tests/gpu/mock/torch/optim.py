"""torch.optim stand-in: plain SGD."""
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
