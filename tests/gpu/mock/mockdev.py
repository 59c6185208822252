"""Shared by the stand-ins: a tiny matrix type, the device, and the CUDA
work frameworks do around their memory.

With MOCK_CUDA=1 the device is the CUDA driver (libcuda.so.1 through ctypes,
as JAX reaches it through dlsym): every array takes cuMemAlloc_v2 memory
(PyTorch's expandable segments: cuMemCreate handles mapped into one
reservation), given back when it dies, so that under spillway and fakecuda
the limit, the out-of-memory answer and the stats segment are the real
ones. An array's values live in its device memory (written by each
operation, read back before each use), so spill and fill must keep them;
graphs are the driver's stream capture, instantiation and launch, or (a
jitted loop in XLA's command buffer: LoopGraph) built node by node with a
WHILE conditional node that fakecuda runs.
In-place elementwise adds are kernels: a Python function registered with
fakecuda (fakecuda_register_kernel through ctypes), found with
cuModuleLoadData + cuModuleGetFunction and launched with cuLaunchKernel, one
launch per op, so that spillway's launch counter sees each.
Otherwise a plain counter of MOCK_TOTAL bytes (default 256M), values in
Python, and no graphs.

Stream-ordered allocations (Device.stream_ordered: JAX's cuda_async,
PyTorch's backend:cudaMallocAsync):
cuMemAllocAsync and cuMemFreeAsync on the legacy stream, as XLA's
cuda_async allocator allocates and frees each buffer on its stream.

MOCK_DEVICE_PEAK=<file> (issue 13's rows, tests/gpu/oversub.py): where the
peak of fakecuda's own device bytes (fakecuda_device_bytes_used: what the
emulated device really holds, spillway's pool included) is written at exit,
sampled after every allocation and free - NVML's per-process figure, on
fakecuda.

MOCK_FAULT, the negative controls of tests/gpu/selftest.sh, acts only in a
process under spillway (libspillway in LD_PRELOAD):
  mismatch      values read back for a row's results are off by 1%
                (stands in for a spill or fill that lost data)
  capture-sync  a cuCtxSynchronize inside a capture (stands in for spillway
                syncing during the program's capture: the driver then
                invalidates it)
  unpooled      expandable segments ask for compressible memory, which
                spillway passes through instead of pooling
  stats-internal  jax's Device.memory_stats() raises XLA's INTERNAL error
                (the allocator has no stats, older XLA) instead of None
  cond-bypass   a jitted loop's WHILE conditional node (LoopGraph) is made
                by the driver's own cuGraphAddNode, found in libcuda.so.1's
                symbol table: spillway's hook never sees it (stands in for a
                node spillway misses)
  tma-bypass    torch.mm's TMA descriptors (tma_gemm) are encoded by the
                driver's own cuTensorMapEncodeTiled, found the same way:
                spillway never records them (stands in for a library that
                makes its descriptors some other way than through the
                driver's entry points)

MOCK_MISSING=jax,torch,cupy,numpy (any of them, with or without spillway):
those stand-ins raise ModuleNotFoundError at import, as on a host without
the framework (importable()).
"""
import ctypes
import os
import struct
import sys

# rowlib (tests/gpu, this folder's parent): the driver's own functions. Put
# last on the path: the programs' own folders (tests/gpu, bench) come first.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import rowlib  # noqa: E402

N = 8  # every "matrix" is N x N, whatever shape was asked for
MIN_BYTES = 512  # room for N x N float32 values and the scratch word graphs write


def _size(s):
    s = s.strip().upper()
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * m[s[-1]]) if s[-1] in m else int(s)


def under_spillway():
    return "libspillway" in os.environ.get("LD_PRELOAD", "")


def fault(name):
    return os.environ.get("MOCK_FAULT") == name and under_spillway()


def importable(name):
    """MOCK_MISSING=jax,cupy,...: those stand-ins are not installed, with or
    without spillway: importing one raises what Python raises for a missing
    package (a host without that framework)."""
    if name in os.environ.get("MOCK_MISSING", "").split(","):
        raise ModuleNotFoundError("No module named %r" % name, name=name)


