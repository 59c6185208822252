#!/usr/bin/env python3
"""Issue 5 acceptance: a JAX process and a PyTorch process at once, each
under its own limit through `spillway run`, both shown by `spillway-top
--once` while they hold memory, with in-use figures that match what the
frameworks report. Saves the --once output (for the README) and --json in
<out>/, one JSON record in <out>/results.jsonl.

Matching: spillway counts what a process holds from the driver, so its
in-use figure is compared with what each framework holds from the driver:
JAX's memory_stats() pool_bytes (its BFC arena; bytes_in_use, what its arrays
use inside it, is shown beside), PyTorch's memory_reserved() (its cached
segments; memory_allocated beside). Tolerance: --tolerance MiB.

And the driver's own figure: spillway-top --json's nvml_used_bytes of each
process's device (NVML's usedGpuMemory for its pid) must be there and at
least what spillway has in use on the device (in use less spilled): the
driver counts all that and the context and pool besides. With --fake,
tests/fakenvml stands for NVML, told the processes' own figures plus a
context (the plumbing: pid matching and the field, not a driver).

  pair.py --build build-gpu --out DIR [--top PATH] [--fake] [--dry-run]
  --fake: the JAX and PyTorch stand-ins of tests/gpu/mock on fakecuda
          (self-test of the plumbing and the matching, not of the frameworks)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import swstats  # noqa: E402
from harness import MiB, fmt_bytes  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--out", default="build-gpu/gpu-out")
    ap.add_argument("--top", help="spillway-top binary (default <build>/tools/spillway-top)")
    ap.add_argument("--deadline", type=float)
    ap.add_argument("--tolerance", type=int, default=96, help="MiB")
    ap.add_argument("--fake", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    return ap.parse_args()


def plan(fake):
    """(name, --limit, command) of the two processes."""
    py = harness.python()
    jax = [py, os.path.join(HERE, "row_jax.py"), "--mode", "hold"]
    torch = [py, os.path.join(HERE, "row_torch.py"), "--mode", "hold"]
    if fake:  # the stand-ins of tests/gpu/mock, allocating from fakecuda
        return [("jax", "64M", jax + ["--hold-bytes", "24M", "--chunk", "8M"]),
                ("torch", "96M", torch + ["--hold-bytes", "40M", "--chunk", "8M"])]
    return [("jax", "6G", jax + ["--hold-bytes", "1G"]), ("torch", "3G", torch + ["--hold-bytes", "768M"])]


def pair_env(build, stats_dir, fake):
    env = harness.base_env(stats_dir=stats_dir)
    if fake:
        env.update(LD_LIBRARY_PATH=os.path.join(build, "fakecuda"), FAKECUDA_MEM="512M",
                   PYTHONPATH=os.path.join(HERE, "mock"), MOCK_CUDA="1")
    return env


def _tool(cmd, env):
    """(stdout, stderr, exit status) of a reader run while both hold; a hang
    or a missing binary is said in stderr, never raised (the processes hold
    until the snapshot is taken, and the record must still be written)."""
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=20)
        return p.stdout, p.stderr, p.returncode
    except (subprocess.TimeoutExpired, OSError) as e:
        return "", "%s: %s\n" % (cmd[0], e), "n/a"


# What --fake's stand-in driver says a process holds beyond spillway's in
# use on the device: a CUDA context's worth (SWGPU_PAIR_FAKE_CONTEXT, in
# bytes, changes it: selftest.sh's negative control gives less than none).
# SWGPU_PAIR_FAKE_NVML, selftest.sh's other controls: "others" lists only
# a process seen here that is not the pair's (the pid matching broken: the
# checks fail), "error" a driver refusing the list (not judged).
FAKE_CONTEXT = 8 * MiB


def fake_nvml(build, env, stats_dir, segments):
    """With --fake: the environment in which spillway-top opens
    tests/fakenvml, listing each process on GPU 0 with its in use on the
    device plus FAKE_CONTEXT, as a driver would list it."""
    procs = os.path.join(stats_dir, ".nvml-procs")
    context = int(os.environ.get("SWGPU_PAIR_FAKE_CONTEXT", FAKE_CONTEXT))
    kind = os.environ.get("SWGPU_PAIR_FAKE_NVML", "figures")
    with open(procs, "w") as f:
        if kind == "error":
            f.write("0 error 3\n")  # NVML_ERROR_NOT_SUPPORTED
        elif kind == "others":
            f.write("0 %d %d\n" % (os.getpid(), 64 * MiB))
        for pid, seg in segments.items() if kind == "figures" else ():
            if isinstance(seg, dict):
                d = seg["devices"][0]
                f.write("0 %d %d\n" % (pid, max(0, d["in_use_bytes"] - d["spilled_bytes"] + context)))
    lib = os.path.join(build, "fakenvml")
    return dict(env, LD_LIBRARY_PATH=lib + os.pathsep + env.get("LD_LIBRARY_PATH", ""), FAKENVML_PROCS=procs)


def take_snapshot(top, env, stats_dir, pids, log, fake_build=None):
    """spillway-top --once and --json (else the Python reader) and each
    process's segment, while both hold."""
    snap = {"once": None, "json": None, "segments": {}, "top": None}
    for pid in pids:
        seg, why = swstats.read_pid(pid, stats_dir)
        snap["segments"][pid] = seg or why
    topenv = dict(env, SPILLWAY_STATS_DIR=stats_dir, NO_COLOR="1", COLUMNS="100")
    if fake_build:
        topenv = fake_nvml(fake_build, topenv, stats_dir, snap["segments"])
    if os.access(top, os.X_OK):
        snap["top"] = top
        for mode, key in (("--once", "once"), ("--json", "json")):
            out, err, rc = _tool([top, mode], topenv)
            snap[key] = out
            log.write("$ spillway-top %s (exit %s)\n%s%s" % (mode, rc, out, err))
    else:
        # No spillway-top on this host (no ncurses): the same segments
        # through the Python reader, said so in the table.
        out, err, _ = _tool([harness.python(), os.path.join(HERE, "swstats.py"), "--dir", stats_dir], topenv)
        snap["once"] = "(spillway-top not built here; swstats.py fallback)\n" + out + err
    return snap


