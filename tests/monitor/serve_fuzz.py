#!/usr/bin/env python3
"""Abuse of spillway-top --serve, on loopback only, bounded in count and time.

  serve_fuzz.py PORT PID [--requests N] [--concurrent N]

1. Slow clients: N connections from one address send half a request and
   hold; the server keeps serving others (its per-address limit), and
   closes the held ones after its idle timeout.
2. Malformed requests: N requests of ~30 kinds (garbage, overlong lines and
   headers, bad versions, bad lengths, chunked nonsense, NULs, pipelining,
   HTTP/0.9, ...), each on its own connection from one of a few addresses.
   Every answer must be a well-formed status line or a closed connection,
   and a valid scrape every 1000 requests must succeed.
3. N concurrent valid scrapes from N/8 addresses, all answered 200.
4. The server's memory: peak and current RSS (VmHWM, VmRSS) before and
   after, printed; bounded by --max-peak-mib and --max-growth-mib
   (more for an ASan-built server: --asan-quarantine-mib).

Prints one line per check ("ok - ..." / "FAIL - ...") and exits 1 on any
failure.
"""
import argparse
import random
import socket
import sys
import time

HOST = "127.0.0.1"
failures = 0


def check(ok, desc):
    global failures
    print(("ok - " if ok else "FAIL - ") + desc, flush=True)
    if not ok:
        failures += 1


def connect(port, source, timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((HOST, port))
    return s


def read_all(s, limit=1 << 20):
    data = b""
    try:
        while len(data) < limit:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout, BrokenPipeError):
        pass
    return data


def scrape(port, source="127.0.0.1"):
    """A valid GET /metrics: (status, body)."""
    s = connect(port, source)
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        data = read_all(s)
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    line = head.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return status, body


def rss(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":")
                out[k] = int(v.split()[0])  # KiB
    return out


def malformed(rng, i):
    """The i-th malformed request (bytes)."""
    kinds = [
        lambda: bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 2048))),
        lambda: b"GET /" + b"a" * rng.randint(40000, 120000) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * rng.randint(40000, 100000) + b"\r\n\r\n",
        lambda: b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"".join(b"H%d: v\r\n" % k for k in range(3000)) + b"\r\n",
        lambda: b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n",
        lambda: b"GET /metrics HTTP/1.1x\r\nHost: x\r\n\r\n",
        lambda: b"GET /metrics HTTP/\r\n\r\n",
        lambda: b"GET/metricsHTTP/1.1\r\n\r\n",
        lambda: b"GET /metrics HTTP/1.1\nHost: x\n\n",
        lambda: b"GET /metrics HTTP/1.1\r\nHo\x00st: x\r\n\r\n",
        lambda: b"GET /met\x00rics HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        lambda: b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\nxx",
        lambda: b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        lambda: b"POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nxx\r\n0\r\n\r\n",
        lambda: b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
                b"fffffffffffffffffff\r\n",
        lambda: b"GET /metrics HTTP/1.1\r\nHost: x\r\n folded: continuation\r\n\r\n",
        lambda: bytes(rng.choice(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(rng.randint(1, 300)))
                + b" /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"get /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"GET GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"GET http://evil/metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"GET /../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"GET /metrics%00%2F%ZZ HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"GET /metrics\r\n",
        lambda: b"POST /metrics HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n"
                + b"p" * rng.randint(0, 5000),
        lambda: b"GET /metrics HTTP/1.1\r\n\r\n",  # no Host in HTTP/1.1
        lambda: b"GET /metrics HTTP/1.1\r\nHost: \xff\xfe\xc3\x28\r\nUser-Agent: \xe2\x82\r\n\r\n",
        lambda: b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * rng.randint(2, 40) + b"\x16\x03\x01garbage",
        lambda: b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(rng.getrandbits(8) for _ in range(200)),
        lambda: b"\r\n" * rng.randint(1, 5000),
        lambda: b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b":" * rng.randint(1, 500) + b"\r\n\r\n",
        lambda: b"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
    ]
    return kinds[i % len(kinds)]()


def well_formed(answer):
    """A closed connection, or answers that each start with a status line."""
    if not answer:
        return True
    return answer.startswith((b"HTTP/1.1 ", b"HTTP/1.0 ")) and answer[9:12].isdigit()


