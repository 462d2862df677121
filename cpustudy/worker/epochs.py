"""The epoch timer: a Keras callback that times each epoch of ``fit`` (inside its steps, outside them,
validation apart), reads what the threads waited for a CPU, stops at a target, and sends each epoch to the
parent as it ends. Used alike for the study's workloads, model files and users' scripts.
Standard library only at import (Keras is handed in).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Mapping, NamedTuple

from cpustudy import targets
from cpustudy.worker import protocol
from cpustudy.worker.gpu import GpuSampler

Emit = Callable[..., None]


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
                 steps: int, samples_per_epoch: int, target: Any = None, give_up_after: int | None = None) -> None:
        super().__init__()  # keras.callbacks.Callback's, where mixed in
        self.emit = emit
        self.keras = keras
        self.sampler = sampler
        self.drains = drains  # steps are dispatched asynchronously and drain at the epoch's end
        self.torch_gpu = torch_gpu  # draining also waits for torch's CUDA queue
        self.steps = steps
        self.samples_per_epoch = samples_per_epoch
        self.target = target  # a cpustudy.targets.Target: stop at the first epoch that reaches it
        self.give_up_after = give_up_after  # or after this many epochs short of it (a race's censoring)

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
            iterations = self.model.optimizer.iterations  # type: ignore[attr-defined]
            ops = getattr(self.keras, "ops", None)
            if ops is not None:  # Keras 3, any backend
                ops.convert_to_numpy(iterations)
            else:  # tf.keras 2.x has no keras.ops: a TensorFlow variable, read back
                iterations.numpy()
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
        event = self.epoch_event(epoch, logs, cpu, split)
        if self.target is not None:
            event["target_value"] = targets.value_in(self.target, logs)
        self.emit(protocol.EPOCH, **event)
        if self.target is not None and self.target.reached(event["target_value"]):
            self.model.stop_training = True  # type: ignore[attr-defined]  # reached: this run's answer
        elif self.target is not None and self.give_up_after is not None and epoch + 1 >= self.give_up_after:
            self.model.stop_training = True  # type: ignore[attr-defined]  # censored: it can no longer win

    def epoch_event(self, epoch: int, logs: Mapping[str, Any], cpu: float,
                    split: EpochSplit) -> dict[str, Any]:
        """The fields of the ``EPOCH`` event."""
        elapsed = split.elapsed_s
        acc = targets.accuracy_value(logs)  # under any of Keras' names for it
        val_acc = targets.accuracy_value(logs, "val_")
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
            metrics={k: float(v) for k, v in logs.items() if _number(v)},  # every metric fit logged
            gpu_util=self.sampler.mean(self._gpu_mark, self._gpu_train_end if self._val is not None else None)
            if self.sampler else None,
        )


def _number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


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
