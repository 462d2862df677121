"""A run's figures from its epochs: epoch time (median or projected), spread, throughput,
utilisation, validation. Pure arithmetic on what the worker sent; the store keeps the result."""

from __future__ import annotations

import statistics
from typing import Literal, Sequence, TypedDict

from cpustudy import targets
from cpustudy.worker.protocol import EpochEvent, RunConfig

UNSTABLE_CV = 0.05  # timed epochs varying more than this (coefficient of variation) are flagged
#: Idle time outside an epoch's steps below this is not called a stall: on a busy machine threads waiting
#: for a CPU that the main thread's run-queue delay does not count left up to ~0.3 s here; the stalls
#: this is for last 1-40 s.
STALL_MIN_S = 0.5


class TargetSummary(TypedDict, total=False):
    """Whether a run to a target reached it, after how many epochs and how much training (``target_summary``)."""
    target_reached: bool
    epochs_to_target: int | None
    time_to_target_s: float | None


class StallSummary(TypedDict, total=False):
    """The idle stall left out of a run's epoch time (``stall_summary``)."""
    stall_s: float | None
    stall_max_s: float | None


class ValidationSummary(TypedDict, total=False):
    """A run's validation: its projected time, the last epoch's loss and accuracy (``validation_summary``)."""
    validation_time_s: float | None
    val_loss: float | None
    val_accuracy: float | None


class Memory(TypedDict, total=False):
    """The most memory a run held: resident (to its last epoch), and on its GPU."""
    peak_rss_bytes: int
    gpu_peak_bytes: int


class RunSummary(TargetSummary, StallSummary, ValidationSummary, Memory, total=False):
    """A run's figures as ``finish_run`` stores them (``store.RUN_SUMMARY_FIELDS``): the tally's (``summarize``),
    and what ``measure.execute`` adds to them (memory, the ISA's and the measured peak)."""
    epoch_time_iqr_s: float | None
    epoch_time_cv: float | None
    unstable: bool | None
    epoch_time_s: float
    measured_epoch_time_s: float
    step_time_s: float
    samples_per_s: float | None
    startup_s: float | None
    projected: bool
    timed_epochs: int
    epoch_boundary_s: float | None
    cpu_utilization: float | None
    wait_share: float | None
    gpu_utilization: float | None
    isa_peak_gflops: float | None
    isa_peak_basis: str | None
    peak_gflops: float | None
    mem_bandwidth_gbs: float | None
    peak_device: str | None
    peak_precision: str | None


def summarize(config: RunConfig, epochs: Sequence[EpochEvent], startup_s: float | None) -> RunSummary:
    """The run's figures from its epochs: median of the timed (non-warm-up) epochs, each without its
    idle stall (wall time outside the steps with no CPU time: stored apart as ``stall_s``).

    With a step cap below a full epoch, the full-epoch time is projected and flagged ``projected``:
    the median time inside the steps scaled to a full epoch's steps, plus the median time the epoch
    spends outside its steps (iterator set-up and tear-down happen once per epoch, whatever its
    length; scaling them with the steps would inflate a 20-step epoch's 2.5 s stall 23-fold). Epochs
    stored without that split (older runs) are projected as a whole. With no timed epoch
    (``--epochs 1``) the warm-up epoch is used and ``timed_epochs`` is 0.
    """
    epochs = [without_stall(e) for e in epochs]
    timed = [e for e in epochs if not e.get("warmup")]
    basis = timed or list(epochs)
    if not basis:
        return {"startup_s": startup_s, "timed_epochs": 0, "projected": False}
    measured = statistics.median(e["elapsed_s"] for e in basis)
    steps = config.steps_run
    step_time, boundary = step_times(basis, measured, steps)
    projected = config.steps_per_epoch is not None
    by_parts = projected and boundary is not None  # projected from the time inside and outside the steps
    epoch_time = (step_time * config.full_steps_per_epoch + (boundary or 0.0)) if projected else measured
    iqr, cv = epoch_spread(basis, config.full_steps_per_epoch / steps if projected else 1.0, by_parts)
    return {
        **target_summary(config, epochs),
        "epoch_time_iqr_s": iqr,
        "epoch_time_cv": cv,
        "unstable": None if cv is None else cv > UNSTABLE_CV,
        "epoch_time_s": epoch_time,
        "measured_epoch_time_s": measured,
        "step_time_s": step_time,
        "samples_per_s": throughput(config, basis, measured, epoch_time, by_parts),
        "startup_s": startup_s,
        "projected": projected,
        "timed_epochs": len(timed),
        "epoch_boundary_s": boundary,
        "cpu_utilization": cpu_utilization(config, basis),
        **stall_summary(basis),
        "wait_share": wait_share(basis),
        "gpu_utilization": gpu_utilization(basis),
        **validation_summary(config, basis),
    }