def fuzz(port, count, pid):
    rng = random.Random(20261123)
    sources = ["127.0.0.%d" % k for k in range(60, 64)]
    statuses = {}
    bad = 0
    scrapes_ok = 0
    start = time.monotonic()
    for i in range(count):
        payload = malformed(rng, i)
        try:
            s = connect(port, sources[i % len(sources)], timeout=3.0)
        except OSError as e:
            bad += 1
            print(f"  request {i}: cannot connect: {e}")
            continue
        try:
            try:
                s.sendall(payload)
                s.shutdown(socket.SHUT_WR)  # nothing more comes: the server must not wait
            except OSError:
                pass  # the server may refuse before reading it all
            answer = read_all(s, limit=1 << 16)
        finally:
            s.close()
        code = answer[9:12].decode("ascii", "replace") if answer else "closed"
        statuses[code] = statuses.get(code, 0) + 1
        if not well_formed(answer):
            bad += 1
            if bad < 5:
                print(f"  request {i}: odd answer {answer[:80]!r}")
        if (i + 1) % 1000 == 0:
            status, _ = scrape(port)
            scrapes_ok += status == 200
    took = time.monotonic() - start
    print("  answers: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())))
    check(bad == 0, f"{count} malformed requests in {took:.1f} s, every answer well formed or a close ({bad} not)")
    check(scrapes_ok == count // 1000, f"a valid scrape after every 1000 succeeded ({scrapes_ok}/{count // 1000})")
    check(sum(statuses.values()) == count, "every request was sent")


def concurrent(port, n):
    sources = ["127.0.0.%d" % (10 + k // 8) for k in range(n)]
    socks = []
    for src in sources:
        socks.append(connect(port, src, timeout=10.0))
    for s in socks:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    ok = 0
    for s in socks:
        data = read_all(s)
        ok += data.startswith(b"HTTP/1.1 200") and b"spillway_processes" in data
        s.close()
    check(ok == n, f"{n} concurrent scrapes from {len(set(sources))} addresses all answered 200 ({ok})")


def hold_slow(port, n):
    """n connections from one address sending half a request; returns them."""
    held = []
    for _ in range(n):
        try:
            s = connect(port, "127.0.0.50", timeout=1.0)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            held.append(s)
        except OSError:
            pass
    return held


def count_closed(held):
    closed = 0
    for s in held:
        s.settimeout(0.05)
        try:
            data = s.recv(4096)
            closed += data == b"" or data.startswith(b"HTTP/")
        except socket.timeout:
            pass
        except OSError:
            closed += 1
    return closed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("pid", type=int)
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--concurrent", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=10.0, help="the server's idle timeout")
    ap.add_argument("--max-peak-mib", type=float, default=64.0)
    ap.add_argument("--max-growth-mib", type=float, default=16.0)
    ap.add_argument("--asan-quarantine-mib", type=float, default=None,
                    help="the server is ASan-built with this quarantine: its redzones and metadata about "
                         "double the heap, and the quarantine keeps this much freed memory more, so both "
                         "bounds become 2 x theirs + this")
    a = ap.parse_args()

    for _ in range(5):
        status, body = scrape(a.port)
    check(status == 200 and b"spillway_in_use_bytes{" in body, "warm-up scrapes answered 200 with series")
    before = rss(a.pid)

    t_held = time.monotonic()
    held = hold_slow(a.port, a.concurrent)
    refused_now = a.concurrent - (len(held) - count_closed(held))
    status, _ = scrape(a.port, source="127.0.0.51")
    check(status == 200, f"{a.concurrent} slow connections from one address: another address still scraped")
    check(refused_now >= a.concurrent - 16, f"the slow address got at most 16 connections ({a.concurrent - refused_now} held)")

    fuzz(a.port, a.requests, a.pid)
    concurrent(a.port, a.concurrent)

    wait = a.timeout + 3 - (time.monotonic() - t_held)
    if wait > 0:
        time.sleep(wait)
    closed = count_closed(held)
    check(closed == len(held), f"slow connections closed after the idle timeout ({closed}/{len(held)})")
    for s in held:
        s.close()

    status, body = scrape(a.port)
    check(status == 200 and b"spillway_in_use_bytes{" in body, "still serving after all of it")
    after = rss(a.pid)
    peak = after["VmHWM"] / 1024
    growth = (after["VmRSS"] - before["VmRSS"]) / 1024
    print(f"  RSS: {before['VmRSS'] / 1024:.1f} MiB after warm-up, {after['VmRSS'] / 1024:.1f} MiB at the end, "
          f"peak {peak:.1f} MiB")
    max_peak, max_growth = a.max_peak_mib, a.max_growth_mib
    if a.asan_quarantine_mib is not None:
        max_peak, max_growth = (2 * m + a.asan_quarantine_mib for m in (max_peak, max_growth))
    check(peak <= max_peak, f"peak RSS {peak:.1f} MiB <= {max_peak:.0f} MiB")
    check(growth <= max_growth, f"RSS grew {growth:.1f} MiB <= {max_growth:.0f} MiB")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