class _Prop(ctypes.Structure):  # CUmemAllocationProp (cuda.h)
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("loc_type", ctypes.c_int),
                ("loc_id", ctypes.c_int), ("win32HandleMetaData", ctypes.c_void_p),
                ("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Access(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("loc_type", ctypes.c_int), ("loc_id", ctypes.c_int), ("flags", ctypes.c_int)]


_P, _U64, _SZ = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t


class _MemsetParams(ctypes.Structure):  # CUDA_MEMSET_NODE_PARAMS
    _fields_ = [("dst", _U64), ("pitch", _SZ), ("value", ctypes.c_uint), ("elementSize", ctypes.c_uint),
                ("width", _SZ), ("height", _SZ)]


class _KernelParams(ctypes.Structure):  # CUDA_KERNEL_NODE_PARAMS_v1 (the unsuffixed cuGraphAddKernelNode's)
    _fields_ = [("func", _P), ("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("kernelParams", ctypes.POINTER(_P)), ("extra", ctypes.POINTER(_P))]


class _CondParams(ctypes.Structure):  # CUDA_CONDITIONAL_NODE_PARAMS
    _fields_ = [("handle", _U64), ("type", ctypes.c_int), ("size", ctypes.c_uint), ("phGraph_out", ctypes.POINTER(_P)),
                ("ctx", _P)]


class _NodeParams(ctypes.Structure):  # CUgraphNodeParams: type, reserved0[3], a union of 29 long longs, reserved2
    _fields_ = [("type", ctypes.c_int), ("reserved0", ctypes.c_int * 3), ("conditional", _CondParams),
                ("union_rest", ctypes.c_byte * (29 * 8 - ctypes.sizeof(_CondParams))), ("reserved2", ctypes.c_longlong)]
_PROTOS = {
    "cuMemAlloc_v2": [ctypes.POINTER(_U64), _SZ],
    "cuMemFree_v2": [_U64],
    "cuMemAllocAsync": [ctypes.POINTER(_U64), _SZ, _P],
    "cuMemFreeAsync": [_U64, _P],
    "cuMemGetInfo_v2": [ctypes.POINTER(_SZ), ctypes.POINTER(_SZ)],
    "cuMemcpyHtoD_v2": [_U64, _P, _SZ],
    "cuMemcpyDtoH_v2": [_P, _U64, _SZ],
    "cuMemsetD32Async": [_U64, ctypes.c_uint, _SZ, _P],
    "cuStreamCreate": [ctypes.POINTER(_P), ctypes.c_uint],
    "cuStreamSynchronize": [_P],
    "cuStreamBeginCapture_v2": [_P, ctypes.c_int],
    "cuStreamEndCapture": [_P, ctypes.POINTER(_P)],
    "cuThreadExchangeStreamCaptureMode": [ctypes.POINTER(ctypes.c_int)],
    "cuGraphInstantiateWithFlags": [ctypes.POINTER(_P), _P, ctypes.c_ulonglong],
    "cuGraphLaunch": [_P, _P],
    "cuGraphExecDestroy": [_P],
    "cuGraphDestroy": [_P],
    "cuCtxSynchronize": [],
    "cuDeviceGetAttribute": [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int],
    "cuMemGetAllocationGranularity": [ctypes.POINTER(_SZ), ctypes.POINTER(_Prop), ctypes.c_int],
    "cuMemAddressReserve": [ctypes.POINTER(_U64), _SZ, _SZ, _U64, ctypes.c_ulonglong],
    "cuMemCreate": [ctypes.POINTER(_U64), _SZ, ctypes.POINTER(_Prop), ctypes.c_ulonglong],
    "cuMemMap": [_U64, _SZ, _SZ, _U64, ctypes.c_ulonglong],
    "cuMemSetAccess": [_U64, _SZ, ctypes.POINTER(_Access), _SZ],
    "cuMemRelease": [_U64],
    "cuModuleLoadData": [ctypes.POINTER(_P), _P],
    "cuModuleGetFunction": [ctypes.POINTER(_P), _P, ctypes.c_char_p],
    "cuLaunchKernel": [_P, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                       ctypes.c_uint, ctypes.c_uint, _P, ctypes.POINTER(_P), ctypes.POINTER(_P)],
    "cuGraphCreate": [ctypes.POINTER(_P), ctypes.c_uint],
    "cuGraphAddMemsetNode": [ctypes.POINTER(_P), _P, ctypes.POINTER(_P), _SZ, ctypes.POINTER(_MemsetParams), _P],
    "cuGraphAddKernelNode": [ctypes.POINTER(_P), _P, ctypes.POINTER(_P), _SZ, ctypes.POINTER(_KernelParams)],
    "cuGraphConditionalHandleCreate": [ctypes.POINTER(_U64), _P, _P, ctypes.c_uint, ctypes.c_uint],
    "cuGraphAddNode": [ctypes.POINTER(_P), _P, ctypes.POINTER(_P), _SZ, ctypes.POINTER(_NodeParams)],
}
CAPTURE_GLOBAL, CAPTURE_THREAD_LOCAL, CAPTURE_RELAXED = 0, 1, 2

_cu = None
if os.environ.get("MOCK_CUDA") == "1":
    _cu = ctypes.CDLL("libcuda.so.1")
    for _name, _args in _PROTOS.items():
        getattr(_cu, _name).argtypes = _args
    _dev, _ctx = ctypes.c_int(0), ctypes.c_void_p()
    if (_cu.cuInit(0) or _cu.cuDeviceGet(ctypes.byref(_dev), 0)
            or _cu.cuDevicePrimaryCtxRetain(ctypes.byref(_ctx), _dev) or _cu.cuCtxSetCurrent(_ctx)):
        raise RuntimeError("mock: no CUDA context")


class _DevicePeak:
    """fakecuda's device bytes at their highest (MOCK_DEVICE_PEAK)."""

    def __init__(self):
        self.path, self.peak, self.fn = os.environ.get("MOCK_DEVICE_PEAK"), 0, None
        if self.path and _cu is not None:
            try:
                self.fn = _cu.fakecuda_device_bytes_used
            except AttributeError:  # the real driver: NVML measures it
                self.fn = None
        if self.fn:
            self.fn.restype, self.fn.argtypes = ctypes.c_size_t, [ctypes.c_int]
            import atexit
            atexit.register(self.write)

    def sample(self):
        if self.fn:
            self.peak = max(self.peak, self.fn(0))

    def write(self):
        self.sample()
        with open(self.path, "w") as f:
            f.write("%d\n" % self.peak)


DEVICE_PEAK = _DevicePeak()
DEVICE_PEAK.sample()


class CudaError(RuntimeError):
    """A driver call that failed, worded like the frameworks' errors."""

    def __init__(self, call, code):
        name = ctypes.c_char_p()
        _cu.cuGetErrorName(code, ctypes.byref(name))
        super().__init__("CUDA error: %s: %s" % (call, (name.value or b"CUresult %d" % code).decode()))
        self.code = code


def check(call, *args):
    r = getattr(_cu, call)(*args)
    if r:
        raise CudaError(call, r)


def mem_info():
    if _cu:
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        _cu.cuMemGetInfo_v2(ctypes.byref(f), ctypes.byref(t))
        return f.value, t.value
    return TOTAL - Device.used, TOTAL


def synchronize():
    if _cu:
        check("cuCtxSynchronize")


def device_attribute(attr):
    v = ctypes.c_int(0)
    if not _cu or _cu.cuDeviceGetAttribute(ctypes.byref(v), attr, 0):
        return 0
    return v.value


TOTAL = _size(os.environ.get("MOCK_TOTAL", "256M"))


class _Dim3(ctypes.Structure):  # fakecuda_dim3 (tests/fakecuda/fakecuda.h)
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


_KERNEL_FN = ctypes.CFUNCTYPE(None, _Dim3, _Dim3, ctypes.POINTER(_P))


def _add_f32(_grid, _block, params):
    """add_f32(float *p, float v, unsigned long long n): p[i] += v for
    i < n, run by fakecuda on the stream's worker thread."""
    ptr = ctypes.cast(params[0], ctypes.POINTER(_U64))[0]
    v = ctypes.cast(params[1], ctypes.POINTER(ctypes.c_float))[0]
    n = ctypes.cast(params[2], ctypes.POINTER(_U64))[0]
    vals = (ctypes.c_float * n).from_address(ptr)
    for i in range(n):
        vals[i] += v


def _set_conditional(handle, value):
    """cudaGraphSetConditional(handle, value) of device code: fakecuda's
    hook (fakecuda_graph_set_conditional)."""
    fn = _cu.fakecuda_graph_set_conditional
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_ulonglong, ctypes.c_uint]
    if fn(handle, value):
        raise RuntimeError("mock: fakecuda refused conditional handle %#x" % handle)


def _loop_args(params):
    """(handle, the counter's word, limit) of a loop kernel's parameters."""
    handle = ctypes.cast(params[0], ctypes.POINTER(_U64))[0]
    counter = ctypes.c_uint.from_address(ctypes.cast(params[1], ctypes.POINTER(_U64))[0])
    return handle, counter, ctypes.cast(params[2], ctypes.POINTER(ctypes.c_uint))[0]


def _while_init(_grid, _block, params):
    """while_init(handle, unsigned *counter, unsigned limit): before a WHILE
    node, as XLA's SetWhileCondition kernel after the loop's condition: the
    counter to 0, the node's value to whether a first iteration runs."""
    handle, counter, limit = _loop_args(params)
    counter.value = 0
    _set_conditional(handle, int(limit > 0))


def _while_next(_grid, _block, params):
    """while_next(handle, unsigned *counter, unsigned limit): last in a WHILE
    node's body: one more iteration counted, the value to whether another
    runs."""
    handle, counter, limit = _loop_args(params)
    counter.value += 1
    _set_conditional(handle, int(counter.value < limit))


# name -> (the kernel, its parameter types), for kernel()
_LOOP_TYPES = (_U64, _U64, ctypes.c_uint)
_KERNEL_DEFS = {"add_f32": (_add_f32, (_U64, ctypes.c_float, _U64)),
                "while_init": (_while_init, _LOOP_TYPES), "while_next": (_while_next, _LOOP_TYPES)}
_KERNELS = {}  # name -> (CUfunction, the ctypes callback, kept alive)


def kernel(name):
    """The CUfunction of a stand-in kernel, as a framework gets its own: a
    module loaded with cuModuleLoadData (fakecuda takes any image), the
    function found with cuModuleGetFunction. On first use the kernel is
    registered with fakecuda (fakecuda_register_kernel, a Python function
    behind a ctypes callback); on the real driver, which has no such call,
    AttributeError."""
    if name not in _KERNELS:
        fn, types = _KERNEL_DEFS[name]
        register = _cu.fakecuda_register_kernel
        register.restype = ctypes.c_int
        register.argtypes = [ctypes.c_char_p, _KERNEL_FN, ctypes.c_uint, ctypes.POINTER(_SZ)]
        cb = _KERNEL_FN(fn)
        sizes = (_SZ * len(types))(*[ctypes.sizeof(t) for t in types])
        if register(name.encode(), cb, len(types), sizes):
            raise RuntimeError("mock: fakecuda refused kernel %s" % name)
        mod, f = _P(), _P()
        check("cuModuleLoadData", ctypes.byref(mod), b"mock kernels")
        check("cuModuleGetFunction", ctypes.byref(f), mod, name.encode())
        _KERNELS[name] = (f, cb)
    return _KERNELS[name][0]


def launch(name, *args):
    """One cuLaunchKernel of a stand-in kernel on the legacy stream (where
    every copy of the stand-ins goes, so it is ordered with them): one
    block, one thread, args as ctypes values of its parameter types. Under
    spillway it is a launch its stats count (cuLaunchKernel reached through
    dlsym, as ctypes finds it)."""
    f = kernel(name)
    params = (_P * len(args))(*[ctypes.cast(ctypes.pointer(a), _P) for a in args])
    check("cuLaunchKernel", f, 1, 1, 1, 1, 1, 1, 0, None, params, None)


# --- a GEMM through TMA descriptors (the torch-tma row) ----------------------
CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9
_ENCODE_TILED = [_P, ctypes.c_int, ctypes.c_uint, _P, ctypes.POINTER(_U64), ctypes.POINTER(_U64),
                 ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint), ctypes.c_int, ctypes.c_int,
                 ctypes.c_int, ctypes.c_int]
_TMA = {}  # "fn": the CUfunction, "cb": its callback, "addr": fakecuda_tensor_map_address


def _tma_mm(_grid, _block, params):
    """tma_mm(CUtensorMap a, CUtensorMap w, float *out): out = a @ w for the
    N x N values at the start of the buffers the two descriptors name (read
    through them: fakecuda_tensor_map_address), as a Hopper GEMM reaches
    its operands; run by fakecuda on the stream's worker thread."""
    addr = _TMA["addr"]
    a = (ctypes.c_float * (N * N)).from_address(addr(params[0]))
    w = (ctypes.c_float * (N * N)).from_address(addr(params[1]))
    out = (ctypes.c_float * (N * N)).from_address(ctypes.cast(params[2], ctypes.POINTER(_U64))[0])
    for i in range(N):
        for j in range(N):
            out[i * N + j] = sum(a[i * N + k] * w[k * N + j] for k in range(N))


def _aligned(n, align):
    """(a ctypes buffer to keep alive, the address of n bytes in it aligned
    to align): a CUtensorMap must be 64-byte aligned (cuda.h)."""
    buf = ctypes.create_string_buffer(n + align)
    return buf, (ctypes.addressof(buf) + align - 1) // align * align


def _encode_bf16(ptr, rows, cols):
    """A 2D bf16 descriptor over rows x cols at ptr, boxes of 64 x 64 (what
    a GEMM's mainloop loads), made by cuTensorMapEncodeTiled of
    libcuda.so.1 through ctypes (dlsym: under spillway, its hook records
    it); with MOCK_FAULT=tma-bypass by the driver's own, past the hook.
    Returns (buffer, address) of its 128 bytes."""
    buf, at = _aligned(128, 128)
    dim, stride = (_U64 * 2)(cols, rows), (_U64 * 1)(cols * 2)
    box, es = (ctypes.c_uint * 2)(64, 64), (ctypes.c_uint * 2)(1, 1)
    enc = _cu.cuTensorMapEncodeTiled
    enc.argtypes = _ENCODE_TILED
    if fault("tma-bypass"):  # the descriptor spillway must record, made past its hook
        enc = _driver_own("cuTensorMapEncodeTiled", _ENCODE_TILED)
    r = enc(at, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, ptr, dim, stride, box, es, 0, 0, 0, 0)
    if r:
        raise CudaError("cuTensorMapEncodeTiled", r)
    return buf, at


def tma_gemm(a, w, out, rows, inner, cols):
    """out = a @ w (Buffers of bf16 matrices rows x inner, inner x cols) as
    cuBLASLt's sm90 kernels run it: a descriptor encoded for each operand
    on the host, then one cuLaunchKernel of tma_mm taking both by value
    (alignas(128), CUDA 13's CUtensorMap) and out as a pointer: a and w
    reach the kernel only through their descriptors. On fakecuda only
    (fakecuda_register_kernel_aligned, fakecuda_tensor_map_address)."""
    if "fn" not in _TMA:
        reg = _cu.fakecuda_register_kernel_aligned
        reg.restype = ctypes.c_int
        reg.argtypes = [ctypes.c_char_p, _KERNEL_FN, ctypes.c_uint, ctypes.POINTER(_SZ), ctypes.POINTER(_SZ)]
        cb = _KERNEL_FN(_tma_mm)
        if reg(b"tma_mm", cb, 3, (_SZ * 3)(128, 128, 8), (_SZ * 3)(128, 128, 0)):
            raise RuntimeError("mock: fakecuda refused kernel tma_mm")
        addr = _cu.fakecuda_tensor_map_address
        addr.restype, addr.argtypes = ctypes.c_ulonglong, [_P]
        mod, f = _P(), _P()
        check("cuModuleLoadData", ctypes.byref(mod), b"mock kernels")
        check("cuModuleGetFunction", ctypes.byref(f), mod, b"tma_mm")
        _TMA.update(fn=f, cb=cb, addr=addr)
    keep_a, map_a = _encode_bf16(a.ptr, rows, inner)
    keep_w, map_w = _encode_bf16(w.ptr, inner, cols)
    dst = _U64(out.ptr)
    params = (_P * 3)(map_a, map_w, ctypes.cast(ctypes.pointer(dst), _P))
    check("cuLaunchKernel", _TMA["fn"], 1, 1, 1, 1, 1, 1, 0, None, params, None)
    out.on_device = True
    del keep_a, keep_w  # the launch copied the parameters


class Graph:
    """One stream capture as frameworks make CUDA graphs: begun on a
    non-blocking stream of its own, work on it recorded as nodes, ended and
    instantiated; launch replays the nodes. While one captures (Graph.active),
    allocations switch the thread to relaxed mode around the driver call
    (PyTorch's allocator does: cudaMalloc is unsafe in global mode) and
    frees wait for its end (PyTorch keeps the blocks in the graph's pool).
    Without MOCK_CUDA every call is a no-op."""
    active = None

    def __init__(self):
        self.stream, self.graph, self.exec, self.deferred = ctypes.c_void_p(), ctypes.c_void_p(), None, []
        if _cu:
            check("cuStreamCreate", ctypes.byref(self.stream), 1)  # CU_STREAM_NON_BLOCKING

    def begin(self, mode):
        if _cu:
            check("cuStreamBeginCapture_v2", self.stream, mode)
        Graph.active = self
        if _cu and fault("capture-sync"):
            _cu.cuCtxSynchronize()  # refused, and the capture is invalidated

    def memset(self, ptr, value):
        """A memset node: one 32-bit word at ptr on every launch."""
        if _cu and ptr:
            check("cuMemsetD32Async", ptr, value & 0xFFFFFFFF, 1, self.stream)

    def end(self):
        """Ends and instantiates; raises CudaError as the framework would
        when the driver refused (an invalidated capture)."""
        Graph.active = None
        try:
            if _cu:
                check("cuStreamEndCapture", self.stream, ctypes.byref(self.graph))
                self.exec = ctypes.c_void_p()
                check("cuGraphInstantiateWithFlags", ctypes.byref(self.exec), self.graph, 0)
        finally:
            for ptr, n in self.deferred:
                Device.give(ptr, n)
            self.deferred = []

    def launch(self):
        if _cu and self.exec:
            check("cuGraphLaunch", self.exec, self.stream)
            check("cuStreamSynchronize", self.stream)

    def __del__(self):
        if _cu and self.exec:
            _cu.cuGraphExecDestroy(self.exec)
        if _cu and self.graph:
            _cu.cuGraphDestroy(self.graph)


CU_GRAPH_NODE_TYPE_CONDITIONAL, CU_GRAPH_COND_TYPE_WHILE = 13, 1


def _driver_own(name, argtypes):
    """The driver's own function `name`, found in the dynamic symbol table
    of the file libcuda.so.1 was loaded from, so that neither this
    process's binding nor dlsym (which spillway answers for every hooked
    name) is asked (MOCK_FAULT=cond-bypass and tma-bypass, as
    tests/gpu/launch_count_drv.c's SWGPU_LAUNCH_BYPASS): rowlib.driver_own."""
    try:
        return rowlib.driver_own(name, argtypes)
    except RuntimeError as e:
        raise RuntimeError("mock: %s" % e)


class LoopGraph:
    """A command buffer whose while loops are commands (WHILE in XLA_FLAGS'
    --xla_gpu_enable_command_buffer), built node by node as XLA's
    CudaCommandBuffer builds one (cuGraphCreate, cuGraphAddKernelNode,
    cuGraphConditionalHandleCreate with default 0 and no flags, the WHILE
    node by cuGraphAddNode), instantiated and launched once. Per loop: a
    while_init kernel (XLA's SetWhileCondition after the condition), then a
    WHILE node whose body sets a word in each of `carried` (the loop's
    values: spillway must fill them back for the body) and ends with
    while_next, so fakecuda runs the body `iterations` times; the loop's
    counter (pool memory under spillway, named by the body's kernel) is
    read back after the launch and must say so. The graph lives as long
    as the object, as XLA's command buffer lives with its executable
    (spillway's record of each WHILE node with it)."""

    def __init__(self, loops, carried):
        self.graph, self.exec, self.counters = _P(), None, []
        self.stream = _P()
        if not _cu:
            return
        check("cuStreamCreate", ctypes.byref(self.stream), 1)  # CU_STREAM_NON_BLOCKING
        check("cuGraphCreate", ctypes.byref(self.graph), 0)
        last = None
        for iterations in loops:
            counter = Device.take(MIN_BYTES, lambda m: RuntimeError("mock: " + m))
            self.counters.append((counter, iterations))
            handle = _U64()
            check("cuGraphConditionalHandleCreate", ctypes.byref(handle), self.graph, None, 0, 0)
            last = self._kernel(self.graph, last, "while_init", handle, counter, iterations)
            p = _NodeParams(type=CU_GRAPH_NODE_TYPE_CONDITIONAL)
            p.conditional.handle, p.conditional.type, p.conditional.size = handle.value, CU_GRAPH_COND_TYPE_WHILE, 1
            node = _P()
            add = _cu.cuGraphAddNode
            if fault("cond-bypass"):  # the node spillway must record, made past its hook
                add = _driver_own("cuGraphAddNode", _PROTOS["cuGraphAddNode"])
            deps = (_P * 1)(last)
            r = add(ctypes.byref(node), self.graph, deps, 1, ctypes.byref(p))
            if r:
                raise CudaError("cuGraphAddNode", r)
            body, inner = _P(p.conditional.phGraph_out[0]), None
            for i, ptr in enumerate(carried):
                inner = self._memset(body, inner, ptr + MIN_BYTES - 4, i + 1)
            self._kernel(body, inner, "while_next", handle, counter, iterations)
            last = node.value
        self.exec = _P()
        check("cuGraphInstantiateWithFlags", ctypes.byref(self.exec), self.graph, 0)

    @staticmethod
    def _deps(dep):
        return ((_P * 1)(dep), 1) if dep else (None, 0)

    def _memset(self, graph, dep, ptr, value):
        node = _P()
        m = _MemsetParams(dst=ptr, value=value & 0xFFFFFFFF, elementSize=4, width=1, height=1)
        check("cuGraphAddMemsetNode", ctypes.byref(node), graph, *self._deps(dep), ctypes.byref(m), None)
        return node.value

    def _kernel(self, graph, dep, name, handle, counter, limit):
        args = (_U64(handle.value), _U64(counter), ctypes.c_uint(limit))
        params = (_P * 3)(*[ctypes.cast(ctypes.pointer(a), _P) for a in args])
        k = _KernelParams(func=kernel(name), gridDimX=1, gridDimY=1, gridDimZ=1, blockDimX=1, blockDimY=1,
                          blockDimZ=1, kernelParams=params)
        node = _P()
        check("cuGraphAddKernelNode", ctypes.byref(node), graph, *self._deps(dep), ctypes.byref(k))
        return node.value

    def launch(self):
        """One launch; each loop's counter read back must equal its
        iterations (fakecuda ran the body that often)."""
        if not (_cu and self.exec):
            return
        check("cuGraphLaunch", self.exec, self.stream)
        check("cuStreamSynchronize", self.stream)
        for ptr, iterations in self.counters:
            got = ctypes.c_uint()
            check("cuMemcpyDtoH_v2", ctypes.byref(got), ptr, 4)
            if got.value != iterations:
                raise RuntimeError("mock: the WHILE node ran %d iterations, not %d" % (got.value, iterations))

    def __del__(self):
        if _cu and self.exec:
            _cu.cuGraphExecDestroy(self.exec)
        if _cu and self.graph:
            _cu.cuGraphDestroy(self.graph)
        for ptr, _ in self.counters:
            Device.give(ptr, MIN_BYTES)


def _relaxed(alloc):
    """Runs alloc() with this thread in relaxed capture mode while a graph
    captures, as PyTorch's allocator does around cudaMalloc."""
    if not (_cu and Graph.active):
        return alloc()
    mode = ctypes.c_int(CAPTURE_RELAXED)
    _cu.cuThreadExchangeStreamCaptureMode(ctypes.byref(mode))
    try:
        return alloc()
    finally:
        _cu.cuThreadExchangeStreamCaptureMode(ctypes.byref(mode))


class Segments:
    """PyTorch's expandable segments (c10's ExpandableSegment): one
    reservation as large as the device's reported total, 2 MiB handles
    created and mapped into it as it grows - asked with the FABRIC handle
    type where the device supports it, else a POSIX file descriptor (none
    with TORCH_CUDA_EXPANDABLE_SEGMENTS_IPC=0), and GPUDirect RDMA capable
    where the device has it - bump-allocated, and
    reused from the start once nothing in them is live (PyTorch caches the
    blocks; a segment is only unmapped by empty_cache)."""
    GRAIN = 2 << 20

    def __init__(self):
        self.base, self.mapped, self.top, self.live, self.handles = 0, 0, 0, 0, []
        self.prop = _Prop(type=1, loc_type=1, loc_id=0)  # PINNED, on device 0
        fabric = device_attribute(128)  # CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED
        if os.environ.get("TORCH_CUDA_EXPANDABLE_SEGMENTS_IPC", "1") != "0":  # newer PyTorch reads it
            self.prop.requestedHandleTypes = 0x8 if fabric else 0x1  # FABRIC, else POSIX_FILE_DESCRIPTOR
        self.prop.gpuDirectRDMACapable = device_attribute(110)  # ..._GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED
        if fault("unpooled"):
            self.prop.compressionType = 1  # CU_MEM_ALLOCATION_COMP_GENERIC
        total = mem_info()[1]
        self.size = (total + self.GRAIN - 1) // self.GRAIN * self.GRAIN
        base = _U64()
        check("cuMemAddressReserve", ctypes.byref(base), self.size, 0, 0, 0)
        self.base = base.value

    def _grow(self, end, oom):
        """Maps handles until `end` bytes are mapped; OOM as PyTorch's."""
        while self.mapped < end:
            if self.mapped + self.GRAIN > self.size:
                raise oom("out of memory: the expandable segment is full")
            h = _U64()
            r = _cu.cuMemCreate(ctypes.byref(h), self.GRAIN, ctypes.byref(self.prop), 0)
            if r == 2:
                raise oom("out of memory: cuMemCreate of a 2 MiB segment refused")
            if r:
                raise CudaError("cuMemCreate", r)
            check("cuMemMap", self.base + self.mapped, self.GRAIN, 0, h, 0)
            self.handles.append(h.value)  # released only when unmapped, as PyTorch does
            acc = _Access(loc_type=1, loc_id=0, flags=3)  # device 0, PROT_READWRITE
            check("cuMemSetAccess", self.base + self.mapped, self.GRAIN, ctypes.byref(acc), 1)
            self.mapped += self.GRAIN

    def take(self, n, oom):
        n = (n + 511) // 512 * 512
        self._grow(self.top + n, oom)
        ptr, self.top = self.base + self.top, self.top + n
        self.live += 1
        return ptr

    def give(self, _ptr):
        self.live -= 1
        if self.live == 0:
            self.top = 0


class Device:
    used = 0
    peak = 0  # the most used at once (the frameworks' peak figures)
    segments = None  # a Segments when PyTorch's expandable segments are on
    stream_ordered = False  # cuMemAllocAsync / cuMemFreeAsync (cuda_async, cudaMallocAsync)
    blocks = {}  # live cuMemAlloc'd blocks, pointer: bytes (torch.cuda.memory_snapshot)

    @classmethod
    def take(cls, n, oom):
        ptr = 0
        if _cu and cls.segments:
            ptr = _relaxed(lambda: cls.segments.take(n, oom))
        elif _cu:
            p = ctypes.c_uint64()
            call = "cuMemAllocAsync" if cls.stream_ordered else "cuMemAlloc_v2"
            if cls.stream_ordered:
                r = _relaxed(lambda: _cu.cuMemAllocAsync(ctypes.byref(p), n, None))
            else:
                r = _relaxed(lambda: _cu.cuMemAlloc_v2(ctypes.byref(p), n))
            if r == 2:
                raise oom("out of memory: %d bytes requested, %d in use" % (n, cls.used))
            if r:
                raise RuntimeError("%s: error %d" % (call, r))
            ptr = p.value
            cls.blocks[ptr] = n
        elif cls.used + n > TOTAL:
            raise oom("out of memory: %d bytes requested, %d of %d in use" % (n, cls.used, TOTAL))
        cls.used += n
        cls.peak = max(cls.peak, cls.used)
        DEVICE_PEAK.sample()
        return ptr

    @classmethod
    def give(cls, ptr, n):
        if Graph.active and ptr:
            Graph.active.deferred.append((ptr, n))
            return
        cls.blocks.pop(ptr, None)
        if _cu and ptr and cls.segments:
            cls.segments.give(ptr)
        elif _cu and ptr and cls.stream_ordered:
            _cu.cuMemFreeAsync(ptr, None)
        elif _cu and ptr:
            _cu.cuMemFree_v2(ptr)
        cls.used -= n
        DEVICE_PEAK.sample()

    @classmethod
    def reserved(cls):
        return cls.segments.mapped if cls.segments else cls.used


class Mat:
    def __init__(self, rows):
        self.rows = [list(map(float, r)) for r in rows]

    @staticmethod
    def zeros():
        return Mat([[0.0] * N for _ in range(N)])

    @staticmethod
    def full(v):
        return Mat([[v] * N for _ in range(N)])

    @staticmethod
    def from_flat(vals):
        return Mat([vals[i * N:(i + 1) * N] for i in range(N)])

    def _map(self, f):
        return Mat([[f(a) for a in r] for r in self.rows])

    def _zip(self, o, f):
        if not isinstance(o, Mat):
            return self._map(lambda a: f(a, o))
        return Mat([[f(a, b) for a, b in zip(r, s)] for r, s in zip(self.rows, o.rows)])

    def __matmul__(self, o):
        return Mat([[sum(self.rows[i][k] * o.rows[k][j] for k in range(N)) for j in range(N)] for i in range(N)])

    def __add__(self, o):
        return self._zip(o, lambda a, b: a + b)

    __iadd__ = __add__

    def __sub__(self, o):
        return self._zip(o, lambda a, b: a - b)

    def __rmul__(self, k):
        return self._zip(k, lambda a, b: a * b)

    __mul__ = __rmul__

    def __truediv__(self, k):
        return self._zip(k, lambda a, b: a / b)

    def __pow__(self, k):
        return self._map(lambda a: a ** k)

    def __eq__(self, o):
        return isinstance(o, Mat) and self.rows == o.rows

    def t(self):
        return Mat([list(c) for c in zip(*self.rows)])

    def relu(self):
        return self._map(lambda a: max(a, 0.0))

    def abs(self):
        return self._map(abs)

    def total(self):
        """The sum of every value (a scalar, in every element)."""
        return Mat.full(sum(map(sum, self.rows)))

    def colsum(self):
        """Column sums, in every row (the shape never changes here)."""
        return Mat([[sum(c) for c in zip(*self.rows)]] * N)

    def mean(self):
        return sum(map(sum, self.rows)) / (N * N)

    def flat(self):
        return [a for r in self.rows for a in r]

    def astype(self, _dtype):
        return self

    def ravel(self):
        return self

    def tolist(self):
        return results(self.flat())


def results(values):
    """Values a row reports as its results (MOCK_FAULT=mismatch: off by 1%)."""
    if fault("mismatch") and values:
        values = [values[0] * 1.01 + 0.01] + values[1:]
    return values


class Buffer:
    """Device memory of nbytes, returned when the object dies. write/read
    keep an N x N float32 matrix at its start: in device memory under
    MOCK_CUDA (never during a capture, where work is recorded, not run),
    else in Python."""

    def __init__(self, nbytes, oom):
        self.nbytes, self.shadow, self.on_device = 0, Mat.zeros(), False
        self.ptr = Device.take(nbytes, oom)
        self.nbytes = nbytes

    def write(self, mat):
        self.shadow = mat
        if _cu and self.ptr and not Graph.active and self.nbytes >= MIN_BYTES:
            raw = struct.pack("<%df" % (N * N), *mat.flat())
            check("cuMemcpyHtoD_v2", self.ptr, raw, len(raw))
            self.on_device = True

    def add(self, v):
        """Adds v to every value in place with one kernel launch (add_f32),
        as a framework's elementwise op: under MOCK_CUDA once the values
        live on the device and no capture is under way. False when it
        cannot (the caller computes in Python)."""
        if not (_cu and self.on_device and not Graph.active):
            return False
        launch("add_f32", _U64(self.ptr), ctypes.c_float(v), _U64(N * N))
        return True

    def read(self):
        if not (self.on_device and not Graph.active):
            return self.shadow
        raw = ctypes.create_string_buffer(N * N * 4)
        check("cuMemcpyDtoH_v2", raw, self.ptr, N * N * 4)
        return Mat.from_flat(list(struct.unpack("<%df" % (N * N), raw.raw)))

    def __del__(self):
        if self.nbytes:
            Device.give(self.ptr, self.nbytes)
