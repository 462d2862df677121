"""GPU utilisation sampled during training (NVML, else ``nvidia-smi``)."""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

def device_memory_peak(backend: str) -> int | None:
    """The most GPU memory the framework held at once on the first GPU during the run, in bytes, as the
    framework reports it (TensorFlow's ``get_memory_info``, PyTorch's ``max_memory_allocated``, JAX's
    ``peak_bytes_in_use``); None where it does not say."""
    try:
        if backend == "torch":
            import torch

            return int(torch.cuda.max_memory_allocated())
        if backend == "jax":
            import jax

            stats = jax.devices()[0].memory_stats() or {}
            return int(stats["peak_bytes_in_use"]) if "peak_bytes_in_use" in stats else None
        import tensorflow as tf

        return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])
    except Exception:  # no GPU, or a framework that does not report it: nothing recorded
        return None


class GpuSampler:
    """GPU utilisation (the share of time a kernel was running, as the driver reports it) sampled
    every 0.1 s through NVML (the ``nvidia-ml-py`` package), or every 0.2 s from ``nvidia-smi`` where
    NVML's Python binding is not installed, in a background thread."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.source = "none"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: Any = None
        # The GPU the frameworks train on: the first visible one, by UUID or by index (the parent sets
        # CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA's and NVML's indices agree).
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
        self.uuid = visible if visible.startswith(("GPU-", "MIG-")) else None
        self.index = int(visible) if visible.isdigit() else 0

    @classmethod
    def start(cls) -> "GpuSampler":
        sampler = cls()
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = (pynvml.nvmlDeviceGetHandleByUUID(sampler.uuid) if sampler.uuid
                      else pynvml.nvmlDeviceGetHandleByIndex(sampler.index))
            sampler.source = "nvml"
            target: Callable[[], None] = lambda: sampler._poll_nvml(pynvml, handle)
        except Exception:
            import shutil
            import subprocess

            exe = shutil.which("nvidia-smi")
            if not exe:
                return sampler
            sampler._proc = subprocess.Popen(
                [exe, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-i",
                 sampler.uuid or str(sampler.index), "-lms", "200"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True)
            sampler.source = "nvidia-smi"
            target = sampler._read_smi
        sampler._thread = threading.Thread(target=target, daemon=True)
        sampler._thread.start()
        return sampler

    def _poll_nvml(self, pynvml: Any, handle: Any) -> None:
        while not self._stop.wait(0.1):
            try:
                self.samples.append(float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))
            except Exception:
                return

    def _read_smi(self) -> None:
        for line in self._proc.stdout:
            try:
                self.samples.append(float(line.strip()))
            except ValueError:
                continue

    def mark(self) -> int:
        return len(self.samples)

    def mean(self, since: int, until: int | None = None) -> float | None:
        """Mean utilisation in % of the samples taken between two ``mark()`` calls (or until now)."""
        taken = self.samples[since:until]
        return sum(taken) / len(taken) if taken else None

    def stop(self) -> None:
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
