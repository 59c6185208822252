"""jax stand-in (see ../README.md). Arrays are N x N matrices (mockdev)
with a nominal shape whose bytes they take from the device. The allocator
follows XLA_PYTHON_CLIENT_*: BFC (the default, preallocated or not) refuses
past bytes_limit = XLA_PYTHON_CLIENT_MEM_FRACTION (0.75) x the reported
total, as JAX's does, with its RESOURCE_EXHAUSTED error; platform and
cuda_async only when the driver refuses (cuda_async through cuMemAllocAsync
and cuMemFreeAsync, as XLA's). jit stands in for XLA's command buffers (see
_CommandBuffers), its while loops (lax.fori_loop, lax.while_loop) included;
jit(f).lower(...).compile() can be called, as a jax.stages.Compiled can.
Values a row reports (float(array)) go through mockdev.results
(MOCK_FAULT=mismatch)."""
import os

import mockdev
from mockdev import MIN_BYTES, Buffer, Device, Mat

mockdev.importable("jax")  # MOCK_MISSING: a host without jax

from . import lax, nn, numpy, random, tree_util  # noqa: F401

__version__ = "0.0-mock"
_loops = None  # while a jitted function runs: the iterations of each loop it ran (lax)


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

    def __int__(self):
        return int(self.value())


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


_DEFAULT_COMMANDS = ("FUSION", "CUBLAS", "CUBLASLT", "CUSTOM_CALL", "CUDNN")


def command_buffer_types(flags):
    """The command types XLA_FLAGS leave XLA's command buffers, each
    --xla_gpu_enable_command_buffer= read in turn as xla/debug_options_flags.cc
    reads it: empty clears the list, plain names replace it, +NAME and -NAME
    add to or take from it - only the first of a +/- list, as XLA (its
    setter returns inside its loop over them): one flag per name."""
    types = list(_DEFAULT_COMMANDS)
    for tok in flags.split():
        if not tok.startswith("--xla_gpu_enable_command_buffer="):
            continue
        vals = [v.upper() for v in tok.split("=", 1)[1].split(",") if v]
        if not vals:
            types = []
        elif not any(v.startswith(("+", "-")) for v in vals):
            types = vals
        elif all(v.startswith(("+", "-")) for v in vals):
            name = vals[0][1:]
            types = [t for t in types if t != name] + ([name] if vals[0][0] == "+" else [])
    return types


class _CommandBuffers:
    """What XLA's command buffers do, in small. The stand-in's operations
    are fusions: command buffers are on when XLA_FLAGS leave FUSION among
    the command types (--xla_gpu_enable_command_buffer= empty turns them
    off, as in XLA). Then each call of a jitted function captures a graph
    (thread-local mode, as XLA's tracing does) with a memset node into
    every array it returns, instantiates and launches it, and the compiled
    function's HLO text calls a command_buffer computation.

    A while loop the function ran (lax) goes where XLA would put it:
      graph     WHILE among the command types: inside the command buffer,
                a WHILE conditional node (mockdev.LoopGraph, made with
                cuGraphAddNode; kept until the next call, as XLA keeps its
                command buffer), the HLO's while inside the command_buffer
                computation;
      host      WHILE not among them (or MOCK_XLA_LOOPS=host: as an XLA
                that keeps the loop out, a body it cannot record): the loop
                runs from the host, the body's command buffer launched once
                per iteration, the HLO's while in ENTRY, its body calling
                command_buffer;
      unrolled  MOCK_XLA_LOOPS=unrolled (an XLA that unrolled the loop): no
                while in the HLO, one graph launch per call."""

    def __init__(self):
        types = command_buffer_types(os.environ.get("XLA_FLAGS", ""))
        self.on = "FUSION" in types
        self.loops = "graph" if "WHILE" in types else "host"
        if os.environ.get("MOCK_XLA_LOOPS") in ("host", "unrolled"):
            self.loops = os.environ["MOCK_XLA_LOOPS"]
        self.last = None

    def hlo(self, name, loops=0):
        fusion = "  %fusion = f32[8,8] fusion(%p), kind=kLoop"
        call = "  %call = f32[8,8] call(%p), to_apply=%command_buffer"
        loops = 0 if self.loops == "unrolled" else loops
        whiles = ["  %%while.%d = (s32[], f32[8,8]) while(%%tuple), condition=%%cond.%d, body=%%body.%d" % (i, i, i)
                  for i in range(loops)]
        comps = []
        for i in range(loops):
            comps += ["%%cond.%d (p: (s32[], f32[8,8])) -> pred[] {" % i, "  %compare = pred[] fusion(%p), kind=kLoop",
                      "}", "", "%%body.%d (p: (s32[], f32[8,8])) -> (s32[], f32[8,8]) {" % i,
                      call if self.on and self.loops == "host" else fusion, "}", ""]
        inside = self.on and self.loops == "graph"
        if self.on:
            comps += ["%command_buffer (p: f32[8,8]) -> f32[8,8] {", fusion] + (whiles if inside else []) + ["}", ""]
        entry = ([call] if self.on else [fusion]) + ([] if inside else whiles)
        return "\n".join(["HloModule jit_%s" % name, ""] + comps + ["ENTRY %main {"] + entry + ["}"]) + "\n"

    def run(self, outs, loops=()):
        if not self.on:
            return
        if loops and self.loops == "graph":
            self.last = mockdev.LoopGraph(loops, [a.buf.ptr for a in outs if a.buf])
            self.last.launch()
            return
        g = mockdev.Graph()
        g.begin(mockdev.CAPTURE_THREAD_LOCAL)
        for i, a in enumerate(outs):
            if a.buf:
                g.memset(a.buf.ptr + MIN_BYTES - 4, i + 1)
        g.end()
        for _ in range(1 + (sum(loops) if self.loops == "host" else 0)):
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

    def _traced(self, args):
        """f(*args), and the iterations of each loop it ran."""
        global _loops
        _loops = []
        try:
            return self.f(*args), _loops
        finally:
            _loops = None

    def __call__(self, *args):
        out, loops = self._traced(args)
        self.cb.run(tree_util.leaves(out), loops)
        return out

    def lower(self, *args):
        """Traces f by running it (its loops are in the HLO); the results go."""
        _, loops = self._traced(args)
        return _Compiled(self.cb.hlo(getattr(self.f, "__name__", "fn"), len(loops)), self)


def jit(f=None, static_argnums=None, donate_argnums=None):
    if f is None:
        return lambda g: jit(g, static_argnums, donate_argnums)
    return _Jitted(f)
