#!/usr/bin/env python3
"""Markdown tables for the README from the records acceptance.py, pair.py,
features.py, oversub.py and bench/run.py append to results.jsonl. Ratios are computed
here, from runs of the same session; a missing run shows as "not run", a
skipped one as "skipped".

  report.py RESULTS.jsonl [--section acceptance|bench|all]
  report.py --self-test     render a synthetic file (no GPU needed)
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

MiB, GiB = 1 << 20, 1 << 30


def b(v):
    if not isinstance(v, (int, float)):
        return "n/a"
    neg, v = v < 0, abs(v)
    s = "%.2f GiB" % (v / GiB) if v >= GiB else "%.0f MiB" % (v / MiB) if v >= MiB else "%d B" % v
    return "-" + s if neg else s


def mib(v):
    return "%+.0f MiB" % (v / MiB) if isinstance(v, (int, float)) else "n/a"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def skipped(rec):
    """'skipped: why' of a skipped record: its first failed check's detail
    ("skipped: no jax", "skipped: time budget spent") or its why."""
    why = rec.get("why") or next((c[2] for c in rec.get("checks", []) if not c[1]), "")
    why = why[len("skipped"):].lstrip(": ") if why.startswith("skipped") else why
    return "skipped: %s" % (why or "time budget")


def failed(rec):
    bad = [c for c in rec.get("checks", []) if not c[1]]
    if rec.get("status") == "SKIP":
        return skipped(rec)
    if not bad:
        return "**pass**"
    return "**FAIL**: " + "; ".join("%s (%s)" % (c[0], c[2]) for c in bad)


def baseline_section(recs):
    rows = []
    for r in recs:
        if r.get("table") != "baseline":
            continue
        nv = r.get("nvml") or {}
        rows.append([r["fw"], b(nv.get("peak")), b(r.get("held")), b(r.get("ctx_overhead")),
                     r["status"] + (" (%s)" % r["why"] if r.get("why") else "")])
    if not rows:
        return ""
    return ("### Context overhead without spillway\n\nReal usage (NVML, at the hold) minus what the framework "
            "itself holds from the driver. The acceptance rows allow this much over the limit (plus slack).\n\n"
            + table(["framework", "real peak", "held by the framework", "context overhead", "status"], rows))


def acceptance_section(recs):
    rows = []
    for r in recs:
        if r.get("table") != "acceptance":
            continue
        if r.get("status") == "SKIP":
            rows.append([r["label"], r["cfg"]] + ["–"] * 5 + [failed(r)])
            continue
        told = b(r.get("reported"))
        if r.get("fw") == "jax" and isinstance(r.get("bytes_limit"), int):
            told += " (bytes_limit %s)" % b(r["bytes_limit"])
        reached = "%s (%s short)" % (b(r.get("reached")), b(r.get("gap"))) if "gap" in r else b(r.get("reached"))
        over = "%s (allowed %s)" % (mib(r.get("overhead")), mib(r.get("allowance"))) \
            if isinstance(r.get("overhead"), int) else "n/a"
        pool = "%s / %s / %s" % (b(r.get("pool_bytes")), b(r.get("served")), b(r.get("passthrough"))) \
            if "pool_bytes" in r else "n/a"
        rows.append([r["label"], r["cfg"], b(r.get("limit")), told, reached, over, pool, failed(r)])
    if not rows:
        return ""
    return ("### Limits (issue 3) and pool (issue 4)\n\n"
            + table(["program", "setting", "limit", "limit the program is told", "allocated at OOM (short of target)",
                     "real peak − limit", "pool held / served / pass-through", "result"], rows))


def pair_section(recs, outdir):
    recs = [r for r in recs if r.get("table") == "pair"]
    if not recs:
        return ""
    r = recs[-1]
    if r.get("status") == "SKIP":
        return "### Two processes at once (issue 5)\n\n%s\n" % skipped(r)
    rows = []
    for p in r.get("procs", []):
        rows.append([p["name"], p.get("pid"), b(p.get("limit")), b(p.get("seg_limit")), b(p.get("in_use")),
                     "%s %s" % (p.get("fw_figure"), b(p.get("fw_value"))), b(p.get("fw_in_use")),
                     b(p.get("nvml_used"))])
    text = ("### Two processes at once (issue 5)\n\nJAX (default allocator) and PyTorch (caching allocator), each "
            "through `spillway run --limit`, holding memory at the same time. spillway's in-use is what each holds "
            "from the driver; the framework figure compared with it is JAX's `pool_bytes` (BFC arena) or "
            "PyTorch's `memory_reserved()`; arrays/tensors in use are shown beside, and what the driver itself "
            "says the process holds on the device (NVML, through `spillway-top --json`: context and pool "
            "included).\n\n"
            + table(["process", "pid", "--limit", "segment limit", "spillway in use", "framework holds",
                     "arrays/tensors in use", "driver (NVML)"], rows) + "\nResult: " + failed(r) + "\n")
    once = os.path.join(outdir, r.get("once_file", "spillway-top-once.txt"))
    if os.path.exists(once):
        with open(once) as f:
            text += "\n`spillway-top --once` while both ran:\n\n```\n" + f.read().rstrip() + "\n```\n"
    return text


def feature_time(r):
    """'replay 4.10 / 15.20 ms (x3.71)' from a feature record's timings."""
    n, s = r.get("native_ms"), r.get("spillway_ms")
    if "time_key" not in r:
        return "–"  # a row without a native run
    if not isinstance(n, (int, float)) or not isinstance(s, (int, float)):
        return "n/a"
    what = {"replay_ms": "replay", "step_ms": "step", "gemm_ms": "GEMM after the squeeze"}.get(r.get("time_key"), "")
    return "%s %.2f / %.2f ms (%s)" % (what, n, s, ratio(s, n, "×%.2f"))


