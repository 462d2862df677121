"""A run's figures from its epochs: epoch time (median or projected), spread, throughput,
utilisation, validation. Pure arithmetic on what the worker sent; the store keeps the result."""

from __future__ import annotations

import statistics
from typing import Any, Mapping, Sequence

from cpustudy import targets
from cpustudy.worker.protocol import RunConfig

UNSTABLE_CV = 0.05  # timed epochs varying more than this (coefficient of variation) are flagged
#: Idle time outside an epoch's steps below this is not called a stall: on a busy machine threads waiting
#: for a CPU that the main thread's run-queue delay does not count left up to ~0.3 s here; the stalls
#: this is for last 1-40 s.
STALL_MIN_S = 0.5


def summarize(config: RunConfig, epochs: Sequence[Mapping[str, Any]], startup_s: float | None) -> dict[str, Any]:
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


def stall_of(epoch: Mapping[str, Any]) -> float:
    """The epoch's idle stall: wall time outside its steps with no CPU time (``idle_s``), from
    ``STALL_MIN_S`` up; 0 below it or where it was not recorded."""
    idle = epoch.get("idle_s")
    return float(idle) if idle is not None and idle >= STALL_MIN_S else 0.0


def without_stall(epoch: Mapping[str, Any]) -> dict[str, Any]:
    """The epoch with its idle stall taken out of its training time and of the time outside its steps
    (kept as ``stall_s``): a stall is shown apart and never enters a run's figures."""
    stall = stall_of(epoch)
    out = {**epoch, "stall_s": stall}
    if stall:
        out["elapsed_s"] = epoch["elapsed_s"] - stall
        if epoch.get("boundary_s") is not None:
            out["boundary_s"] = max(0.0, epoch["boundary_s"] - stall)
    return out


def stall_summary(basis: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The idle stall left out of the run's epoch time: median and longest over its epochs (None where
    no epoch recorded its idle time)."""
    if not any(e.get("idle_s") is not None for e in basis):
        return {"stall_s": None, "stall_max_s": None}
    stalls = [e["stall_s"] for e in basis]
    return {"stall_s": statistics.median(stalls), "stall_max_s": max(stalls)}


def wait_share(basis: Sequence[Mapping[str, Any]]) -> float | None:
    """Median share of the time inside the steps that the worker's threads spent ready to run without a
    CPU (``wait_s`` / ``steps_s``; summed over the threads, so above 1 where several wait at once); None
    where an epoch did not record it."""
    if not basis or not all(e.get("wait_s") is not None and e.get("steps_s") for e in basis):
        return None
    return statistics.median(e["wait_s"] / e["steps_s"] for e in basis)


def step_times(basis: Sequence[Mapping[str, Any]], measured: float, steps: int) -> tuple[float, float | None]:
    """Seconds per step, and the median time an epoch spends outside its steps: from the epochs' split
    where every epoch has one; otherwise the step time from the whole epoch (``measured``) and None."""
    if not all(e.get("steps_s") is not None and e.get("boundary_s") is not None for e in basis):
        return measured / steps, None
    return statistics.median(e["steps_s"] for e in basis) / steps, statistics.median(e["boundary_s"] for e in basis)


def epoch_spread(basis: Sequence[Mapping[str, Any]], scale: float, by_parts: bool) -> tuple[float | None, float | None]:
    """The interquartile range and the coefficient of variation of the epoch time reported, on one
    basis for both: each epoch as run scaled by ``scale``, or (``by_parts``) each epoch projected like
    the median (its time inside the steps scaled, the epoch-end stall added once). None with one epoch."""
    if len(basis) < 2:
        return None, None
    shown = ([e["steps_s"] * scale + e["boundary_s"] for e in basis] if by_parts
             else [e["elapsed_s"] * scale for e in basis])
    q = statistics.quantiles(shown, n=4, method="inclusive")
    mean = statistics.fmean(shown)
    return q[2] - q[0], statistics.stdev(shown) / mean if mean > 0 else None


def throughput(config: RunConfig, basis: Sequence[Mapping[str, Any]], measured: float, epoch_time: float,
               by_parts: bool) -> float | None:
    """Samples per second in the epoch reported: a projected full epoch where its outside-steps time is
    known (``by_parts``), else the epochs as measured."""
    if not (measured > 0 and epoch_time > 0):
        return None
    steps = config.steps_run
    samples = basis[0].get("samples") or steps * config.batch_size
    return samples / steps * config.full_steps_per_epoch / epoch_time if by_parts else samples / measured


def cpu_utilization(config: RunConfig, basis: Sequence[Mapping[str, Any]]) -> float | None:
    """Median share of the run's vCPUs busy (process CPU time over wall time x vCPUs)."""
    vcpus = config.vcpus or 0
    if not (vcpus and all(e.get("cpu_s") is not None and e["elapsed_s"] > 0 for e in basis)):
        return None
    return statistics.median(e["cpu_s"] / (e["elapsed_s"] * vcpus) for e in basis)


def gpu_utilization(basis: Sequence[Mapping[str, Any]]) -> float | None:
    gpu = [e["gpu_util"] for e in basis if e.get("gpu_util") is not None]
    return statistics.median(gpu) if gpu else None


def target_summary(config: RunConfig, epochs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
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


def _target_value(target: targets.Target, epoch: Mapping[str, Any]) -> float | None:
    """The target's metric in a stored epoch: the worker's reading, else (older runs) its validation accuracy."""
    if epoch.get("target_value") is not None:
        return float(epoch["target_value"])
    return epoch.get("val_accuracy") if target.metric == "val_accuracy" else None


def validation_summary(config: RunConfig, basis: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The validation each epoch ran, timed apart from training: its median time, projected to the
    whole test set like training steps are (time inside the validation steps scaled to the full
    number of steps, the rest added once), and the accuracy the last epoch reached."""
    val = [e for e in basis if e.get("validation_s") is not None]
    if not val:
        return {"validation_time_s": None, "val_loss": None, "val_accuracy": None}
    measured = statistics.median(e["validation_s"] for e in val)
    ran = val[0].get("validation_steps") or config.validation_steps or 0
    full = config.full_validation_steps or ran
    split = all(e.get("validation_steps_s") is not None for e in val)
    if ran and full and full != ran and split:
        inside = statistics.median(e["validation_steps_s"] for e in val)
        outside = statistics.median(e["validation_s"] - e["validation_steps_s"] for e in val)
        projected = inside * full / ran + outside
    elif ran and full and full != ran:
        projected = measured * full / ran
    else:
        projected = measured
    last = basis[-1]
    return {"validation_time_s": projected, "val_loss": last.get("val_loss"),
            "val_accuracy": last.get("val_accuracy")}