def stall_of(epoch: EpochEvent) -> float:
    """The epoch's idle stall: wall time outside its steps with no CPU time (``idle_s``), from
    ``STALL_MIN_S`` up; 0 below it or where it was not recorded."""
    idle = epoch.get("idle_s")
    return float(idle) if idle is not None and idle >= STALL_MIN_S else 0.0


def without_stall(epoch: EpochEvent) -> EpochEvent:
    """The epoch with its idle stall taken out of its training time and of the time outside its steps
    (kept as ``stall_s``): a stall is shown apart and never enters a run's figures."""
    stall = stall_of(epoch)
    out: EpochEvent = {**epoch, "stall_s": stall}
    if stall:
        out["elapsed_s"] = epoch["elapsed_s"] - stall
        boundary = epoch.get("boundary_s")
        if boundary is not None:
            out["boundary_s"] = max(0.0, boundary - stall)
    return out


#: The seconds an epoch may have recorded or not.
Timed = Literal["steps_s", "boundary_s", "wait_s", "cpu_s", "validation_s", "validation_steps_s"]


def each(basis: Sequence[EpochEvent], name: Timed) -> list[float] | None:
    """Every epoch's ``name``, in order; None where an epoch did not record it."""
    values = [e.get(name) for e in basis]
    known = [v for v in values if v is not None]
    return known if len(known) == len(values) else None


def stall_summary(basis: Sequence[EpochEvent]) -> StallSummary:
    """The idle stall left out of the run's epoch time: median and longest over its epochs (None where
    no epoch recorded its idle time)."""
    if not any(e.get("idle_s") is not None for e in basis):
        return {"stall_s": None, "stall_max_s": None}
    stalls = [e["stall_s"] for e in basis]
    return {"stall_s": statistics.median(stalls), "stall_max_s": max(stalls)}


def wait_share(basis: Sequence[EpochEvent]) -> float | None:
    """Median share of the time inside the steps that the worker's threads spent ready to run without a
    CPU (``wait_s`` / ``steps_s``; summed over the threads, so above 1 where several wait at once); None
    where an epoch did not record it."""
    waits, inside = each(basis, "wait_s"), each(basis, "steps_s")
    if not basis or waits is None or inside is None or not all(inside):
        return None
    return statistics.median(w / s for w, s in zip(waits, inside))


def step_times(basis: Sequence[EpochEvent], measured: float, steps: int) -> tuple[float, float | None]:
    """Seconds per step, and the median time an epoch spends outside its steps: from the epochs' split
    where every epoch has one; otherwise the step time from the whole epoch (``measured``) and None."""
    inside, outside = each(basis, "steps_s"), each(basis, "boundary_s")
    if inside is None or outside is None:
        return measured / steps, None
    return statistics.median(inside) / steps, statistics.median(outside)


def epoch_spread(basis: Sequence[EpochEvent], scale: float, by_parts: bool) -> tuple[float | None, float | None]:
    """The interquartile range and the coefficient of variation of the epoch time reported, on one
    basis for both: each epoch as run scaled by ``scale``, or (``by_parts``) each epoch projected like
    the median (its time inside the steps scaled, the epoch-end stall added once; ``by_parts`` only where every
    epoch has both: ``step_times``). None with one epoch."""
    if len(basis) < 2:
        return None, None
    inside, outside = each(basis, "steps_s"), each(basis, "boundary_s")
    shown = ([i * scale + o for i, o in zip(inside, outside)] if by_parts and inside is not None and outside is not None
             else [e["elapsed_s"] * scale for e in basis])
    q = statistics.quantiles(shown, n=4, method="inclusive")
    mean = statistics.fmean(shown)
    return q[2] - q[0], statistics.stdev(shown) / mean if mean > 0 else None