def feature_memory(r):
    """Spill for the graph and JAX rows, pool against pass-through for the
    expandable-segments row; the while-loop row adds the conditional nodes
    spillway held records of at the end, the TMA row the descriptors it
    recorded and the weight's pages on the device after the squeeze's GEMM."""
    pt = ", ".join("%s %s" % (k, b(v)) for k, v in sorted((r.get("passthrough") or {}).items()) if v) or "none"
    if "served" in r:
        return "pool served %s of torch's %s reserved; pass-through: %s" % (b(r["served"]), b(r.get("reserved")), pt)
    cond = "; conditional nodes recorded: %s" % r["conditionals"] if "conditionals" in r else ""
    if "tensor_maps" in r:
        cond += "; TMA descriptors recorded: %s (cc %s); W on the device %s / %s after the GEMM" % (
            r["tensor_maps"], r.get("cc", "n/a"), b(r.get("w_resident_after")), b(r.get("w_bytes")))
    if "spill_bytes" in r:
        return "%s spilled in %s events, %s on the host at the end; pass-through: %s%s" % (
            b(r.get("spill_bytes")), r.get("spill_events", "n/a"), b(r.get("spilled_bytes")), pt, cond)
    return "n/a" + cond


def feature_section(recs):
    rows, flags = [], []
    for r in recs:
        if r.get("table") != "feature":
            continue
        if r.get("status") == "SKIP":
            rows.append([r["label"], r["cfg"], "–", "–", "–", failed(r)])
            continue
        rows.append([r["label"], r["cfg"], feature_time(r), r.get("compare_detail", "–"), feature_memory(r),
                     failed(r)])
        if (r.get("env") or {}).get("XLA_FLAGS"):
            flags.append("`%s`: %s" % (r["label"], ", ".join("`%s=%s`" % kv for kv in sorted(r["env"].items()))))
    if not rows:
        return ""
    return ("### Features frameworks use, under spill (issue 12)\n\nThe CUDA-graph, command-buffer and "
            "while-loop rows run "
            "under a spillway limit below their working set (spill must happen) and are compared with the same "
            "program run natively in its own process: loss of each checked step and per-parameter column sums, "
            "bitwise or within 1e-5 (said which); time is native / spillway per replay or step (not judged). "
            "The while-loop row must also leave spillway holding a record of XLA's WHILE conditional node. "
            "The TMA row (a bf16 GEMM, cuBLASLt's descriptors) must see spillway record the GEMM's TMA "
            "descriptors (compute capability 9.0 and up) and, after a squeeze sent the weight to the host, "
            "the next GEMM fill it back, its product bit for bit the native run's. "
            "The expandable-segments row stays within its limit: its memory must come from the pool.\n\n"
            + table(["program", "setting", "time native / spillway", "results vs native", "memory", "result"], rows)
            + "".join("\nEnvironment of %s\n" % f for f in flags))


