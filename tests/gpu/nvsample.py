"""Real device memory use, sampled in the background while a row runs.

NVML through pynvml (nvidia-ml-py, in the GPU image) when it loads, else
`nvidia-smi --query-compute-apps` (slower: ~20 samples/s at best). Both give
per-process usage (which includes the CUDA context) and the device's used
total; when a process never shows in the per-process list (a pid namespace
the driver cannot map), the device total's rise over its level before the row
started stands in for it, valid because rows run one at a time.
"""
import shutil
import subprocess
import threading


class Sampler:
    def __init__(self, index=0, interval=0.02, enabled=True):
        self.index, self.interval = index, interval
        self.mode, self.h, self.nvml = None, None, None
        self.lock = threading.Lock()
        self.watched = {}  # pid -> {"peak": bytes, "dev_base": bytes, "dev_peak": bytes}
        self.thread, self.stop_ev = None, threading.Event()
        if not enabled:
            return
        try:
            import pynvml
            pynvml.nvmlInit()
            self.h = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.nvml, self.mode = pynvml, "nvml"
        except Exception:
            if shutil.which("nvidia-smi"):
                self.mode = "nvidia-smi"

    def total(self):
        """The device's total memory as NVML reports it (bytes), or None."""
        if self.mode == "nvml":
            return self.nvml.nvmlDeviceGetMemoryInfo(self.h).total
        if self.mode == "nvidia-smi":
            out = self._smi(["--query-gpu=memory.total", "--format=csv,noheader,nounits", "-i", str(self.index)])
            return int(out.split()[0]) << 20 if out else None
        return None

    def _smi(self, args):
        try:
            return subprocess.run(["nvidia-smi"] + args, capture_output=True, text=True, timeout=10).stdout
        except Exception:
            return ""

    def read(self):
        """({pid: bytes}, device used bytes) now; ({}, None) without a source."""
        if self.mode == "nvml":
            procs = {}
            try:
                for p in self.nvml.nvmlDeviceGetComputeRunningProcesses(self.h):
                    if p.usedGpuMemory is not None:
                        procs[p.pid] = procs.get(p.pid, 0) + p.usedGpuMemory
            except self.nvml.NVMLError:
                pass
            return procs, self.nvml.nvmlDeviceGetMemoryInfo(self.h).used
        if self.mode == "nvidia-smi":
            procs = {}
            for line in self._smi(["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits",
                                   "-i", str(self.index)]).splitlines():
                try:
                    pid, mib = [int(x) for x in line.split(",")]
                    procs[pid] = procs.get(pid, 0) + (mib << 20)
                except ValueError:
                    pass
            out = self._smi(["--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", str(self.index)])
            return procs, (int(out.split()[0]) << 20) if out.strip() else None
        return {}, None

    def sample(self):
        procs, dev = self.read()
        with self.lock:
            for pid, w in self.watched.items():
                if pid in procs:
                    w["peak"] = max(w["peak"], procs[pid])
                if dev is not None and w["dev_base"] is not None:
                    w["dev_peak"] = max(w["dev_peak"], dev)

    def _loop(self):
        while not self.stop_ev.wait(self.interval):
            self.sample()

    def start(self):
        if self.mode and not self.thread:
            self.thread = threading.Thread(target=self._loop, daemon=True)
            self.thread.start()
        return self

    def stop(self):
        self.stop_ev.set()
        if self.thread:
            self.thread.join(5)

    def watch(self, pid, dev_base=None):
        with self.lock:
            self.watched[pid] = {"peak": 0, "dev_base": dev_base, "dev_peak": dev_base or 0}

    def device_used(self):
        return self.read()[1]

    def result(self, pid):
        """{"source", "peak" (bytes or None), "how"} for a watched pid."""
        with self.lock:
            w = self.watched.pop(pid, None)
        if not self.mode or w is None:
            return {"source": None, "peak": None, "how": "no NVML and no nvidia-smi"}
        if w["peak"]:
            return {"source": self.mode, "peak": w["peak"], "how": "per process"}
        if w["dev_base"] is not None and w["dev_peak"] > w["dev_base"]:
            return {"source": self.mode, "peak": w["dev_peak"] - w["dev_base"], "how": "device rise"}
        return {"source": self.mode, "peak": None, "how": "process never seen"}


if __name__ == "__main__":
    s = Sampler()
    print("source:", s.mode, "total:", s.total(), "now:", s.read())

