"""The parts every GPU row and benchmark run shares: running one program
with a timeout and the hold handshake, parsing its RESULT line, the time
budget, and the results file (one JSON object per line) that report.py turns
into the README's tables.

Hold handshake: a program that prints a line "SWGPU_HOLD" waits for a line
on stdin; meanwhile the harness samples what it needs at the program's peak
(NVML, the stats segment, spillway-top), then writes "go".
"""
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRANULE = 2 << 20
MAX_LOG = 300
MiB, GiB = 1 << 20, 1 << 30
# What a row imports that the GPU host may lack: a run that cannot import one
# of them is skipped ("skipped: no jax"), not failed; any other missing
# module is a bug of the row and fails it.
FRAMEWORKS = ("jax", "jaxlib", "torch", "cupy", "numpy")
_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def parse_result(line):
    """'RESULT a=1 b=x' -> {'a': 1, 'b': 'x'} (ints and floats converted)."""
    out = {}
    for tok in line.split()[1:]:
        if "=" not in tok:
            continue
        k, v = tok.split("=", 1)
        for conv in (int, float):
            try:
                v = conv(v)
                break
            except ValueError:
                pass
        out[k] = v
    return out


def size_bytes(s):
    """'4G', '512M', '123' -> bytes."""
    s = str(s).strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


class Budget:
    """Absolute deadline (time.time()) shared by every stage of one check."""

    def __init__(self, deadline=None, reserve=10):
        self.deadline, self.reserve = deadline, reserve

    def left(self):
        if self.deadline is None:
            return float("inf")
        return self.deadline - self.reserve - time.time()

    def timeout(self, want, need):
        """Seconds to give a run that wants `want` and is useless with less
        than `need`; None when the budget cannot afford it."""
        left = self.left()
        if left < need:
            return None
        return min(want, left)


class Log:
    def __init__(self, path=None):
        self.f = open(path, "a") if path else None
        self.lock = threading.Lock()

    def write(self, text):
        with self.lock:
            if self.f:
                self.f.write(text if text.endswith("\n") else text + "\n")
                self.f.flush()


class Results:
    def __init__(self, path):
        self.path = path

    def add(self, rec):
        with open(self.path, "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")

    def load(self):
        """Every whole record; a line cut short (a run killed while writing)
        is left out, not fatal."""
        try:
            with open(self.path) as f:
                return load_records(f)
        except OSError:
            return []


def load_records(lines):
    out = []
    for line in lines:
        try:
            rec = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


class Run:
    """Outcome of one program run."""

    def __init__(self):
        self.rc, self.timed_out, self.wall = None, False, 0.0
        self.stdout, self.stderr, self.result, self.hold, self.pid = [], [], None, None, None

    def missing(self):
        """The framework this run could not import ("jax", ...), else None:
        Python's own message for a package that is not installed."""
        if self.rc == 0 and self.result is not None:
            return None
        for line in self.stderr:
            m = _NO_MODULE.search(line)
            if m and m.group(1).split(".")[0] in FRAMEWORKS:
                return m.group(1).split(".")[0]
        return None

    def ok(self):
        return self.rc == 0 and not self.timed_out and self.result is not None and "error" not in self.result

    def why(self):
        if self.timed_out:
            return "timed out after %.0f s" % self.wall
        if self.result is None:
            tail = [l for l in self.stderr if l.strip()][-2:]
            return "no RESULT line (exit %s)%s" % (self.rc, ": " + " | ".join(tail) if tail else "")
        if self.rc != 0:
            return "exit %s" % self.rc
        if "error" in self.result:
            return "error in %s (code %s)" % (self.result.get("what"), self.result.get("code"))
        return "ok"


def base_env(extra=None, preload=None, stats_dir=None):
    """The environment of a run: the caller's, never fakecuda or an earlier
    preload, Python unbuffered, spillway only when preload is given."""
    env = dict(os.environ)
    for k in list(env):
        # XLA_CLIENT_MEM_FRACTION and PYTORCH_ALLOC_CONF are the newer
        # spellings of what the rows set under the older ones.
        if k.startswith(("SPILLWAY_", "XLA_PYTHON_CLIENT_", "XLA_CLIENT_", "PYTORCH_CUDA_ALLOC_CONF",
                         "PYTORCH_ALLOC_CONF", "FAKECUDA_")):
            del env[k]
    env.pop("LD_PRELOAD", None)
    env["PYTHONUNBUFFERED"] = "1"
    # JAX without its CUDA plugin falls back to the CPU with a warning: a
    # row would then judge the CPU. Native and spillway runs alike.
    env.setdefault("JAX_PLATFORMS", "cuda")
    if stats_dir:
        env["SPILLWAY_STATS_DIR"] = stats_dir
    if preload:
        env["LD_PRELOAD"] = preload
    env.update(extra or {})
    return env


LIVE = set()  # process groups of the runs in flight


def _kill_live(signum, _frame):
    """A stage killed from outside (gpu-check.sh's own timeout) takes its
    rows with it: they run in their own sessions and would otherwise keep
    holding GPU memory into the next stage."""
    for pg in list(LIVE):
        try:
            os.killpg(pg, signal.SIGKILL)
        except OSError:
            pass
    sys.exit(128 + signum)


