"""torch.cuda stand-in (see ../README.md): streams are no-ops (everything
runs in order), graphs are mockdev.Graph captures of the ops run inside
them."""
import mockdev
from mockdev import Device, mem_info

OutOfMemoryError = None  # set by torch/__init__.py
_CAPTURING = []


def mem_get_info():
    return mem_info()


def synchronize():
    mockdev.synchronize()


def empty_cache():
    """Nothing cached here: every tensor's memory goes back when it dies."""


def get_device_capability(device=None):
    """The driver's answer (fakecuda's devices are 9.0)."""
    return (mockdev.device_attribute(75), mockdev.device_attribute(76))  # COMPUTE_CAPABILITY_MAJOR, _MINOR


def memory_reserved():
    return Device.reserved()


def memory_allocated():
    return Device.used


def max_memory_allocated():
    return Device.peak


def max_memory_reserved():
    """Without expandable segments every block is its own cuMemAlloc: the
    most allocated at once."""
    return max(Device.peak, Device.reserved())


def memory_snapshot():
    """The segments: with expandable segments one growing one, else each
    live block its own cuMemAlloc, as PyTorch's caching allocator has
    them for blocks never freed."""
    if Device.segments:
        return [{"total_size": Device.segments.mapped, "is_expandable": True}]
    return [{"total_size": n, "is_expandable": False} for n in Device.blocks.values()]


def capturing():
    """The CUDAGraph capturing now, or None."""
    return _CAPTURING[-1] if _CAPTURING else None


class Stream:
    def wait_stream(self, _other):
        pass


def current_stream():
    return Stream()


class stream:  # noqa: N801  (torch.cuda.stream is a context manager class)
    def __init__(self, _s):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class CUDAGraph:
    """The ops recorded while capturing, each with a memset node into its
    output; replay launches the graph, then computes the ops in order."""

    def __init__(self):
        self.g, self.ops = mockdev.Graph(), []

    def record(self, run, out):
        self.ops.append((run, out))
        if out.buf:
            self.g.memset(out.buf.ptr + mockdev.MIN_BYTES - 4, len(self.ops))

    def replay(self):
        self.g.launch()
        for run, _ in self.ops:
            run()


class graph:  # noqa: N801
    """torch.cuda.graph: synchronizes, then captures in capture_error_mode
    ("global" by default, as torch's); a refused capture raises
    RuntimeError at the end, as torch's capture_end does."""
    MODES = {"global": mockdev.CAPTURE_GLOBAL, "thread_local": mockdev.CAPTURE_THREAD_LOCAL,
             "relaxed": mockdev.CAPTURE_RELAXED}

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        self.cg, self.mode = cuda_graph, self.MODES[capture_error_mode]

    def __enter__(self):
        synchronize()
        self.cg.g.begin(self.mode)
        _CAPTURING.append(self.cg)
        return self.cg

    def __exit__(self, *exc):
        _CAPTURING.pop()
        self.cg.g.end()
        return False
