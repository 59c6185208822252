"""Shared by the stand-ins: a tiny matrix type and the device.

With MOCK_CUDA=1 the device is the CUDA driver (libcuda.so.1 through ctypes,
as JAX reaches it through dlsym): every array takes cuMemAlloc_v2 memory,
given back by cuMemFree_v2 when it dies, so that under spillway and fakecuda
the limit, the out-of-memory answer and the stats segment are the real
ones. Otherwise a plain counter of MOCK_TOTAL bytes (default 256M)."""
import ctypes
import os

N = 8  # every "matrix" is N x N, whatever shape was asked for


def _size(s):
    s = s.strip().upper()
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * m[s[-1]]) if s[-1] in m else int(s)


_cu = None
if os.environ.get("MOCK_CUDA") == "1":
    _cu = ctypes.CDLL("libcuda.so.1")
    _cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    _cu.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    _cu.cuMemGetInfo_v2.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
    _dev, _ctx = ctypes.c_int(0), ctypes.c_void_p()
    if (_cu.cuInit(0) or _cu.cuDeviceGet(ctypes.byref(_dev), 0)
            or _cu.cuDevicePrimaryCtxRetain(ctypes.byref(_ctx), _dev) or _cu.cuCtxSetCurrent(_ctx)):
        raise RuntimeError("mock: no CUDA context")


def mem_info():
    if _cu:
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        _cu.cuMemGetInfo_v2(ctypes.byref(f), ctypes.byref(t))
        return f.value, t.value
    return TOTAL - Device.used, TOTAL


TOTAL = _size(os.environ.get("MOCK_TOTAL", "256M"))


class Device:
    used = 0

    @classmethod
    def take(cls, n, oom):
        ptr = 0
        if _cu:
            p = ctypes.c_uint64()
            r = _cu.cuMemAlloc_v2(ctypes.byref(p), n)
            if r == 2:
                raise oom("out of memory: %d bytes requested, %d in use" % (n, cls.used))
            if r:
                raise RuntimeError("cuMemAlloc_v2: error %d" % r)
            ptr = p.value
        elif cls.used + n > TOTAL:
            raise oom("out of memory: %d bytes requested, %d of %d in use" % (n, cls.used, TOTAL))
        cls.used += n
        return ptr

    @classmethod
    def give(cls, ptr, n):
        if _cu and ptr:
            _cu.cuMemFree_v2(ptr)
        cls.used -= n


class Mat:
    def __init__(self, rows):
        self.rows = [list(map(float, r)) for r in rows]

    @staticmethod
    def zeros():
        return Mat([[0.0] * N for _ in range(N)])

    def __matmul__(self, o):
        return Mat([[sum(self.rows[i][k] * o.rows[k][j] for k in range(N)) for j in range(N)] for i in range(N)])

    def __add__(self, o):
        return Mat([[a + b for a, b in zip(r, s)] for r, s in zip(self.rows, o.rows)])

    __iadd__ = __add__

    def __rmul__(self, k):
        return Mat([[k * a for a in r] for r in self.rows])

    __mul__ = __rmul__

    def __eq__(self, o):
        return isinstance(o, Mat) and self.rows == o.rows

    def astype(self, _dtype):
        return self


class Buffer:
    """Device memory of nbytes, returned when the object dies."""

    def __init__(self, nbytes, oom):
        self.nbytes = 0
        self.ptr = Device.take(nbytes, oom)
        self.nbytes = nbytes

    def __del__(self):
        if self.nbytes:
            Device.give(self.ptr, self.nbytes)
