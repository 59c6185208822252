"""Shared by the framework rows (row_jax.py, row_torch.py, row_cupy.py and
issue 12's row_torch_graph.py, row_jax_cmdbuf.py, row_torch_expandable.py,
row_torch_tma.py) and tests/gpu/mock's mockdev.py: command line, the
allocate-until-refused loop, the hold handshake, the driver's own answer
for the device's total memory, spillway's exported counts, the driver's own
functions past spillway (driver_own) and where a buffer's pages live
(device_resident), the RESULT line, and the results dump the issue 12 rows
compare across processes.

Modes:
  oom       the acceptance row: matmul check, then allocate until the
            framework's out-of-memory error, hold at the peak, report
  baseline  matmul check, then hold what the framework holds (no spillway:
            real usage minus that is the context's overhead)
  hold      allocate --hold-bytes, hold (issue 5: two processes at once)
"""
import argparse
import array
import ctypes
import os
import select
import struct
import sys

MiB = 1 << 20


def size(s):
    s = s.strip().upper()
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * m[s[-1]]) if s[-1] in m else int(s)


def args(desc):
    ap = argparse.ArgumentParser(description=desc)
    ap.add_argument("--mode", choices=("oom", "baseline", "hold"), default="oom")
    ap.add_argument("--chunk", type=size, default=64 * MiB)
    ap.add_argument("--min-chunk", type=size, default=2 * MiB)
    ap.add_argument("--cap", type=size, default=1 << 40, help="stop here even without a refusal")
    ap.add_argument("--hold-bytes", type=size, default=512 * MiB)
    ap.add_argument("--no-hold", action="store_true", help="do not wait for the harness (manual runs)")
    return ap.parse_args()


def hold(a):
    """Tells the harness we are at the peak and waits for its 'go'."""
    if a.no_hold:
        return
    print("SWGPU_HOLD", flush=True)
    r, _, _ = select.select([sys.stdin], [], [], 60)
    if r:
        sys.stdin.readline()
    else:
        print("no go from the harness; going on", file=sys.stderr)


