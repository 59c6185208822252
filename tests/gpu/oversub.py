#!/usr/bin/env python3
"""GPU rows of issue 13: the seed's example trained past the device's
memory, unmodified, under SPILLWAY_OVERSUBSCRIBE.

  jax-seed-default   bench/seed_mlp_jax.py (4 x 7168x7168 f32 MLP, Adam after
                     clip_by_global_norm, the seed's tutorial) under
                     SPILLWAY_MEM_LIMIT=3G SPILLWAY_OVERSUBSCRIBE=2, JAX's
                     allocator as JAX leaves it (BFC, one preallocated arena
                     of 0.75 x the 6 GiB it is told)
  jax-seed-async     the same with XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async (a
                     stream-ordered allocation per buffer: every free reaches
                     spillway; the recipe candidate of issue 13 item 4)
  jax-seed-platform  the same with =platform (cuMemAlloc per buffer); last,
                     left out when the budget is short
  torch-mlp-1.5      bench/seed_mlp_torch.py (the same MLP as a PyTorch step)
                     under SPILLWAY_MEM_LIMIT=4G SPILLWAY_OVERSUBSCRIBE=1.5
  torch-mlp-2        the same under 3G at F = 2
  torch-mlp-2-async  torch-mlp-2 with PYTORCH_CUDA_ALLOC_CONF=
                     backend:cudaMallocAsync (the liveness recipe candidate)
Both torch limits tell the program 6 GiB; its working set natively is ~5 GiB
(weights, gradients and Adam's moments 3.06 GiB, the activations autograd
keeps ~1.5 GiB, temporaries): above either limit, within what it is told.

Each framework runs once natively (its default allocator, the same flags),
before its first row; that run is the reference of every row of the
framework: losses and step time. Both runs of a row get the same
XLA_FLAGS=--xla_gpu_autotune_level=0 (JAX) or CUBLAS_WORKSPACE_CONFIG
(PyTorch): autotuning times kernels, and under spill it could pick others
than natively, with other rounding; the program's code is untouched.

A row passes when every check passes:
  ran             both runs exited 0 with their RESULT line, losses finite
  told total      the program was told F x limit (RESULT told_total: what the
                  driver answers it, within one 2 MiB granule)
  spilled         really oversubscribed: the stats segment's peak in-use is
                  above the limit, and bytes were spilled (spill_bytes) or
                  sat on the host (spilled_bytes) at a hold
  loss            every step's loss equals native within 1e-5 relative
  device memory   the process's real device usage (NVML, sampled all along;
                  on fakecuda, fakecuda's own device bytes) at most the limit
                  plus the context overhead (acceptance.py's allowance: the
                  framework's baseline overhead, else this row's native run,
                  plus --slack MiB); on fakecuda, one granule
Reported, not judged: step time over native (goal <= 2x; the seed's
explicit offload by hand took 14.8x), bytes moved per settled step (spill +
fill between the holds after warm-up and at the end, over the steps
between), the device peak.

One JSON record per row (table "oversub") in <out>/results.jsonl, rendered
by report.py; one RESULT line per row on stdout.

  oversub.py --build build-gpu --out DIR [--rows a,b] [--deadline T]
  --fake, --mock    fakecuda instead of the driver, the programs on
                    tests/gpu/mock's stand-ins (small sizes): checks the
                    rows, the mocks and the judging, not the frameworks
  --extra-env K=V   added to every spillway run (selftest's negative control)
  --dry-run   print the plan;  --self-test  the judging on synthetic runs
"""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import acceptance  # noqa: E402  (its overhead allowance, reused)
import harness  # noqa: E402
import nvsample  # noqa: E402
import swstats  # noqa: E402
from harness import GRANULE, MiB, fmt_bytes  # noqa: E402

