"""jax.random stand-in: keys are integers; values from Python's Random."""
import random as _random

from mockdev import N, Mat


class _Key:
    def __init__(self, seed):
        self.seed = seed


def PRNGKey(seed):  # noqa: N802
    return _Key(seed)


def fold_in(key, data):
    return _Key(key.seed * 1000003 + data + 1)


def split(key, num=2):
    return [_Key(key.seed * 7919 + i + 1) for i in range(num)]


def normal(key, shape, dtype=None):
    from jax import Array
    r = _random.Random(key.seed)
    return Array(Mat([[round(r.gauss(0, 1), 3) for _ in range(N)] for _ in range(N)]), shape=shape)