def run_pair(cmds, procs, env, timeout, log, top, stats_dir, fake_build=None):
    """Runs both processes at once; returns (runs, pids, snapshot). A
    snapshot with nothing in it when one ended without holding."""
    # Both hold until the snapshot is taken: a barrier of the two hold
    # callbacks and this thread.
    barrier = threading.Barrier(3, timeout=timeout)
    released = threading.Event()
    runs = [None, None]
    pids = [None, None]

    def on_hold(pid):
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return None
        released.wait(60)
        return None

    def worker(i):
        def on_start(pid):
            pids[i] = pid
        runs[i] = harness.run(cmds[i], env, timeout, log, on_hold=on_hold, on_start=on_start,
                              label="pair " + procs[i][0])
        try:
            barrier.abort()  # a process that ends without holding frees the others
        except threading.BrokenBarrierError:
            pass

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    snap = {"once": None, "json": None, "segments": {}, "top": None}
    try:
        barrier.wait()
        snap = take_snapshot(top, env, stats_dir, pids, log, fake_build)
    except threading.BrokenBarrierError:
        pass
    finally:
        released.set()
        for t in threads:
            t.join()
        try:
            if fake_build:
                os.unlink(os.path.join(stats_dir, ".nvml-procs"))
        except OSError:
            pass
        try:
            os.rmdir(stats_dir)
        except OSError:
            pass
    return runs, pids, snap


def save_snapshot(out, snap):
    with open(os.path.join(out, "spillway-top-once.txt"), "w") as f:
        f.write(snap["once"] or "(no snapshot: a process did not reach its hold)\n")
    if snap["json"]:
        with open(os.path.join(out, "spillway-top.json"), "w") as f:
            f.write(snap["json"])


def framework_figure(name, res):
    """What the framework holds from the driver: (its name, bytes)."""
    fw_fig = {"jax": "fw_pool", "torch": "fw_reserved"}.get(name, "held")
    fw_val = res.get(fw_fig)
    if not isinstance(fw_val, int) and name == "jax":  # no pool_bytes: another allocator's figure
        fw_fig, fw_val = "fw_reserved", res.get("fw_reserved")
        if not isinstance(fw_val, int):
            fw_fig, fw_val = "fw_in_use", res.get("fw_in_use")
    return fw_fig, fw_val


def judge_proc(name, lim, r, pid, snap, top_procs, tolerance, checks):
    """Appends one process's checks; returns its entry of the record."""
    res = (r.result or {}) if r else {}
    seg = snap["segments"].get(pid)
    entry = {"name": name, "pid": pid, "limit": harness.size_bytes(lim), "result": res}
    if not (r and r.ok()):
        checks.append(["%s ran" % name, False, r.why() if r else "not started"])
        return entry
    if not isinstance(seg, dict):
        checks.append(["%s segment" % name, False, str(seg)])
        return entry
    d = seg["devices"][0]
    in_use, seg_limit = d.get("in_use_bytes"), d.get("limit_bytes")
    fw_fig, fw_val = framework_figure(name, res)
    entry.update(in_use=in_use, seg_limit=seg_limit, fw_figure=fw_fig, fw_value=fw_val,
                 fw_in_use=res.get("fw_in_use", res.get("fw_allocated")))
    checks.append(["%s limit" % name, seg_limit == entry["limit"],
                   "segment limit %s, launcher --limit %s" % (fmt_bytes(seg_limit), lim)])
    ok = isinstance(fw_val, int) and in_use is not None and abs(in_use - fw_val) <= tolerance * MiB
    checks.append(["%s in use matches" % name, ok, "spillway %s, %s %s" % (
        fmt_bytes(in_use), fw_fig, fmt_bytes(fw_val) if isinstance(fw_val, int) else fw_val)])
    if snap["top"]:
        shown = pid in top_procs and any(l.split()[:1] == [str(pid)] for l in (snap["once"] or "").splitlines())
        checks.append(["%s in spillway-top" % name, shown, "pid %s in --once and --json" % pid])
        checks.append(nvml_check(name, top_procs.get(pid), snap))
        entry["nvml_used"] = ((top_procs.get(pid) or {}).get("devices") or [{}])[0].get("nvml_used_bytes")
    else:
        checks.append(["%s in spillway-top" % name, False, "spillway-top not built on this host"])
    return entry