def throughput(config: RunConfig, basis: Sequence[EpochEvent], measured: float, epoch_time: float,
               by_parts: bool) -> float | None:
    """Samples per second in the epoch reported: a projected full epoch where its outside-steps time is
    known (``by_parts``), else the epochs as measured."""
    if not (measured > 0 and epoch_time > 0):
        return None
    steps = config.steps_run
    samples = basis[0].get("samples") or steps * config.batch_size
    return samples / steps * config.full_steps_per_epoch / epoch_time if by_parts else samples / measured


def cpu_utilization(config: RunConfig, basis: Sequence[EpochEvent]) -> float | None:
    """Median share of the run's vCPUs busy (process CPU time over wall time x vCPUs)."""
    vcpus = config.vcpus or 0
    cpu = each(basis, "cpu_s")
    if not (vcpus and cpu is not None and all(e["elapsed_s"] > 0 for e in basis)):
        return None
    return statistics.median(c / (e["elapsed_s"] * vcpus) for c, e in zip(cpu, basis))


def gpu_utilization(basis: Sequence[EpochEvent]) -> float | None:
    gpu = [g for e in basis if (g := e.get("gpu_util")) is not None]
    return statistics.median(gpu) if gpu else None


def target_summary(config: RunConfig, epochs: Sequence[EpochEvent]) -> TargetSummary:
    """With ``--target-accuracy`` or ``--target``: whether the validation reached it, after how many epochs
    (the warm-up epoch counts: it trains too) and how much training time (its epochs' ``elapsed_s``,
    tracing included, validation excluded, like the full training time)."""
    target = targets.of_run(config.target, config.target_accuracy)
    if target is None:
        return {}
    hit = next((e for e in epochs if target.reached(_target_value(target, e))), None)
    if hit is None:
        return {"target_reached": False, "epochs_to_target": None, "time_to_target_s": None}
    return {"target_reached": True, "epochs_to_target": int(hit["epoch"]),
            "time_to_target_s": sum(e["elapsed_s"] for e in epochs if e["epoch"] <= hit["epoch"])}


def _target_value(target: targets.Target, epoch: EpochEvent) -> float | None:
    """The target's metric in a stored epoch: the worker's reading, else (older runs) its validation accuracy."""
    value = epoch.get("target_value")
    if value is not None:
        return float(value)
    return epoch.get("val_accuracy") if target.metric == "val_accuracy" else None


def validation_summary(config: RunConfig, basis: Sequence[EpochEvent]) -> ValidationSummary:
    """The validation each epoch ran, timed apart from training: its median time, projected to the
    whole test set like training steps are (time inside the validation steps scaled to the full
    number of steps, the rest added once), and the accuracy the last epoch reached."""
    val = [e for e in basis if e.get("validation_s") is not None]
    if not val:
        return {"validation_time_s": None, "val_loss": None, "val_accuracy": None}
    times = [t for e in val if (t := e.get("validation_s")) is not None]  # every one of val's
    measured = statistics.median(times)
    ran = val[0].get("validation_steps") or config.validation_steps or 0
    full = config.full_validation_steps or ran
    split = each(val, "validation_steps_s")
    projected: float
    if ran and full and full != ran and split is not None:
        inside = statistics.median(split)
        outside = statistics.median(t - i for t, i in zip(times, split))
        projected = inside * full / ran + outside
    elif ran and full and full != ran:
        projected = measured * full / ran
    else:
        projected = measured
    last = basis[-1]
    return {"validation_time_s": projected, "val_loss": last.get("val_loss"),
            "val_accuracy": last.get("val_accuracy")}
