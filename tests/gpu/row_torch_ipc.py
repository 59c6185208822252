"""The PyTorch legacy-IPC row of scripts/gpu-check.sh: a CUDA tensor shared
through torch.multiprocessing (spawn: the consumer is a fresh interpreter,
LD_PRELOAD carries spillway). The producer fills it, the consumer reads,
checks and doubles it in place, the producer checks the doubled values.
Prints one RESULT line (ok=1 when it held; err=no_torch without PyTorch)."""
import sys


def consumer(q, done):
    import torch
    x, n = q.get()
    ok = bool((x == torch.arange(n, device=x.device, dtype=x.dtype)).all())
    x.mul_(2)
    torch.cuda.synchronize()
    done.put(ok)
    del x


def main():
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        print("RESULT ok=0 err=no_torch")
        return 0
    n = 64 << 20  # 256 MiB of float32
    ctx = mp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Queue()
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    p = ctx.Process(target=consumer, args=(q, done))
    p.start()
    q.put((x, n))
    read_ok = done.get(timeout=120)
    p.join(60)
    torch.cuda.synchronize()
    doubled = bool((x == 2 * torch.arange(n, device="cuda", dtype=torch.float32)).all())
    ok = read_ok and doubled and p.exitcode == 0
    print(f"RESULT ok={int(ok)} consumer_read={int(read_ok)} producer_sees_write={int(doubled)} "
          f"consumer_exit={p.exitcode} bytes={n * 4}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
