"""torch stand-in (see ../README.md). Tensors are N x N matrices (mockdev)
with a nominal shape: a CUDA tensor takes the bytes its shape would (at
least mockdev.MIN_BYTES) and keeps its values there. Operations record
their inputs, so that backward() can find the parameters; while a
torch.cuda.graph captures, they run nothing: each is recorded on the graph
(with a memset node into its output, so that every replay writes the
graph's memory through the driver) and computed at each replay - as CUDA
work is recorded, not run, during a capture. Gradients are a stand-in
(p * 0.01 * loss), not derivatives: the rows compare runs of the same code.
detach() breaks the chain (the graph dies with the loss), and values a row
reads back (item(), tolist()) go through mockdev.results
(MOCK_FAULT=mismatch)."""
import ctypes
import os as _os
import random as _random
import struct

import mockdev
from mockdev import MIN_BYTES, N, Buffer, Device, Mat

mockdev.importable("torch")  # MOCK_MISSING: a host without torch

__version__ = "0.0-mock"
uint8, int64, float32, bfloat16 = "uint8", "int64", "float32", "bfloat16"
_ITEMSIZE = {uint8: 1, int64: 8, float32: 4, bfloat16: 2}


class OutOfMemoryError(RuntimeError):
    pass


_RNG = _random.Random(0)


def manual_seed(s):
    _RNG.seed(s)


class Generator:
    def __init__(self, device=None):
        self.r = _random.Random(0)

    def manual_seed(self, s):
        self.r = _random.Random(s)
        return self


def _nbytes(shape, dtype=float32):
    n = _ITEMSIZE[dtype]
    for d in shape:
        n *= d
    return n