def oversub_section(recs):
    """Issue 13: the seed's MLP under SPILLWAY_OVERSUBSCRIBE."""
    rows, envs = [], []
    for r in recs:
        if r.get("table") != "oversub":
            continue
        if r.get("status") == "SKIP":
            rows.append([r["label"], r["cfg"], failed(r)] + ["–"] * 5)
            continue
        n, s = r.get("native_ms"), r.get("spillway_ms")
        t = "%.1f / %.1f" % (n, s) if isinstance(n, (int, float)) and isinstance(s, (int, float)) else "n/a"
        per = r.get("moved_per_step")
        moved = ("%s (all steps: %s)" % (b(per), b(r.get("moved_all_steps"))) if per is not None
                 else b(r.get("moved_all_steps")))
        dev = "%s (limit %s, %s)" % (b(r.get("device_peak")), b(r.get("limit")), r.get("device_how", "n/a"))
        rows.append([r["label"], r["cfg"], failed(r), t, ratio(s, n, "×%.2f") if n and s else "n/a", moved, dev,
                     r.get("loss_detail", "–")])
        if r.get("env"):
            envs.append("`%s`: %s" % (r["row"], ", ".join("`%s=%s`" % kv for kv in sorted(r["env"].items()))))
    if not rows:
        return ""
    return ("### Oversubscription: the seed's MLP past the device's memory (issue 13)\n\n"
            "bench/seed_mlp_jax.py and bench/seed_mlp_torch.py (4 x 7168x7168 f32, Adam after global-norm "
            "clipping), unmodified, each against one native run of its framework: every step's loss within 1e-5 "
            "relative, the program told F x the limit, really oversubscribed (in use above the limit, bytes on "
            "the host), real device usage within the limit plus the context overhead. Step time over native is "
            "reported, not judged: the goal is ≤ ×%.0f; the seed's explicit offload by hand took ×%.1f. Moved per "
            "step: spill + fill bytes over the steps after warm-up.\n\n" % (2.0, 14.8)
            + table(["program", "setting", "result", "step ms native / spillway", "ratio", "moved per step",
                     "device peak", "loss vs native"], rows)
            + "".join("\nEnvironment of %s\n" % e for e in envs))


def bench_runs(recs):
    runs = {}
    for r in recs:
        if r.get("table") == "bench":
            runs[r["run"]] = r
    return runs


def res(runs, rid, **match):
    """The first RESULT of run rid whose fields match; None if absent."""
    r = runs.get(rid)
    if not r or r.get("status") != "ok":
        return None
    for x in r.get("results", []):
        if all(x.get(k) == v for k, v in match.items()):
            return x
    return None


def ratio(num, den, fmt="×%.1f"):
    if not isinstance(num, (int, float)) or not isinstance(den, (int, float)) or den == 0:
        return "n/a"
    return fmt % (num / den)


def us(ns):
    return "%.2f" % (ns / 1000.0) if isinstance(ns, (int, float)) else "n/a"


def state(runs, rid):
    r = runs.get(rid)
    if r and r["status"] == "SKIP":
        return "skipped (%s)" % r.get("why", "time budget")
    return "not run" if not r else r["status"]


