"""jax stand-in (see ../README.md). Arrays are N x N matrices (mockdev)
with a nominal shape whose bytes they take from the device. The allocator
follows XLA_PYTHON_CLIENT_*: BFC (the default, preallocated or not) refuses
past bytes_limit = XLA_PYTHON_CLIENT_MEM_FRACTION (0.75) x the reported
total, as JAX's does, with its RESOURCE_EXHAUSTED error; platform and
cuda_async only when the driver refuses (cuda_async through cuMemAllocAsync
and cuMemFreeAsync, as XLA's). jit stands in for XLA's command buffers (see
_CommandBuffers); jit(f).lower(...).compile() can be called, as a
jax.stages.Compiled can. Values a row reports (float(array)) go through
mockdev.results (MOCK_FAULT=mismatch)."""
import os
import re

import mockdev
from mockdev import MIN_BYTES, Buffer, Device, Mat

mockdev.importable("jax")  # MOCK_MISSING: a host without jax

from . import lax, nn, numpy, random, tree_util  # noqa: F401

__version__ = "0.0-mock"


class XlaRuntimeError(RuntimeError):
    pass


def _allocator():
    return os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default")


def _bytes_limit():
    return int(mockdev.mem_info()[1] * float(os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.75")))


def _oom(msg):
    return XlaRuntimeError("RESOURCE_EXHAUSTED: " + msg)


Device.stream_ordered = _allocator() == "cuda_async"


class _Dev:
    def memory_stats(self):
        """As jaxlib's Device.memory_stats: None where the allocator has no
        stats (platform: XLA answers Unimplemented). MOCK_FAULT=stats-internal:
        the INTERNAL error XLA versions whose GetAllocatorStats has
        TF_RET_CHECK(stats.has_value()) raise instead."""
        if mockdev.fault("stats-internal"):
            raise XlaRuntimeError("INTERNAL: RET_CHECK failure (xla/pjrt/gpu/se_gpu_pjrt_client.cc) stats.has_value()")
        if _allocator() == "platform":
            return None
        return {"bytes_limit": _bytes_limit(), "bytes_in_use": Device.used, "pool_bytes": Device.used,
                "peak_bytes_in_use": Device.peak, "peak_pool_bytes": Device.peak}


def devices():
    return [_Dev()]


def _nbytes(shape):
    n = 4
    for d in shape:
        n *= d
    return n


class Array:
    def __init__(self, mat=None, nbytes=0, shape=None):
        self.shape = tuple(shape) if shape is not None else None
        n = nbytes or (max(_nbytes(self.shape), MIN_BYTES) if self.shape is not None else 0)
        if n and _allocator() == "default" and Device.used + n > _bytes_limit():
            raise _oom("BFC allocator: %d bytes requested, %d of bytes_limit %d in use" % (
                n, Device.used, _bytes_limit()))
        self.buf = Buffer(n, _oom) if n else None
        self._mat = Mat.zeros()
        if mat is not None:
            self.mat = mat

    @property
    def mat(self):
        return self.buf.read() if self.buf else self._mat

    @mat.setter
    def mat(self, m):
        if self.buf:
            self.buf.write(m)
        else:
            self._mat = m

    def block_until_ready(self):
        return self

    def _op(self, fn, *others, shape=None):
        vals = [o.mat if isinstance(o, Array) else o for o in others]
        return Array(fn(self.mat, *vals), shape=self.shape if shape is None else shape)

    def __add__(self, o):
        return self._op(lambda a, b: a + b, o)

    __radd__ = __add__

    def __neg__(self):
        return self._op(lambda a: a * -1.0)

    def __lt__(self, o):
        return self._op(lambda a, b: a._zip(b, lambda x, y: float(x < y)), o)

    def __rpow__(self, k):
        return self._op(lambda a: a._map(lambda e: k ** e))

    def __sub__(self, o):
        return self._op(lambda a, b: a - b, o)

    def __rsub__(self, o):
        return self._op(lambda a, b: b - a if isinstance(b, Mat) else a * -1.0 + b, o)

    def __mul__(self, o):
        return self._op(lambda a, b: a * b, o)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._op(lambda a, b: a / b, o)

    def __pow__(self, k):
        return self._op(lambda a: a ** k)

    def __matmul__(self, o):
        return self._op(lambda a, b: a @ b, o, shape=(self.shape[0], o.shape[-1]))

    def sum(self, axis=None):
        return self._op(lambda a: a.colsum(), shape=self.shape[1:])

    def value(self):
        """The first element, as computed (internal use)."""
        return self.mat.rows[0][0]

    def __float__(self):
        """What a row reads back and reports (MOCK_FAULT=mismatch: off)."""
        return mockdev.results([self.value()])[0]


def device_put(x, dev=None):
    return Array(x, shape=(512, 512))


def block_until_ready(tree):
    return tree


def value_and_grad(f):
    """(f(params, ...), stand-in gradients p * 0.01 * loss): not derivatives,
    the rows compare runs of the same code."""
    def vg(params, *args):
        loss = f(params, *args)
        scale = 0.01 * loss.value()
        return loss, tree_util.tree_map(lambda p: p * scale, params)
    return vg


class _CommandBuffers:
    """What XLA's command buffers do, in small: each call of a jitted
    function captures a graph (thread-local mode, as XLA's tracing does)
    with a memset node into every array it returns, instantiates and
    launches it; the compiled function's HLO text calls a command_buffer
    computation. --xla_gpu_enable_command_buffer= (empty) in XLA_FLAGS turns
    both off, as in XLA."""

    def __init__(self):
        self.on = not re.search(r"--xla_gpu_enable_command_buffer=(\s|$)", os.environ.get("XLA_FLAGS", ""))

    def hlo(self, name):
        body = ["HloModule jit_%s" % name, ""]
        if self.on:
            body += ["%command_buffer (p: f32[8,8]) -> f32[8,8] {", "}", "",
                     "ENTRY %main {", "  %call = f32[8,8] call(%p), to_apply=%command_buffer", "}"]
        else:
            body += ["ENTRY %main {", "  %fusion = f32[8,8] fusion(%p), kind=kLoop", "}"]
        return "\n".join(body) + "\n"

    def run(self, outs):
        if not self.on:
            return
        g = mockdev.Graph()
        g.begin(mockdev.CAPTURE_THREAD_LOCAL)
        for i, a in enumerate(outs):
            if a.buf:
                g.memset(a.buf.ptr + MIN_BYTES - 4, i + 1)
        g.end()
        g.launch()


class _Compiled:
    """Both the lowered and the compiled stage: as_text, memory_analysis
    (None: not known here, as XLA answers on some platforms) and calls."""

    def __init__(self, text, jitted=None):
        self.text, self.jitted = text, jitted

    def compile(self):
        return self

    def as_text(self):
        return self.text

    def memory_analysis(self):
        return None

    def __call__(self, *args):
        return self.jitted(*args)


class _Jitted:
    def __init__(self, f):
        self.f, self.cb = f, _CommandBuffers()

    def __call__(self, *args):
        out = self.f(*args)
        self.cb.run(tree_util.leaves(out))
        return out

    def lower(self, *args):
        return _Compiled(self.cb.hlo(getattr(self.f, "__name__", "fn")), self)


def jit(f=None, static_argnums=None, donate_argnums=None):
    if f is None:
        return lambda g: jit(g, static_argnums, donate_argnums)
    return _Jitted(f)
