#!/usr/bin/env python3
"""GPU acceptance rows of issues 3 and 4, run one at a time, each judged
here against its limit; one JSON record per row in <out>/results.jsonl
(report.py renders them) and one RESULT line per row on stdout.

  acceptance.py --phase baseline    each framework without spillway: its
                                    context overhead (real usage minus what
                                    it holds) and the device's native total
  acceptance.py --phase limit --limits 4G,0.1
                                    every row under SPILLWAY_MEM_LIMIT=4G
                                    and/or SPILLWAY_MEM_FRACTION=0.1
  --fake    self-test without a GPU: the CUDA C rows only, built against
            the driver API, on fakecuda (64M limit), no NVML
  --mock    --fake plus the framework rows, run on the stand-ins in
            tests/gpu/mock (their allocations go through spillway to
            fakecuda): checks the row scripts and the judging, not JAX
  --dry-run print the plan and exit

A row passes when every check passes: it ran; the limit it was told equals
the expected one (one 2 MiB granule of slack); it ran out of memory with the
framework's own error near that limit and never past it; real usage (NVML)
exceeded the limit by no more than the context overhead measured without
spillway plus --slack; the stats segment agrees. Pool-served and
pass-through bytes are reported, not judged (the pool is being finished).
"""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import nvsample  # noqa: E402
import swstats  # noqa: E402
from harness import GRANULE, GiB, MiB, fmt_bytes  # noqa: E402