def nvml_check(name, proc, snap):
    """The driver's figure of the process's device (--json nvml_used_bytes):
    there, and at least spillway's in use on the device (in use less
    spilled), the CUDA context and the pool's free part coming on top.

    Not judged (passing, the reason in the table) where the host cannot
    give it: no NVML in spillway-top, NVML refusing the process list, or a
    list none of whose pids is a process seen here (a container whose
    driver reports the host's pids). Judged, and failed, where NVML lists
    processes seen here but not this one, or a figure below the floor: the
    pid matching or the field is wrong."""
    label = "%s NVML figure" % name
    if not proc:
        return [label, False, "not in spillway-top --json"]
    d = proc["devices"][0]
    used, floor = d.get("nvml_used_bytes"), d["in_use_bytes"] - d["spilled_bytes"]
    if isinstance(used, int):
        return [label, used >= floor, "NVML %s, in use on the device %s (in use %s, spilled %s)" % (
            fmt_bytes(used), fmt_bytes(floor), fmt_bytes(d["in_use_bytes"]), fmt_bytes(d["spilled_bytes"]))]
    if "nvml_used_bytes" not in d:
        return [label, True, "not judged: no NVML in spillway-top on this host"]
    try:
        doc = json.loads(snap["json"])
        gpus = doc.get("gpus") or []
        errors = [g["processes_error"] for g in gpus if g.get("processes_error")]
        others = [o for g in gpus for o in (g.get("other_processes") or [])]
        figured = [p for p in doc.get("processes", [])
                   if any(isinstance(x.get("nvml_used_bytes"), int) for x in p.get("devices", []))]
    except (ValueError, TypeError, KeyError, AttributeError):
        return [label, False, "NVML gave none, and spillway-top --json is unreadable"]
    if errors:
        return [label, True, "not judged: NVML lists no processes here (%s)" % "; ".join(errors)]
    if not figured and others and not any("command" in o for o in others):
        return [label, True, "not judged: NVML's %d pids are none seen here (the host's pid namespace?)"
                % len(others)]
    return [label, False, "NVML gave none (it lists %d other process(es), %d of ours with a figure)"
            % (len(others), len(figured))]


def judge(procs, runs, pids, snap, tolerance):
    """The results record of the pair, its status and checks included."""
    rec = {"table": "pair", "procs": [], "top": snap["top"], "once_file": "spillway-top-once.txt"}
    missing = sorted({r.missing() for r in runs if r and r.missing()})
    if missing:  # a framework not installed here: nothing to compare
        rec.update(status="SKIP", checks=[["framework", False, "skipped: no %s" % ", no ".join(missing)]])
        return rec
    checks = []
    top_procs = {}
    if snap["json"]:
        try:
            top_procs = {p["pid"]: p for p in json.loads(snap["json"]).get("processes", [])}
        except ValueError:
            checks.append(["spillway-top --json", False, "unparsable"])
    for i, (name, lim, _) in enumerate(procs):
        rec["procs"].append(judge_proc(name, lim, runs[i], pids[i], snap, top_procs, tolerance, checks))
    rec.update(status="pass" if checks and all(c[1] for c in checks) else "FAIL", checks=checks)
    return rec


def main():
    a = parse_args()
    build, out = os.path.abspath(a.build), os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    log = harness.Log(os.path.join(out, "gpu-check.log"))
    results = harness.Results(os.path.join(out, "results.jsonl"))
    launcher = os.path.join(build, "tools", "spillway")
    top = a.top or os.path.join(build, "tools", "spillway-top")
    stats_dir = tempfile.mkdtemp(prefix="swgpu-pair.")
    procs = plan(a.fake)
    budget = harness.Budget(a.deadline)
    timeout = 30 if a.fake else budget.timeout(150, 40)
    cmds = [[launcher, "run", "--limit", lim, "--"] + cmd for _, lim, cmd in procs]
    if a.dry_run:
        for c in cmds:
            print("would run: " + " ".join(c))
        return 0
    if timeout is None:
        results.add({"table": "pair", "status": "SKIP", "why": "time budget"})
        print("RESULT table=pair pass=0 failed=skipped_(time_budget)")
        return 0
    env = pair_env(build, stats_dir, a.fake)
    runs, pids, snap = run_pair(cmds, procs, env, timeout, log, top, stats_dir, build if a.fake else None)
    save_snapshot(out, snap)
    rec = judge(procs, runs, pids, snap, a.tolerance)
    results.add(rec)
    failed = [c[0] for c in rec["checks"] if not c[1]]
    print("RESULT table=pair pass=%d failed=%s%s" % (rec["status"] == "pass", ",".join(failed).replace(" ", "_") or "none",
                                                     " skipped=" + rec["checks"][0][2].replace(" ", "_")
                                                     if rec["status"] == "SKIP" else ""))
    print(snap["once"] or "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
