#!/usr/bin/env python3
"""Issue 12 row: a PyTorch MLP training step captured with torch.cuda.graph
(the documented whole-network pattern: warm-up on a side stream, grads set
to None so that backward allocates them inside the capture, SGD step
inside the graph) and replayed. features.py runs it natively and under a
spillway limit below the step's working set, and compares the two dumps.

Capture uses torch's default capture_error_mode ("global"): any potentially
unsafe CUDA call from any thread during the capture - spillway's own
included - invalidates it. A failed capture is reported, not raised
(capture_ok=0 and the error's first line), so the row still holds and the
harness still reads the stats segment.

  RESULT fw=torch capture_mode=global capture_ok=1 replays=.. replay_ms=<median block / replays>
         loss0=.. loss=.. fp_len=.. reserved=.. torch=..
The dump (--dump): float32 fingerprint = the loss after each checked replay,
then per parameter its column sums and column sums of |p| (a lost or stale
page changes them; 2 x width x layers + replays values instead of every
weight).
"""
import argparse
import statistics
import time

import rowlib

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--width", type=int, default=4096)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--batch", type=int, default=512)
ap.add_argument("--replays", type=int, default=8, help="checked replays (each loss kept)")
ap.add_argument("--blocks", type=int, default=5, help="timed blocks")
ap.add_argument("--per-block", type=int, default=4, help="replays per timed block")
ap.add_argument("--lr", type=float, default=1e-3)
ap.add_argument("--dump", help="write the fingerprint here (float32, little-endian)")
ap.add_argument("--no-hold", action="store_true")
a = ap.parse_args()

import torch  # noqa: E402  (after argparse: --help needs no GPU)


def build():
    """Model, optimizer and a fixed batch, all from fixed seeds: the native
    and the spillway process start from the same bytes."""
    torch.manual_seed(0)
    layers = []
    for _ in range(a.layers):
        layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(a.batch, a.width, generator=g).cuda()
    y = torch.randn(a.batch, a.width, generator=g).cuda()
    return model, opt, x, y


def train_step(model, opt, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


def warm_up(model, opt, x, y):
    """Three eager steps on a side stream, as torch.cuda.graph's docs ask
    (lazy initialisation, cuBLAS workspaces, the allocator's blocks)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            train_step(model, opt, x, y)
    torch.cuda.current_stream().wait_stream(s)


def capture(model, opt, x, y):
    """(graph, static loss, None) or (None, None, error's first line)."""
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # backward allocates grads in the graph's pool
    try:
        with torch.cuda.graph(g):  # capture_error_mode defaults to "global"
            loss = train_step(model, opt, x, y)
    except Exception as e:  # torch raises RuntimeError with the CUDA error
        return None, None, (str(e).splitlines() or [type(e).__name__])[0][:160]
    return g, loss, None


def checked_replays(g, loss):
    """Replays, keeping each loss on the device (no sync in between)."""
    hist = torch.zeros(a.replays, device="cuda")
    for i in range(a.replays):
        g.replay()
        hist[i] = loss.detach()
    torch.cuda.synchronize()
    return hist


def timed_replays(g):
    """Median seconds per replay over a.blocks blocks."""
    blocks = []
    for _ in range(a.blocks):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.per_block):
            g.replay()
        torch.cuda.synchronize()
        blocks.append((time.perf_counter() - t0) / a.per_block)
    return statistics.median(blocks)


def fingerprint(model, hist):
    parts = [hist]
    for p in model.parameters():
        m = p.detach().reshape(-1, p.shape[-1])
        parts += [m.sum(0), m.abs().sum(0)]
    return torch.cat(parts).cpu().tolist()


def main():
    model, opt, x, y = build()
    warm_up(model, opt, x, y)
    torch.cuda.synchronize()
    g, loss, err = capture(model, opt, x, y)
    out = {"fw": "torch", "capture_mode": "global", "capture_ok": int(err is None), "torch": torch.__version__}
    if err is None:
        hist = checked_replays(g, loss)
        out["replay_ms"] = round(timed_replays(g) * 1e3, 3)
        fp = fingerprint(model, hist)
        if a.dump:
            rowlib.write_floats(a.dump, fp)
        out.update(replays=a.replays, loss0=fp[0], loss=fp[a.replays - 1], fp_len=len(fp))
    else:
        out["capture_error"] = err
    out["reserved"] = torch.cuda.memory_reserved()
    rowlib.hold(a)
    rowlib.result(**out)


main()
