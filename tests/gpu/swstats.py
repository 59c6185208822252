#!/usr/bin/env python3
"""Reads spillway stats segments (stats/layout.h) without the C tools.

The GPU harness reads each row's own segment while the row holds its peak
(spillway-top needs ncurses, which the GPU host may lack). Counter names and
their order, which of them are laned (base + SPW_STATS_LANES lanes summed
modulo 2^64) and the ABI version come from stats/layout.h at run time, so
counters added there are picked up; a segment of another ABI version or
whose counter count or device size differs from layout.h's is reported as
unreadable, never misread.

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
HEADER = struct.Struct("<QIIQIIIIiiQQQQ48s")  # 128 bytes, stats/layout.h: the same since ABI v1
CMDLINE_LEN, CONFIG_LEN = 1024, 2048
LINE = 64  # SPW_STATS_CACHELINE: one counter or lane per line
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _layout_text(layout=None):
    with open(layout or os.path.join(ROOT, "stats", "layout.h")) as f:
        return f.read()


def counter_names(layout=None):
    """[(name, kind)] in layout order, parsed from SPW_STATS_COUNTERS."""
    return re.findall(r"^\s*X\(\s*\w+\s*,\s*(\w+)\s*,\s*(GAUGE|COUNTER)\s*,", _layout_text(layout), re.M)


class Layout:
    """What stats/layout.h says beyond the names: ABI version, lanes."""

    def __init__(self, layout=None):
        text = _layout_text(layout)
        self.abi = int(re.search(r"#define SPW_STATS_ABI_VERSION\s+(\d+)u", text).group(1))
        self.lanes = int(re.search(r"#define SPW_STATS_LANES\s+(\d+)u", text).group(1))
        enums = re.findall(r"^\s*X\(\s*(\w+)\s*,\s*\w+\s*,\s*(?:GAUGE|COUNTER)\s*,", text, re.M)
        self.ncount = len(enums)
        laned = re.search(r"#define SPW_STATS_LANED\(X\)([^\n]*)", text).group(1)
        # index in the counters -> index of its lane group
        self.laned = {enums.index(e): g for g, e in enumerate(re.findall(r"X\((\w+)\)", laned))}


def stats_dir(d=None):
    return d or os.environ.get("SPILLWAY_STATS_DIR") or "/dev/shm"


def segment_path(pid, d=None, uid=None):
    return os.path.join(stats_dir(d), "spillway.%d.%d" % (os.getuid() if uid is None else uid, pid))


def _text(b):
    return b.split(b"\0", 1)[0].decode("ascii", "replace")


def _value(data, base, k, layout):
    """Counter k of the device at byte base: a laned one is its base plus its lanes."""
    v = struct.unpack_from("<Q", data, base + k * LINE)[0]
    g = layout.laned.get(k)
    if g is not None:
        first = base + (layout.ncount + g * layout.lanes) * LINE
        v += sum(struct.unpack_from("<Q", data, first + i * LINE)[0] for i in range(layout.lanes))
    return v & 0xFFFFFFFFFFFFFFFF  # a lane below zero has wrapped


def decode(data, names, layout=None):
    """Segment bytes -> dict; raises ValueError naming what is wrong."""
    layout = layout or Layout()
    if len(data) < HEADER.size:
        raise ValueError("short segment (%d bytes)" % len(data))
    (magic, abi, hsize, total, ndev, dsize, ncount, uid, pid, host_pid, _ns, start, created, _gen,
     _res) = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError("bad magic %#x (not initialised yet?)" % magic)
    if abi != layout.abi:
        raise ValueError("ABI version %d, stats/layout.h is %d" % (abi, layout.abi))
    if ncount != len(names):
        raise ValueError("segment has %d counters, stats/layout.h names %d" % (ncount, len(names)))
    want = (ncount + len(layout.laned) * layout.lanes) * LINE
    if dsize != want:
        raise ValueError("device size %d, stats/layout.h makes it %d" % (dsize, want))
    if not (0 < ndev <= 64) or hsize < HEADER.size or hsize + ndev * dsize > len(data):
        raise ValueError("inconsistent sizes (header %d, %d devices of %d, file %d)" % (hsize, ndev, dsize, len(data)))
    devices = []
    for d in range(ndev):
        base = hsize + d * dsize
        devices.append({n: _value(data, base, k, layout) for k, (n, _) in enumerate(names)})
    cfg = _text(data[HEADER.size + CMDLINE_LEN:HEADER.size + CMDLINE_LEN + CONFIG_LEN])
    return {"abi_version": abi, "pid": pid, "host_pid": host_pid, "uid": uid, "start_time": start,
            "created_unix_ns": created, "devices": devices,
            "cmdline": _text(data[HEADER.size:HEADER.size + CMDLINE_LEN]),
            "config": dict(l.split("=", 1) for l in cfg.splitlines() if "=" in l)}


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
