"""Train one workload with per-epoch timing and send each epoch to the parent as it ends.

The data and ``fit``'s inputs are :mod:`cpustudy.worker.data`'s, the epoch timer
:mod:`cpustudy.worker.epochs`'; a user's script is run by :mod:`cpustudy.worker.script` through the same
timer. Standard library only at import; NumPy, TensorFlow and Keras are imported by ``train``.
"""

from __future__ import annotations

import time
from typing import Any

from cpustudy import precision, targets
from cpustudy.worker import protocol
from cpustudy.worker.anchor import VERSION as ANCHOR_VERSION
from cpustudy.worker.anchor import anchor_s
from cpustudy.worker.data import Prepared, augmentation, data_event, fit_inputs, prepare_data, validation_inputs
from cpustudy.worker.epochs import Emit, epoch_timer
from cpustudy.worker.frameworks import (
    compute_capability,
    gpu_precision_problem,
    import_frameworks,
    list_gpus,
    xla_state,
)
from cpustudy.worker.gpu import GpuSampler, device_memory_peak
from cpustudy.worker.peak import float32_precision, measure_peak
from cpustudy.worker.protocol import RunConfig

def train(config: RunConfig, emit: Emit) -> None:
    """Run ``config`` and send what it does as it happens: the software, the data, the model, each
    epoch (timed by ``EpochTimer``), the peak where asked, and ``DONE`` (with the anchor: ``worker.anchor``)."""
    from cpustudy.worker.usermodel import workload_for

    keras, software = import_frameworks(config.intra_threads, config.inter_threads)
    check_device(config, software)
    emit(protocol.SOFTWARE, **software)
    keras.utils.set_random_seed(config.seed)
    # Keras 3 on JAX, and any backend on a GPU, dispatches steps asynchronously: a step's start hook
    # fires when it is queued, and the queue drains at the epoch's end. There the time inside the steps
    # runs from the first step's start to the end of the last (the epoch's training end); TensorFlow
    # on CPUs runs each step to completion, so n - 1 whole steps lie between the first and last starts.
    backend = software.get("keras_backend") or "tensorflow"
    drains = backend in ("jax", "torch") or config.device == "gpu"
    timing = Timing(config, keras, emit, drains, torch_gpu=backend == "torch" and config.device == "gpu")
    try:
        if config.script:  # the user's own training script, its first fit measured by the same timer
            from cpustudy.worker.script import train_script

            if precision.reduced(config.precision_policy):
                keras.mixed_precision.set_global_policy(config.precision_policy)
            train_script(config, keras, emit, timing.timer)
        else:
            workload = workload_for(config)  # a model file is imported only now, after pinning and the framework
            prepared = prepare_data(config, workload, keras)
            options, augment = augmentation(config.options)
            emit(protocol.DATA, **data_event(config, prepared, augment, drains))
            model = build_model(config, workload, keras, prepared.params, options, emit)
            timer = timing.timer(prepared.steps, prepared.samples_per_epoch)
            inputs = fit_inputs(config, keras, workload, prepared, augment)
            fit_epochs(model, config, inputs, prepared, timer, emit)
    finally:
        timing.stop()
    device_peak = device_memory_peak(backend) if config.device == "gpu" else None  # before the peak's own matrices
    anchor = {"anchor_s": anchor_s(), "anchor_version": ANCHOR_VERSION}  # after the epochs, before the peak
    if config.measure_peak_now:
        emit(protocol.PEAK, **measure_peak(backend, config.device, policy=config.precision_policy))
    emit(protocol.DONE, **anchor, **({"gpu_peak_bytes": device_peak} if device_peak is not None else {}))


class Timing:
    """The epoch timer of a run, and its GPU sampler (started with the timer, stopped by :meth:`stop`)."""

    def __init__(self, config: RunConfig, keras: Any, emit: Emit, drains: bool, torch_gpu: bool) -> None:
        self.config, self.keras, self.emit, self.drains, self.torch_gpu = config, keras, emit, drains, torch_gpu
        self.sampler: GpuSampler | None = None

    def timer(self, steps: int, samples_per_epoch: int) -> Any:
        """A Keras callback timing each epoch of ``steps`` steps and ``samples_per_epoch`` samples."""
        if self.config.device == "gpu" and self.sampler is None:
            self.sampler = GpuSampler.start()
            self.emit(protocol.GPU_MONITOR, source=self.sampler.source, index=self.sampler.index)
        return epoch_timer(self.keras, self.emit, sampler=self.sampler, drains=self.drains, torch_gpu=self.torch_gpu,
                           steps=steps, samples_per_epoch=samples_per_epoch,
                           target=targets.of_run(self.config.target, self.config.target_accuracy),
                           give_up_after=self.config.give_up_after)

    def stop(self) -> None:
        if self.sampler:
            self.sampler.stop()


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


def fit_epochs(model: Any, config: RunConfig, inputs: dict[str, Any], prepared: Prepared, timer: Any,
               emit: Emit) -> None:
    """The warm-up steps (``WARMUP``), then the run's epochs timed by ``timer``."""
    warmup_steps = config.warmup_steps
    if warmup_steps:
        t0 = time.perf_counter()
        model.fit(**{**inputs, "steps_per_epoch": warmup_steps}, epochs=1, verbose=0)
        emit(protocol.WARMUP, steps=warmup_steps, seconds=time.perf_counter() - t0)
    model.fit(**inputs, **validation_inputs(config, prepared), epochs=config.epochs, verbose=0, callbacks=[timer])
