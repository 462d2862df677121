"""A run's figures from its epochs: epoch time (median or projected), spread, throughput,
utilisation, validation. Pure arithmetic on what the worker sent; the store keeps the result."""

from __future__ import annotations

import statistics
from typing import Any, Mapping, Sequence

from cpustudy.worker.protocol import RunConfig

UNSTABLE_CV = 0.05  # timed epochs varying more than this (coefficient of variation) are flagged


def summarize(config: RunConfig, epochs: Sequence[Mapping[str, Any]], startup_s: float | None) -> dict[str, Any]:
    """The run's figures from its epochs: median of the timed (non-warm-up) epochs.

    With a step cap below a full epoch, the full-epoch time is projected and flagged ``projected``:
    the median time inside the steps scaled to a full epoch's steps, plus the median time the epoch
    spends outside its steps (iterator set-up and tear-down happen once per epoch, whatever its
    length; scaling them with the steps would inflate a 20-step epoch's 2.5 s stall 23-fold). Epochs
    stored without that split (older runs) are projected as a whole. With no timed epoch
    (``--epochs 1``) the warm-up epoch is used and ``timed_epochs`` is 0.
    """
    timed = [e for e in epochs if not e.get("warmup")]
    basis = timed or list(epochs)
    if not basis:
        return {"startup_s": startup_s, "timed_epochs": 0, "projected": False}
    times = [e["elapsed_s"] for e in basis]
    measured = statistics.median(times)
    steps = config.steps_run
    samples = basis[0].get("samples") or steps * config.batch_size
    split = all(e.get("steps_s") is not None and e.get("boundary_s") is not None for e in basis)
    boundary = statistics.median(e["boundary_s"] for e in basis) if split else None
    step_time = statistics.median(e["steps_s"] for e in basis) / steps if split else measured / steps
    vcpus = config.vcpus or 0
    utilization = None
    if vcpus and all(e.get("cpu_s") is not None and e["elapsed_s"] > 0 for e in basis):
        utilization = statistics.median(e["cpu_s"] / (e["elapsed_s"] * vcpus) for e in basis)
    projected = config.steps_per_epoch is not None
    scale = config.full_steps_per_epoch / steps if projected else 1.0
    iqr = cv = None
    if len(times) >= 2:
        # The spread of the figure reported, on one basis for the IQR and the stability flag: each
        # epoch as run, or each epoch projected like the median (the epoch-end stall added once).
        shown = ([e["steps_s"] * scale + e["boundary_s"] for e in basis] if projected and split
                 else [t * scale for t in times])
        q = statistics.quantiles(shown, n=4, method="inclusive")
        iqr = q[2] - q[0]
        mean = statistics.fmean(shown)
        cv = statistics.stdev(shown) / mean if mean > 0 else None
    epoch_time = (step_time * config.full_steps_per_epoch + (boundary or 0.0)) if projected else measured
    validation = validation_summary(config, basis)
    gpu = [e["gpu_util"] for e in basis if e.get("gpu_util") is not None]
    # Throughput of the epoch reported: a projected full epoch where its outside-steps time is known.
    rate = (samples / steps * config.full_steps_per_epoch / epoch_time if projected and split
            else samples / measured) if measured > 0 and epoch_time > 0 else None
    return {
        **target_summary(config, epochs),
        "epoch_time_iqr_s": iqr,
        "epoch_time_cv": cv,
        "unstable": None if cv is None else cv > UNSTABLE_CV,
        "epoch_time_s": epoch_time,
        "measured_epoch_time_s": measured,
        "step_time_s": step_time,
        "samples_per_s": rate,
        "startup_s": startup_s,
        "projected": projected,
        "timed_epochs": len(timed),
        "epoch_boundary_s": boundary,
        "cpu_utilization": utilization,
        "gpu_utilization": statistics.median(gpu) if gpu else None,
        **validation,
    }


def target_summary(config: RunConfig, epochs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """With ``--target-accuracy``: whether the validation accuracy reached it, after how many epochs
    (the warm-up epoch counts: it trains too) and how much training time (its epochs' ``elapsed_s``,
    tracing included, validation excluded, like the full training time)."""
    target = config.target_accuracy
    if target is None:
        return {}
    hit = next((e for e in epochs if e.get("val_accuracy") is not None and e["val_accuracy"] >= target), None)
    if hit is None:
        return {"target_reached": False, "epochs_to_target": None, "time_to_target_s": None}
    return {"target_reached": True, "epochs_to_target": int(hit["epoch"]),
            "time_to_target_s": sum(e["elapsed_s"] for e in epochs if e["epoch"] <= hit["epoch"])}


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
