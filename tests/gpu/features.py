#!/usr/bin/env python3
"""GPU rows of issue 12: the features frameworks really use, under spill.

  torch-graph       PyTorch torch.cuda.graph capture (default
                    capture_error_mode "global") and replay of an MLP
                    training step, natively and under a spillway limit
                    below the step's working set
  jax-cmdbuf        a jitted JAX MLP training step with XLA's command
                    buffers as JAX leaves them (on), natively and under a
                    limit below the working set, JAX sized past the limit
                    (XLA_PYTHON_CLIENT_PREALLOCATE=false, MEM_FRACTION=8:
                    its BFC would otherwise refuse at 0.75 x the limit it is
                    told, long before spill)
  torch-expandable  PyTorch expandable_segments:True under a limit: its
                    cuMemCreate segments must be served from the pool
  torch-tma         PyTorch bf16 torch.mm of two 4096x4096 matrices (cuBLASLt's
                    sm90 TMA kernels on an H100/H200: operands reached
                    through CUtensorMap descriptors), natively and under a
                    limit: the weight squeezed out to the host, then one
                    more GEMM must fill it back through its descriptor
  jax-while         jax-cmdbuf's step as 4 SGD micro-steps in a
                    lax.fori_loop per jitted call (row_jax_cmdbuf.py
                    --micro-steps), WHILE and CONDITIONAL added to XLA's
                    command buffer types: the loop can run on the device as
                    a CUDA WHILE conditional node, which spillway must
                    record (its body's data filled back at each launch)

A row passes when every check passes:
  ran               each run exited 0 with its RESULT line
  capture           (torch-graph) both captures succeeded
  command buffers   (jax-cmdbuf) XLA_FLAGS leave them on and the compiled
                    step's optimized HLO calls command_buffer computations
  spilled           the stats segment at the hold counts spilled bytes: the
                    limit really was below the working set
  results           the spillway run's fingerprint (loss of each checked
                    step, per-parameter column sums of p and |p|) equals the
                    native run's: bitwise, or every value within
                    |a - b| <= 1e-5 x (|b| + mean |b|) (both said)
  expandable        (torch-expandable) the allocator config was asked for and
                    PyTorch's memory snapshot shows it in force
  data              (torch-expandable) every tensor's sum and a matmul exact
  pooled            (torch-expandable) pool-served bytes (in use minus every
                    pass-through) >= 90% of torch.cuda.memory_reserved(), and
                    IPC (shareable handle) pass-through <= 5% of it
  conditionals      (jax-while) spillway_graph_conditionals() > 0 at the end
                    of the spillway run; when 0, the detail says whether XLA
                    did not put the loop in a conditional node (no while left
                    in the HLO, the while outside its command_buffer
                    computations, or the loop run from the host: at least one
                    launch per micro-step) or spillway missed the node (the
                    HLO's while inside a command buffer, or fewer launches
                    per call than micro-steps: the loop ran inside a graph)
  tensor maps       (torch-tma) spillway_tensor_maps() > 0 after the first
                    GEMM on compute capability >= 9.0 (below: skipped, no
                    TMA); 0 there is a finding: cuBLAS encodes its
                    descriptors some other way than through the driver's
                    entry points
  spilled           (torch-tma) after the squeeze: spilled_bytes > 0 and W
                    (32 MiB) not all on the device (the driver's own
                    cuMemRetainAllocationHandle per page)
  filled back       (torch-tma) the GEMM after the squeeze: fill_events up,
                    every page of W on the device again (without the
                    residency probe: spilled_bytes down by W's bytes)
  results           (torch-tma) the product after the squeeze bit for bit
                    the native run's (sha256 digests) and the first GEMM's
Replay / step / GEMM time under spillway over native is reported, not judged.

One JSON record per row (table "feature") in <out>/results.jsonl,
rendered by report.py; one RESULT line per row on stdout.

  features.py --build build-gpu --out DIR [--rows a,b] [--deadline T]
  --fake, --mock    fakecuda instead of the driver, the rows on
                    tests/gpu/mock's stand-ins (small sizes): checks the
                    rows, the mocks and the judging, not the frameworks
  --extra-env K=V   added to every run (selftest's negative controls)
  --dry-run   print the plan;  --self-test  the judging on synthetic runs
"""
import array
import math
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import swstats  # noqa: E402
from harness import fmt_bytes  # noqa: E402