def threads_table(runs, native, spw, title, what):
    """One thread-scaling table: operations per second from T threads at
    once, natively and under spillway, and each one's efficiency (rate at T
    over T x the one-thread rate: 1.00 means threads do not slow each
    other)."""
    counts = []
    for rid in (native, spw):
        for r in (runs.get(rid) or {}).get("results", []):
            if r.get("threads") is not None and r.get("threads") not in counts:
                counts.append(r.get("threads"))
    if not counts:
        return "" if native not in runs else "### %s\n\nnot run (%s)\n" % (title, state(runs, native))
    rows = []
    for t in counts:
        n, s = res(runs, native, threads=t) or {}, res(runs, spw, threads=t) or {}
        rate = lambda x: "%.0f k" % (x / 1000.0) if isinstance(x, (int, float)) else "n/a"  # noqa: E731
        eff = lambda x: "%.2f" % x if isinstance(x, (int, float)) else "n/a"  # noqa: E731
        rows.append([str(t), rate(n.get("pairs_per_s")), eff(n.get("efficiency")), rate(s.get("pairs_per_s")),
                     eff(s.get("efficiency")), ratio(s.get("pairs_per_s"), n.get("pairs_per_s"))])
    cores = next((r.get("cores") for r in (runs.get(spw) or {}).get("results", [])), "?")
    return ("### %s (%s cores)\n\n%s per second over all threads; efficiency = rate at T / (T x rate at 1). "
            "Goal: spillway's efficiency at 8 threads close to 1.\n\n" % (title, cores, what)
            + table(["threads", "native /s", "native eff.", "spillway /s", "spillway eff.", "spillway vs native"],
                    rows))


def threads_section(runs):
    """Issue 14 item 6: the hot path from many threads."""
    parts = [threads_table(runs, "thr-native", "thr-spw", "Alloc+free pairs from many threads (64 KiB)",
                           "Pairs"),
             threads_table(runs, "sub-native", "sub-spw",
                           "Submissions from many threads (256-byte async memsets, a stream each)", "Submissions")]
    return "\n".join(p for p in parts if p)


def latency_section(runs):
    sizes = []
    for r in runs.get("lat-native-sync", {}).get("results", []) or runs.get("lat-spw-sync", {}).get("results", []):
        # A failed run's row (an error, no size) leaves the table to the others.
        if r.get("size") is not None and r.get("size") not in sizes:
            sizes.append(r.get("size"))
    if not sizes:
        return "### Alloc+free pair latency\n\nnot run (%s)\n" % state(runs, "lat-native-sync")
    names = {256: "256 B", 65536: "64 KiB", 1 << 20: "1 MiB", 16 << 20: "16 MiB", 256 << 20: "256 MiB"}
    rows = []
    for s in sizes:
        m = {rid: (res(runs, rid, size=s) or {}).get("median_ns") for rid in (
            "lat-native-sync", "lat-native-async", "lat-spw-sync", "lat-spw-sync-shared", "lat-spw-async",
            "lat-spw-nostats")}
        rows.append([names.get(s, "%d B" % s), us(m["lat-native-sync"]), us(m["lat-native-async"]),
                     us(m["lat-spw-sync"]), us(m["lat-spw-sync-shared"]), us(m["lat-spw-async"]),
                     ratio(m["lat-native-sync"], m["lat-spw-sync"]), ratio(m["lat-native-async"], m["lat-spw-sync"]),
                     ratio(m["lat-spw-sync"], m["lat-spw-nostats"], "%.2f")])
    return ("### Alloc+free pair latency (median µs per pair)\n\nTargets: ≥ ×50 vs cudaMalloc at 16 MiB and above; "
            "≥ ×1 vs cudaMallocAsync at every size (aim ×2). Stats cost: spillway time with stats on / off "
            "(1.00 = free).\n\n"
            + table(["size", "cudaMalloc+Free", "cudaMallocAsync+FreeAsync", "spillway", "spillway (shared rt)",
                     "spillway async", "spillway vs cudaMalloc", "spillway vs async", "stats on/off"], rows))