class Tensor:
    def __init__(self, mat=None, nbytes=0, shape=(N, N), cuda=False, inputs=(), dtype=float32):
        self.shape, self.is_cuda, self.inputs = tuple(shape), cuda or bool(nbytes), inputs
        self.dtype = dtype
        self.grad, self.requires_grad = None, False
        self.buf = (Buffer(nbytes or max(_nbytes(shape, dtype), MIN_BYTES), OutOfMemoryError) if self.is_cuda
                    else None)
        self._host = None  # data_ptr()'s bytes of a CPU tensor
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

    def float(self):
        return self

    def contiguous(self):
        return self

    def cuda(self):
        return Tensor(self.mat, shape=self.shape, cuda=True, dtype=self.dtype)

    def cpu(self):
        return Tensor(self.mat, shape=self.shape, dtype=self.dtype)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def element_size(self):
        return _ITEMSIZE[self.dtype]

    def data_ptr(self):
        """A CUDA tensor's device address; a CPU tensor's bytes (its nominal
        numel() x element_size(), the N x N values as float32 at the start,
        as in device memory)."""
        if self.buf:
            return self.buf.ptr
        if self._host is None:
            raw = struct.pack("<%df" % (N * N), *mockdev.results(self._mat.flat()))
            self._host = ctypes.create_string_buffer(raw, max(len(raw), self.numel() * self.element_size()))
        return ctypes.addressof(self._host)

    def detach(self):
        """The same memory, out of the graph."""
        t = object.__new__(Tensor)
        t.__dict__.update(self.__dict__)
        t.inputs, t.grad, t.requires_grad = (), None, False
        return t

    def requires_grad_(self, on=True):
        """A leaf from now on: its history (and what that holds) goes."""
        self.requires_grad, self.inputs = on, ()
        return self

    def item(self):
        return mockdev.results([self.mat.rows[0][0]])[0]

    def __mul__(self, o):
        if isinstance(o, Tensor):
            return _op(lambda a, b: a._zip(b, lambda x, y: x * y), self, o)
        return _op(lambda a: a * o, self)

    def __radd__(self, o):
        return _op(lambda a: a + o, self)

    def __sub__(self, o):
        return _op(lambda a, b: a - b, self, o)

    def __pow__(self, k):
        return _op(lambda a: a ** k, self)

    def __truediv__(self, k):
        return _op(lambda a: a / k, self)

    def mean(self):
        return _op(lambda a: Mat.full(a.mean()), self, shape=())

    def __matmul__(self, o):
        return _op(lambda a, b: a @ b, self, o, shape=(self.shape[0], o.shape[-1]))

    def __add__(self, o):
        return _op(lambda a, b: a + b, self, o)

    __iadd__ = __add__

    def __rmul__(self, k):
        return _op(lambda a: k * a, self)

    def abs(self):
        return _op(lambda a: a.abs(), self)

    def reshape(self, *shape):
        if -1 in shape:  # the free dimension takes what the others leave
            rest = _nbytes([d for d in shape if d != -1]) // 4
            shape = tuple(_nbytes(self.shape) // 4 // rest if d == -1 else d for d in shape)
        return _op(lambda a: a, self, shape=shape)

    def sum(self, dim=None, dtype=None):
        if dim is None and dtype is None:  # every element
            return _op(lambda a: a.total(), self, shape=())
        if dim is None:  # a byte tensor's total: its one value times its bytes
            n = self.buf.nbytes if self.buf else _nbytes(self.shape) // 4
            return _op(lambda a: Mat.full(a.rows[0][0] * n), self, shape=())
        return _op(lambda a: a.colsum(), self, shape=self.shape[1:])

    def __int__(self):
        return int(self.mat.rows[0][0])

    def add_(self, v):
        """In place: one kernel launch on the device (mockdev.Buffer.add), as
        torch's elementwise add on a contiguous tensor; in Python without a
        device or during a capture."""
        if not (self.buf and self.buf.add(float(v))):
            _op(lambda a: a + v, self, out=self)
        return self

    def fill_(self, v):
        self.mat = Mat.full(float(v))
        return self

    def copy_(self, o):
        return _op(lambda a: a, o, out=self)

    def __setitem__(self, i, o):
        def put(h, v):
            vals = h.flat()
            vals[i % (N * N)] = v.rows[0][0]
            return Mat.from_flat(vals)
        _op(put, self, o, out=self)

    def backward(self):
        """Stand-in gradients for every parameter this tensor came from."""
        for p in _leaves(self):
            p.grad = _op(lambda pm, lm: pm * (0.01 * lm.rows[0][0]), p, self, out=p.grad)
            p.grad.inputs = ()  # a gradient holds no graph

    def tolist(self):
        return self.mat.tolist()


def _op(fn, *inputs, shape=None, out=None):
    """fn(matrices) -> matrix into out (a new tensor, on the device when an
    input is): now, or at every replay while a graph captures."""
    if out is None:
        out = Tensor(shape=inputs[0].shape if shape is None else shape, cuda=any(t.is_cuda for t in inputs),
                     inputs=inputs)

    def run():
        out.mat = fn(*[t.mat for t in inputs])

    g = cuda.capturing()
    if g:
        g.record(run, out)
    else:
        run()
    return out


def _leaves(t):
    seen, todo, out = set(), [t], []
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if x.requires_grad:
            out.append(x)
        todo += list(x.inputs)
    return out


def randint(lo, hi, shape, generator):
    return Tensor(Mat([[generator.r.randrange(lo, hi) for _ in range(N)] for _ in range(N)]), shape=shape)


def randn(*shape, generator=None, device=None, dtype=float32):
    r = generator.r if generator else _RNG
    return Tensor(Mat([[round(r.gauss(0, 1), 3) for _ in range(N)] for _ in range(N)]), shape=shape,
                  cuda=device == "cuda", dtype=dtype)


def mm(a, b):
    """a @ b. Two CUDA bf16 matrices on fakecuda: as cuBLASLt's sm90 TMA
    kernels, a descriptor per operand encoded through the driver and one
    launch that reaches them only through those (mockdev.tma_gemm);
    otherwise a @ b in Python."""
    if not (mockdev._cu and a.buf and b.buf and a.dtype == b.dtype == bfloat16 and a.buf.on_device
            and b.buf.on_device and not cuda.capturing()):
        return a @ b
    out = Tensor(shape=(a.shape[0], b.shape[-1]), cuda=True, dtype=a.dtype)
    mockdev.tma_gemm(a.buf, b.buf, out.buf, a.shape[0], a.shape[-1], b.shape[-1])
    return out


def set_float32_matmul_precision(_p):
    pass


def zeros(*shape, device=None):
    return Tensor(Mat.zeros(), shape=shape, cuda=device == "cuda")


def full(shape, value, device=None):
    return Tensor(Mat.full(float(value)), shape=tuple(shape), cuda=device == "cuda")


def empty(n, dtype=None, device=None):
    return Tensor(nbytes=n, shape=(n // 4,))


def equal(a, b):
    return a.mat == b.mat


def cat(ts):
    return _Cat(ts)


class _Cat:
    """torch.cat of the rows' fingerprints: only read back."""

    def __init__(self, ts):
        self.ts = ts

    def cpu(self):
        return self

    def tolist(self):
        return mockdev.results([v for t in self.ts for v in t.mat.flat()])


from . import cuda, nn, optim  # noqa: E402,F401  (they use Tensor)

cuda.OutOfMemoryError = OutOfMemoryError
if "expandable_segments:true" in _os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").lower() and mockdev._cu:
    Device.segments = mockdev.Segments()
# backend:cudaMallocAsync: every tensor is a stream-ordered allocation and
# every free reaches the driver (issue 13's liveness recipe), as torch's
# CudaMallocAsyncAllocator does.
Device.stream_ordered = "backend:cudamallocasync" in _os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").lower()