RTOL = 1e-5
# Seconds. Each row's runs share its timeout (native first, with at most
# NATIVE_SHARE of it); a row takes 10-25 s on an H100 (import and
# initialisation dominate) and is skipped when the budget has less than
# NEED left. The timeouts only bound a hang, so they leave room for a slow
# first compile: XLA compiles the step in each run (10-40 s on an H100 when
# it is slow, the native run's share 48 s); PyTorch's import, CUDA init and
# cuBLAS handles 5-15 s (the native run's share 30 s).
ROWS = [
    {"id": "torch-graph", "label": "PyTorch torch.cuda.graph MLP step (capture + replay)", "fw": "torch",
     "script": "row_torch_graph.py", "native": True, "timeout": 75,
     "limit": "256M", "fake_limit": "16M",
     "args": ["--width", "4096", "--layers", "4", "--batch", "512"],
     "fake_args": ["--width", "1024", "--layers", "4", "--batch", "64", "--blocks", "2", "--per-block", "2"],
     # cuBLAS picks the same kernels in both processes: results comparable bit for bit.
     "env": {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}, "spw_env": {}},
    {"id": "jax-cmdbuf", "label": "JAX jit MLP step, XLA command buffers on", "fw": "jax",
     "script": "row_jax_cmdbuf.py", "native": True, "timeout": 120, "need": 50,
     "limit": "256M", "fake_limit": "16M",
     "args": ["--width", "4096", "--layers", "4", "--batch", "256"],
     "fake_args": ["--width", "1024", "--layers", "4", "--batch", "64", "--blocks", "2", "--per-block", "2"],
     "env": {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
     "spw_env": {"XLA_PYTHON_CLIENT_MEM_FRACTION": "8"},
     # Autotuning times kernels: under spill it could pick others than
     # natively, with other rounding. Command buffers are left alone.
     "xla_flags": ["--xla_gpu_autotune_level=0"]},
    {"id": "torch-expandable", "label": "PyTorch expandable_segments:True", "fw": "torch",
     "script": "row_torch_expandable.py", "native": False, "timeout": 40,
     "limit": "2G", "fake_limit": "64M",
     "args": ["--hold-bytes", "1G", "--chunk", "64M"], "fake_args": ["--hold-bytes", "24M", "--chunk", "8M"],
     "env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, "spw_env": {}},
    # Before jax-while: a short budget then drops the 50 s JAX row and keeps
    # this ~15 s one (two PyTorch processes, one GEMM each after the
    # squeeze), whose finding (do cuBLAS's descriptors reach the hooks?)
    # nothing else measures. Limit 256M: A, W, two products (32 MiB each)
    # and cuBLAS's workspace (CUBLAS_WORKSPACE_CONFIG :4096:8, 32 MiB), with
    # the squeeze of the limit minus 2 MiB.
    {"id": "torch-tma", "label": "PyTorch bf16 torch.mm via TMA descriptors, weight squeezed to the host",
     "fw": "torch", "script": "row_torch_tma.py", "native": True, "timeout": 60,
     "limit": "256M", "fake_limit": "16M",
     "args": ["--n", "4096"], "fake_args": ["--n", "1024"],
     # cuBLAS picks the same kernel in both processes: products comparable bit for bit.
     "env": {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}, "spw_env": {}},
    # Last: a budget cut drops it first. ~25-30 s expected on an H100 for both
    # runs (two compiles dominate; 4 checked and 12 timed calls of 4
    # micro-steps each), timeout 120 s as jax-cmdbuf's.
    {"id": "jax-while", "label": "JAX jit MLP step, 4 micro-steps in a fori_loop, XLA WHILE command buffers",
     "fw": "jax", "script": "row_jax_cmdbuf.py", "native": True, "timeout": 120, "need": 50,
     "limit": "256M", "fake_limit": "16M",
     "args": ["--width", "4096", "--layers", "4", "--batch", "256", "--micro-steps", "4",
              "--steps", "4", "--blocks", "3", "--per-block", "4"],
     "fake_args": ["--width", "1024", "--layers", "4", "--batch", "64", "--micro-steps", "4",
                   "--steps", "4", "--blocks", "2", "--per-block", "2"],
     "env": {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
     "spw_env": {"XLA_PYTHON_CLIENT_MEM_FRACTION": "8"},
     # jax-cmdbuf's, and the loop into command buffers: WHILE and CONDITIONAL
     # added to the default types, one flag each (XLA applies only the first
     # of a "+A,+B" list: xla/debug_options_flags.cc returns inside its loop),
     # and a command buffer of any size (the default minimum is 5 commands: a
     # step of little more than the loop would stay out, its body graphed
     # alone and launched per iteration).
     "xla_flags": ["--xla_gpu_autotune_level=0", "--xla_gpu_enable_command_buffer=+WHILE",
                   "--xla_gpu_enable_command_buffer=+CONDITIONAL", "--xla_gpu_graph_min_graph_size=1"]},
]
NEED = 25  # a row's "need" when it has none: less is a timeout, not a result
NATIVE_SHARE = 0.4
POOLED_MIN, IPC_MAX = 0.90, 0.05


class Ctx(harness.RowCtx):
    def __init__(self, a):
        super().__init__(a, "swgpu-features.")

    def limit(self, row):
        return row["fake_limit"] if self.a.fake else row["limit"]

    def env(self, row, spillway):
        extra = dict(row["env"], **(row["spw_env"] if spillway else {}))
        if spillway:
            extra.update(SPILLWAY_MEM_LIMIT=self.limit(row), SPILLWAY_HOST_LIMIT="8G")
        env = harness.base_env(extra, preload=self.lib if spillway else None, stats_dir=self.tmp)
        if self.a.fake:
            env.update(LD_LIBRARY_PATH=os.path.join(self.build, "fakecuda"), FAKECUDA_MEM="256M")
        if self.a.mock:
            env.update(PYTHONPATH=os.path.join(HERE, "mock"), MOCK_CUDA="1")
        for kv in self.a.extra_env:
            k, _, v = kv.partition("=")
            env[k] = v
        if row.get("xla_flags"):  # what the caller set, then ours; logged with the run
            env["XLA_FLAGS"] = " ".join(([env["XLA_FLAGS"]] if env.get("XLA_FLAGS") else []) + row["xla_flags"])
        return env

    def cmd(self, row, run_dir):
        c = [harness.python(), os.path.join(HERE, row["script"])]
        c += row["fake_args"] if self.a.mock else row["args"]
        if row["native"]:
            c += ["--dump", os.path.join(run_dir, "dump.f32")]
        return c


def run_pair(ctx, row):
    """{"native": Run or None, "spillway": Run, "dirs": {...}}; None when
    the budget cannot afford the row."""
    left = ctx.budget.timeout(row["timeout"], row.get("need", NEED))
    if left is None:
        return None
    end = time.monotonic() + left
    runs, dirs = {}, {}
    for kind in (["native"] if row["native"] else []) + ["spillway"]:
        dirs[kind] = os.path.join(ctx.tmp, "%s-%s" % (row["id"], kind))
        os.makedirs(dirs[kind], exist_ok=True)
        t = end - time.monotonic()
        if kind == "native":
            t = min(t, left * NATIVE_SHARE)
        hold = (lambda pid: {"seg": None, "why": "native run: no segment"}) if kind == "native" else read_segment(ctx)
        runs[kind] = harness.run(ctx.cmd(row, dirs[kind]), ctx.env(row, kind == "spillway"), max(t, 1),
                                 ctx.log, on_hold=hold, label="%s (%s)" % (row["label"], kind))
        if runs[kind].missing():  # not installed here: the row is skipped, its other run not paid
            return {"native": runs.get("native"), "spillway": runs.get("spillway"), "dirs": dirs,
                    "missing": runs[kind].missing()}
    return {"native": runs.get("native"), "spillway": runs["spillway"], "dirs": dirs}


def read_segment(ctx):
    def on_hold(pid):
        seg, why = swstats.read_pid(pid, ctx.tmp)
        return {"seg": seg, "why": why}
    return on_hold


# --- judging ----------------------------------------------------------------
def read_floats(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


def compare(got, want):
    """(ok, detail, fields) for two fingerprints."""
    if len(got) != len(want) or not want:
        return False, "%d values, native %d" % (len(got), len(want)), {}
    if not all(math.isfinite(v) for v in got) or not all(math.isfinite(v) for v in want):
        return False, "NaN or infinity in the results (%s)" % ("native" if all(map(math.isfinite, got)) else "spillway"), {}
    scale = sum(abs(v) for v in want) / len(want)
    diffs = [abs(a - b) for a, b in zip(got, want)]
    bad = sum(1 for d, b in zip(diffs, want) if d > RTOL * (abs(b) + scale))
    worst = max(diffs)
    rel = worst / scale if scale else worst
    f = {"values": len(want), "differ": sum(1 for d in diffs if d), "max_abs_diff": worst, "max_rel_diff": rel}
    if not f["differ"]:
        return True, "bitwise equal (%d values)" % len(want), f
    if not bad:
        return True, "within tolerance: %d of %d differ, max %.2g x mean |native|" % (f["differ"], len(want), rel), f
    return False, "%d of %d values off by more than %g x (|v| + mean |v|); max %.3g x mean |native|" % (
        bad, len(want), RTOL, rel), f


def segment(run):
    hold = (run.hold or {}) if run else {}
    seg = hold.get("seg")
    return (seg["devices"][0], None) if seg else (None, hold.get("why", "the program never held"))


def passthrough(d):
    return {k[len("passthrough_"):-len("_bytes")]: v for k, v in d.items() if k.startswith("passthrough_")}


def spill_fields(d):
    return {"spill_bytes": d.get("spill_bytes"), "spill_events": d.get("spill_events"),
            "spilled_bytes": d.get("spilled_bytes"), "in_use": d.get("in_use_bytes"),
            "limit_bytes": d.get("limit_bytes"), "passthrough": passthrough(d)}


class Checks:
    def __init__(self):
        self.items = []

    def add(self, name, ok, detail):
        self.items.append([name, bool(ok), detail])
        return ok

    def note(self, name, text):
        """Adds text to the detail of check name (a cause worth reading
        next to its verdict, not a verdict of its own)."""
        for c in self.items:
            if c[0] == name:
                c[2] = "%s; %s" % (c[2], text)

    def passed(self):
        return bool(self.items) and all(c[1] for c in self.items)


def judge_ran(c, runs):
    ok = True
    for kind in ("native", "spillway"):
        r = runs.get(kind)
        if r is not None:
            ok = c.add("ran (%s)" % kind, r.ok(), r.why()) and ok
    return ok


def judge_spill(c, run, f):
    d, why = segment(run)
    if d is None:
        return c.add("spilled", False, "no stats segment at the hold: %s" % why)
    f.update(spill_fields(d))
    n = d.get("spill_bytes") or 0
    return c.add("spilled", n > 0, "%s moved to the host in %s events, %s there at the hold (limit %s)" % (
        fmt_bytes(n), d.get("spill_events", "n/a"), fmt_bytes(d.get("spilled_bytes")), fmt_bytes(d.get("limit_bytes"))))


def judge_results(c, pair, f):
    try:
        got = read_floats(os.path.join(pair["dirs"]["spillway"], "dump.f32"))
        want = read_floats(os.path.join(pair["dirs"]["native"], "dump.f32"))
    except OSError as e:
        return c.add("results", False, "no dump: %s" % e)
    ok, detail, fields = compare(got, want)
    f["compare"] = fields
    f["compare_detail"] = detail
    return c.add("results", ok, detail)


def timing(f, pair, key):
    n, s = (pair["native"].result or {}).get(key), (pair["spillway"].result or {}).get(key)
    f.update(native_ms=n, spillway_ms=s, time_key=key)
    if isinstance(n, (int, float)) and isinstance(s, (int, float)) and n > 0:
        f["ratio"] = round(s / n, 3)


def judge_graph(pair):
    c, f = Checks(), {}
    if not judge_ran(c, pair):
        return c, f
    res = {k: pair[k].result for k in ("native", "spillway")}
    c.add("capture", all(r.get("capture_ok") == 1 for r in res.values()), "; ".join(
        "%s: %s" % (k, "ok" if r.get("capture_ok") == 1 else r.get("capture_error", "failed")) for k, r in res.items()))
    judge_spill(c, pair["spillway"], f)
    if all(r.get("capture_ok") == 1 for r in res.values()):
        judge_results(c, pair, f)
        timing(f, pair, "replay_ms")
    return c, f


def flags_disable_cmdbuf(flags):
    """XLA's flag with an empty list turns command buffers off."""
    return any(t == "--xla_gpu_enable_command_buffer=" for t in (flags or "").split())


def judge_jax(pair, env_flags):
    c, f = Checks(), {"xla_flags": env_flags}
    if not judge_ran(c, pair):
        return c, f
    counts = {k: pair[k].result.get("cmdbuf") for k in ("native", "spillway")}
    # XLA now forms command buffers on thunks (xla_gpu_experimental_enable_command_buffer_on_thunks,
    # default true), after the HLO that as_text() prints: the spillway run's cuGraphLaunch count is
    # the evidence that survives.
    d, _ = segment(pair["spillway"])
    graphs = (d or {}).get("graph_launches")
    in_hlo = all(isinstance(n, int) and n > 0 for n in counts.values())
    ok = not flags_disable_cmdbuf(env_flags) and (in_hlo or (graphs or 0) > 0)
    f["graph_launches"] = graphs
    c.add("command buffers", ok, "XLA_FLAGS %s; command_buffer calls in the optimized HLO: %s; graph launches "
          "under spillway: %s" % ("turn them off" if flags_disable_cmdbuf(env_flags) else "leave them on",
                                  ", ".join("%s %s" % kv for kv in counts.items()), graphs if graphs is not None else "n/a"))
    judge_spill(c, pair["spillway"], f)
    judge_results(c, pair, f)
    hlo = {k: pair[k].result.get("hlo") for k in ("native", "spillway")}
    f["hlo"] = hlo
    if None not in hlo.values() and hlo["native"] != hlo["spillway"]:
        c.note("results", "the two runs compiled different programs (HLO %s, %s): XLA schedules for the "
               "memory it is told of" % (hlo["native"], hlo["spillway"]))
    timing(f, pair, "step_ms")
    f["bytes_limit"] = pair["spillway"].result.get("bytes_limit")
    return c, f


def _num(v):
    return v if isinstance(v, (int, float)) else None


def loop_facts(res, graphs):
    """What tells where XLA put the loop, in words, from the spillway run's
    RESULT (res) and its segment's graph launches (graphs)."""
    lpc, gpc = _num(res.get("launches_per_call")), _num(res.get("graphs_per_call"))
    return ("optimized HLO: %s while loop(s), %s inside command_buffer computations, %s with a known trip count, "
            "%s command_buffer call(s); per jitted call of %s micro-steps: %s graph launch(es), %s kernel launch(es) "
            "(%s graph launches in all)" % (
                res.get("whiles", "n/a"), res.get("cb_whiles", "n/a"), res.get("known_trip", "n/a"),
                res.get("cmdbuf", "n/a"), res.get("micro_steps", "n/a"), "n/a" if gpc is None else gpc,
                "n/a" if lpc is None else lpc, "n/a" if graphs is None else graphs))


def why_no_conditionals(res, env_flags):
    """Why the spillway run's spillway_graph_conditionals() was 0: XLA did
    not put the loop in a conditional node, or spillway missed the node.
    The HLO decides where XLA forms command buffers in it (a while inside a
    command_buffer computation is a WHILE command); where it forms them on
    thunks, after the HLO (no command_buffer calls), the launches per call
    decide: a loop run from the host launches its condition and body at
    least once per iteration, one inside a graph launches nothing of its
    own."""
    whiles, inside, cmdbuf = _num(res.get("whiles")), _num(res.get("cb_whiles")), _num(res.get("cmdbuf"))
    lpc, gpc, m = _num(res.get("launches_per_call")), _num(res.get("graphs_per_call")), _num(res.get("micro_steps"))
    peak = _num(res.get("conditionals_peak"))
    xla = "XLA did not put the loop in a conditional node"
    missed = "spillway missed them"
    if peak and peak > 0:
        return ("spillway recorded %d during the run and holds none at the end: the graphs that had them were "
                "destroyed (cuGraphDestroy takes their records) while the step still lived" % peak)
    if flags_disable_cmdbuf(env_flags):
        return "%s: XLA_FLAGS turn command buffers off" % xla
    if whiles == 0:
        return "%s: the optimized HLO has no while loop left (XLA unrolled or removed it)" % xla
    unrolled = (" (unless XLA recorded the loop unrolled into the graph, which it does only for a known trip "
                "count: the HLO gives one; xla_gpu_command_buffer_unroll_loops)" if _num(res.get("known_trip")) else "")
    if inside:
        return ("%s: the optimized HLO runs the while inside a command buffer, which XLA records as a WHILE "
                "conditional node (cuGraphAddNode), yet spillway holds no record of one%s" % (missed, unrolled))
    if cmdbuf and whiles:
        return ("%s: the optimized HLO keeps the while outside its command_buffer computations (its body or "
                "condition has an operation XLA does not record, or WHILE is not among the command types, or the "
                "driver or toolkit is older than CUDA 12.3)" % xla)
    per_call = None if lpc is None or gpc is None else lpc + gpc
    if per_call is not None and m and per_call >= m:
        return ("%s: it ran the loop from the host, %.4g launches per call for %d micro-steps (command buffers "
                "formed on thunks, after the HLO, the body's launched per iteration)" % (xla, per_call, m))
    if per_call is not None and m and gpc:
        return ("%s: the loop ran inside a CUDA graph (%.4g graph and %.4g kernel launches per call, fewer than "
                "its %d micro-steps), which takes a WHILE conditional node, yet spillway holds no record of one%s"
                % (missed, gpc, lpc, m, unrolled))
    return ("cannot tell whether XLA put the loop in a graph: no command_buffer calls in the HLO and %s" % (
        "no graph launches" if per_call is not None else "no launch counts (no stats segment)"))


def judge_conditionals(c, pair, env_flags, f):
    res = pair["spillway"].result
    d, _ = segment(pair["spillway"])
    graphs = (d or {}).get("graph_launches")
    k = res.get("conditionals")
    f.update(conditionals=k, conditionals_peak=res.get("conditionals_peak"), whiles=res.get("whiles"),
             cb_whiles=res.get("cb_whiles"), launches_per_call=res.get("launches_per_call"),
             graphs_per_call=res.get("graphs_per_call"))
    facts = loop_facts(res, graphs)
    if not isinstance(k, int) or k < 0:
        return c.add("conditionals", False, "spillway_graph_conditionals() not found in the spillway run "
                     "(conditionals=%s: libspillway not preloaded, or one without the export); %s" % (k, facts))
    if k > 0:
        return c.add("conditionals", True,
                     "spillway holds records of %d conditional node(s) at the end; %s" % (k, facts))
    why = why_no_conditionals(res, env_flags)
    f["conditionals_why"] = why
    return c.add("conditionals", False, "0 conditional nodes recorded under spillway: %s; %s; XLA_FLAGS %s; jax %s" % (
        why, facts, env_flags or "none", res.get("jax", "n/a")))


def judge_jax_while(pair, env_flags):
    c, f = judge_jax(pair, env_flags)
    if all(pair.get(k) is not None and pair[k].ok() for k in ("native", "spillway")):
        judge_conditionals(c, pair, env_flags, f)
    return c, f


def judge_expandable(pair):
    c, f = Checks(), {}
    if not judge_ran(c, pair):
        return c, f
    res = pair["spillway"].result
    seen = {1: "in force", 0: "not in force", -1: "cannot tell"}.get(res.get("expandable_seen"), "not reported")
    c.add("expandable", res.get("expandable") == 1 and res.get("expandable_seen") == 1,
          "PYTORCH_CUDA_ALLOC_CONF=%s; PyTorch's memory snapshot: %s" % (res.get("alloc_conf"), seen))
    c.add("data", res.get("data_ok") == 1 and res.get("matmul_ok") == 1,
          "%s tensors read back, matmul %s" % (res.get("held_tensors"), "exact" if res.get("matmul_ok") == 1 else "wrong"))
    d, why = segment(pair["spillway"])
    if d is None:
        c.add("pooled", False, "no stats segment at the hold: %s" % why)
        return c, f
    pt = passthrough(d)
    use, reserved = d.get("in_use_bytes") or 0, res.get("reserved") or 0
    served = use - sum(pt.values())
    f.update(spill_fields(d), served=served, reserved=reserved)
    ok = reserved > 0 and served >= POOLED_MIN * reserved and pt.get("ipc", 0) <= IPC_MAX * reserved
    c.add("pooled", ok, "pool served %s of torch's reserved %s; pass-through %s" % (
        fmt_bytes(served), fmt_bytes(reserved),
        ", ".join("%s %s" % (k, fmt_bytes(v)) for k, v in sorted(pt.items()) if v) or "none"))
    return c, f


def _cc(res):
    """The compute capability a row reported ("9.0") as a number; None."""
    try:
        return float(res.get("cc"))
    except (TypeError, ValueError):
        return None


TMA_FIELDS = ("cc", "tensor_maps", "tensor_maps_end", "squeeze", "w_bytes", "w_resident_before", "w_resident_after",
              "spilled_before", "spilled_after", "fills_before", "fills_after", "digest", "same")


def judge_tma(pair):
    c, f = Checks(), {}
    if not judge_ran(c, pair):
        return c, f
    res, nat = pair["spillway"].result, pair["native"].result
    f.update({k: res.get(k) for k in TMA_FIELDS}, native_digest=nat.get("digest"))
    d, _ = segment(pair["spillway"])
    if d is not None:
        f.update(spill_fields(d))
    cc, k = _cc(res), res.get("tensor_maps")
    if not isinstance(k, int) or k < 0:
        c.add("tensor maps", False, "spillway_tensor_maps() not found in the spillway run (tensor_maps=%s: "
              "libspillway not preloaded, or one without the export)" % k)
    elif cc is not None and cc < 9.0:
        c.add("tensor maps", True, "skipped: compute capability %s, below 9.0 (no TMA: cuBLAS's kernels take "
              "pointers); %d descriptor(s) recorded" % (res.get("cc"), k))
    elif k > 0:
        c.add("tensor maps", True, "%d descriptor(s) recorded after the first GEMM, %s at the end (compute "
              "capability %s)" % (k, res.get("tensor_maps_end", "n/a"), res.get("cc")))
    else:
        c.add("tensor maps", False, "0 descriptors recorded after a bf16 GEMM on compute capability %s: cuBLAS "
              "encodes its descriptors some other way than through the driver's entry points "
              "(cuTensorMapEncodeTiled/Im2col/Im2colWide, cuTensorMapReplaceAddress): a finding for README's "
              "Known limits, not a spillway crash (the run exited 0); torch %s" % (res.get("cc"), res.get("torch")))
    w = _num(res.get("w_bytes")) or 0
    rb, ra = _num(res.get("w_resident_before")), _num(res.get("w_resident_after"))
    sb, sa = _num(res.get("spilled_before")), _num(res.get("spilled_after"))
    fb, fa = _num(res.get("fills_before")), _num(res.get("fills_after"))
    where = ("W %s of %s on the device" % (fmt_bytes(rb), fmt_bytes(w)) if rb is not None
             else "W's pages: no residency probe")
    if sb is None:
        c.add("spilled", False, "no stats segment in the spillway run: spilled_bytes n/a")
        return c, f
    spilled = sb > 0 and (rb < w if rb is not None else sb >= w)
    c.add("spilled", spilled, "after the squeeze (%s): %s on the host; %s" % (
        fmt_bytes(_num(res.get("squeeze")) or 0), fmt_bytes(sb), where))
    if spilled:
        back = ra == w if ra is not None and rb is not None else sb - (sa or 0) >= w
        ok = fa is not None and fb is not None and fa > fb and back
        c.add("filled back", ok, "the GEMM after the squeeze: fill_events %s -> %s, spilled_bytes %s -> %s, %s" % (
            fb, fa, fmt_bytes(sb), fmt_bytes(sa or 0),
            ("W %s of %s on the device after it" % (fmt_bytes(ra), fmt_bytes(w)) if ra is not None and rb is not None
             else "no residency probe: spilled_bytes must drop by W's %s" % fmt_bytes(w))))
    same = res.get("same") == 1 and nat.get("same") == 1
    eq = res.get("digest") is not None and res.get("digest") == nat.get("digest")
    detail = "product after the squeeze: digest %s, native %s; equal to the first GEMM's: %s" % (
        res.get("digest"), nat.get("digest"), "yes" if same else "no (spillway %s, native %s)" % (
            res.get("same"), nat.get("same")))
    f["compare_detail"] = "bitwise equal" if eq and same else "differ"
    if not eq:
        try:
            ok, why, fields = compare(read_floats(os.path.join(pair["dirs"]["spillway"], "dump.f32")),
                                      read_floats(os.path.join(pair["dirs"]["native"], "dump.f32")))
            f["compare"], f["compare_detail"] = fields, "differ; column sums: %s" % why
            detail += "; column sums: %s" % why
        except OSError as e:
            detail += "; no dump: %s" % e
    c.add("results", eq and same, detail)
    timing(f, pair, "gemm_ms")
    return c, f


def judge(row, pair, env_flags=None):
    if row["id"] == "torch-tma":
        return judge_tma(pair)
    if row["id"] == "torch-graph":
        return judge_graph(pair)
    if row["id"] == "jax-cmdbuf":
        return judge_jax(pair, env_flags)
    if row["id"] == "jax-while":
        return judge_jax_while(pair, env_flags)
    return judge_expandable(pair)


# --- running ----------------------------------------------------------------
def record(ctx, row, pair):
    rec = {"table": "feature", "row": row["id"], "label": row["label"], "fw": row["fw"],
           "cfg": "SPILLWAY_MEM_LIMIT=%s" % ctx.limit(row), "env": dict(row["env"], **row["spw_env"])}
    if pair is None:
        rec.update(status="SKIP", checks=[["budget", False, "skipped: time budget spent"]])
        return rec
    if pair.get("missing"):
        rec.update(status="SKIP", checks=[["framework", False, "skipped: no %s" % pair["missing"]]])
        return rec
    flags = ctx.env(row, True).get("XLA_FLAGS") if row["fw"] == "jax" else None
    if flags:
        rec["env"]["XLA_FLAGS"] = flags
    c, f = judge(row, pair, flags)
    rec.update(f)
    rec.update(status="pass" if c.passed() else "FAIL", checks=c.items,
               wall=round(sum(r.wall for r in (pair["native"], pair["spillway"]) if r), 1),
               native=pair["native"].result if pair["native"] else None, spillway=pair["spillway"].result)
    return rec


def main_rows(ctx):
    only = set(ctx.a.rows.split(",")) if ctx.a.rows else None
    for row in ROWS:
        if only and row["id"] not in only:
            continue
        if ctx.a.dry_run:
            d = os.path.join(ctx.tmp, row["id"])
            for kind in (["native"] if row["native"] else []) + ["spillway"]:
                env = ctx.env(row, kind == "spillway")
                print("would run [%s, %s]: %s  (row timeout %ds)" % (row["id"], kind, " ".join(ctx.cmd(row, d)),
                                                                    row["timeout"]))
                print("   env: " + " ".join("%s=%s" % (k, v) for k, v in sorted(env.items()) if k.startswith(
                    ("SPILLWAY_", "XLA_", "PYTORCH_", "CUBLAS_", "LD_PRELOAD"))))
            continue
        rec = record(ctx, row, run_pair(ctx, row))
        ctx.results.add(rec)
        failed = [c[0] for c in rec["checks"] if not c[1]]
        print("RESULT table=feature name=%s cfg=%s pass=%d ratio=%s failed=%s" % (
            row["id"], rec["cfg"], rec["status"] == "pass", rec.get("ratio", "n/a"),
            ",".join(failed).replace(" ", "_") or "none"), flush=True)


# --- self-test of the judging ------------------------------------------------
def _run(result, seg=None, rc=0):
    r = harness.Run()
    r.rc, r.result, r.wall = rc, result, 1.0
    r.hold = {"seg": {"devices": [seg]}} if seg else {"seg": None, "why": "test: none"}
    return r


def _pair(tmp, native, spw, got, want):
    dirs = {}
    for kind, vals in (("native", want), ("spillway", got)):
        dirs[kind] = os.path.join(tmp, kind)
        os.makedirs(dirs[kind], exist_ok=True)
        if vals is not None:
            with open(os.path.join(dirs[kind], "dump.f32"), "wb") as f:
                f.write(array.array("f", vals).tobytes())
    return {"native": native, "spillway": spw, "dirs": dirs}


def self_test():
    """Each judgement on synthetic runs: the passing case and each way a
    row must fail."""
    seg = {"spill_bytes": 64 << 20, "spill_events": 3, "spilled_bytes": 32 << 20, "in_use_bytes": 600 << 20,
           "limit_bytes": 256 << 20, "passthrough_ipc_bytes": 0, "passthrough_other_bytes": 0}
    fp = [1.0, 0.5, -3.25, 1e-3] * 8
    near = [v * (1 + 1e-7) for v in fp]
    off = list(fp)
    off[2] = -3.5
    g_ok = {"capture_ok": 1, "replay_ms": 2.0}
    j_ok = {"cmdbuf": 3, "step_ms": 1.0}
    e_ok = {"expandable": 1, "expandable_seen": 1, "data_ok": 1, "matmul_ok": 1, "held_tensors": 16, "reserved": 1 << 30}
    graph, jax, exp, jwhile, tma = (next(r for r in ROWS if r["id"] == i)
                                    for i in ("torch-graph", "jax-cmdbuf", "torch-expandable", "jax-while",
                                              "torch-tma"))
    # torch-tma: W (32 MiB) squeezed out, filled back by the GEMM, products equal
    t_ok = {"cc": 9.0, "tensor_maps": 2, "tensor_maps_end": 4, "squeeze": 256 << 20, "w_bytes": 32 << 20,
            "w_resident_before": 0, "w_resident_after": 32 << 20, "spilled_before": 128 << 20,
            "spilled_after": 32 << 20, "fills_before": 1, "fills_after": 4, "digest": "0123456789abcdef", "same": 1,
            "gemm_ms": 1.5, "torch": "2.9.0"}
    t_native = dict(t_ok, tensor_maps=-1, tensor_maps_end=-1, squeeze=0, w_resident_before="n/a",
                    w_resident_after="n/a", spilled_before="n/a", spilled_after="n/a", fills_before="n/a",
                    fills_after="n/a", gemm_ms=1.0)
    t_none = dict(t_ok, tensor_maps=0, tensor_maps_end=0)
    t_noprobe = dict(t_ok, w_resident_before="n/a", w_resident_after="n/a")
    finding = "some other way than through the driver's entry points"
    # jax-while: a loop in a WHILE node that spillway recorded; each way of
    # not recording one, with the cause its detail must name
    w_ok = dict(j_ok, micro_steps=4, whiles=1, cb_whiles=1, known_trip=0, conditionals=1, conditionals_peak=1,
                launches_per_call=0.0, graphs_per_call=1.0)
    w_native = dict(w_ok, conditionals=-1, conditionals_peak=-1, launches_per_call="n/a", graphs_per_call="n/a")
    w_thunks = dict(w_ok, cmdbuf=0, cb_whiles=0, conditionals=0, conditionals_peak=0)
    xla, missed = "XLA did not put the loop in a conditional node", "spillway missed them"
    cases = [  # name, row, native result, spillway result, segment, got, want, xla flags, failed checks
        ("graph ok", graph, g_ok, dict(g_ok, replay_ms=5.0), seg, fp, fp, None, []),
        ("graph within tolerance", graph, g_ok, g_ok, seg, near, fp, None, []),
        ("graph results differ", graph, g_ok, g_ok, seg, off, fp, None, ["results"]),
        ("graph no spill", graph, g_ok, g_ok, dict(seg, spill_bytes=0), fp, fp, None, ["spilled"]),
        ("graph capture refused", graph, g_ok, {"capture_ok": 0, "capture_error": "CUDA error: invalidated"},
         seg, None, fp, None, ["capture"]),
        ("graph crashed", graph, g_ok, None, None, None, fp, None, ["ran (spillway)"]),
        ("jax ok", jax, j_ok, j_ok, seg, fp, fp, "--xla_gpu_autotune_level=0", []),
        ("jax cmdbuf off", jax, dict(j_ok, cmdbuf=0), dict(j_ok, cmdbuf=0), seg, fp, fp,
         "--xla_gpu_enable_command_buffer= --xla_gpu_autotune_level=0", ["command buffers"]),
        ("jax none outlined", jax, dict(j_ok, cmdbuf=0), j_ok, seg, fp, fp, "", ["command buffers"]),
        ("jax cmdbuf on thunks", jax, dict(j_ok, cmdbuf=0), dict(j_ok, cmdbuf=0), dict(seg, graph_launches=40), fp, fp,
         "--xla_gpu_autotune_level=0", []),
        ("expandable pooled", exp, None, e_ok, dict(seg, in_use_bytes=(1 << 30) + (8 << 20)), None, None, None, []),
        ("expandable as IPC", exp, None, e_ok, dict(seg, in_use_bytes=1 << 30, passthrough_ipc_bytes=1 << 30),
         None, None, None, ["pooled"]),
        ("expandable off", exp, None, dict(e_ok, expandable=0), dict(seg, in_use_bytes=1 << 30), None, None, None,
         ["expandable"]),
        ("expandable asked, not in force", exp, None, dict(e_ok, expandable_seen=0), dict(seg, in_use_bytes=1 << 30),
         None, None, None, ["expandable"]),
        ("expandable unseen", exp, None, dict(e_ok, expandable_seen=-1), dict(seg, in_use_bytes=1 << 30),
         None, None, None, ["expandable"]),
        ("while ok", jwhile, w_native, w_ok, seg, fp, fp, "--xla_gpu_enable_command_buffer=+WHILE", [],
         "holds records"),
        ("while in a command buffer, not recorded", jwhile, w_native, dict(w_ok, conditionals=0, conditionals_peak=0),
         seg, fp, fp, "", ["conditionals"], missed),
        ("while unrolled by XLA", jwhile, w_native, dict(w_ok, whiles=0, cb_whiles=0, conditionals=0,
                                                          conditionals_peak=0), seg, fp, fp, "", ["conditionals"], xla),
        ("while outside the command buffers", jwhile, w_native, dict(w_ok, cb_whiles=0, conditionals=0,
                                                                      conditionals_peak=0, graphs_per_call=5.0),
         seg, fp, fp, "", ["conditionals"], xla),
        ("while on thunks, run from the host", jwhile, w_native, dict(w_thunks, launches_per_call=4.0,
                                                                       graphs_per_call=5.0),
         dict(seg, graph_launches=60), fp, fp, "", ["conditionals"], "from the host"),
        ("while on thunks, in a graph, not recorded", jwhile, w_native, w_thunks, dict(seg, graph_launches=12),
         fp, fp, "", ["conditionals"], missed),
        ("while, records gone by the end", jwhile, w_native, dict(w_ok, conditionals=0), seg, fp, fp, "",
         ["conditionals"], "holds none at the end"),
        ("while, no spillway export", jwhile, w_native, dict(w_ok, conditionals=-1), seg, fp, fp, "",
         ["conditionals"], "not found"),
        ("while, command buffers off", jwhile, w_native, dict(w_ok, cmdbuf=0, cb_whiles=0, conditionals=0,
                                                               conditionals_peak=0),
         seg, fp, fp, "--xla_gpu_enable_command_buffer=", ["command buffers", "conditionals"],
         "turn command buffers off"),
        ("while crashed", jwhile, w_native, None, None, None, fp, "", ["ran (spillway)"]),
        ("tma ok", tma, t_native, t_ok, seg, fp, fp, None, [], "2 descriptor(s) recorded"),
        ("tma, no descriptor recorded on 9.0", tma, t_native, t_none, seg, fp, fp, None, ["tensor maps"], finding),
        ("tma, none on 9.0 nor filled (a bypass)", tma, t_native, dict(t_none, fills_after=1, w_resident_after=0,
                                                                       spilled_after=128 << 20),
         seg, fp, fp, None, ["tensor maps", "filled back"], finding),
        ("tma, cc 8.0 skips the descriptor check", tma, dict(t_native, cc=8.0), dict(t_none, cc=8.0), seg, fp, fp,
         None, [], "skipped: compute capability 8.0"),
        ("tma, no spillway export", tma, t_native, dict(t_ok, tensor_maps=-1), seg, fp, fp, None, ["tensor maps"],
         "not found"),
        ("tma, W not squeezed out", tma, t_native, dict(t_ok, w_resident_before=32 << 20), seg, fp, fp, None,
         ["spilled"]),
        ("tma, nothing spilled", tma, t_native, dict(t_noprobe, spilled_before=0, spilled_after=0), seg, fp, fp,
         None, ["spilled"]),
        ("tma, no fill", tma, t_native, dict(t_ok, fills_after=1, w_resident_after=0, spilled_after=128 << 20),
         seg, fp, fp, None, ["filled back"], "fill_events 1 -> 1"),
        ("tma, fills but W left on the host", tma, t_native, dict(t_ok, w_resident_after=16 << 20), seg, fp, fp,
         None, ["filled back"]),
        ("tma, no residency probe, spilled bytes down by W", tma, t_native, t_noprobe, seg, fp, fp, None, []),
        ("tma, no residency probe, spilled bytes down short", tma, t_native, dict(t_noprobe, spilled_after=112 << 20),
         seg, fp, fp, None, ["filled back"]),
        ("tma, products differ", tma, t_native, dict(t_ok, digest="fedcba9876543210"), seg, off, fp, None,
         ["results"], "column sums: 1 of 32 values off"),
        ("tma, second GEMM differs from the first", tma, t_native, dict(t_ok, same=0), seg, fp, fp, None,
         ["results"]),
        ("tma crashed", tma, t_native, None, None, None, fp, None, ["ran (spillway)"]),
    ]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, row, nres, sres, sg, got, want, flags, fails, *said) in enumerate(cases):
            native = _run(nres) if nres is not None else None
            spw = _run(sres, sg) if sres is not None else _run(None, rc=1)
            pair = _pair(os.path.join(tmp, str(i)), native, spw, got, want)
            c, _ = judge(row, pair, flags)
            failed = [x[0] for x in c.items if not x[1]]
            # said: what the checks' details must say (the cause)
            detail = " ".join(x[2] for x in c.items if x[0] in ("conditionals", "tensor maps", "filled back",
                                                                  "results"))
            ok = failed == fails and all(t in detail for t in said)
            bad += not ok
            print("%s - %s: failed %s%s" % ("ok" if ok else "FAIL", name, failed or "none",
                                             "" if ok else " (expected %s%s; details: %s)" % (
                                                 fails or "none", "".join(", saying '%s'" % t for t in said),
                                                 detail or "none")))
    print("features self-test: %s" % ("ok" if not bad else "%d failed" % bad))
    return 1 if bad else 0


def main():
    a = harness.row_parser(__doc__).parse_args()
    if a.self_test:
        return self_test()
    a.fake = a.mock = a.fake or a.mock  # every row is a framework's: without a GPU, the stand-ins
    ctx = Ctx(a)
    try:
        main_rows(ctx)
    finally:
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