def random_section(runs):
    t = {rid: (res(runs, rid) or {}).get("total_ns") for rid in (
        "rnd-native-sync", "rnd-native-async", "rnd-spw-sync", "rnd-spw-async")}
    any_run = res(runs, "rnd-native-sync") or res(runs, "rnd-spw-sync") or {}
    ops, cap = any_run.get("ops"), any_run.get("cap")
    rows = []
    for rid, label in (("rnd-native-sync", "cudaMalloc/cudaFree"), ("rnd-native-async", "cudaMallocAsync/FreeAsync"),
                       ("rnd-spw-sync", "spillway (cudaMalloc/cudaFree)"), ("rnd-spw-async", "spillway (async calls)")):
        v = t[rid]
        rows.append([label, "%.1f" % (v / 1e6) if v else state(runs, rid),
                     "%.2f" % (v / 1e3 / ops) if v and ops else "n/a",
                     ratio(v, t["rnd-spw-sync"], "%.2f") if v else "n/a"])
    ver = []
    for rid in ("rnd-spw-verify", "rnd-spw-verify-async"):
        x = res(runs, rid)
        ver.append("%s: %s" % (rid.replace("rnd-spw-", ""), "%s, %s errors" % (x.get("verify"), x.get("errors"))
                                if x else state(runs, rid)))
    eff = res(runs, "rnd-spw-eff")
    if eff and isinstance(eff.get("peak_pool"), int) and eff["peak_pool"] > 0:
        e = "%.3f (peak requested %s / peak pool held %s; target ≥ 0.9)" % (
            eff["peak_requested"] / eff["peak_pool"], b(eff["peak_requested"]), b(eff["peak_pool"]))
    elif eff:
        e = "n/a (pool_bytes stayed 0: allocations not served from the pool)"
    else:
        e = state(runs, "rnd-spw-eff")
    return ("### Random allocations (%s operations, sizes uniform ≤ 64 MiB, 73%% allocate, live bytes capped at %s "
            "under a 5 GiB spillway limit, seed 42)\n\n" % (ops or "10,000", b(cap) if cap else "3.50 GiB")
            + table(["calls", "total ms", "µs per op", "time / spillway's"], rows)
            + "\nData verified under spillway (%s). Pool efficiency (SPILLWAY_PREALLOCATE=0): %s.\n" % (
                "; ".join(ver), e))


def prealloc_section(runs):
    n, on, off = res(runs, "pre-native"), res(runs, "pre-spw-on"), res(runs, "pre-spw-off")
    rows = []
    for rid, x, label in (("pre-native", n, "native"), ("pre-spw-on", on, "spillway, PREALLOCATE=1"),
                          ("pre-spw-off", off, "spillway, PREALLOCATE=0")):
        rows.append([label, "%.1f" % (x["first_ns"] / 1e6) if x else state(runs, rid),
                     b(x.get("pool_bytes")) if x else "n/a",
                     "%.2f" % runs[rid]["wall"] if x and "wall" in runs.get(rid, {}) else "n/a"])
    cost = on["first_ns"] - off["first_ns"] if on and off else None
    bulk = n.get("bulk_ns") if n else None
    line = "Preallocation cost (PREALLOCATE=1 − 0, to first allocation): %s ms (target ≤ 1000 ms, issue 10); " % (
        "%.0f" % (cost / 1e6) if cost is not None else "n/a")
    line += "one native cudaMalloc of the same 75%%: %s ms; ratio %s.\n" % (
        "%.1f" % (bulk / 1e6) if bulk else "n/a", ratio(cost, bulk, "×%.2f"))
    return ("### Time to preallocate 75% of the device\n\n"
            + table(["process", "main() to first allocation (ms)", "pool held then", "process wall (s)"], rows)
            + "\n" + line)


