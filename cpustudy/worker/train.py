"""Train one workload with per-epoch timing and send each epoch to the parent as it ends.

Times kept apart: training steps (``steps_s``), what an epoch spends outside its steps
(``boundary_s``: the data iterator's set-up and tear-down), and validation (``validation_s``).
Standard library only at import; NumPy, TensorFlow and Keras are imported by ``train``.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable

from cpustudy.cache import cache_dir
from cpustudy.worker import protocol
from cpustudy.worker.frameworks import (
    compute_capability,
    gpu_precision_problem,
    import_frameworks,
    list_gpus,
    xla_state,
)
from cpustudy.worker.gpu import GpuSampler
from cpustudy.worker.peak import float32_precision, measure_peak
from cpustudy.worker.protocol import RunConfig

Emit = Callable[..., None]

def train(config: RunConfig, emit: Emit) -> None:
    from cpustudy.workloads import ALL

    workload = ALL[config.workload]
    intra, inter = config.intra_threads, config.inter_threads
    keras, software = import_frameworks(intra, inter)
    device = config.device
    if device == "gpu":
        software["gpus"] = list_gpus(software.get("keras_backend"))
        if not software["gpus"]:
            raise RuntimeError("device gpu was asked for, but the framework sees no GPU")
        software["gpu_compute_capability"] = compute_capability(software.get("keras_backend"))
        problem = gpu_precision_problem(config.precision_policy, software["gpu_compute_capability"])
        if problem:
            raise RuntimeError(problem)  # stored as the failed run's reason; the sweep goes on
    software["precision"] = float32_precision(software.get("keras_backend") or "tensorflow", device)
    emit(protocol.SOFTWARE, **software)

    seed = config.seed
    keras.utils.set_random_seed(seed)
    params = dict(config.params)
    batch = config.batch_size
    steps_cap = config.steps_per_epoch
    t0 = time.perf_counter()
    cached = False
    if config.data == "real":
        data = workload.real(keras, params)
    else:
        n = workload.samples_per_epoch if steps_cap is None else int(steps_cap) * batch
        data, cached = synthetic_cached(workload, n, params, seed)
    if config.data == "learnable":
        data = planted(data)
    if steps_cap and len(data) > int(steps_cap) * batch:
        # Exactly the capped number of batches per epoch, as with synthetic data (Keras would
        # otherwise carry one iterator across epochs and cut the last one short).
        data = type(data)(data.x[: int(steps_cap) * batch], data.y[: int(steps_cap) * batch], data.derived)
    params.update(data.derived)
    steps = int(steps_cap) if steps_cap else -(-len(data) // batch)
    samples_per_epoch = min(len(data), steps * batch)
    # The example's validation after every epoch (its test set; a capped epoch validates on the same
    # share of it), timed apart from training.
    val_steps = config.validation_steps
    val = None
    if val_steps:
        n_val = min(val_steps * batch, workload.validation_samples)
        if config.data == "real":
            val = workload.real(keras, params, split="test")
        else:
            val, _ = synthetic_cached(workload, n_val, params, seed + 1)
            if config.data == "learnable":
                val = planted(val)
        val = type(val)(val.x[:n_val], val.y[:n_val], val.derived)
        val_steps = -(-len(val) // batch)
    data_s = time.perf_counter() - t0
    options = dict(config.options)
    augment = "none"
    if "augment" in options:
        from cpustudy.workloads.base import augment_where

        augment = augment_where(options["augment"])
        options["augment"] = augment
    pipeline = config.input_pipeline
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
    emit(protocol.DATA, source=config.data, samples=len(data), seconds=data_s, derived=data.derived,
         step_timing="until the epoch's training end (asynchronous dispatch)" if drains else "between step starts",
         from_cache=config.data != "real" and cached,
         x_shape=list(data.x.shape), x_dtype=str(data.x.dtype), augment=augment,
         augment_where=augment_desc, validation_samples=len(val) if val is not None else 0,
         validation_steps=val_steps)

    if config.precision_policy != "float32":
        keras.mixed_precision.set_global_policy(config.precision_policy)
    t0 = time.perf_counter()
    model = workload.build(keras, params, jit_compile=config.jit_compile, **options)
    emit(protocol.MODEL, parameters=int(model.count_params()), seconds=time.perf_counter() - t0,
         xla=xla_state(model), params=params, precision_policy=str(keras.mixed_precision.global_policy().name))
    sampler = GpuSampler.start() if device == "gpu" else None
    if sampler:
        emit(protocol.GPU_MONITOR, source=sampler.source, index=sampler.index)

    class EpochTimer(keras.callbacks.Callback):  # type: ignore[name-defined]
        # Only epoch hooks and the step *start* hook: a step-end hook would turn off Keras 3's
        # asynchronous callback dispatch (JAX, torch) and make Keras convert the logs every step.
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            if epoch == 0:
                emit(protocol.TRAIN_START, wall=time.time())
            self._steps = StepClock()
            self._val: StepClock | None = None
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
            self._val = StepClock()

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
            # Time inside the steps (StepClock); what the epoch spends outside them (the data
            # iterator's set-up and tear-down, which TensorFlow can stall for seconds) is per epoch.
            steps_s = self._steps.steps_s(elapsed, trained if drains else None)
            boundary_s = elapsed - steps_s if steps_s is not None else None
            logs = logs or {}
            acc = logs.get("accuracy", logs.get("acc"))
            val_acc = logs.get("val_accuracy", logs.get("val_acc"))
            emit(protocol.EPOCH,
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
            target = config.target_accuracy
            if target is not None and val_acc is not None and float(val_acc) >= target:
                self.model.stop_training = True  # reached: the epochs and time to it are this run's answer

    if augment == "host":
        x = host_augmented(keras, workload, data, batch, steps, seed) if pipeline == "numpy" else \
            tf_dataset(data.x, data.y, batch, seed, workload.augment_batch_tf)
        inputs: dict[str, Any] = {"x": x}
        if pipeline == "tfdata":
            inputs["steps_per_epoch"] = steps
        elif not hasattr(keras.utils, "PyDataset"):  # tf.keras 2.x: fit runs a Sequence's threads
            inputs.update(workers=HOST_PIPELINE_THREADS, use_multiprocessing=False)
    elif pipeline == "tfdata":
        inputs = {"x": tf_dataset(data.x, data.y, batch, seed), "steps_per_epoch": steps}
    else:
        inputs = {"x": data.x, "y": data.y, "batch_size": batch, "shuffle": True,
                  "steps_per_epoch": int(steps_cap) if steps_cap else None}
    warmup_steps = config.warmup_steps
    try:
        if warmup_steps:
            t0 = time.perf_counter()
            model.fit(**{**inputs, "steps_per_epoch": warmup_steps}, epochs=1, verbose=0)
            emit(protocol.WARMUP, steps=warmup_steps, seconds=time.perf_counter() - t0)
        validation: dict[str, Any] = {}
        if val is not None:
            validation = {"validation_data": (val.x, val.y), "validation_batch_size": batch,
                          "validation_steps": val_steps}
        model.fit(**inputs, **validation, epochs=config.epochs, verbose=0, callbacks=[EpochTimer()])
    finally:
        if sampler:
            sampler.stop()
    if config.measure_peak_now:
        emit(protocol.PEAK, **measure_peak(software.get("keras_backend") or "tensorflow", device))
    emit(protocol.DONE)


HOST_PIPELINE_THREADS = 2  # ImageDataGenerator's fit_generator ran one producer thread beside training


class StepClock:
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


def host_augmented(keras: Any, workload: Any, data: Any, batch: int, steps: int, seed: int) -> Any:
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


def planted(data: Any) -> Any:
    """``--data learnable``: the same synthetic inputs, labels from the planted rule."""
    from cpustudy.workloads.datasets import plant

    return type(data)(*plant(data.x, data.y), data.derived)


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
    path = os.path.join(cache_dir(), "data", hashlib.sha256(key.encode()).hexdigest()[:24] + ".npz")
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


def tf_dataset(x: Any, y: Any, batch: int, seed: int, augment: Callable[[Any], Any] | None = None) -> Any:
    """Cached, shuffled each epoch, batched (augmented in a parallel map) and prefetched: the tf.data
    input path."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache()
    ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True).repeat().batch(batch)
    if augment is not None:
        ds = ds.map(lambda u, v: (augment(u), v), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)
