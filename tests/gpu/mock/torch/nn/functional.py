import torch
from mockdev import Mat


def mse_loss(a, b):
    return torch._op(lambda x, y: Mat.full(((x - y) ** 2).mean()), a, b, shape=())