if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGTERM, _kill_live)


def _log_start(log, label, cmd, env):
    log.write("== %s\n$ %s\n  env: %s" % (label, " ".join(cmd), " ".join(
        "%s=%s" % (k, v) for k, v in sorted(env.items())
        if k.startswith(("SPILLWAY_", "XLA_", "PYTORCH_", "LD_PRELOAD", "FAKECUDA_", "LD_LIBRARY_PATH")))))


def _pump_lines(p):
    """A queue of (tag, line) from both streams, (tag, None) at each end:
    one reader thread per stream, so neither pipe fills while the other
    is read."""
    lines = queue.Queue()

    def pump(stream, tag):
        for line in stream:
            lines.put((tag, line.rstrip("\n")))
        lines.put((tag, None))

    for stream, tag in ((p.stdout, "out"), (p.stderr, "err")):
        threading.Thread(target=pump, args=(stream, tag), daemon=True).start()
    return lines


def _log_line(log, r, tag, line):
    # XLA and PyTorch print long allocator dumps at OOM: the log keeps
    # the first MAX_LOG lines of each stream, and RESULT lines always.
    n = len(r.stdout if tag == "out" else r.stderr)
    if n <= MAX_LOG or line.startswith("RESULT"):
        log.write(("  | " if tag == "out" else "  ! ") + line)
    elif n == MAX_LOG + 1:
        log.write("  ... (more lines of this stream left out of the log)")


def _hold(p, r, on_hold):
    """The program waits at its hold line: on_hold samples, then "go" lets
    it on, whatever on_hold did."""
    try:
        r.hold = on_hold(p.pid) if on_hold else None
    finally:
        try:
            p.stdin.write("go\n")
            p.stdin.flush()
        except OSError:
            pass


def _follow(p, r, log, on_hold, deadline):
    """Reads both streams until they end or the deadline passes (then
    r.timed_out), answering the hold handshake on the way."""
    lines = _pump_lines(p)
    open_streams = 2
    while open_streams:
        left = deadline - time.monotonic()
        if left <= 0:
            r.timed_out = True
            break
        try:
            tag, line = lines.get(timeout=min(left, 1.0))
        except queue.Empty:
            continue
        if line is None:
            open_streams -= 1
            continue
        (r.stdout if tag == "out" else r.stderr).append(line)
        _log_line(log, r, tag, line)
        if tag == "out" and line.startswith("RESULT"):
            r.result = parse_result(line)
        if tag == "out" and line.strip() == "SWGPU_HOLD":
            _hold(p, r, on_hold)


def _reap(p, r):
    """The exit status; the whole process group killed after a timeout, or
    when the program does not end within 10 s of closing its streams."""
    if r.timed_out:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        r.rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        r.rc = p.wait()


def run(cmd, env, timeout, log=None, on_hold=None, on_start=None, label=""):
    """Runs cmd; on_start(pid) right after the spawn, on_hold(pid) at the
    hold line (its return value is kept as run.hold). Kills the whole process
    group at the timeout."""
    r = Run()
    log = log or Log()
    _log_start(log, label, cmd, env)
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, bufsize=1, start_new_session=True)
    except OSError as e:
        r.rc, r.stderr = 127, [str(e)]
        log.write("  cannot start: %s" % e)
        return r
    r.pid = p.pid
    LIVE.add(p.pid)
    if on_start:
        on_start(p.pid)
    _follow(p, r, log, on_hold, t0 + timeout)
    _reap(p, r)
    LIVE.discard(p.pid)
    r.wall = time.monotonic() - t0
    log.write("  exit %s after %.2f s%s" % (r.rc, r.wall, " (TIMED OUT)" if r.timed_out else ""))
    return r


def fmt_bytes(v):
    if v is None:
        return "n/a"
    neg = v < 0
    v = abs(v)
    for unit, s in (("GiB", GiB), ("MiB", MiB), ("KiB", 1 << 10)):
        if v >= s:
            return "%s%.2f %s" % ("-" if neg else "", v / s, unit)
    return "%s%d B" % ("-" if neg else "", v)


def python():
    return sys.executable or "python3"


# ---- what the row scripts share (features.py, oversub.py) -------------------

def row_parser(doc):
    """The options every row script takes; each adds its own."""
    import argparse
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--out", default="build-gpu/gpu-out")
    ap.add_argument("--rows", help="comma-separated row ids (default: all)")
    ap.add_argument("--deadline", type=float, help="absolute time.time() by which to be done")
    ap.add_argument("--extra-env", action="append", default=[], metavar="K=V")
    ap.add_argument("--fake", action="store_true")
    ap.add_argument("--mock", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    return ap


class RowCtx:
    """A row script's run: its build, output, results, log, budget, a
    scratch directory (also the stats directory) and the library."""

    def __init__(self, a, prefix):
        import tempfile
        self.a = a
        self.build = os.path.abspath(a.build)
        self.out = os.path.abspath(a.out)
        os.makedirs(self.out, exist_ok=True)
        self.results = Results(os.path.join(self.out, "results.jsonl"))
        self.log = Log(os.path.join(self.out, "gpu-check.log"))
        self.budget = Budget(a.deadline)
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.lib = os.path.join(self.build, "libspillway.so")