def driver_total():
    """cuDeviceTotalMem_v2 of device 0, asked of the driver through dlsym
    (ctypes), the way JAX reaches it: under spillway, its limit."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        cu.cuInit(0)
        dev = ctypes.c_int(0)
        total = ctypes.c_size_t(0)
        if cu.cuDeviceGet(ctypes.byref(dev), 0) != 0:
            return "n/a"
        if cu.cuDeviceTotalMem_v2(ctypes.byref(total), dev) != 0:
            return "n/a"
        return total.value
    except Exception:
        return "n/a"


def spillway_count(name):
    """A size_t count libspillway exports (shim/introspect.c:
    spillway_graph_conditionals, the conditional nodes whose bodies it
    holds a record of; spillway_tensor_maps, the TMA descriptors it
    recorded), asked of the library preloaded into this process
    (ctypes.CDLL(None): the process's global scope); -1 without it (a
    native run, or a libspillway without that export)."""
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError):
        return -1
    fn.restype, fn.argtypes = ctypes.c_size_t, []
    return fn()


_DYNSYM = {}  # path of the loaded libcuda -> (load bias, {function name: address})


def _libcuda_functions():
    """(load bias, {name: st_value}) of the function symbols in the dynamic
    symbol table of the file libcuda.so.1 was loaded from (its path and
    load address from /proc/self/maps), read once."""
    base, path = None, None
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and os.path.basename(parts[5]).startswith("libcuda.so") and int(parts[2], 16) == 0:
                base, path = int(parts[0].split("-")[0], 16), parts[5]
                break
    if base is None:
        raise RuntimeError("libcuda.so.1 is not mapped")
    if path in _DYNSYM:
        return _DYNSYM[path]
    with open(path, "rb") as f:
        elf = f.read()
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    vaddr0 = min(struct.unpack_from("<IIQQ", elf, phoff + i * 56)[3]
                 for i in range(struct.unpack_from("<H", elf, 0x38)[0])
                 if struct.unpack_from("<I", elf, phoff + i * 56)[0] == 1)  # PT_LOAD
    funcs = {}
    for sh in sections:
        if sh[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        for k in range(sh[5] // 24):
            st_name, st_info, _, st_shndx, st_value, _ = struct.unpack_from("<IBBHQQ", elf, sh[4] + k * 24)
            if st_shndx and (st_info & 0xF) == 2:  # defined, STT_FUNC
                end = elf.index(b"\0", strtab[4] + st_name)
                funcs.setdefault(elf[strtab[4] + st_name:end].decode("ascii", "replace"), st_value)
    _DYNSYM[path] = (base - vaddr0, funcs)
    return _DYNSYM[path]


def driver_own(name, argtypes):
    """The driver's own function `name` (returning CUresult), found the way
    no program should: in the dynamic symbol table of the file libcuda.so.1
    was loaded from, so that neither this process's binding nor dlsym
    (which spillway answers for every hooked name) is asked. For negative
    controls (a call made past spillway's hook: tests/gpu/mock's
    MOCK_FAULT=cond-bypass and tma-bypass, as launch_count_drv.c's
    SWGPU_LAUNCH_BYPASS) and for asking the driver what spillway would
    answer itself (device_resident). RuntimeError when it is not there."""
    bias, funcs = _libcuda_functions()
    if name not in funcs:
        raise RuntimeError("no %s in libcuda.so.1's symbol table" % name)
    return ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(bias + funcs[name])


class _MemLocation(ctypes.Structure):  # CUmemLocation
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocProp(ctypes.Structure):  # CUmemAllocationProp (cuda.h)
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _MemLocation),
                ("win32HandleMetaData", ctypes.c_void_p), ("compressionType", ctypes.c_ubyte),
                ("gpuDirectRDMACapable", ctypes.c_ubyte), ("usage", ctypes.c_ushort),
                ("reserved", ctypes.c_ubyte * 4)]


PAGE = 2 << 20  # spillway's pool pages (and fakecuda's granularity)


def device_resident(ptr, nbytes, dev=0):
    """Bytes of [ptr, ptr + nbytes) whose pages the driver itself says live
    on device dev: per 2 MiB page, the driver's own
    cuMemRetainAllocationHandle (past spillway's hook, which answers a pool
    pointer with no handle, as the driver does for cuMemAlloc memory) and
    cuMemGetAllocationPropertiesFromHandle's location (a spilled page is a
    pinned host handle mapped at the same address), the reference given
    back with the driver's own cuMemRelease. None where the driver has no
    handle there (memory not mapped through VMM: a native run's cudaMalloc)
    or the functions cannot be found."""
    try:
        retain = driver_own("cuMemRetainAllocationHandle", [ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p])
        props = driver_own("cuMemGetAllocationPropertiesFromHandle", [ctypes.POINTER(_AllocProp), ctypes.c_uint64])
        release = driver_own("cuMemRelease", [ctypes.c_uint64])
    except (RuntimeError, OSError, ValueError):
        return None
    n, a = 0, ptr
    while a < ptr + nbytes:
        nxt = min((a // PAGE + 1) * PAGE, ptr + nbytes)
        h, p = ctypes.c_uint64(), _AllocProp()
        if retain(ctypes.byref(h), a):
            return None
        r = props(ctypes.byref(p), h.value)
        release(h.value)
        if r:
            return None
        if p.location.type == 1 and p.location.id == dev:  # CU_MEM_LOCATION_TYPE_DEVICE
            n += nxt - a
        a = nxt
    return n


def jax_memory_stats(device):
    """device.memory_stats(), {} where there are none: jaxlib answers None
    for an allocator without stats (platform), and XLA versions whose
    GetAllocatorStats has TF_RET_CHECK(stats.has_value()) raise INTERNAL
    instead; either way the row goes on and reports n/a."""
    try:
        return device.memory_stats() or {}
    except Exception as e:  # jax.errors.JaxRuntimeError (XlaRuntimeError before)
        print("memory_stats() failed: %s" % str(e).splitlines()[0][:160], file=sys.stderr)
        return {}


def alloc_until_refused(alloc, is_oom, a, keep):
    """Allocates a.chunk blocks (halving after each refusal down to
    a.min_chunk) until refused or a.cap; appends the blocks to keep.
    Returns dict(reached, oom, oom_kind, capped, unexpected)."""
    out = {"reached": 0, "oom": 0, "oom_kind": "none", "capped": 0, "unexpected": "none"}
    c = a.chunk
    while True:
        if out["reached"] + c > a.cap:
            out["capped"] = 1
            break
        try:
            keep.append(alloc(c))
        except Exception as e:  # the framework's own error types are checked below
            if is_oom(e):
                out["oom"], out["oom_kind"] = 1, type(e).__name__
                if c // 2 < a.min_chunk:
                    break
                c //= 2
                continue
            out["unexpected"] = "%s:%s" % (type(e).__name__, str(e).splitlines()[0][:80] if str(e) else "")
            break
        out["reached"] += c
    return out


def result(**kw):
    """One RESULT line; values never carry spaces."""
    print("RESULT " + " ".join("%s=%s" % (k, str(v).replace(" ", "_")) for k, v in kw.items()), flush=True)


def write_floats(path, values):
    """Values as float32 in the host's byte order (features.py reads them
    back with array("f") on the same host): what a row computed, compared
    with another process's."""
    out = array.array("f", values)
    if out.itemsize != 4:
        raise RuntimeError("array('f') is not 4 bytes here")
    with open(path, "wb") as f:
        f.write(out.tobytes())
