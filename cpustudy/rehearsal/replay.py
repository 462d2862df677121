"""Measurements played back instead of trained: the decision loop's tests and simulations, in milliseconds.

A worker's event stream, recorded as JSON lines (``{"kind": ..., "event": {...}}`` a line, read by
:func:`load_stream`), supplies what a run says of its software, its data and its model. A
:class:`Truth` says how fast each configuration trains and how each seed's validation metric moves from
epoch to epoch. :class:`Simulated` is a :class:`cpustudy.measure.execute.WorkerSource`: given to ``execute``
(or to ``compare``'s loop as its measurer), every run is stored exactly as a real one is, through the same
bookkeeping, summary and target rules; only the training is not done. No user command takes this path: a
simulated run's software event says ``"simulated": true``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, Sequence, cast

import numpy as np

from cpustudy.measure.execute import Measurer, Worker, execute
from cpustudy.targets import of_run, value_in
from cpustudy.worker import protocol
from cpustudy.worker.protocol import RunConfig


def load_stream(path: str | Path) -> list[protocol.Event]:
    """A recorded event stream: (kind, event) per line."""
    out = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            item = json.loads(line)
            if item["kind"] not in protocol.EVENTS:
                raise ValueError(f"{path}: unknown event kind {item['kind']!r}")
            out.append((item["kind"], item["event"]))
    return out


class Played(Worker):
    """A started worker that plays ``events`` (an iterable, consumed lazily) instead of training: the interface
    ``execute`` reads from a worker process, with no process behind it."""

    def __init__(self, events: Callable[[float], Iterator[protocol.Event]]) -> None:
        self.spawned_at = time.time()
        self._events = events

    def events(self, timeout_s: float | None) -> Iterator[protocol.Event]:
        yield from self._events(self.spawned_at)


@dataclass(frozen=True)
class Truth:
    """The truth a simulation measures. ``step_s(config)``: a configuration's mean seconds per training step
    (any function of its vCPUs, precision, batch size...); ``metric(config, epoch)``: the validation metric a
    run of ``config.seed`` reaches after ``epoch`` (1-based); ``noise``: the standard deviation of a run's log
    time (every epoch of a run shares its draw, as a slow spell does); ``session_shift``: a log factor every
    run of this truth shares (a slower or faster session); the start-up, the first epoch's tracing and
    each (whole) validation's seconds."""

    step_s: Callable[[RunConfig], float]
    metric: Callable[[RunConfig, int], float]
    noise: float = 0.05
    session_shift: float = 0.0
    startup_s: float = 5.0
    tracing_s: float = 0.5
    validation_s: float = 0.3
    metric_name: str = "val_accuracy"
    startup_of: Callable[[RunConfig], float] | None = None  # a start-up per configuration (None: startup_s)


@dataclass
class Simulated:
    """A :class:`cpustudy.measure.execute.WorkerSource` that plays a :class:`Truth` over a recorded stream's
    software, data and model events; ``seed`` fixes the runs' noise (each run draws from it in turn)."""

    truth: Truth
    template: Sequence[protocol.Event]
    seed: int = 0
    runs: int = 0  # started so far
    _rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)
        kinds = [k for k, _ in self.template]
        for needed in (protocol.SOFTWARE, protocol.EPOCH):
            if needed not in kinds:
                raise ValueError(f"the recorded stream has no {needed!r} event to play from")

    def machine_state(self) -> dict[str, object]:
        return {"load_1m": 0.0, "busy": [], "simulated": True}

    def start(self, config: RunConfig) -> Played:
        self.runs += 1
        factor = math.exp(self.truth.session_shift + self.truth.noise * float(self._rng.standard_normal()))
        return Played(partial(self._events, config, factor))

    def measurer(self) -> Measurer:
        """``execute`` with this source: the decision loop's measurer."""
        return partial(execute, source=self)

    def _events(self, config: RunConfig, factor: float, spawned_at: float) -> Iterator[protocol.Event]:
        sc = self.truth
        first_epoch = cast(protocol.EpochEvent, next(e for k, e in self.template if k == protocol.EPOCH))
        for kind, event in self.template:
            if kind == protocol.SOFTWARE:
                yield kind, {**event, "simulated": True}
            elif kind == protocol.MODEL:
                yield kind, {**event, "precision_policy": config.precision_policy}
            elif kind == protocol.DATA:  # the truth's start-up is all of it: no data preparation billed apart
                yield kind, {**event, "seconds": 0.0}
            elif kind == protocol.WARMUP:
                yield kind, dict(event)
        startup = sc.startup_of(config) if sc.startup_of else sc.startup_s
        yield protocol.TRAIN_START, {"wall": spawned_at + startup * factor}
        target = of_run(config.target, config.target_accuracy)
        steps = int(config.steps_per_epoch or config.full_steps_per_epoch)
        step_s = sc.step_s(config) * factor
        full_val = int(config.full_validation_steps or config.validation_steps or 1)
        ran_val = int(config.validation_steps or full_val)
        val_s = sc.validation_s * factor * ran_val / full_val  # the steps it ran of the whole validation
        for k in range(1, int(config.epochs) + 1):
            elapsed = steps * step_s + (sc.tracing_s * factor if k == 1 else 0.0)
            value = float(sc.metric(config, k))
            loss = 1.0 / (k + 1) + 1e-6 * int(config.seed) + 1e-9 * self.runs  # every run trains its own way
            metrics = {**(first_epoch.get("metrics") or {}), sc.metric_name: value, "loss": loss}
            event = {**first_epoch, "epoch": k, "elapsed_s": elapsed, "steps": steps, "warmup": k == 1,
                     "samples": steps * int(config.batch_size), "samples_per_s": steps * int(config.batch_size) / elapsed,
                     "steps_s": steps * step_s, "cpu_s": elapsed * int(config.vcpus), "boundary_s": 0.0,
                     "idle_s": 0.0, "loss": loss, "validation_s": val_s, "validation_steps": ran_val,
                     "validation_steps_s": val_s, "metrics": metrics, sc.metric_name: value}
            target_value = value_in(target, metrics) if target is not None else None
            if target is not None:
                event["target_value"] = target_value
            yield protocol.EPOCH, event
            # Stop where the worker's epoch timer stops: at the target, or where a race told it to.
            if target is not None and (target.reached(target_value) or
                                       (config.give_up_after and k >= config.give_up_after)):
                break
        yield protocol.DONE, {}


__all__: Sequence[str] = ("Played", "Truth", "Simulated", "load_stream")
