"""numpy stand-in (see ../README.md)."""
import random as _random

import mockdev
from mockdev import N, Mat

mockdev.importable("numpy")  # MOCK_MISSING: a host without numpy

float32 = "float32"
uint8 = "uint8"


class _Rng:
    def __init__(self, seed):
        self.r = _random.Random(seed)

    def integers(self, lo, hi, shape):
        return Mat([[self.r.randrange(lo, hi) for _ in range(N)] for _ in range(N)])


class random:  # noqa: N801 (module-like namespace)
    @staticmethod
    def default_rng(seed):
        return _Rng(seed)


def asarray(x):
    return x.mat if hasattr(x, "mat") else x


def array_equal(a, b):
    return asarray(a) == asarray(b)
