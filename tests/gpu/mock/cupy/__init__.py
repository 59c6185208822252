"""cupy stand-in (see ../README.md). MOCK_FAULT=broken-cupy: it does not
import at all, with or without spillway (a wheel that lacks its CUDA
libraries)."""
import os

import mockdev
from mockdev import Buffer, Device, Mat

mockdev.importable("cupy")  # MOCK_MISSING: a host without cupy

if os.environ.get("MOCK_FAULT") == "broken-cupy":
    raise ImportError("mock: cupy cannot load its CUDA libraries")

from . import cuda  # noqa: F401

__version__ = "0.0-mock"
float32 = "float32"
uint8 = "uint8"


class ndarray:  # noqa: N801
    def __init__(self, mat=None, nbytes=0):
        self.mat = mat if mat is not None else Mat.zeros()
        self.buf = Buffer(nbytes, cuda.memory.OutOfMemoryError) if nbytes else None

    def __matmul__(self, o):
        return ndarray(self.mat @ o.mat)

    def __add__(self, o):
        return ndarray(self.mat + o.mat)

    __iadd__ = __add__

    def fill(self, v):
        pass


def asarray(m):
    return ndarray(m)


def zeros(shape, dtype=None):
    return ndarray()


def empty(n, dtype=None):
    return ndarray(nbytes=n)


def asnumpy(a):
    return a.mat


class _Pool:
    def total_bytes(self):
        return Device.used


def get_default_memory_pool():
    return _Pool()
