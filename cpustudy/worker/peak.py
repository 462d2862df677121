"""The training device's peak: float32 matmul GFLOP/s at the framework's real precision, and memory
bandwidth. Imports the framework only when called."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from cpustudy.worker.frameworks import list_gpus

def float32_precision(backend: str, device: str) -> str:
    """The arithmetic the framework really uses for float32 matmuls (and convolutions) on ``device``:
    on NVIDIA GPUs since Ampere, TensorFlow and JAX default to TF32 (10-bit mantissa) and PyTorch's
    cuDNN convolutions do too, while PyTorch's matmuls stay FP32 unless asked."""
    if device != "gpu":
        return "fp32"
    try:
        if backend == "torch":
            import torch

            if torch.cuda.get_device_capability(0) < (8, 0):
                return "fp32"
            mm = "fp32" if torch.get_float32_matmul_precision() == "highest" else "tf32"
            conv = "tf32" if torch.backends.cudnn.allow_tf32 else "fp32"
            return mm if mm == conv else f"matmul {mm}, conv {conv}"
        if backend == "jax":
            import jax

            if float(getattr(jax.devices()[0], "compute_capability", "0") or 0) < 8.0:
                return "fp32"
            setting = str(jax.config.jax_default_matmul_precision).lower()
            if setting in ("highest", "float32", "precision.highest"):
                return "fp32"
            return "bf16" if setting == "bfloat16" else "tf32"  # None (the default): TF32 on NVIDIA GPUs
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability") if gpus else None
        if not capability or tuple(capability) < (8, 0):
            return "fp32"
        return "tf32" if tf.config.experimental.tensor_float_32_execution_enabled() else "fp32"
    except Exception as exc:  # a framework without these switches: say so rather than guess
        return f"unknown ({type(exc).__name__})"


@dataclass
class Kernels:
    """A matmul and a streaming add on the device, through one framework, and how to wait for them."""

    a: Any  # the n x n matrix
    mm: Callable[[Any], Any]
    big: Any  # the vector streamed through memory
    add: Callable[[Any], Any]
    sync: Callable[[Any], Any]
    device_name: str


#: The matmul dtype of the peak for each Keras precision policy (float32 otherwise), and its short name.
MATMUL_DTYPES = {"mixed_bfloat16": ("bfloat16", "bf16"), "mixed_float16": ("float16", "fp16")}


def kernels(backend: str, gpu: bool, host: Any, dtype: str = "float32") -> Kernels:
    """The peak's two kernels in ``backend`` (jax, torch, else TensorFlow) on the GPU or the CPUs, the
    matmul in ``dtype`` (the streaming add stays float32: it measures memory, not arithmetic)."""
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        target = jax.devices("gpu" if gpu else "cpu")[0]
        return Kernels(jax.device_put(jnp.asarray(host, dtype=getattr(jnp, dtype)), target), jax.jit(lambda u: u @ u),
                       jax.device_put(jnp.ones((1 << 26,), dtype=jnp.float32), target), jax.jit(lambda u: u + 1.0),
                       lambda t: t.block_until_ready(), target.device_kind)
    if backend == "torch":
        import torch

        dev = torch.device("cuda" if gpu else "cpu")
        return Kernels(torch.from_numpy(host).to(dev, getattr(torch, dtype)), lambda u: u @ u,
                       torch.ones(1 << 26, device=dev),
                       lambda u: u + 1.0, (lambda t: torch.cuda.synchronize()) if gpu else (lambda t: t),
                       torch.cuda.get_device_name(0) if gpu else "cpu")
    import tensorflow as tf

    with tf.device("/GPU:0" if gpu else "/CPU:0"):
        a = tf.cast(tf.constant(host), getattr(tf, dtype))
        big = tf.ones((1 << 26,))
    if gpu:  # GPU ops return before they finish: wait for the device
        sync: Callable[[Any], Any] = lambda t: tf.test.experimental.sync_devices()  # noqa: E731
        name = (list_gpus("tensorflow") or ["gpu"])[0]
    else:
        sync, name = (lambda t: t), "cpu"  # TensorFlow runs CPU ops to completion before returning them
    return Kernels(a, tf.function(lambda u: tf.matmul(u, u)), big, tf.function(lambda u: u + 1.0), sync, name)


def best_rate(fn: Callable[[], Any], work: float, budget_s: float) -> tuple[float, int]:
    """The best rate (work per second) of ``fn`` over at least 2 runs filling ``budget_s``, after a warm-up."""
    fn()  # warm-up: tracing, allocation
    best, iters, start = 0.0, 0, time.perf_counter()
    while iters < 2 or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        fn()
        best = max(best, work / (time.perf_counter() - t0))
        iters += 1
    return best, iters


def measure_peak(backend: str, device: str = "cpu", n: int | None = None, budget_s: float = 0.75,
                 policy: str = "float32") -> dict[str, Any]:
    """The practical peak of the device the run trained on, at the precision the run computed in: the
    best rate of n x n matmuls (float32 at the framework's own float32 precision; bfloat16 or float16
    for a mixed-precision run: AMX or AVX512_BF16 on CPUs, tensor cores on GPUs) (n = 2048 on CPUs,
    8192 on a GPU, best of the runs that fit in
    ``budget_s``) and streaming memory bandwidth (read + write of 256 MiB), through the build's own
    framework at the worker's CPUs and threads. On CPUs n = 2048 reaches the same peak as 4096 (within
    2 %, measured on 1 and 2 threads) in a quarter of the time."""
    import numpy as np

    gpu = device == "gpu"
    n = n or (8192 if gpu else 2048)
    dtype, short = MATMUL_DTYPES.get(policy, ("float32", ""))
    k = kernels(backend, gpu, np.random.default_rng(0).standard_normal((n, n), dtype=np.float32), dtype)
    t0 = time.perf_counter()
    gflops, mm_iters = best_rate(lambda: k.sync(k.mm(k.a)), 2.0 * n**3 / 1e9, budget_s)
    gbs, bw_iters = best_rate(lambda: k.sync(k.add(k.big)), 2.0 * 4 * (1 << 26) / 1e9, budget_s)
    return {"gflops": gflops, "bandwidth_gbs": gbs, "matmul_n": n, "matmul_iterations": mm_iters,
            "bandwidth_bytes": 2 * 4 * (1 << 26), "bandwidth_iterations": bw_iters, "backend": backend,
            "device": device, "device_name": k.device_name, "precision": short or float32_precision(backend, device),
            "seconds": time.perf_counter() - t0}
