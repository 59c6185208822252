"""Shared by the framework rows (row_jax.py, row_torch.py, row_cupy.py and
issue 12's row_torch_graph.py, row_jax_cmdbuf.py, row_torch_expandable.py):
command line, the allocate-until-refused loop, the hold handshake, the
driver's own answer for the device's total memory, the RESULT line, and
the results dump the issue 12 rows compare across processes.

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
import select
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
