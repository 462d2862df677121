"""What one training bills, decided once: :class:`Billed`, a stored run's parts (:meth:`Billed.of_run`), and
:meth:`Billed.seconds`, ``E x (epoch_s + validation_s + stall_s) + tracing_s + startup_s`` for ``E`` epochs. Read
by compare's speed samples, the summary, ``recommend``, the backtest and a comparison's ledger: one run, the same
seconds in all. Validation is billed as the run stored it (``validation_time_s`` after every epoch); a run stored
without a validation time (``--validation none``, or from before it was timed) bills none, wherever it is read.
The start-up bills what a full training's would (:func:`startup_s`): generating synthetic data is the tool's own
cost, not the training's, and a capped run loads only its capped samples.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence, overload

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from cpustudy.store.rows import EpochRow, RunRow


@dataclass(frozen=True)
class Billed:
    """One run's billed time, in its parts: what a training like it bills per epoch and once."""

    epoch_s: float  # a full epoch's training time (projected from capped epochs where the run was)
    tracing_s: float  # the first epoch's extra time (tracing, building the input pipeline)
    validation_s: float  # the validation after each epoch (0 where none was stored)
    startup_s: float  # worker spawn -> first step (importing the framework, loading data)
    stall_s: float = 0.0  # idle wall time between epochs (outside the epoch's steps)

    @property
    def per_epoch_s(self) -> float:
        """What each epoch bills: its training, the validation after it and the stall around it."""
        return self.epoch_s + self.validation_s + self.stall_s

    @property
    def once_s(self) -> float:
        """What a training bills once: the worker's start-up and the first epoch's tracing."""
        return self.tracing_s + self.startup_s

    @overload
    def seconds(self, epochs: float) -> float: ...

    @overload
    def seconds(self, epochs: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...

    def seconds(self, epochs: float | npt.NDArray[np.float64]) -> float | npt.NDArray[np.float64]:
        """The billed seconds of a training of ``epochs`` epochs (a number, or a numpy array of them)."""
        return epochs * self.per_epoch_s + self.once_s

    @classmethod
    def of_run(cls, run: RunRow, epochs: Sequence[EpochRow]) -> Billed | None:
        """A stored ok run's parts (None: failed, or no full epoch's time). With no timed epoch (the target reached in
        the first), that epoch, tracing and all, stands for every epoch (an overestimate, never an underestimate)."""
        if run.get("status") != "ok":
            return None
        first = next((e for e in epochs if e.get("warmup")), None)
        validation, startup = float(run.get("validation_time_s") or 0.0), startup_s(run)
        epoch_time = run.get("epoch_time_s")
        if not epoch_time:
            full = run.get("full_steps_per_epoch")
            if first is None or len(epochs) != 1 or (full and (steps := first.get("steps")) and steps < full):
                return None
            return cls(float(first["elapsed_s"]), 0.0, validation, startup)
        measured = run.get("measured_epoch_time_s") or epoch_time
        tracing = max(0.0, float(first["elapsed_s"]) - float(measured)) if first else 0.0
        return cls(float(epoch_time), tracing, validation, startup, max(0.0, float(run.get("stall_s") or 0.0)))


def startup_s(run: RunRow) -> float:
    """A stored run's start-up as a full training bills it. Its data preparation (``software.data_prep``) is put
    right where it is synthetic or learnable: data the worker generated (not loaded from the cache) bills nothing,
    since a training on its real data loads it instead, and generating 60,000 samples can take longer than the
    training; data loaded from the cache for a capped run (fewer samples than a full epoch) is scaled to a full
    epoch's samples. Real data is loaded whole for a capped run too: its start-up bills as measured. A run that
    stored no data preparation bills its start-up as measured."""
    startup = float(run.get("startup_s") or 0.0)
    software = run.get("software")
    try:
        prep = (json.loads(software) if isinstance(software, str) else dict(software or {})).get("data_prep") or {}
    except (TypeError, ValueError, AttributeError):  # an unreadable software report: the start-up as measured
        return startup
    seconds, samples = float(prep.get("seconds") or 0.0), int(prep.get("samples") or 0)
    if not seconds or seconds > startup:
        return startup
    if prep.get("source") not in ("synthetic", "learnable"):  # real data: loaded whole, as a full training would
        return startup
    if not prep.get("from_cache"):
        return startup - seconds
    full = int(run.get("full_steps_per_epoch") or 0) * int(run.get("batch_size") or 0)
    if run.get("steps_per_epoch") and samples and full > samples:
        return startup + seconds * (full / samples - 1.0)
    return startup


def to_target_s(run: RunRow, epochs: Sequence[EpochRow]) -> float | None:
    """What a stored training that reached its target billed, as ``compare`` bills one (None: it did not reach
    it, or it has no parts): its :class:`Billed` at its epochs to the target. The backtest and ``--check`` read it."""
    billed = Billed.of_run(run, epochs) if run.get("target_reached") else None
    n = run.get("epochs_to_target")  # set with target_reached
    return None if billed is None or n is None else float(billed.seconds(n))

