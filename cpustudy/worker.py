"""One measurement, in a fresh process: ``python -m cpustudy.worker CONFIG_JSON EVENTS_FD``.

The worker pins itself to its CPUs and sets its thread counts *before* TensorFlow (or NumPy's BLAS)
is imported, so every thread pool is sized for and confined to those CPUs. It then builds the
workload, trains it with a per-epoch wall-clock callback and writes one JSON object per line to the
file descriptor ``EVENTS_FD``: ``software``, ``data``, ``model``, ``train_start``, one ``epoch`` per
epoch as it ends, then ``done`` (or ``error``). The parent stores each as it arrives.

``python -m cpustudy.worker --probe EVENTS_FD`` only imports the frameworks and reports the software
(versions, oneDNN, the instruction sets TensorFlow says it was not compiled for).

This module must run under any build's interpreter (Python >= 3.9, NumPy 1 or 2, Keras 3 or
tf.keras 2.x): it imports only the standard library at module level.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Callable

Emit = Callable[..., None]

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


def _capture_stderr(fn: Callable[[], Any]) -> tuple[Any, str]:
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
        "env": {k: os.environ[k] for k in RECORDED_ENV if k in os.environ},
    }
    tf = None
    import_log = ""
    t0 = time.perf_counter()
    if backend == "tensorflow" or legacy:
        tf, import_log = _capture_stderr(lambda: __import__("tensorflow"))
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
        software["tf_version"] = tf.__version__
        software["tf_git_version"] = getattr(tf, "__git_version__", None)
        try:
            software["tf_build_info"] = dict(tf.sysconfig.get_build_info())
        except Exception:  # older builds
            software["tf_build_info"] = {}
        software["onednn"] = _onednn_enabled(import_log)
        match = MISSING_ISA.search(import_log)
        reported = bool(match) or "optimized to use available CPU" in import_log
        software["tf_isa_report"] = reported
        # "" = TF reported and lacks nothing; None = TF said nothing about instruction sets
        software["tf_missing_isa"] = match.group(1).strip() if match else ("" if reported else None)
        software["intra_threads"] = tf.config.threading.get_intra_op_parallelism_threads()
        software["inter_threads"] = tf.config.threading.get_inter_op_parallelism_threads()
    try:
        import numpy

        software["numpy_version"] = numpy.__version__
    except ImportError:  # pragma: no cover - Keras needs NumPy
        pass
    software["affinity"] = sorted(os.sched_getaffinity(0))
    return keras, software


def _onednn_enabled(import_log: str) -> bool | None:
    try:
        from tensorflow.python.util import _pywrap_util_port

        return bool(_pywrap_util_port.IsMklEnabled())
    except Exception:
        return ONEDNN_ON in import_log if import_log else None


def _gpus(backend: str | None) -> list[str]:
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


def _xla_state(model: Any) -> bool | None:
    for attr in ("jit_compile", "_jit_compile"):
        value = getattr(model, attr, None)
        if isinstance(value, bool):
            return value
    return None


def train(config: dict[str, Any], emit: Emit) -> None:
    from cpustudy.workloads import ALL

    workload = ALL[config["workload"]]
    intra, inter = config.get("intra_threads"), config.get("inter_threads")
    keras, software = import_frameworks(intra, inter)
    device = config.get("device") or "cpu"
    if device == "gpu":
        software["gpus"] = _gpus(software.get("keras_backend"))
        if not software["gpus"]:
            raise RuntimeError("device gpu was asked for, but the framework sees no GPU")
    software["precision"] = float32_precision(software.get("keras_backend") or "tensorflow", device)
    emit("software", **software)

    seed = int(config.get("seed", 0))
    keras.utils.set_random_seed(seed)
    params = dict(config.get("params") or {})
    batch = int(config["batch_size"])
    steps_cap = config.get("steps_per_epoch")
    t0 = time.perf_counter()
    cached = False
    if config["data"] == "real":
        data = workload.real(keras, params)
    else:
        n = workload.samples_per_epoch if steps_cap is None else int(steps_cap) * batch
        data, cached = synthetic_cached(workload, n, params, seed)
    if steps_cap and len(data) > int(steps_cap) * batch:
        # Exactly the capped number of batches per epoch, as with synthetic data (Keras would
        # otherwise carry one iterator across epochs and cut the last one short).
        data = type(data)(data.x[: int(steps_cap) * batch], data.y[: int(steps_cap) * batch], data.derived)
    params.update(data.derived)
    steps = int(steps_cap) if steps_cap else -(-len(data) // batch)
    samples_per_epoch = min(len(data), steps * batch)
    # The example's validation after every epoch (its test set; a capped epoch validates on the same
    # share of it), timed apart from training.
    val_steps = int(config.get("validation_steps") or 0)
    val = None
    if val_steps:
        n_val = min(val_steps * batch, workload.validation_samples)
        if config["data"] == "real":
            val = workload.real(keras, params, split="test")
        else:
            val, _ = synthetic_cached(workload, n_val, params, seed + 1)
        val = type(val)(val.x[:n_val], val.y[:n_val], val.derived)
        val_steps = -(-len(val) // batch)
    data_s = time.perf_counter() - t0
    options = dict(config.get("options") or {})
    augment = "none"
    if "augment" in options:
        from cpustudy.workloads.base import augment_where

        augment = augment_where(options["augment"])
        options["augment"] = augment
    pipeline = config.get("input_pipeline", "numpy")
    augment_desc = {
        "none": "none",
        "model": f"in the model (Keras preprocessing layers, on the {device})",
        "host": ("on the host: tf.data map on its thread pool" if pipeline == "tfdata" else
                 f"on the host: NumPy in a Python data pipeline ({HOST_PIPELINE_THREADS} threads)"),
    }[augment]
    # Keras 3 on JAX, and any backend on a GPU, dispatches steps asynchronously: a step's start hook
    # fires when it is queued, and the queue drains at the epoch's end. There the time inside the steps
    # runs from the first step's start to the end of the last (the epoch's training end); TensorFlow
    # on CPUs runs each step to completion, so n - 1 whole steps lie between the first and last starts.
    backend = software.get("keras_backend") or "tensorflow"
    drains = backend in ("jax", "torch") or device == "gpu"
    emit("data", source=config["data"], samples=len(data), seconds=data_s, derived=data.derived,
         step_timing="until the epoch's training end (asynchronous dispatch)" if drains else "between step starts",
         from_cache=config["data"] == "synthetic" and cached,
         x_shape=list(data.x.shape), x_dtype=str(data.x.dtype), augment=augment,
         augment_where=augment_desc, validation_samples=len(val) if val is not None else 0,
         validation_steps=val_steps)

    t0 = time.perf_counter()
    model = workload.build(keras, params, jit_compile=config.get("jit_compile"), **options)
    emit("model", parameters=int(model.count_params()), seconds=time.perf_counter() - t0,
         xla=_xla_state(model), params=params)
    sampler = GpuSampler.start() if device == "gpu" else None
    if sampler:
        emit("gpu_monitor", source=sampler.source, index=sampler.index)

    class EpochTimer(keras.callbacks.Callback):  # type: ignore[name-defined]
        # Only epoch hooks and the step *start* hook: a step-end hook would turn off Keras 3's
        # asynchronous callback dispatch (JAX, torch) and make Keras convert the logs every step.
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            if epoch == 0:
                emit("train_start", wall=time.time())
            self._steps = _StepClock()
            self._val: _StepClock | None = None
            self._gpu_mark = sampler.mark() if sampler else 0
            self._c0 = time.process_time()
            self._t0 = time.perf_counter()

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self._steps.tick()

        # Validation runs inside the epoch, after its training steps (Keras calls these hooks from
        # the evaluation it runs in fit); timed apart so that training time stays training time.
        def _drain(self) -> None:
            """Wait until queued steps have run: a variable the last step wrote is read back."""
            if drains:
                keras.ops.convert_to_numpy(self.model.optimizer.iterations)
                if backend == "torch" and device == "gpu":
                    import torch

                    torch.cuda.synchronize()

        def on_test_begin(self, logs: Any = None) -> None:
            self._drain()  # training's queued steps belong to training, not to validation
            self._gpu_train_end = sampler.mark() if sampler else 0
            self._val = _StepClock()

        def on_test_batch_begin(self, batch: int, logs: Any = None) -> None:
            if self._val is not None:
                self._val.tick()

        def on_test_end(self, logs: Any = None) -> None:
            if self._val is not None:
                self._val.end = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            if self._val is None:
                self._drain()
            end = time.perf_counter()
            cpu = time.process_time() - self._c0
            validation_s = val_steps_s = None
            if self._val is not None and self._val.end is not None:
                validation_s = self._val.end - self._val.start
                val_steps_s = self._val.steps_s(validation_s, self._val.end if drains else None)
            elapsed = end - self._t0 - (validation_s or 0.0)
            trained = self._val.start if self._val is not None else end  # the training steps' end
            # Time inside the steps (_StepClock); what the epoch spends outside them (the data
            # iterator's set-up and tear-down, which TensorFlow can stall for seconds) is per epoch.
            steps_s = self._steps.steps_s(elapsed, trained if drains else None)
            boundary_s = elapsed - steps_s if steps_s is not None else None
            logs = logs or {}
            acc = logs.get("accuracy", logs.get("acc"))
            val_acc = logs.get("val_accuracy", logs.get("val_acc"))
            emit(
                "epoch",
                epoch=epoch + 1,
                elapsed_s=elapsed,
                steps=steps,
                samples=samples_per_epoch,
                samples_per_s=samples_per_epoch / elapsed if elapsed > 0 else None,
                loss=float(logs["loss"]) if "loss" in logs else None,
                accuracy=float(acc) if acc is not None else None,
                warmup=epoch == 0,
                cpu_s=cpu,
                steps_s=steps_s,
                boundary_s=boundary_s,
                validation_s=validation_s,
                validation_steps=self._val.began if self._val is not None else None,
                validation_steps_s=val_steps_s,
                val_loss=float(logs["val_loss"]) if "val_loss" in logs else None,
                val_accuracy=float(val_acc) if val_acc is not None else None,
                gpu_util=sampler.mean(self._gpu_mark, self._gpu_train_end if self._val is not None else None)
                if sampler else None,
            )

    if augment == "host":
        x = _host_augmented(keras, workload, data, batch, steps, seed) if pipeline == "numpy" else \
            _tf_dataset(data.x, data.y, batch, seed, workload.augment_batch_tf)
        inputs: dict[str, Any] = {"x": x}
        if pipeline == "tfdata":
            inputs["steps_per_epoch"] = steps
        elif not hasattr(keras.utils, "PyDataset"):  # tf.keras 2.x: fit runs a Sequence's threads
            inputs.update(workers=HOST_PIPELINE_THREADS, use_multiprocessing=False)
    elif pipeline == "tfdata":
        inputs = {"x": _tf_dataset(data.x, data.y, batch, seed), "steps_per_epoch": steps}
    else:
        inputs = {"x": data.x, "y": data.y, "batch_size": batch, "shuffle": True,
                  "steps_per_epoch": int(steps_cap) if steps_cap else None}
    warmup_steps = int(config.get("warmup_steps") or 0)
    try:
        if warmup_steps:
            t0 = time.perf_counter()
            model.fit(**{**inputs, "steps_per_epoch": warmup_steps}, epochs=1, verbose=0)
            emit("warmup", steps=warmup_steps, seconds=time.perf_counter() - t0)
        validation: dict[str, Any] = {}
        if val is not None:
            validation = {"validation_data": (val.x, val.y), "validation_batch_size": batch,
                          "validation_steps": val_steps}
        model.fit(**inputs, **validation, epochs=int(config["epochs"]), verbose=0, callbacks=[EpochTimer()])
    finally:
        if sampler:
            sampler.stop()
    if config.get("measure_peak_now"):
        emit("peak", **measure_peak(software.get("keras_backend") or "tensorflow", device))
    emit("done")


HOST_PIPELINE_THREADS = 2  # ImageDataGenerator's fit_generator ran one producer thread beside training


class _StepClock:
    """Starts of the first and the last step of a loop, for its time inside steps."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.first: float | None = None
        self.last: float | None = None
        self.began = 0
        self.end: float | None = None

    def tick(self) -> None:
        self.last = time.perf_counter()
        if self.first is None:
            self.first = self.last
        self.began += 1

    def steps_s(self, elapsed: float, drained: float | None = None) -> float | None:
        """Time inside the steps: n - 1 whole steps from the first start to the last, x n / (n - 1);
        for asynchronously dispatched steps, the n steps from the first start to ``drained``."""
        if self.began < 3 or self.first is None or self.last is None:
            return None
        if drained is not None:
            return min(elapsed, drained - self.first)
        return min(elapsed, (self.last - self.first) * self.began / (self.began - 1))


