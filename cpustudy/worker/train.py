"""Train one workload with per-epoch timing and send each epoch to the parent as it ends.

Times kept apart: training steps (``steps_s``), what an epoch spends outside its steps
(``boundary_s``: the data iterator's set-up and tear-down), and validation (``validation_s``).
Standard library only at import; NumPy, TensorFlow and Keras are imported by ``train``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple

from cpustudy import precision
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
    """Run ``config`` and send what it does as it happens: the software, the data, the model, each
    epoch (timed by ``EpochTimer``), the peak where asked, and ``DONE``."""
    from cpustudy.worker.usermodel import workload_for

    keras, software = import_frameworks(config.intra_threads, config.inter_threads)
    workload = workload_for(config)  # a model file is imported only now, after pinning and the framework
    check_device(config, software)
    emit(protocol.SOFTWARE, **software)

    keras.utils.set_random_seed(config.seed)
    prepared = prepare_data(config, workload, keras)
    options, augment = augmentation(config.options)
    # Keras 3 on JAX, and any backend on a GPU, dispatches steps asynchronously: a step's start hook
    # fires when it is queued, and the queue drains at the epoch's end. There the time inside the steps
    # runs from the first step's start to the end of the last (the epoch's training end); TensorFlow
    # on CPUs runs each step to completion, so n - 1 whole steps lie between the first and last starts.
    backend = software.get("keras_backend") or "tensorflow"
    drains = backend in ("jax", "torch") or config.device == "gpu"
    emit(protocol.DATA, **data_event(config, prepared, augment, drains))

    model = build_model(config, workload, keras, prepared.params, options, emit)
    sampler = GpuSampler.start() if config.device == "gpu" else None
    if sampler:
        emit(protocol.GPU_MONITOR, source=sampler.source, index=sampler.index)
    timer = epoch_timer(keras, emit, sampler=sampler, drains=drains,
                        torch_gpu=backend == "torch" and config.device == "gpu", steps=prepared.steps,
                        samples_per_epoch=prepared.samples_per_epoch, target_accuracy=config.target_accuracy)
    inputs = fit_inputs(config, keras, workload, prepared, augment)
    fit_epochs(model, config, inputs, prepared, timer, sampler, emit)
    if config.measure_peak_now:
        emit(protocol.PEAK, **measure_peak(backend, config.device, policy=config.precision_policy))
    emit(protocol.DONE)


HOST_PIPELINE_THREADS = 2  # ImageDataGenerator's fit_generator ran one producer thread beside training


def check_device(config: RunConfig, software: dict[str, Any]) -> None:
    """Record the GPUs and the float32 precision in ``software``; refuse a GPU run without a GPU or with
    a precision policy its GPU cannot run natively (stored as the failed run's reason; the sweep goes on)."""
    device = config.device
    if device == "gpu":
        software["gpus"] = list_gpus(software.get("keras_backend"))
        if not software["gpus"]:
            raise RuntimeError("device gpu was asked for, but the framework sees no GPU")
        software["gpu_compute_capability"] = compute_capability(software.get("keras_backend"))
        problem = gpu_precision_problem(config.precision_policy, software["gpu_compute_capability"])
        if problem:
            raise RuntimeError(problem)
    software["precision"] = float32_precision(software.get("keras_backend") or "tensorflow", device)


@dataclass
class Prepared:
    """The training data (capped to the epoch's steps) and the validation data, and what they make of
    an epoch."""

    data: Any
    cached: bool
    params: dict[str, Any]  # the run's workload parameters, with what the data derived
    steps: int  # per epoch
    samples_per_epoch: int
    val: Any  # None: no validation
    val_steps: int | None
    seconds: float  # generating or loading both


def prepare_data(config: RunConfig, workload: Any, keras: Any) -> Prepared:
    """Training and validation data, timed together."""
    params = dict(config.params)
    batch = config.batch_size
    steps_cap = config.steps_per_epoch
    t0 = time.perf_counter()
    data, cached = training_data(config, workload, keras, params)
    params.update(data.derived)
    steps = int(steps_cap) if steps_cap else -(-len(data) // batch)
    samples_per_epoch = min(len(data), steps * batch)
    val, val_steps = validation_data(config, workload, keras, params)
    return Prepared(data, cached, params, steps, samples_per_epoch, val, val_steps, time.perf_counter() - t0)


def training_data(config: RunConfig, workload: Any, keras: Any, params: dict[str, Any]) -> tuple[Any, bool]:
    """The training data and whether it came from the cache."""
    batch = config.batch_size
    steps_cap = config.steps_per_epoch
    cached = False
    if config.data == "real" or config.model_file:  # a model file's data is its own (load_data)
        data = workload.real(keras, params)
    else:
        n = workload.samples_per_epoch if steps_cap is None else int(steps_cap) * batch
        data, cached = synthetic_cached(workload, n, params, config.seed)
    if config.data == "learnable" and not config.model_file:
        data = planted(data)
    if steps_cap and len(data) > int(steps_cap) * batch:
        # Exactly the capped number of batches per epoch, as with synthetic data (Keras would
        # otherwise carry one iterator across epochs and cut the last one short).
        data = type(data)(data.x[: int(steps_cap) * batch], data.y[: int(steps_cap) * batch], data.derived)
    return data, cached


def validation_data(config: RunConfig, workload: Any, keras: Any, params: dict[str, Any]) -> tuple[Any, int | None]:
    """The example's validation after every epoch (its test set; a capped epoch validates on the same
    share of it), timed apart from training; ``(None, steps asked)`` without validation."""
    batch = config.batch_size
    val_steps = config.validation_steps
    if not val_steps:
        return None, val_steps
    n_val = min(val_steps * batch, workload.validation_samples)
    if config.data == "real" or config.model_file:
        val = workload.real(keras, params, split="test")
    else:
        val, _ = synthetic_cached(workload, n_val, params, config.seed + 1)
        if config.data == "learnable":
            val = planted(val)
    val = type(val)(val.x[:n_val], val.y[:n_val], val.derived)
    return val, -(-len(val) // batch)


def augmentation(config_options: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The workload's build options, with ``augment`` resolved to where it runs, and that place."""
    options = dict(config_options)
    augment = "none"
    if "augment" in options:
        from cpustudy.workloads.base import augment_where

        augment = augment_where(options["augment"])
        options["augment"] = augment
    return options, augment


def augment_description(augment: str, device: str, pipeline: str) -> str:
    return {
        "none": "none",
        "model": f"in the model (Keras preprocessing layers, on the {device})",
        "host": ("on the host: tf.data map on its thread pool" if pipeline == "tfdata" else
                 f"on the host: NumPy in a Python data pipeline ({HOST_PIPELINE_THREADS} threads)"),
    }[augment]


def data_event(config: RunConfig, prepared: Prepared, augment: str, drains: bool) -> dict[str, Any]:
    """The fields of the ``DATA`` event."""
    data, val = prepared.data, prepared.val
    return dict(source=config.data, samples=len(data), seconds=prepared.seconds, derived=data.derived,
                step_timing="until the epoch's training end (asynchronous dispatch)" if drains
                else "between step starts",
                from_cache=config.data != "real" and prepared.cached,
                x_shape=list(data.x.shape), x_dtype=str(data.x.dtype), augment=augment,
                augment_where=augment_description(augment, config.device, config.input_pipeline),
                validation_samples=len(val) if val is not None else 0,
                validation_steps=prepared.val_steps)


def build_model(config: RunConfig, workload: Any, keras: Any, params: dict[str, Any], options: dict[str, Any],
                emit: Emit) -> Any:
    """The workload's model under the run's precision policy, timed and announced (``MODEL``)."""
    if precision.reduced(config.precision_policy):
        keras.mixed_precision.set_global_policy(config.precision_policy)
    t0 = time.perf_counter()
    model = workload.build(keras, params, jit_compile=config.jit_compile, **options)
    emit(protocol.MODEL, parameters=int(model.count_params()), seconds=time.perf_counter() - t0,
         xla=xla_state(model), params=params, precision_policy=str(keras.mixed_precision.global_policy().name))
    return model


def fit_inputs(config: RunConfig, keras: Any, workload: Any, prepared: Prepared, augment: str) -> dict[str, Any]:
    """``model.fit``'s input arguments for the run's input pipeline and augmentation.

    ``tfdata``: one ``tf.data`` pipeline whose iterator lives across epochs (the dataset repeats and
    ``fit`` is given the steps of an epoch). ``numpy``: the study's arrays into ``fit``; Keras 3 then
    makes a new ``tf.data`` iterator every epoch, and dropping the old one waits on its autotuning
    thread's sleep (an idle stall of up to tens of seconds that grows with the iterator's age).
    """
    data, steps = prepared.data, prepared.steps
    batch, seed, pipeline, steps_cap = config.batch_size, config.seed, config.input_pipeline, config.steps_per_epoch
    if pipeline == "tfdata":
        aug = workload.augment_batch_tf if augment == "host" else None
        return {"x": tf_dataset(data.x, data.y, batch, seed, aug), "steps_per_epoch": steps}
    if augment == "host":
        inputs: dict[str, Any] = {"x": host_augmented(keras, workload, data, batch, steps, seed)}
        if not hasattr(keras.utils, "PyDataset"):  # tf.keras 2.x: fit runs a Sequence's threads
            inputs.update(workers=HOST_PIPELINE_THREADS, use_multiprocessing=False)
        return inputs
    return {"x": data.x, "y": data.y, "batch_size": batch, "shuffle": True,
            "steps_per_epoch": int(steps_cap) if steps_cap else None}


def validation_inputs(config: RunConfig, prepared: Prepared) -> dict[str, Any]:
    """``model.fit``'s validation arguments: the test split after every epoch, through the run's input
    pipeline. Keras 3's ``evaluate`` resets its iterator every time, so ``fit`` drops the validation
    iterator after every epoch whatever the dataset: with tf.data's autotuning on, that drop waits on the
    autotuning thread's sleep (measured: mnist_cnn, 20-step epochs, 1 vCPU on a Zen 4 VM, 2.1-2.25 s idle
    every epoch, outside the training steps). ``tfdata`` validates through a pipeline with autotuning
    off and a fixed prefetch: nothing to wait on."""
    val = prepared.val
    if val is None:
        return {}
    if config.input_pipeline == "tfdata":
        return {"validation_data": tf_dataset(val.x, val.y, config.batch_size, config.seed, shuffle=False,
                                              autotune=False),
                "validation_steps": prepared.val_steps}
    return {"validation_data": (val.x, val.y), "validation_batch_size": config.batch_size,
            "validation_steps": prepared.val_steps}


def fit_epochs(model: Any, config: RunConfig, inputs: dict[str, Any], prepared: Prepared, timer: Any,
               sampler: GpuSampler | None, emit: Emit) -> None:
    """The warm-up steps (``WARMUP``), then the run's epochs timed by ``timer``; the GPU sampler stops
    either way."""
    warmup_steps = config.warmup_steps
    try:
        if warmup_steps:
            t0 = time.perf_counter()
            model.fit(**{**inputs, "steps_per_epoch": warmup_steps}, epochs=1, verbose=0)
            emit(protocol.WARMUP, steps=warmup_steps, seconds=time.perf_counter() - t0)
        model.fit(**inputs, **validation_inputs(config, prepared), epochs=config.epochs, verbose=0,
                  callbacks=[timer])
    finally:
        if sampler:
            sampler.stop()


def epoch_timer(keras: Any, emit: Emit, **state: Any) -> Any:
    """An ``EpochTimer`` that is a Keras callback (Keras is imported only by ``train``)."""
    callback = type("EpochTimer", (EpochTimer, keras.callbacks.Callback), {})
    return callback(emit, keras=keras, **state)


class EpochTimer:
    """Times each epoch and sends it (``EPOCH``); a Keras callback once mixed into
    ``keras.callbacks.Callback`` by ``epoch_timer``, and a plain object without Keras.

    Only epoch hooks and the step *start* hook: a step-end hook would turn off Keras 3's
    asynchronous callback dispatch (JAX, torch) and make Keras convert the logs every step.
    """

    def __init__(self, emit: Emit, *, keras: Any, sampler: GpuSampler | None, drains: bool, torch_gpu: bool,
                 steps: int, samples_per_epoch: int, target_accuracy: float | None) -> None:
        super().__init__()  # keras.callbacks.Callback's, where mixed in
        self.emit = emit
        self.keras = keras
        self.sampler = sampler
        self.drains = drains  # steps are dispatched asynchronously and drain at the epoch's end
        self.torch_gpu = torch_gpu  # draining also waits for torch's CUDA queue
        self.steps = steps
        self.samples_per_epoch = samples_per_epoch
        self.target_accuracy = target_accuracy

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        if epoch == 0:
            self.emit(protocol.TRAIN_START, wall=time.time())
        self._steps = StepClock(expected=self.steps)
        self._val: StepClock | None = None
        self._gpu_mark = self.sampler.mark() if self.sampler else 0
        self._c0 = time.process_time()
        self._u0 = used()
        self._o0 = others_waiting()
        self._t0 = time.perf_counter()

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._steps.tick()

    # Validation runs inside the epoch, after its training steps (Keras calls these hooks from
    # the evaluation it runs in fit); timed apart so that training time stays training time.
    def _drain(self) -> None:
        """Wait until queued steps have run: a variable the last step wrote is read back."""
        if self.drains:
            self.keras.ops.convert_to_numpy(self.model.optimizer.iterations)  # type: ignore[attr-defined]
            if self.torch_gpu:
                import torch

                torch.cuda.synchronize()

    def on_test_begin(self, logs: Any = None) -> None:
        self._drain()  # training's queued steps belong to training, not to validation
        self._gpu_train_end = self.sampler.mark() if self.sampler else 0
        self._val = StepClock()

    def on_test_batch_begin(self, batch: int, logs: Any = None) -> None:
        if self._val is not None:
            self._val.tick()

    def on_test_end(self, logs: Any = None) -> None:
        if self._val is not None:
            self._val.finish()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self._val is None:
            self._drain()
        end = time.perf_counter()
        cpu_now = time.process_time()  # read once: the epoch's CPU time and its used() share it
        cpu = cpu_now - self._c0
        self._used = used(cpu_now) - self._u0
        self._others = self._steps.others_outside(self._o0, others_waiting())
        split = epoch_split(self._t0, end, self._steps, self._val, self.drains)
        logs = logs or {}
        val_acc = logs.get("val_accuracy", logs.get("val_acc"))
        self.emit(protocol.EPOCH, **self.epoch_event(epoch, logs, cpu, split))
        target = self.target_accuracy
        if target is not None and val_acc is not None and float(val_acc) >= target:
            self.model.stop_training = True  # type: ignore[attr-defined]  # reached: this run's answer

    def epoch_event(self, epoch: int, logs: Mapping[str, Any], cpu: float,
                    split: EpochSplit) -> dict[str, Any]:
        """The fields of the ``EPOCH`` event."""
        elapsed = split.elapsed_s
        acc = logs.get("accuracy", logs.get("acc"))
        val_acc = logs.get("val_accuracy", logs.get("val_acc"))
        return dict(
            epoch=epoch + 1,
            elapsed_s=elapsed,
            steps=self.steps,
            samples=self.samples_per_epoch,
            samples_per_s=self.samples_per_epoch / elapsed if elapsed > 0 else None,
            loss=float(logs["loss"]) if "loss" in logs else None,
            accuracy=float(acc) if acc is not None else None,
            warmup=epoch == 0,
            cpu_s=cpu,
            steps_s=split.steps_s,
            boundary_s=split.boundary_s,
            validation_s=split.validation_s,
            validation_steps=self._val.began if self._val is not None else None,
            validation_steps_s=split.validation_steps_s,
            idle_s=None if self.drains else idle_outside_steps(split, self._used, self._steps, self._val,
                                                               self._others),
            wait_s=self._steps.steps_wait_s(),
            val_loss=float(logs["val_loss"]) if "val_loss" in logs else None,
            val_accuracy=float(val_acc) if val_acc is not None else None,
            gpu_util=self.sampler.mean(self._gpu_mark, self._gpu_train_end if self._val is not None else None)
            if self.sampler else None,
        )


class EpochSplit(NamedTuple):
    elapsed_s: float  # the epoch's time, validation excluded
    steps_s: float | None  # inside its training steps
    boundary_s: float | None  # outside them
    validation_s: float | None
    validation_steps_s: float | None  # inside the validation steps


def epoch_split(start: float, end: float, steps: StepClock, val: StepClock | None, drains: bool) -> EpochSplit:
    """An epoch's time from ``start`` to ``end`` split into training (``elapsed_s``: validation
    excluded), time inside its steps, time outside them, and validation (its time inside steps too).

    Time inside the steps (StepClock); what the epoch spends outside them (the data iterator's set-up
    and tear-down, which TensorFlow can stall for seconds) is per epoch.
    """
    validation_s = val_steps_s = None
    if val is not None and val.end is not None:
        validation_s = val.end - val.start
        val_steps_s = val.steps_s(validation_s, val.end if drains else None)
    elapsed = end - start - (validation_s or 0.0)
    trained = val.start if val is not None else end  # the training steps' end
    steps_s = steps.steps_s(elapsed, trained if drains else None)
    boundary_s = elapsed - steps_s if steps_s is not None else None
    return EpochSplit(elapsed, steps_s, boundary_s, validation_s, val_steps_s)


def idle_outside_steps(split: EpochSplit, epoch_used: float, steps: StepClock, val: StepClock | None,
                       others_wait: float = 0.0) -> float | None:
    """Wall time outside an epoch's training steps during which the process used no CPU and did not wait
    for one: the part of ``boundary_s`` that :func:`used` does not cover (a lower bound where threads
    overlap), less ``others_wait``, the other threads' wait for a CPU outside the steps
    (:meth:`StepClock.others_outside`). A stall (every thread asleep, such as Keras 3 waiting on an old
    ``tf.data`` iterator's autotuning thread) shows here; busy set-up work and other processes'
    contention, on any of the process's threads, do not."""
    steps_used = steps.steps_used_s()
    if split.boundary_s is None or steps_used is None:
        return None
    val_used = val.used_end - val.used_start if val is not None and val.end is not None else 0.0
    outside = max(0.0, epoch_used - steps_used - val_used) + max(0.0, others_wait)
    return max(0.0, split.boundary_s - outside)


class StepClock:
    """Starts of the first and the last step of a loop, for its time inside steps."""

    def __init__(self, expected: int | None = None) -> None:
        self.start = time.perf_counter()
        self.used_start = used()
        self.first: float | None = None
        self.last: float | None = None
        self.used_first = self.used_last = self.used_end = 0.0
        self.began = 0
        self.end: float | None = None
        self.expected = expected  # the steps the loop will run: its last one is read like its first
        self.others_first: float | None = None
        self.others_last: float | None = None
        self.wait_first: float | None = None  # every thread's run-queue delay, this one's included
        self.wait_last: float | None = None

    def tick(self) -> None:
        self.last = time.perf_counter()
        self.used_last = used()
        if self.first is None:
            self.first, self.used_first = self.last, self.used_last
            if self.expected is not None:  # only a loop told its steps reads the other threads (others_outside)
                self.others_first = others_waiting()
                self.wait_first = self.others_first + _RunDelay.seconds()
        self.began += 1
        if self.began == self.expected and self.began >= 3:
            self.others_last = others_waiting()
            self.wait_last = self.others_last + _RunDelay.seconds()

    def others_outside(self, at_start: float, at_end: float) -> float:
        """The other threads' wait for a CPU outside the steps, from the readings (:func:`others_waiting`) at
        the loop's start and end and at its first and last step: before the first, after the last, less the
        last step's own share (the mean). 0 where the last step was not read (the loop ended early)."""
        if self.others_first is None or self.others_last is None or self.began < 3:
            return 0.0
        per_step = max(0.0, self.others_last - self.others_first) / (self.began - 1)
        return max(0.0, self.others_first - at_start) + max(0.0, at_end - self.others_last - per_step)

    def steps_wait_s(self) -> float | None:
        """Run-queue delay of all the process's threads inside the steps (seconds: time they were ready to
        run but had no CPU), measured like :meth:`steps_s`; None where the last step was not read. A
        worker whose own threads outnumber its CPUs, or a machine whose other work takes them, shows
        here: the steps then run slower for want of a CPU, not for the work they do."""
        if self.wait_first is None or self.wait_last is None or self.began < 3:
            return None
        return max(0.0, self.wait_last - self.wait_first) * self.began / (self.began - 1)

    def finish(self) -> None:
        self.end = time.perf_counter()
        self.used_end = used()

    def steps_used_s(self) -> float | None:
        """CPU time and run-queue wait inside the steps (:func:`used`), measured like :meth:`steps_s`."""
        if self.began < 3 or self.first is None:
            return None
        return (self.used_last - self.used_first) * self.began / (self.began - 1)

    def steps_s(self, elapsed: float, drained: float | None = None) -> float | None:
        """Time inside the steps: n - 1 whole steps from the first start to the last, x n / (n - 1);
        for asynchronously dispatched steps, the n steps from the first start to ``drained``."""
        if self.began < 3 or self.first is None or self.last is None:
            return None
        if drained is not None:
            return min(elapsed, drained - self.first)
        return min(elapsed, (self.last - self.first) * self.began / (self.began - 1))


class _RunDelay:
    """The calling thread's time spent waiting for a CPU (run-queue delay), from Linux's
    ``/proc/thread-self/schedstat``, in seconds; 0 where the kernel does not report it."""

    fd: int | None = None
    missing = False

    @classmethod
    def seconds(cls) -> float:
        if cls.missing:
            return 0.0
        try:
            if cls.fd is None:
                cls.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            return int(os.pread(cls.fd, 64, 0).split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            cls.missing = True
            return 0.0


def others_waiting() -> float:
    """The run-queue delay of every thread of this process but the calling one, summed (seconds; Linux's
    ``/proc/self/task/*/schedstat``). A read per thread, so taken only at an epoch's edges and its first
    and last step. Threads that ended take their wait with them: differences are clamped at 0."""
    me = str(threading.get_native_id())
    total = 0.0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 0.0
    for tid in tids:
        if tid == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return total


def used(cpu: float | None = None) -> float:
    """Process CPU time (``cpu`` where just read) plus this thread's wait for a CPU: wall time not covered
    by it was spent with the whole process asleep, a stall of its own rather than other processes' contention."""
    return (time.process_time() if cpu is None else cpu) + _RunDelay.seconds()


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


def tf_dataset(x: Any, y: Any, batch: int, seed: int, augment: Callable[[Any], Any] | None = None,
               shuffle: bool = True, autotune: bool = True) -> Any:
    """Cached, shuffled each epoch, batched (augmented in a parallel map), repeated and prefetched: the
    tf.data input path. Batched before it repeats, so every epoch has the NumPy path's batches (the last
    one short where the samples do not divide); ``fit`` gets the steps of an epoch and keeps one
    iterator for the whole run. ``autotune=False``: a fixed prefetch of 2 batches and tf.data's autotuning
    off, for an iterator Keras drops and makes again (validation), whose drop would wait on the
    autotuning thread."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache()
    if shuffle:
        ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch)
    if augment is not None:
        ds = ds.map(lambda u, v: (augment(u), v), num_parallel_calls=tf.data.AUTOTUNE)
    if not autotune:
        options = tf.data.Options()
        options.autotune.enabled = False
        return ds.repeat().prefetch(2).with_options(options)
    return ds.repeat().prefetch(tf.data.AUTOTUNE)