def step_section(runs):
    pairs = [("JAX platform + spillway vs JAX default native", "jax-spw-platform", "jax-native-default"),
             ("PyTorch caching + spillway vs native", "torch-spw", "torch-native"),
             ("JAX default + spillway vs native", "jax-spw-default", "jax-native-default"),
             ("JAX platform + spillway vs platform native", "jax-spw-platform", "jax-native-platform")]
    rows = []
    for label, s, n in pairs:
        xs, xn = res(runs, s), res(runs, n)
        rows.append([label, "%.1f" % xn["step_us"] if xn else state(runs, n),
                     "%.1f" % xs["step_us"] if xs else state(runs, s),
                     ratio(xs.get("step_us") if xs else None, xn.get("step_us") if xn else None, "%.3f")])
    return ("### Training step (MLP 1024-4096×3-1024, batch 512; median of 10 blocks of 20 steps)\n\n"
            "Ratio = spillway step time / native (target ≤ 1.02, issue 10).\n\n"
            + table(["comparison", "native µs/step", "spillway µs/step", "ratio"], rows))


def render(path, section="all"):
    with open(path) as f:
        recs = harness.load_records(f)  # a line cut short by a killed run is left out
    outdir = os.path.dirname(os.path.abspath(path))
    parts = []
    if section in ("acceptance", "all"):
        parts += [baseline_section(recs), acceptance_section(recs), pair_section(recs, outdir),
                  feature_section(recs), oversub_section(recs)]
    if section in ("bench", "all"):
        runs = bench_runs(recs)
        if runs:
            parts += ["## Benchmarks\n", latency_section(runs), random_section(runs), threads_section(runs),
                      prealloc_section(runs), step_section(runs)]
    return "\n".join(p for p in parts if p)