def _host_augmented(keras: Any, workload: Any, data: Any, batch: int, steps: int, seed: int) -> Any:
    """Batches shuffled and augmented on the host by background threads (Keras 3 ``PyDataset``, or a
    ``Sequence`` under tf.keras 2.x): what ImageDataGenerator.flow with fit_generator did."""
    import numpy as np

    base = getattr(keras.utils, "PyDataset", None) or keras.utils.Sequence
    augment = workload.augment_batch

    class Batches(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            if base is not keras.utils.Sequence:
                super().__init__(workers=HOST_PIPELINE_THREADS, use_multiprocessing=False)
            self.epoch = 0
            self.order = np.random.default_rng((seed, 0)).permutation(len(data.x))

        def __len__(self) -> int:
            return steps

        def __getitem__(self, i: int) -> Any:
            idx = np.sort(self.order[i * batch:(i + 1) * batch])
            rng = np.random.default_rng((seed, self.epoch, i))
            return augment(data.x[idx], rng), data.y[idx]

        def on_epoch_end(self) -> None:
            self.epoch += 1
            self.order = np.random.default_rng((seed, self.epoch)).permutation(len(data.x))

    return Batches()


def synthetic_cached(workload: Any, n: int, params: dict[str, Any], seed: int) -> tuple[Any, bool]:
    """Synthetic data, generated once per shape and seed and kept in the user cache for later
    workers (``CPUSTUDY_CACHE``); set ``CPUSTUDY_NO_DATA_CACHE=1`` to generate afresh every time."""
    import hashlib

    import numpy as np

    from cpustudy import __version__
    from cpustudy.workloads.base import Dataset

    if os.environ.get("CPUSTUDY_NO_DATA_CACHE") == "1":
        return workload.synthetic(n, params, seed), False
    key = json.dumps([__version__, workload.name, n, sorted(workload.resolved_params(params).items()), seed],
                     default=str)
    base = os.environ.get("CPUSTUDY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cpustudy")
    path = os.path.join(base, "data", hashlib.sha256(key.encode()).hexdigest()[:24] + ".npz")
    try:
        with np.load(path) as f:
            return Dataset(f["x"], f["y"], json.loads(str(f["derived"]))), True
    except (OSError, KeyError, ValueError):
        pass
    data = workload.synthetic(n, params, seed)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp.npz"
        np.savez(tmp, x=data.x, y=data.y, derived=json.dumps(data.derived))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs time
    return data, False


def _tf_dataset(x: Any, y: Any, batch: int, seed: int, augment: Callable[[Any], Any] | None = None) -> Any:
    """Cached, shuffled each epoch, batched (augmented in a parallel map) and prefetched: the tf.data
    input path."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache()
    ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True).repeat().batch(batch)
    if augment is not None:
        ds = ds.map(lambda u, v: (augment(u), v), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


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


def measure_peak(backend: str, device: str = "cpu", n: int | None = None, budget_s: float = 0.75) -> dict[str, Any]:
    """The practical peak of the device the run trained on: the best rate of n x n float32 matmuls at
    the framework's own precision (n = 2048 on CPUs, 8192 on a GPU, best of the runs that fit in
    ``budget_s``) and streaming memory bandwidth (read + write of 256 MiB), through the build's own
    framework at the worker's CPUs and threads. On CPUs n = 2048 reaches the same peak as 4096 (within
    2 %, measured on 1 and 2 threads) in a quarter of the time."""
    import numpy as np

    gpu = device == "gpu"
    n = n or (8192 if gpu else 2048)
    host = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        target = jax.devices("gpu" if gpu else "cpu")[0]
        a = jax.device_put(jnp.asarray(host), target)
        mm = jax.jit(lambda u: u @ u)
        big = jax.device_put(jnp.ones((1 << 26,), dtype=jnp.float32), target)
        add = jax.jit(lambda u: u + 1.0)
        sync: Callable[[Any], Any] = lambda t: t.block_until_ready()
        device_name = target.device_kind
    elif backend == "torch":
        import torch

        dev = torch.device("cuda" if gpu else "cpu")
        a = torch.from_numpy(host).to(dev)
        mm = lambda u: u @ u  # noqa: E731
        big = torch.ones(1 << 26, device=dev)
        add = lambda u: u + 1.0  # noqa: E731
        sync = (lambda t: torch.cuda.synchronize()) if gpu else (lambda t: t)
        device_name = torch.cuda.get_device_name(0) if gpu else "cpu"
    else:
        import tensorflow as tf

        name = "/GPU:0" if gpu else "/CPU:0"
        with tf.device(name):
            a = tf.constant(host)
            big = tf.ones((1 << 26,))
        mm = tf.function(lambda u: tf.matmul(u, u))
        add = tf.function(lambda u: u + 1.0)
        if gpu:  # GPU ops return before they finish: wait for the device
            sync = lambda t: tf.test.experimental.sync_devices()  # noqa: E731
            device_name = (_gpus("tensorflow") or ["gpu"])[0]
        else:
            sync = lambda t: t  # TensorFlow runs CPU ops to completion before returning them
            device_name = "cpu"

    def best_rate(fn: Callable[[], Any], work: float) -> tuple[float, int]:
        fn()  # warm-up: tracing, allocation
        best, iters, start = 0.0, 0, time.perf_counter()
        while iters < 2 or time.perf_counter() - start < budget_s:
            t0 = time.perf_counter()
            fn()
            best = max(best, work / (time.perf_counter() - t0))
            iters += 1
        return best, iters

    t0 = time.perf_counter()
    gflops, mm_iters = best_rate(lambda: sync(mm(a)), 2.0 * n**3 / 1e9)
    gbs, bw_iters = best_rate(lambda: sync(add(big)), 2.0 * 4 * (1 << 26) / 1e9)
    return {"gflops": gflops, "bandwidth_gbs": gbs, "matmul_n": n, "matmul_iterations": mm_iters,
            "bandwidth_bytes": 2 * 4 * (1 << 26), "bandwidth_iterations": bw_iters, "backend": backend,
            "device": device, "device_name": device_name, "precision": float32_precision(backend, device),
            "seconds": time.perf_counter() - t0}


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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    probe = bool(argv) and argv[0] == "--probe"
    if probe:
        argv = argv[1:]
    if len(argv) != (1 if probe else 2):
        print("usage: python -m cpustudy.worker CONFIG_JSON EVENTS_FD | --probe EVENTS_FD", file=sys.stderr)
        return 2
    config: dict[str, Any] = {} if probe else json.loads(argv[0])
    out = os.fdopen(int(argv[-1]), "w", buffering=1)

    def emit(kind: str, **fields: Any) -> None:
        out.write(json.dumps({"type": kind, **fields}, default=str) + "\n")
        out.flush()

    try:
        pin_and_size(config.get("cpus"), config.get("intra_threads"), config.get("inter_threads"))
        if probe:
            _, software = import_frameworks(None, None)
            emit("software", **software)
        else:
            train(config, emit)
        return 0
    except BaseException as exc:  # report every failure to the parent, then fail
        traceback.print_exc()
        emit("error", message=f"{type(exc).__name__}: {exc}".strip()[:2000])
        return 1
    finally:
        out.close()


if __name__ == "__main__":
    code = main()
    # Everything the parent needs has been written and flushed. Skipping the interpreter's and
    # TensorFlow's teardown (thread pools, atexit handlers) saves 1-2 s per worker, which in a sweep
    # of short cells is a large share of the wall time.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