ROWS = [  # id, label, framework, environment
    ("cudac-static", "CUDA C, nvcc -cudart static", "cudac", {}),
    ("cudac-shared", "CUDA C, nvcc -cudart shared", "cudac", {}),
    ("jax-default", "JAX default (BFC, preallocate)", "jax", {}),
    ("jax-noprealloc", "JAX PREALLOCATE=false", "jax", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}),
    ("jax-platform", "JAX ALLOCATOR=platform", "jax", {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}),
    ("jax-cuda_async", "JAX ALLOCATOR=cuda_async", "jax", {"XLA_PYTHON_CLIENT_ALLOCATOR": "cuda_async"}),
    ("torch-default", "PyTorch default (caching)", "torch", {}),
    ("torch-expandable", "PyTorch expandable_segments:True", "torch",
     {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ("torch-async", "PyTorch backend:cudaMallocAsync", "torch",
     {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
    ("cupy", "CuPy", "cupy", {}),
]
# Baselines: without spillway. JAX without preallocation (its default would
# take 75% of the card for nothing); what it holds is then its pool.
BASELINES = [("cudac", {}), ("jax", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}), ("torch", {}), ("cupy", {})]
LIMITS = {"4G": ("SPILLWAY_MEM_LIMIT", "4G"), "0.1": ("SPILLWAY_MEM_FRACTION", "0.1")}
FAKE_LIMITS = {"4G": ("SPILLWAY_MEM_LIMIT", "64M"), "0.1": ("SPILLWAY_MEM_FRACTION", "0.1")}
# Seconds per run. A row normally takes 5-20 s (framework import and init
# dominate); the limits only bound a hang. After a framework's run has timed
# out once, its later runs get NEED only: one hang must not eat the budget.
TIMEOUT = {"cudac": 40, "jax": 90, "torch": 75, "cupy": 60}
NEED = {"cudac": 10, "jax": 30, "torch": 25, "cupy": 20}  # useless with less time than this
DEFAULT_OVERHEAD = 1536 * MiB  # when the baseline of a framework is missing


class Ctx:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(a.build)
        self.out = os.path.abspath(a.out)
        os.makedirs(self.out, exist_ok=True)
        self.results = harness.Results(os.path.join(self.out, "results.jsonl"))
        self.log = harness.Log(os.path.join(self.out, "gpu-check.log"))
        self.budget = harness.Budget(a.deadline)
        self.stats_dir = tempfile.mkdtemp(prefix="swgpu-stats.")
        self.sampler = nvsample.Sampler(enabled=not a.fake).start()
        self.lib = os.path.join(self.build, "libspillway.so")
        self.hung = set()

    def cmd(self, fw, mode, cap):
        if fw == "cudac":
            return None  # per row: static or shared binary
        c = [harness.python(), os.path.join(HERE, "row_%s.py" % fw), "--mode", mode, "--cap", str(cap)]
        if fw == "jax" and mode == "oom":
            # XLA's BFC allocator waits up to 10 s for a free before each
            # out-of-memory answer (tsl AllocatorRetry) and nothing frees
            # here: one refusal (64M), not six down to 2M. The verdict's
            # tolerance is 256M.
            c += ["--min-chunk", "64M"]
        return c

    def cudac_bin(self, row_id):
        kind = "drv" if self.a.fake else ("rt-shared" if row_id.endswith("shared") else "rt-static")
        return os.path.join(self.build, "tests", "gpu", kind, "alloc_until_oom")

    def env(self, extra, spillway):
        env = harness.base_env(extra, preload=self.lib if spillway else None, stats_dir=self.stats_dir)
        if self.a.fake:
            env["LD_LIBRARY_PATH"] = os.path.join(self.build, "fakecuda")
            env["FAKECUDA_MEM"] = "256M"
        if self.a.mock:  # the framework rows on stand-ins allocating from fakecuda
            env["PYTHONPATH"] = os.path.join(HERE, "mock")
            env["MOCK_CUDA"] = "1"
        for kv in self.a.extra_env:
            k, _, v = kv.partition("=")
            env[k] = v
        return env


def run_one(ctx, label, fw, cmd, env, want):
    """Runs with the sampler watching; returns (run, nvml dict) or None when
    the budget cannot afford it."""
    if fw in ctx.hung:
        want = NEED[fw]
    timeout = ctx.budget.timeout(want, NEED[fw])
    if timeout is None:
        return None
    dev_base = ctx.sampler.device_used()

    def on_start(pid):
        ctx.sampler.watch(pid, dev_base)

    def on_hold(pid):
        if ctx.sampler.mode:
            time.sleep(0.25)  # NVML's per-process figure lags the allocation a little
            ctx.sampler.sample()
        seg, why = swstats.read_pid(pid, ctx.stats_dir)
        return {"seg": seg, "why": why}

    if ctx.a.dry_run:
        print("would run [%s]: %s  (timeout %ds)" % (label, " ".join(cmd), timeout))
        print("   env: " + " ".join("%s=%s" % (k, v) for k, v in sorted(env.items())
                                    if k.startswith(("SPILLWAY_", "XLA_", "PYTORCH_", "LD_", "FAKECUDA_"))))
        return None
    r = harness.run(cmd, env, timeout, ctx.log, on_hold=on_hold, on_start=on_start, label=label)
    if r.timed_out:
        ctx.hung.add(fw)
    return r, ctx.sampler.result(r.pid)


def baselines(ctx):
    for fw, extra in BASELINES:
        if fw != "cudac" and ctx.a.fake and not ctx.a.mock:
            continue
        if fw == "cudac":
            cmd = [ctx.cudac_bin("cudac-static"), "--hold", "--baseline"]
        else:
            cmd = ctx.cmd(fw, "baseline", 1 << 40)
        label = "baseline %s" % fw
        got = run_one(ctx, label, fw, cmd, ctx.env(extra, False), TIMEOUT[fw])
        if got is None:
            if not ctx.a.dry_run:
                ctx.results.add({"table": "baseline", "fw": fw, "status": "SKIP", "why": "time budget"})
            continue
        r, nv = got
        rec = {"table": "baseline", "fw": fw, "env": extra, "wall": round(r.wall, 1), "nvml": nv}
        if r.missing():  # not installed on this host: its rows are skipped too
            rec.update(status="SKIP", missing=r.missing(), why="no %s" % r.missing())
        elif not r.ok():
            rec.update(status="FAIL", why=r.why())
        else:
            res = r.result
            rec["result"] = res
            held = res.get("held") if isinstance(res.get("held"), int) else 0
            rec["held"] = held
            if fw == "cudac":
                rec["native_total"] = res.get("total")
            if nv["peak"] is not None:
                rec.update(status="pass", ctx_overhead=nv["peak"] - held)
            else:
                rec.update(status="pass" if ctx.a.fake else "FAIL", why="real usage: " + nv["how"])
        ctx.results.add(rec)
        print("RESULT table=baseline fw=%s status=%s overhead=%s held=%s%s" % (
            fw, rec["status"], fmt_bytes(rec.get("ctx_overhead")), fmt_bytes(rec.get("held")),
            " why=" + rec["why"].replace(" ", "_") if "why" in rec else ""), flush=True)


def known(ctx):
    """Native total and per-framework overheads from the baseline records."""
    total, over = None, {}
    for rec in ctx.results.load():
        if rec.get("table") == "baseline" and rec.get("status") == "pass":
            if rec.get("native_total"):
                total = rec["native_total"]
            if rec.get("ctx_overhead") is not None:
                over[rec["fw"]] = rec["ctx_overhead"]
    if total is None and ctx.a.native_total:
        total = ctx.a.native_total
    if total is None:
        total = ctx.sampler.total()  # NVML's figure; close to the driver's, not equal
    return total, over


def broken_natively(ctx):
    """Frameworks whose baseline could not run at all without spillway:
    fw -> the skipped check of their rows. Not installed: "skipped: no jax";
    an import error or a library the wheel lacks: their rows under spillway
    would only pay the import again and fail the same way."""
    broken = {}
    for rec in ctx.results.load():
        if rec.get("table") != "baseline":
            continue
        if rec.get("status") == "SKIP" and rec.get("missing"):
            broken[rec["fw"]] = ["framework", False, "skipped: no %s" % rec["missing"]]
        elif rec.get("status") == "FAIL" and "result" not in rec:
            broken[rec["fw"]] = ["baseline", False, "skipped: %s fails without spillway (%s)"
                                 % (rec["fw"], rec.get("why", "failed"))]
    return broken


def expected_limit(cfg, native_total, fake):
    var, val = (FAKE_LIMITS if fake else LIMITS)[cfg]
    if var == "SPILLWAY_MEM_LIMIT":
        return harness.size_bytes(val)
    return int(float(val) * native_total) if native_total else None


def int_field(res, k):
    """res[k] when the program printed an integer there, else None."""
    return res.get(k) if isinstance(res.get(k), int) else None


def judge_told(check, fw, res, limit, f):
    """1. The limit the program is told."""
    reported = f["reported"]
    ok = reported is not None and abs(reported - limit) <= GRANULE
    check("limit reported", ok, "%s total, expected %s" % (fmt_bytes(reported), fmt_bytes(limit)))
    if fw == "jax":
        bl = int_field(res, "bytes_limit")
        if bl is not None:  # JAX takes a fraction (0.75) of what the device reports
            check("bytes_limit", limit * 0.5 <= bl <= limit,
                  "memory_stats bytes_limit %s = %.2f x limit" % (fmt_bytes(bl), bl / limit))
        f["bytes_limit"] = bl
    if fw != "cudac":
        check("matmul", res.get("matmul_ok") == 1, "exact" if res.get("matmul_ok") == 1 else "wrong answer")


def judge_oom_cudac(check, res, limit, f):
    """2. Out of memory at the limit, never past it, the CUDA C row: it
    halves its blocks down to one granule, so it ends within a granule of
    what it was told is free."""
    reached = f["reached"]
    free0 = int_field(res, "free0") or 0
    gap = free0 - reached
    ok = res.get("oom") == 1 and res.get("capped") == 0 and 0 <= gap < GRANULE and reached <= limit
    check("stops at limit", ok, "reached %s, %s short of the free %s%s" % (
        fmt_bytes(reached), fmt_bytes(gap), fmt_bytes(free0), ", capped" if res.get("capped") else ""))
    check("data", res.get("data_ok") == 1, "every block reads back its tag" if res.get("data_ok") == 1
          else "a block read back the wrong tag")
    f["gap"] = gap


def judge_oom_framework(check, res, limit, f):
    """2. Out of memory near the limit, never past it, with the framework's
    own error: its allocator stops short by its own rounding."""
    reached = f["reached"]
    bl = f.get("bytes_limit")
    target = min(limit, bl) if bl else limit
    gap = target - reached
    tol = max(256 * MiB, target // 20)
    ok = (res.get("oom") == 1 and res.get("capped") == 0 and res.get("unexpected") == "none"
          and reached <= limit and gap <= tol)
    check("OOM near limit", ok, "%s after %s, %s short of %s (tolerance %s)%s%s" % (
        res.get("oom_kind"), fmt_bytes(reached), fmt_bytes(gap), fmt_bytes(target), fmt_bytes(tol),
        ", capped: limit not enforced" if res.get("capped") else "",
        ", unexpected " + str(res.get("unexpected")) if res.get("unexpected") not in (None, "none") else ""))
    f["gap"] = gap


def judge_real_usage(check, ctx, fw, nv, limit, overheads, f):
    """3. Real usage against the limit."""
    base = overheads.get(fw)
    allowance = (base if base is not None else DEFAULT_OVERHEAD) + ctx.a.slack * MiB
    f.update(nvml_peak=nv["peak"], nvml_how=nv["how"], ctx_baseline=base, allowance=allowance)
    if nv["peak"] is None:
        check("real usage", ctx.a.fake, "not measured (%s)" % ("fakecuda self-test" if ctx.a.fake else nv["how"]))
        return
    over = nv["peak"] - limit
    f["overhead"] = over
    check("real usage", over <= allowance, "peak %s = limit %+.0f MiB; allowed +%.0f MiB (%s)" % (
        fmt_bytes(nv["peak"]), over / MiB, allowance / MiB,
        "context %.0f MiB + slack" % (base / MiB) if base is not None else "no baseline: default"))


def judge_stats(check, r, limit, f):
    """4. The stats segment at the peak."""
    reached = f["reached"]
    hold = r.hold or {}
    seg = hold.get("seg")
    if not seg:
        check("stats", False, "no segment at the peak: %s" % hold.get("why", "the program never held"))
        return
    d = seg["devices"][0]
    lim, use = d.get("limit_bytes"), d.get("in_use_bytes")
    # Keys this layout lacks show as n/a (the pool's counters are new).
    pt = [v for k, v in d.items() if k.startswith("passthrough_")]
    passthrough = sum(pt) if pt else None
    pool = d.get("pool_bytes")
    served = None
    if pool is not None and use is not None:
        served = (use - (passthrough or 0)) if pool else 0
    f.update(stats_limit=lim, stats_in_use=use, stats_peak=d.get("peak_bytes"), pool_bytes=pool,
             passthrough=passthrough, spillway_ooms=d.get("ooms"), served=served,
             passthrough_by_reason={k[len("passthrough_"):]: v for k, v in d.items()
                                    if k.startswith("passthrough_") and v})
    ok = (lim is not None and abs(lim - limit) <= GRANULE and use is not None and use <= lim
          and use + GRANULE >= reached and d.get("underflows", 0) == 0)
    check("stats", ok, "limit %s, in use %s (program reached %s), underflows %s" % (
        fmt_bytes(lim), fmt_bytes(use), fmt_bytes(reached), d.get("underflows", "n/a")))


def judge(ctx, fw, row_id, r, nv, limit, overheads):
    """(checks, the record's fields) of one row's run."""
    checks = []

    def check(name, ok, detail):
        checks.append([name, bool(ok), detail])

    res = r.result or {}
    check("ran", r.ok(), r.why())
    if not r.ok():
        return checks, {}
    reported = int_field(res, "reported") if fw != "cudac" else int_field(res, "total")
    f = {"reported": reported, "reached": int_field(res, "reached") or 0, "limit": limit}
    if limit is None:
        check("limit known", False, "no native total to compute the fraction from")
        return checks, f
    judge_told(check, fw, res, limit, f)
    if fw == "cudac":
        judge_oom_cudac(check, res, limit, f)
    else:
        judge_oom_framework(check, res, limit, f)
    judge_real_usage(check, ctx, fw, nv, limit, overheads, f)
    judge_stats(check, r, limit, f)
    return checks, f


def limit_rows(ctx):
    native_total, overheads = known(ctx)
    broken = broken_natively(ctx)
    only = set(ctx.a.rows.split(",")) if ctx.a.rows else None
    for cfg in ctx.a.limits.split(","):
        var, val = (FAKE_LIMITS if ctx.a.fake else LIMITS)[cfg]
        limit = expected_limit(cfg, native_total, ctx.a.fake)
        for row_id, label, fw, extra in ROWS:
            if (only and row_id not in only) or (ctx.a.fake and not ctx.a.mock and fw != "cudac"):
                continue
            cap = (limit or 8 * GiB) + (GiB if not ctx.a.fake else 64 * MiB)
            if fw == "cudac":
                cmd = [ctx.cudac_bin(row_id), "--hold", "--cap", str(cap)]
            else:
                cmd = ctx.cmd(fw, "oom", cap)
            # These rows check the hard limit (issue 3): with spill on, the
            # allocations past it would succeed from pinned host memory.
            env = ctx.env(dict(extra, **{var: val, "SPILLWAY_SPILL": "0"}), True)
            name = "%s @ %s=%s" % (label, var, val)
            rec = {"table": "acceptance", "row": row_id, "label": label, "fw": fw, "cfg": "%s=%s" % (var, val),
                   "limit_cfg": cfg}
            if fw in broken and not ctx.a.dry_run:
                rec.update(status="SKIP", checks=[broken[fw]])
                got = None
            else:
                got = run_one(ctx, name, fw, cmd, env, TIMEOUT[fw])
            if rec.get("status") == "SKIP":
                pass
            elif got is None:
                if ctx.a.dry_run:
                    continue
                rec.update(status="SKIP", checks=[["budget", False, "skipped: time budget spent"]])
            elif got[0].missing():  # no baseline ran (--phase limit alone): found here
                broken[fw] = ["framework", False, "skipped: no %s" % got[0].missing()]
                rec.update(status="SKIP", checks=[broken[fw]])
            else:
                r, nv = got
                checks, fields = judge(ctx, fw, row_id, r, nv, limit, overheads)
                rec.update(fields)
                rec.update(status="pass" if all(c[1] for c in checks) else "FAIL", checks=checks,
                           wall=round(r.wall, 1), result=r.result)
            ctx.results.add(rec)
            failed = [c[0] for c in rec["checks"] if not c[1]]
            print("RESULT table=acceptance name=%s cfg=%s pass=%d limit=%s reached=%s overhead=%s failed=%s" % (
                row_id, rec["cfg"], rec["status"] == "pass", rec.get("limit"), rec.get("reached"),
                rec.get("overhead"), ",".join(failed) or "none"), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--out", default="build-gpu/gpu-out")
    ap.add_argument("--phase", choices=("baseline", "limit", "all"), default="all")
    ap.add_argument("--limits", default="4G,0.1")
    ap.add_argument("--rows", help="comma-separated row ids (default: all)")
    ap.add_argument("--deadline", type=float, help="absolute time.time() by which to be done")
    ap.add_argument("--slack", type=int, default=256, help="MiB allowed over the baseline context overhead")
    ap.add_argument("--native-total", type=int, help="device total without spillway, if no baseline ran")
    ap.add_argument("--extra-env", action="append", default=[], metavar="K=V",
                    help="added to every run (the self-test's negative control: SPILLWAY_DISABLE=1)")
    ap.add_argument("--fake", action="store_true")
    ap.add_argument("--mock", action="store_true",
                    help="with --fake: the framework rows too, on tests/gpu/mock's stand-ins")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    a.fake = a.fake or a.mock
    ctx = Ctx(a)
    try:
        if a.phase in ("baseline", "all"):
            baselines(ctx)
        if a.phase in ("limit", "all"):
            limit_rows(ctx)
    finally:
        ctx.sampler.stop()
        try:
            os.rmdir(ctx.stats_dir)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
