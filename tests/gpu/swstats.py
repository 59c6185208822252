#!/usr/bin/env python3
"""Reads spillway stats segments (stats/layout.h) without the C tools.

The GPU harness reads each row's own segment while the row holds its peak
(spillway-top needs ncurses, which the GPU host may lack). Counter names and
their order come from stats/layout.h's X-macro at run time, so counters added
there are picked up; a segment whose counter count differs from layout.h's is
reported as unreadable, never misread.

  swstats.py [--dir DIR] [--pid PID] [--json]   print segments (fallback for
                                                spillway-top --json / --once)
"""
import argparse
import json
import os
import re
import struct
import sys

MAGIC = 0x5441545357505331
HEADER = struct.Struct("<QIIQIIIIiiQQQQ48s")  # 128 bytes, stats/layout.h ABI v1
CMDLINE_LEN, CONFIG_LEN = 1024, 2048
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def counter_names(layout=None):
    """[(name, kind)] in layout order, parsed from SPW_STATS_COUNTERS."""
    path = layout or os.path.join(ROOT, "stats", "layout.h")
    with open(path) as f:
        text = f.read()
    return re.findall(r"^\s*X\(\s*\w+\s*,\s*(\w+)\s*,\s*(GAUGE|COUNTER)\s*,", text, re.M)


def stats_dir(d=None):
    return d or os.environ.get("SPILLWAY_STATS_DIR") or "/dev/shm"


def segment_path(pid, d=None, uid=None):
    return os.path.join(stats_dir(d), "spillway.%d.%d" % (os.getuid() if uid is None else uid, pid))


def _text(b):
    return b.split(b"\0", 1)[0].decode("ascii", "replace")


def decode(data, names):
    """Segment bytes -> dict; raises ValueError naming what is wrong."""
    if len(data) < HEADER.size:
        raise ValueError("short segment (%d bytes)" % len(data))
    (magic, abi, hsize, total, ndev, dsize, ncount, uid, pid, host_pid, _ns, start, created, _gen,
     _res) = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError("bad magic %#x (not initialised yet?)" % magic)
    if ncount != len(names):
        raise ValueError("segment has %d counters, stats/layout.h names %d" % (ncount, len(names)))
    if not (0 < ndev <= 64) or dsize % ncount or hsize < HEADER.size or hsize + ndev * dsize > len(data):
        raise ValueError("inconsistent sizes (header %d, %d devices of %d, file %d)" % (hsize, ndev, dsize, len(data)))
    stride = dsize // ncount
    devices = []
    for d in range(ndev):
        base = hsize + d * dsize
        devices.append({n: struct.unpack_from("<Q", data, base + k * stride)[0] for k, (n, _) in enumerate(names)})
    seg = {"abi_version": abi, "pid": pid, "host_pid": host_pid, "uid": uid, "start_time": start,
           "created_unix_ns": created, "devices": devices, "cmdline": "", "config": {}}
    if abi in (1, 2, 3):  # the text fields' offsets are known for v1 to v3 (same header)
        seg["cmdline"] = _text(data[HEADER.size:HEADER.size + CMDLINE_LEN])
        cfg = _text(data[HEADER.size + CMDLINE_LEN:HEADER.size + CMDLINE_LEN + CONFIG_LEN])
        seg["config"] = dict(l.split("=", 1) for l in cfg.splitlines() if "=" in l)
    return seg


def read_pid(pid, d=None, names=None):
    """(segment dict, None) or (None, why)."""
    path = segment_path(pid, d)
    try:
        with open(path, "rb") as f:
            data = f.read()
        return decode(data, names or counter_names()), None
    except (OSError, ValueError) as e:
        return None, "%s: %s" % (path, e)


def read_all(d=None, names=None):
    names = names or counter_names()
    out = []
    try:
        entries = sorted(os.listdir(stats_dir(d)))
    except OSError:
        return out
    for e in entries:
        m = re.match(r"spillway\.(\d+)\.(\d+)$", e)
        if not m or int(m.group(1)) != os.getuid():
            continue
        if not os.path.exists("/proc/%s" % m.group(2)):
            continue  # a dead owner's leftover
        seg, _ = read_pid(int(m.group(2)), d, names)
        if seg:
            out.append(seg)
    return out


def fmt_bytes(v):
    for unit, s in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= s:
            return "%.1f%s" % (v / s, unit)
    return "%dB" % v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.pid:
        seg, why = read_pid(a.pid, a.dir)
        segs = [seg] if seg else []
        if why:
            print("swstats: " + why, file=sys.stderr)
    else:
        segs = read_all(a.dir)
    if a.json:
        print(json.dumps({"processes": segs}))
        return 0 if segs else 1
    print("%7s %3s %8s %8s %8s %8s %8s  %s" % ("PID", "GPU", "IN_USE", "LIMIT", "PEAK", "POOL", "PASS", "COMMAND"))
    for s in segs:
        for i, dv in enumerate(s["devices"]):
            passthrough = sum(v for k, v in dv.items() if k.startswith("passthrough_"))
            print("%7d %3d %8s %8s %8s %8s %8s  %s" % (
                s["pid"], i, fmt_bytes(dv.get("in_use_bytes", 0)), fmt_bytes(dv.get("limit_bytes", 0)),
                fmt_bytes(dv.get("peak_bytes", 0)), fmt_bytes(dv.get("pool_bytes", 0)), fmt_bytes(passthrough),
                s["cmdline"][:60]))
    return 0 if segs else 1


if __name__ == "__main__":
    sys.exit(main())
