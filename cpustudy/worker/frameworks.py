"""Pin the worker to its CPUs and size its thread pools, then import the frameworks and report them.

``pin_and_size`` must run *before* TensorFlow (or NumPy's BLAS) is imported, so every thread pool
is sized for and confined to the run's CPUs. ``import_frameworks`` imports TensorFlow/Keras and
reports versions, backend, oneDNN and the instruction sets TensorFlow says it was not compiled for.
Standard library only at import.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import tempfile
import time
from typing import Any, Callable

from cpustudy import precision

MISSING_ISA = re.compile(r"To enable the following instructions:\s*([A-Za-z0-9_ ]+?)\s*,? in other operations")
ONEDNN_ON = "oneDNN custom operations are on"

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")
RECORDED_ENV = (
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_USE_LEGACY_KERAS",
    "KERAS_BACKEND",
    "XLA_FLAGS",
    "TF_XLA_FLAGS",
    "OMP_NUM_THREADS",
    "KMP_BLOCKTIME",
    "KMP_AFFINITY",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "GLIBC_TUNABLES",  # the memory allocator's settings (huge pages, arenas): they move step times
    "LD_PRELOAD",  # an allocator put in glibc malloc's place (tcmalloc, jemalloc)
    "MALLOC_ARENA_MAX",
)


def pin_and_size(cpus: list[int] | None, intra: int | None, inter: int | None) -> None:
    """Pin this process to ``cpus`` and size thread pools; must run before any heavy import."""
    if cpus:
        os.sched_setaffinity(0, cpus)
    if intra:
        for var in THREAD_ENV:
            os.environ[var] = str(intra)
    if inter:
        os.environ["TF_NUM_INTEROP_THREADS"] = str(inter)


def capture_stderr(fn: Callable[[], Any]) -> tuple[Any, str]:
    """Run ``fn`` with file descriptor 2 captured (TensorFlow's C++ logging writes there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            result = fn()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            sys.stderr.write(text)
    return result, text


def import_frameworks(intra: int | None, inter: int | None) -> tuple[Any, dict[str, Any]]:
    """Import TensorFlow (when used) and Keras; return the Keras module and what they report."""
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    legacy = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # so TF states the ISA it lacks (its stderr is captured)
    software: dict[str, Any] = {
        "python_version": platform.python_version(),
        "python_executable": sys.executable,
        "libc": " ".join(platform.libc_ver()).strip() or None,
        "env": {k: os.environ[k] for k in RECORDED_ENV if k in os.environ},
    }
    tf = None
    import_log = ""
    t0 = time.perf_counter()
    if backend == "tensorflow" or legacy:
        tf, import_log = capture_stderr(lambda: __import__("tensorflow"))
        if intra:
            tf.config.threading.set_intra_op_parallelism_threads(intra)
        if inter:
            tf.config.threading.set_inter_op_parallelism_threads(inter)
    if legacy:
        assert tf is not None  # legacy Keras comes with TensorFlow
        keras = tf.keras  # tf_keras (Keras 2) on TF >= 2.16, Keras 2 itself on older TF
    else:
        import keras  # type: ignore[no-redef]
    software["import_s"] = time.perf_counter() - t0
    software["keras_version"] = getattr(keras, "__version__", None)
    try:
        software["keras_backend"] = keras.backend.backend()
    except AttributeError:
        software["keras_backend"] = backend
    if backend == "torch" and not legacy:
        import torch

        software["torch_version"] = torch.__version__
        if intra:
            torch.set_num_threads(intra)
        if inter:
            torch.set_num_interop_threads(inter)
    if backend == "jax" and not legacy:
        import jax

        software["jax_version"] = jax.__version__
    if tf is not None:
        software.update(tensorflow_report(tf, import_log))
    try:
        import numpy

        software["numpy_version"] = numpy.__version__
    except ImportError:  # pragma: no cover - Keras needs NumPy
        pass
    software["affinity"] = sorted(os.sched_getaffinity(0))
    return keras, software


def tensorflow_report(tf: Any, import_log: str) -> dict[str, Any]:
    """What TensorFlow says of itself: version, build, oneDNN, the instruction sets it was not compiled
    for (from what it logged while importing) and its thread pools."""
    out: dict[str, Any] = {"tf_version": tf.__version__, "tf_git_version": getattr(tf, "__git_version__", None)}
    try:
        out["tf_build_info"] = dict(tf.sysconfig.get_build_info())
    except Exception:  # older builds
        out["tf_build_info"] = {}
    out["onednn"] = onednn_enabled(import_log)
    match = MISSING_ISA.search(import_log)
    reported = bool(match) or "optimized to use available CPU" in import_log
    out["tf_isa_report"] = reported
    # "" = TF reported and lacks nothing; None = TF said nothing about instruction sets
    out["tf_missing_isa"] = match.group(1).strip() if match else ("" if reported else None)
    out["intra_threads"] = tf.config.threading.get_intra_op_parallelism_threads()
    out["inter_threads"] = tf.config.threading.get_inter_op_parallelism_threads()
    return out


def onednn_enabled(import_log: str) -> bool | None:
    try:
        from tensorflow.python.util import _pywrap_util_port

        return bool(_pywrap_util_port.IsMklEnabled())
    except Exception:
        return ONEDNN_ON in import_log if import_log else None


def list_gpus(backend: str | None) -> list[str]:
    """Names of the GPUs the backend sees."""
    if backend == "jax":
        import jax

        return [d.device_kind for d in jax.devices() if d.platform == "gpu"]
    if backend == "torch":
        import torch

        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    import tensorflow as tf

    names = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        names.append(details.get("device_name", gpu.name))
    return names


def compute_capability(backend: str | None) -> float | None:
    """The first GPU's CUDA compute capability (8.0 for an A100, 9.0 for an H100), or None."""
    try:
        if backend == "jax":
            import jax

            gpus = [d for d in jax.devices() if d.platform == "gpu"]
            return float(gpus[0].compute_capability) if gpus else None
        if backend == "torch":
            import torch

            major, minor = torch.cuda.get_device_capability(0)
            return major + minor / 10
        import tensorflow as tf

        devices = tf.config.list_physical_devices("GPU")
        cc = tf.config.experimental.get_device_details(devices[0]).get("compute_capability") if devices else None
        return cc[0] + cc[1] / 10 if cc else None
    except (ImportError, AttributeError, IndexError, RuntimeError, ValueError):
        return None


gpu_precision_problem = precision.gpu_problem  # the worker checks the GPU it really got, as the parent did


def xla_state(model: Any) -> bool | None:
    for attr in ("jit_compile", "_jit_compile"):
        value = getattr(model, attr, None)
        if isinstance(value, bool):
            return value
    return None
