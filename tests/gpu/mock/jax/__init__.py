"""jax stand-in (see ../README.md)."""
import os

from mockdev import Buffer, Mat

from . import lax, numpy  # noqa: F401

__version__ = "0.0-mock"


class XlaRuntimeError(RuntimeError):
    pass


class _Dev:
    def memory_stats(self):
        if os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR") == "platform":
            return None
        from mockdev import Device, mem_info
        return {"bytes_limit": mem_info()[1] * 3 // 4, "bytes_in_use": Device.used, "pool_bytes": Device.used}


def devices():
    return [_Dev()]


def jit(f=None, static_argnums=None):
    if f is None:
        return lambda g: g
    return f


class Array:
    def __init__(self, mat=None, nbytes=0):
        self.mat = mat if mat is not None else Mat.zeros()
        self.buf = Buffer(nbytes, lambda m: XlaRuntimeError("RESOURCE_EXHAUSTED: " + m)) if nbytes else None

    def block_until_ready(self):
        return self

    def __add__(self, o):
        return Array(self.mat + o.mat)


def device_put(x, dev=None):
    return Array(x)
