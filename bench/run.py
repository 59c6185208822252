#!/usr/bin/env python3
"""Runs every benchmark of issue 4 (and the stats cost of issue 5) natively
and under spillway, one run per mode, in one session, so that every ratio in
the tables comes from runs made minutes apart on the same device. One JSON
record per run in <out>/results.jsonl; tests/gpu/report.py turns them into
the tables (ratios are computed there). Ordered by importance: when the
--deadline comes near, the rest is recorded as skipped.

  run.py --build build-gpu --out DIR [--deadline T] [--only latency,random,...]
  --fake     the driver-API builds on fakecuda, small sizes (self-test)
  --dry-run  print the plan
"""
import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import harness  # noqa: E402

SPW_LIMIT = "8G"          # latency runs: room for 256 MiB blocks, quick to preallocate
RANDOM_LIMIT = "5G"       # random workload: live bytes capped at 3.5 GiB, below it
                          # with room for spillway rounding blocks up to pages
RANDOM_CAP = "3584M"


def plan(a, build):
    """[(group, run id, label, command, env, spillway?, timeout)]"""
    rt = "drv" if a.fake else "rt-static"
    rts = "drv" if a.fake else "rt-shared"
    b = lambda kind, prog: os.path.join(build, "bench", kind, prog)  # noqa: E731
    lat = ["--scale", "0.01", "--sizes", "256,64K,1M,16M"] if a.fake else []
    rnd = ["--ops", "500", "--max", "4M", "--cap", "64M"] if a.fake else ["--cap", RANDOM_CAP]
    lim = "192M" if a.fake else SPW_LIMIT
    thr = ["--threads", "1,2", "--pairs", "2000"] if a.fake else ["--pairs", "20000"]
    rlim = "192M" if a.fake else RANDOM_LIMIT
    py = harness.python()
    runs = [
        ("latency", "lat-native-sync", "cudaMalloc+cudaFree", [b(rt, "alloc_lat"), "--mode", "sync"] + lat, {}, False, 60),
        ("latency", "lat-native-async", "cudaMallocAsync+cudaFreeAsync", [b(rt, "alloc_lat"), "--mode", "async"] + lat,
         {}, False, 60),
        ("latency", "lat-spw-sync", "spillway (static runtime)", [b(rt, "alloc_lat"), "--mode", "sync"] + lat,
         {"SPILLWAY_MEM_LIMIT": lim}, True, 60),
        ("latency", "lat-spw-sync-shared", "spillway (shared runtime)", [b(rts, "alloc_lat"), "--mode", "sync"] + lat,
         {"SPILLWAY_MEM_LIMIT": lim}, True, 60),
        ("latency", "lat-spw-async", "spillway, async calls", [b(rt, "alloc_lat"), "--mode", "async"] + lat,
         {"SPILLWAY_MEM_LIMIT": lim}, True, 60),
        ("latency", "lat-spw-nostats", "spillway, SPILLWAY_STATS=0", [b(rt, "alloc_lat"), "--mode", "sync"] + lat,
         {"SPILLWAY_MEM_LIMIT": lim, "SPILLWAY_STATS": "0"}, True, 60),
        ("random", "rnd-native-sync", "cudaMalloc+cudaFree", [b(rt, "alloc_random"), "--mode", "sync"] + rnd, {}, False, 90),
        ("random", "rnd-native-async", "cudaMallocAsync", [b(rt, "alloc_random"), "--mode", "async"] + rnd, {}, False, 90),
        ("random", "rnd-spw-sync", "spillway", [b(rt, "alloc_random"), "--mode", "sync"] + rnd,
         {"SPILLWAY_MEM_LIMIT": rlim}, True, 90),
        ("random", "rnd-spw-async", "spillway, async calls", [b(rt, "alloc_random"), "--mode", "async"] + rnd,
         {"SPILLWAY_MEM_LIMIT": rlim}, True, 90),
        ("random", "rnd-spw-eff", "spillway, PREALLOCATE=0, pool sampled",
         [b(rt, "alloc_random"), "--mode", "sync", "--poll-stats"] + rnd,
         {"SPILLWAY_MEM_LIMIT": rlim, "SPILLWAY_PREALLOCATE": "0"}, True, 90),
        ("random", "rnd-spw-verify", "spillway, data verified", [b(rt, "alloc_random"), "--mode", "sync", "--verify"] + rnd,
         {"SPILLWAY_MEM_LIMIT": rlim}, True, 90),
        ("random", "rnd-spw-verify-async", "spillway async, data verified",
         [b(rt, "alloc_random"), "--mode", "async", "--verify"] + rnd, {"SPILLWAY_MEM_LIMIT": rlim}, True, 90),
        # Issue 14 item 6: the hot path from 1 to 16 threads (the GPU host has
        # 16 cores), each thread its own pairs; ratios per thread count.
        ("threads", "thr-native", "cudaMalloc+cudaFree, T threads", [b(rt, "alloc_threads")] + thr, {}, False, 90),
        ("threads", "thr-spw", "spillway, T threads", [b(rt, "alloc_threads")] + thr,
         {"SPILLWAY_MEM_LIMIT": lim}, True, 60),
        # ... and T threads submitting work (async memsets, each on its own
        # stream and buffer): the work gate and the heat on every submission.
        ("threads", "sub-native", "cudaMemsetAsync, T threads", [b(rt, "alloc_threads"), "--op", "submit"] + thr,
         {}, False, 90),
        ("threads", "sub-spw", "spillway, T threads submitting", [b(rt, "alloc_threads"), "--op", "submit"] + thr,
         {"SPILLWAY_MEM_LIMIT": lim}, True, 60),
        ("prealloc", "pre-native", "native, one cudaMalloc of 75%", [b(rt, "prealloc"), "--bulk", "0.75"], {}, False, 60),
        ("prealloc", "pre-spw-on", "spillway, PREALLOCATE=1 (75%)", [b(rt, "prealloc")],
         {"SPILLWAY_MEM_FRACTION": "0.75", "SPILLWAY_PREALLOCATE": "1"}, True, 60),
        ("prealloc", "pre-spw-off", "spillway, PREALLOCATE=0", [b(rt, "prealloc")],
         {"SPILLWAY_MEM_FRACTION": "0.75", "SPILLWAY_PREALLOCATE": "0"}, True, 60),
    ]
    if not a.fake:
        jax, torch = [py, os.path.join(HERE, "jax_step.py")], [py, os.path.join(HERE, "torch_step.py")]
        runs += [
            ("step", "jax-native-default", "JAX default, no spillway", jax, {}, False, 90),
            ("step", "jax-spw-platform", "JAX platform, spillway", jax,
             {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform", "SPILLWAY_MEM_LIMIT": "16G"}, True, 90),
            ("step", "torch-native", "PyTorch caching, no spillway", torch, {}, False, 90),
            ("step", "torch-spw", "PyTorch caching, spillway", torch, {"SPILLWAY_MEM_LIMIT": "16G"}, True, 90),
            ("step", "jax-native-platform", "JAX platform, no spillway", jax,
             {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}, False, 90),
            ("step", "jax-spw-default", "JAX default, spillway", jax, {"SPILLWAY_MEM_LIMIT": "16G"}, True, 90),
        ]
    only = set(a.only.split(",")) if a.only else None
    return [r for r in runs if not only or r[0] in only]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="build/bench-out")
    ap.add_argument("--deadline", type=float)
    ap.add_argument("--only", help="comma-separated groups: latency, random, threads, prealloc, step")
    ap.add_argument("--fake", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    build, out = os.path.abspath(a.build), os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    log = harness.Log(os.path.join(out, "gpu-check.log"))
    results = harness.Results(os.path.join(out, "results.jsonl"))
    budget = harness.Budget(a.deadline)
    lib = os.path.join(build, "libspillway.so")
    # A private stats directory: the benchmarks read their own segment
    # (pool_bytes) and must not meet another process's.
    stats_dir = tempfile.mkdtemp(prefix="swbench-stats.")
    try:
        run_all(a, build, lib, stats_dir, log, results, budget)
    finally:
        shutil.rmtree(stats_dir, ignore_errors=True)
    return 0


def run_all(a, build, lib, stats_dir, log, results, budget):
    for group, rid, label, cmd, extra, spw, want in plan(a, build):
        env = harness.base_env(extra, preload=lib if spw else None, stats_dir=stats_dir)
        if a.fake:
            env["LD_LIBRARY_PATH"] = os.path.join(build, "fakecuda")
            # fakecuda returns async frees to the device only as the stream
            # drains, so the native async runs need room to spare.
            env["FAKECUDA_MEM"] = "1G"
        if a.dry_run:
            print("would run [%s]: %s %s" % (rid, " ".join("%s=%s" % kv for kv in sorted(extra.items())), " ".join(cmd)))
            continue
        timeout = budget.timeout(want, 8)
        rec = {"table": "bench", "group": group, "run": rid, "label": label, "env": extra, "spillway": spw}
        if timeout is None:
            rec.update(status="SKIP", why="time budget")
        else:
            r = harness.run(cmd, env, timeout, log, label="bench " + rid)
            rec["results"] = [harness.parse_result(l) for l in r.stdout if l.startswith("RESULT")]
            rec.update(status="ok" if r.ok() else "FAIL", why=r.why(), wall=round(r.wall, 2))
            if r.missing():  # a framework this host lacks: skipped, not failed
                rec.update(status="SKIP", why="no %s" % r.missing())
        results.add(rec)
        print("RESULT table=bench run=%s status=%s wall=%s%s" % (
            rid, rec["status"], rec.get("wall"), "" if rec["status"] == "ok" else " why=" + rec["why"].replace(" ", "_")),
            flush=True)


if __name__ == "__main__":
    sys.exit(main())