RTOL = 1e-5
GOAL_RATIO, SEED_RATIO = 2.0, 14.8
STEPS, WARMUP = 6, 2  # the GPU budget: 4 timed steps after 2 warm-up
BENCH = os.path.join(harness.ROOT, "bench")
# Per framework: the program, its arguments (the seed's sizes on a GPU;
# small ones on the stand-ins, which hold 8x8 values behind each shape),
# flags for both runs, and seconds (timeout of one run, expected on an
# H100: import, compile and init dominate 6 steps of ~25 ms natively).
FW = {
    "jax": {"script": "seed_mlp_jax.py", "args": ["--dim", "7168"], "fake_args": ["--dim", "896"],
            "env": {}, "xla_flags": ["--xla_gpu_autotune_level=0"],
            "native_timeout": 90, "expect_native": 25},
    "torch": {"script": "seed_mlp_torch.py", "args": ["--dim", "7168"], "fake_args": ["--dim", "1024"],
              "env": {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}, "native_timeout": 60, "expect_native": 15},
}
# The fake limits keep the real ones' proportions to the stand-ins' working
# sets (JAX ~116 MiB: 96M at F = 2; torch ~124 MiB: 104M at 1.5, 80M at 2).
ROWS = [
    {"id": "jax-seed-default", "fw": "jax", "label": "JAX seed MLP, default allocator (BFC arena)",
     "limit": "3G", "fake_limit": "96M", "factor": "2", "env": {}, "timeout": 120, "expect": 35},
    {"id": "jax-seed-async", "fw": "jax", "label": "JAX seed MLP, ALLOCATOR=cuda_async",
     "limit": "3G", "fake_limit": "96M", "factor": "2", "env": {"XLA_PYTHON_CLIENT_ALLOCATOR": "cuda_async"},
     "timeout": 120, "expect": 35},
    {"id": "torch-mlp-1.5", "fw": "torch", "label": "PyTorch seed MLP, caching allocator",
     "limit": "4G", "fake_limit": "104M", "factor": "1.5", "env": {}, "timeout": 90, "expect": 20},
    {"id": "torch-mlp-2", "fw": "torch", "label": "PyTorch seed MLP, caching allocator",
     "limit": "3G", "fake_limit": "80M", "factor": "2", "env": {}, "timeout": 90, "expect": 20},
    {"id": "torch-mlp-2-async", "fw": "torch", "label": "PyTorch seed MLP, backend:cudaMallocAsync",
     "limit": "3G", "fake_limit": "80M", "factor": "2", "env": {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
     "timeout": 90, "expect": 20},
    {"id": "jax-seed-platform", "fw": "jax", "label": "JAX seed MLP, ALLOCATOR=platform",
     "limit": "3G", "fake_limit": "96M", "factor": "2", "env": {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"},
     "timeout": 120, "expect": 35},
]
NEED = 30  # a run is useless with less
HOST_LIMIT = "8G"  # >= (F - 1) x limit for every row, else spillway exits 2


class Ctx(harness.RowCtx):
    def __init__(self, a):
        super().__init__(a, "swgpu-oversub.")
        self.sampler = nvsample.Sampler(enabled=not a.fake and not a.dry_run).start()
        self.natives = {}  # fw -> (Run, device dict) or None (skipped)

    def limit(self, row):
        return row["fake_limit"] if self.a.fake else row["limit"]

    def env(self, fw, row, run_dir):
        """Native when row is None."""
        f = FW[fw]
        extra = dict(f["env"])
        if row is not None:
            extra.update(row["env"], SPILLWAY_MEM_LIMIT=self.limit(row), SPILLWAY_OVERSUBSCRIBE=row["factor"],
                         SPILLWAY_HOST_LIMIT=HOST_LIMIT)
        env = harness.base_env(extra, preload=self.lib if row is not None else None, stats_dir=self.tmp)
        if self.a.fake:
            env.update(LD_LIBRARY_PATH=os.path.join(self.build, "fakecuda"), FAKECUDA_MEM="256M",
                       PYTHONPATH=os.path.join(HERE, "mock"), MOCK_CUDA="1",
                       MOCK_DEVICE_PEAK=os.path.join(run_dir, "device_peak"))
        if row is not None:
            for kv in self.a.extra_env:
                k, _, v = kv.partition("=")
                env[k] = v
        if f.get("xla_flags"):  # what the caller set, then ours; in the record
            env["XLA_FLAGS"] = " ".join(([env["XLA_FLAGS"]] if env.get("XLA_FLAGS") else []) + f["xla_flags"])
        return env

    def cmd(self, fw):
        f = FW[fw]
        return [harness.python(), os.path.join(BENCH, f["script"]), "--steps", str(STEPS), "--warmup", str(WARMUP),
                "--hold"] + (f["fake_args"] if self.a.fake else f["args"])


def run_one(ctx, fw, row, want):
    """(Run, device dict) or None when the budget cannot afford it. The
    Run's hold is the list of segments read at each hold."""
    timeout = ctx.budget.timeout(want, NEED)
    if timeout is None:
        return None
    run_dir = os.path.join(ctx.tmp, row["id"] if row else fw + "-native")
    os.makedirs(run_dir, exist_ok=True)
    holds = []
    dev_base = ctx.sampler.device_used() if ctx.sampler.mode else None

    def on_start(pid):
        if ctx.sampler.mode:
            ctx.sampler.watch(pid, dev_base)

    def on_hold(pid):
        seg, why = swstats.read_pid(pid, ctx.tmp) if row else (None, "native run: no segment")
        holds.append({"seg": seg, "why": why})
        return holds

    label = "%s (%s)" % (row["id"], "spillway") if row else "%s seed MLP (native)" % fw
    r = harness.run(ctx.cmd(fw), ctx.env(fw, row, run_dir), timeout, ctx.log, on_hold=on_hold, on_start=on_start,
                    label=label)
    return r, device_usage(ctx, r, run_dir)


def device_usage(ctx, r, run_dir):
    """{"peak", "source", "how"}: NVML's per-process peak on a GPU,
    fakecuda's device high-water mark (written by the stand-ins) without."""
    if not ctx.a.fake:
        return ctx.sampler.result(r.pid) if r.pid else {"source": None, "peak": None, "how": "never started"}
    try:
        with open(os.path.join(run_dir, "device_peak")) as f:
            return {"source": "fakecuda", "peak": int(f.read().split()[0]), "how": "fakecuda device bytes"}
    except (OSError, ValueError, IndexError):
        return {"source": "fakecuda", "peak": None, "how": "the stand-ins wrote no device peak"}


def native(ctx, fw):
    if fw not in ctx.natives:
        ctx.natives[fw] = run_one(ctx, fw, None, FW[fw]["native_timeout"])
    return ctx.natives[fw]


# --- judging ----------------------------------------------------------------
class Checks:
    def __init__(self):
        self.items = []

    def add(self, name, ok, detail):
        self.items.append([name, bool(ok), detail])
        return ok

    def passed(self):
        return bool(self.items) and all(c[1] for c in self.items)


def losses(run):
    v = (run.result or {}).get("losses")
    try:
        return [float(x) for x in str(v).split(",")] if v is not None else []
    except ValueError:
        return []


def compare_losses(got, want):
    """(ok, detail, worst relative difference)."""
    if not want or len(got) != len(want):
        return False, "%d losses, native %d" % (len(got), len(want)), None
    rels = [abs(g - w) / abs(w) if w else abs(g - w) for g, w in zip(got, want)]
    worst = max(rels)
    bad = [i + 1 for i, x in enumerate(rels) if not x <= RTOL]  # NaN is bad
    if bad:
        return False, "step %s off native by more than %g relative (worst %.3g)" % (
            ",".join(map(str, bad)), RTOL, worst), worst
    return True, "%d steps %s (worst %.2g relative)" % (
        len(want), "bitwise equal" if worst == 0 else "within %g" % RTOL, worst), worst


def num(d, k):
    v = (d or {}).get(k)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def judge(row, nat, spw, limit, factor, allowance):
    """nat and spw: (Run, device dict). (Checks, fields)."""
    c, f = Checks(), {"limit": limit, "factor": factor}
    ok = True
    for kind, (r, _) in (("native", nat), ("spillway", spw)):
        fine = r.ok() and r.result.get("finite") == 1
        ok = c.add("ran (%s)" % kind, fine, r.why() if not r.ok() else "ok" if fine else "a loss is not finite") and ok
    if not ok:
        return c, f
    (nr, ndev), (sr, sdev) = nat, spw
    res = sr.result
    # What the program is told: F x the limit.
    told, want = num(res, "told_total"), int(factor * limit)
    f.update(told=told, native_peak_bytes=num(nr.result, "peak_bytes"), native_reserved=num(nr.result, "reserved_peak"))
    c.add("told total", told is not None and abs(told - want) <= GRANULE, "told %s, F x limit = %s" % (
        fmt_bytes(told), fmt_bytes(want)))
    # Really oversubscribed.
    holds = sr.hold if isinstance(sr.hold, list) else []
    segs = [h["seg"]["devices"][0] for h in holds if h.get("seg")]
    if not segs:
        why = holds[-1]["why"] if holds else "the program never held"
        c.add("spilled", False, "no stats segment at a hold: %s" % why)
    else:
        last = segs[-1]
        peak, seg_lim = last.get("peak_bytes") or 0, last.get("limit_bytes") or limit
        spill = last.get("spill_bytes") or 0
        on_host = max(s.get("spilled_bytes") or 0 for s in segs)
        f.update(seg_peak=peak, spill_bytes=spill, fill_bytes=last.get("fill_bytes"), spilled_max=on_host,
                 host_bytes=last.get("host_bytes"), reported_bytes=last.get("reported_bytes"),
                 underflows=last.get("underflows"))
        c.add("spilled", peak > seg_lim and (spill > 0 or on_host > 0),
              "peak in use %s over the limit %s; %s spilled, at most %s on the host at a hold" % (
                  fmt_bytes(peak), fmt_bytes(seg_lim), fmt_bytes(spill), fmt_bytes(on_host)))
        moved = lambda s: (s.get("spill_bytes") or 0) + (s.get("fill_bytes") or 0)  # noqa: E731
        steps = num(res, "steps") or STEPS
        warm = num(res, "warmup") or WARMUP
        f["moved_total"] = moved(last)
        f["moved_all_steps"] = moved(last) // steps
        if len(segs) >= 2 and steps > warm:
            f["moved_per_step"] = (moved(last) - moved(segs[0])) // (steps - warm)
    # The losses.
    ok, detail, worst = compare_losses(losses(sr), losses(nr))
    f.update(loss_detail=detail, loss_worst_rel=worst)
    c.add("loss", ok, detail)
    # Real device usage.
    peak = sdev.get("peak")
    f.update(device_peak=peak, device_how="%s (%s)" % (sdev.get("source"), sdev.get("how")), allowance=allowance)
    if peak is None:
        c.add("device memory", False, "not measured: %s" % sdev.get("how"))
    else:
        c.add("device memory", peak <= limit + allowance, "peak %s = limit %+.0f MiB; allowed +%.0f MiB" % (
            fmt_bytes(peak), (peak - limit) / MiB, allowance / MiB))
    # Time, reported.
    n, s = num(nr.result, "step_ms"), num(res, "step_ms")
    f.update(native_ms=n, spillway_ms=s)
    if n and s is not None:
        f["ratio"] = round(s / n, 3)
    return c, f


def overhead(ctx, fw, nat):
    """acceptance.py's allowance: the framework's context overhead (its
    baseline record in this results file, else this row's native run: real
    usage minus what the framework held), plus --slack."""
    if ctx.a.fake:
        return GRANULE, "fakecuda: no context; one granule"
    for rec in ctx.results.load():
        if rec.get("table") == "baseline" and rec.get("fw") == fw and rec.get("ctx_overhead") is not None:
            return rec["ctx_overhead"] + ctx.a.slack * MiB, "baseline context overhead + %d MiB" % ctx.a.slack
    if nat:
        r, dev = nat
        held = num(r.result, "pool_bytes") or num(r.result, "reserved_peak")
        if dev.get("peak") and held:
            return max(dev["peak"] - held, 0) + ctx.a.slack * MiB, "native run's context + %d MiB" % ctx.a.slack
    return acceptance.DEFAULT_OVERHEAD + ctx.a.slack * MiB, "default overhead + %d MiB" % ctx.a.slack


def record(ctx, row, nat, spw):
    limit = harness.size_bytes(ctx.limit(row))
    env = dict(FW[row["fw"]]["env"], **row["env"])
    if FW[row["fw"]].get("xla_flags"):
        env["XLA_FLAGS"] = ctx.env(row["fw"], row, ctx.tmp)["XLA_FLAGS"]
    rec = {"table": "oversub", "row": row["id"], "label": row["label"], "fw": row["fw"],
           "cfg": "SPILLWAY_MEM_LIMIT=%s SPILLWAY_OVERSUBSCRIBE=%s" % (ctx.limit(row), row["factor"]), "env": env,
           "goal_ratio": GOAL_RATIO, "seed_ratio": SEED_RATIO}
    missing = next((got[0].missing() for got in (nat, spw) if got and got[0].missing()), None)
    if missing:  # not installed here (found by the native run: the spillway run is not paid)
        rec.update(status="SKIP", checks=[["framework", False, "skipped: no %s" % missing]])
        return rec
    if nat is None or spw is None:
        rec.update(status="SKIP", checks=[["budget", False, "skipped: time budget spent"]])
        return rec
    allowance, why = overhead(ctx, row["fw"], nat)
    c, f = judge(row, nat, spw, limit, float(row["factor"]), allowance)
    rec.update(f, allowance_how=why, status="pass" if c.passed() else "FAIL", checks=c.items,
               wall=round(nat[0].wall + spw[0].wall, 1), native=nat[0].result, spillway=spw[0].result)
    return rec


def plan(ctx, rows):
    total, seen = 0, set()
    for row in rows:
        fw = row["fw"]
        if fw not in seen:
            seen.add(fw)
            total += FW[fw]["expect_native"]
            print("would run [%s native]: %s  (timeout %ds, ~%ds on an H100)" % (
                fw, " ".join(ctx.cmd(fw)), FW[fw]["native_timeout"], FW[fw]["expect_native"]))
            print("   env: " + show_env(ctx.env(fw, None, ctx.tmp)))
        total += row["expect"]
        print("would run [%s]: %s  (timeout %ds, ~%ds on an H100)" % (
            row["id"], " ".join(ctx.cmd(fw)), row["timeout"], row["expect"]))
        print("   env: " + show_env(ctx.env(fw, row, ctx.tmp)))
    print("oversub: %d rows, ~%d s expected on an H100" % (len(rows), total))


def show_env(env):
    return " ".join("%s=%s" % (k, v) for k, v in sorted(env.items()) if k.startswith(
        ("SPILLWAY_", "XLA_", "PYTORCH_", "CUBLAS_", "LD_PRELOAD", "MOCK_")))


def main_rows(ctx):
    only = set(ctx.a.rows.split(",")) if ctx.a.rows else None
    rows = [r for r in ROWS if not only or r["id"] in only]
    if ctx.a.dry_run:
        plan(ctx, rows)
        return
    for row in rows:
        nat = native(ctx, row["fw"])
        spw = run_one(ctx, row["fw"], row, row["timeout"]) if nat and not nat[0].missing() else None
        rec = record(ctx, row, nat, spw)
        ctx.results.add(rec)
        failed = [c[0] for c in rec["checks"] if not c[1]]
        print("RESULT table=oversub name=%s cfg=%s pass=%d ratio=%s moved_per_step=%s device_peak=%s failed=%s" % (
            row["id"], rec["cfg"].replace(" ", ","), rec["status"] == "pass", rec.get("ratio", "n/a"),
            rec.get("moved_per_step", "n/a"), rec.get("device_peak", "n/a"),
            ",".join(failed).replace(" ", "_") or "none"), flush=True)


# --- self-test of the judging ------------------------------------------------
def _run(result, holds=None, rc=0):
    r = harness.Run()
    r.rc, r.result, r.wall = rc, result, 1.0
    r.hold = holds
    return r


def self_test():
    """The judgement on synthetic runs: the passing case and each way a row
    must fail."""
    G = 1 << 30
    limit = 3 * G
    ls = [0.8, 0.79, 0.78, 0.77, 0.76, 0.75]
    res = {"finite": 1, "steps": 6, "warmup": 2, "step_ms": 25.6, "losses": ",".join(map(repr, ls)),
           "told_total": 6 * G, "peak_bytes": 4 * G}
    seg0 = {"peak_bytes": 4 * G, "limit_bytes": limit, "spill_bytes": G, "fill_bytes": G // 2,
            "spilled_bytes": G, "host_bytes": G}
    seg1 = dict(seg0, spill_bytes=G + 8 * MiB, fill_bytes=G // 2 + 8 * MiB)
    holds = [{"seg": {"devices": [seg0]}}, {"seg": {"devices": [seg1]}}]
    near = ",".join(repr(v * (1 + 3e-6)) for v in ls)
    off = ",".join(repr(v * (1 + 3e-5) if i == 4 else v) for i, v in enumerate(ls))
    dev = {"source": "nvml", "peak": limit + 500 * MiB, "how": "per process"}
    allow = 1024 * MiB
    row = ROWS[0]
    cases = [  # name, spillway result, holds, device dict, failed checks
        ("pass", dict(res, step_ms=40.0), holds, dev, []),
        ("loss within 1e-5", dict(res, losses=near), holds, dev, []),
        ("loss off at one step", dict(res, losses=off), holds, dev, ["loss"]),
        ("a step missing", dict(res, losses=",".join(map(repr, ls[:5]))), holds, dev, ["loss"]),
        ("not spilled", res, [{"seg": {"devices": [dict(s, spill_bytes=0, spilled_bytes=0)]}} for s in (seg0, seg1)],
         dev, ["spilled"]),
        ("never above the limit", res, [{"seg": {"devices": [dict(s, peak_bytes=2 * G)]}} for s in (seg0, seg1)],
         dev, ["spilled"]),
        ("no segment", res, [{"seg": None, "why": "test"}], dev, ["spilled"]),
        ("NVML over the limit", res, holds, dict(dev, peak=limit + allow + 4 * MiB), ["device memory"]),
        ("NVML not measured", res, holds, dict(dev, peak=None, how="never seen"), ["device memory"]),
        ("told the limit only", dict(res, told_total=limit), holds, dev, ["told total"]),
        ("not finite", dict(res, finite=0), holds, dev, ["ran (spillway)"]),
        ("crashed", None, None, dev, ["ran (spillway)"]),
    ]
    bad = 0
    for name, sres, hl, d, fails in cases:
        nat = (_run(res), {"peak": 60 * G})
        spw = (_run(sres, hl, rc=0 if sres else 1), d)
        c, f = judge(row, nat, spw, limit, 2.0, allow)
        failed = [x[0] for x in c.items if not x[1]]
        ok = failed == fails
        if name == "pass":  # what is reported
            ok = ok and f.get("moved_per_step") == 4 * MiB and f.get("ratio") == round(40 / 25.6, 3)
        bad += not ok
        print("%s - %s: failed %s%s" % ("ok" if ok else "FAIL", name, failed or "none",
                                         "" if ok else " (expected %s; %s)" % (fails or "none", f)))
    print("oversub self-test: %s" % ("ok" if not bad else "%d failed" % bad))
    return 1 if bad else 0


def main():
    ap = harness.row_parser(__doc__)
    ap.add_argument("--slack", type=int, default=256, help="MiB allowed over the context overhead")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    a.fake = a.mock = a.fake or a.mock  # every row is a framework's: without a GPU, the stand-ins
    ctx = Ctx(a)
    try:
        main_rows(ctx)
    finally:
        ctx.sampler.stop()
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
