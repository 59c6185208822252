"""What the seed's MLP benchmarks share (seed_mlp_jax.py, seed_mlp_torch.py):
the model's command line, the SWGPU_HOLD handshake with tests/gpu/harness.py,
and the RESULT line the GPU rows parse. Framework-free: imported before the
framework, so that --help needs no GPU."""
import argparse
import select
import sys

GiB = 1 << 30


def parser(doc, clip_help):
    """The options both benchmarks take; each adds its own."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dim", type=int, default=7168)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch", type=int, help="rows of the input (default: --dim, the tutorial's DIM x DIM)")
    ap.add_argument("--steps", type=int, default=10, help="steps in all, warm-up included")
    ap.add_argument("--warmup", type=int, default=3, help="first steps left out of the median")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--max-norm", type=float, default=1.0, help=clip_help)
    ap.add_argument("--l2", type=float, default=0.001)
    ap.add_argument("--hold", action="store_true",
                    help="SWGPU_HOLD handshakes after the warm-up and at the end (tests/gpu/harness.py)")
    return ap


def parse(ap):
    a = ap.parse_args()
    a.batch = a.batch or a.dim
    if a.steps <= a.warmup:
        ap.error("--steps must exceed --warmup")
    return a


def hold():
    """Tells the harness to read NVML and the stats segment now, and waits
    (at most a minute) for its line on stdin."""
    print("SWGPU_HOLD", flush=True)
    r, _, _ = select.select([sys.stdin], [], [], 60)
    if r:
        sys.stdin.readline()


def jax_memory_stats(device):
    """device.memory_stats(), {} where there are none: jaxlib answers None
    for an allocator without stats (platform), and XLA versions whose
    GetAllocatorStats has TF_RET_CHECK(stats.has_value()) raise INTERNAL
    instead (as tests/gpu/rowlib.py)."""
    try:
        return device.memory_stats() or {}
    except Exception as e:  # jax.errors.JaxRuntimeError (XlaRuntimeError before)
        print("memory_stats() failed: %s" % str(e).splitlines()[0][:160], file=sys.stderr)
        return {}


def gib(v):
    return "%.2f GiB" % (v / GiB) if isinstance(v, (int, float)) else "n/a"


def result(fields):
    """The one line harnesses parse: RESULT k=v ..., values without spaces."""
    print("RESULT " + " ".join("%s=%s" % (k, str(v).replace(" ", "_")) for k, v in fields.items()), flush=True)