def self_test():
    recs = [
        {"table": "baseline", "fw": "cudac", "status": "pass", "held": 64 * MiB, "ctx_overhead": 500 * MiB,
         "nvml": {"peak": 564 * MiB}},
        {"table": "acceptance", "label": "CUDA C", "fw": "cudac", "cfg": "SPILLWAY_MEM_LIMIT=4G", "limit": 4 * GiB,
         "reported": 4 * GiB, "reached": 4 * GiB, "gap": 0, "overhead": 500 * MiB, "allowance": 756 * MiB,
         "pool_bytes": 4 * GiB, "served": 4 * GiB, "passthrough": 0, "status": "pass",
         "checks": [["ran", True, "ok"]]},
        {"table": "acceptance", "label": "JAX", "fw": "jax", "cfg": "SPILLWAY_MEM_LIMIT=4G", "limit": 4 * GiB,
         "reported": 80 * GiB, "bytes_limit": 60 * GiB, "status": "FAIL",
         "checks": [["limit reported", False, "80 GiB total"]]},
        {"table": "acceptance", "label": "CuPy", "fw": "cupy", "cfg": "SPILLWAY_MEM_FRACTION=0.1", "status": "SKIP",
         "checks": [["budget", False, "skipped"]]},
        {"table": "acceptance", "label": "JAX platform", "fw": "jax", "cfg": "SPILLWAY_MEM_LIMIT=4G", "status": "SKIP",
         "checks": [["framework", False, "skipped: no jax"]]},
        {"table": "baseline", "fw": "jax", "status": "SKIP", "missing": "jax", "why": "no jax"},
        {"table": "feature", "label": "PyTorch graph", "cfg": "SPILLWAY_MEM_LIMIT=256M", "status": "pass",
         "native_ms": 4.0, "spillway_ms": 10.0, "time_key": "replay_ms", "compare_detail": "bitwise equal (9 values)",
         "spill_bytes": 512 * MiB, "spill_events": 4, "spilled_bytes": 256 * MiB, "checks": [["ran", True, "ok"]]},
        {"table": "feature", "label": "PyTorch expandable", "cfg": "SPILLWAY_MEM_LIMIT=2G", "status": "FAIL",
         "served": 0, "reserved": GiB, "passthrough": {"ipc": GiB, "other": 0},
         "checks": [["pooled", False, "pool served 0 B"]]},
        {"table": "oversub", "row": "jax-seed-default", "label": "JAX seed MLP, default allocator",
         "cfg": "SPILLWAY_MEM_LIMIT=3G SPILLWAY_OVERSUBSCRIBE=2", "status": "pass", "native_ms": 25.6,
         "spillway_ms": 38.4, "moved_per_step": 64 * MiB, "moved_all_steps": 300 * MiB, "device_peak": 3 * GiB,
         "limit": 3 * GiB, "device_how": "nvml (per process)", "loss_detail": "6 steps bitwise equal",
         "env": {"XLA_FLAGS": "--xla_gpu_autotune_level=0"}, "checks": [["ran (spillway)", True, "ok"]]},
        {"table": "oversub", "row": "torch-mlp-2", "label": "PyTorch seed MLP", "cfg": "SPILLWAY_MEM_LIMIT=3G",
         "status": "FAIL", "checks": [["loss", False, "step 3 off native"]]},
        {"table": "bench", "run": "lat-native-sync", "status": "ok", "results": [
            {"size": 16 << 20, "median_ns": 100000}, {"error": "cuMemAlloc", "code": 2}]},
        {"table": "bench", "run": "lat-spw-sync", "status": "ok", "results": [{"size": 16 << 20, "median_ns": 1000}]},
        {"table": "bench", "run": "rnd-spw-eff", "status": "ok", "results": [
            {"peak_requested": 3 * GiB, "peak_pool": 3 * GiB + 100 * MiB, "ops": 10000}]},
        {"table": "bench", "run": "pre-spw-on", "status": "ok", "wall": 1.5,
         "results": [{"first_ns": 1200000000, "pool_bytes": 60 * GiB}]},
        {"table": "bench", "run": "torch-native", "status": "SKIP"},
        {"table": "bench", "run": "sub-native", "status": "ok", "results": [
            {"threads": 1, "cores": 16, "pairs_per_s": 400000, "efficiency": 1.0},
            {"threads": 8, "cores": 16, "pairs_per_s": 3000000, "efficiency": 0.94}]},
        {"table": "bench", "run": "sub-spw", "status": "ok", "results": [
            {"threads": 1, "cores": 16, "pairs_per_s": 380000, "efficiency": 1.0},
            {"threads": 8, "cores": 16, "pairs_per_s": 2800000, "efficiency": 0.92}]},
    ]
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "results.jsonl")
        with open(p, "w") as f:
            f.write("\n".join(json.dumps(r) for r in recs) + "\n")
            f.write(json.dumps({"table": "acceptance", "label": "cut short"})[:30])  # a run killed mid-line
        text = render(p)
    musts = ["| CUDA C | SPILLWAY_MEM_LIMIT=4G | 4.00 GiB |", "**FAIL**: limit reported", "| skipped: time budget |",
             "| JAX platform | SPILLWAY_MEM_LIMIT=4G | – | – | – | – | – | skipped: no jax |", "| jax | n/a | n/a | n/a | SKIP (no jax) |",
             "×100.0", "0.968", "not run", "skipped", "replay 4.00 / 10.00 ms (×2.50)",
             "512 MiB spilled in 4 events", "pass-through: ipc 1.00 GiB", "**FAIL**: pooled",
             "### Oversubscription", "| 25.6 / 38.4 | ×1.50 | 64 MiB (all steps: 300 MiB) |",
             "**FAIL**: loss (step 3 off native)", "### Submissions from many threads",
             "| 8 | 3000 k | 0.94 | 2800 k | 0.92 | ×0.9 |", "`jax-seed-default`: `XLA_FLAGS=--xla_gpu_autotune_level=0`"]
    missing = [m for m in musts if m not in text]
    print(text)
    if missing:
        print("report self-test: missing %s" % missing, file=sys.stderr)
        return 1
    print("report self-test: ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="?")
    ap.add_argument("--section", choices=("acceptance", "bench", "all"), default="all")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.results:
        ap.error("results file needed")
    print(render(a.results, a.section))
    return 0


if __name__ == "__main__":
    sys.exit(main())
