"""The device's peak (GFLOP/s, memory bandwidth), measured once per machine and configuration.

A worker measures it after training when none is known for the run's key (build, interpreter,
switches, CPUs, threads, device); it is kept in the database and in a file in the user cache, so
another database on the same machine reuses it instead of measuring again. A peak taken while other
processes were busy, or below what the run itself achieved, is neither used nor kept (:func:`doubt`).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Mapping

from cpustudy import precision
from cpustudy.cache import cache_dir
from cpustudy.environment import state
from cpustudy.store import Store
from cpustudy.worker.protocol import RunConfig


def figures(event: Mapping[str, Any]) -> dict[str, Any]:
    """A peak measurement as a run stores it: the rates, and the device and precision they were
    measured on and at (older peaks, measured before devices were told apart, say neither)."""
    return {"peak_gflops": event.get("gflops"), "mem_bandwidth_gbs": event.get("bandwidth_gbs"),
            "peak_device": event.get("device"), "peak_precision": event.get("precision")}


def key(config: RunConfig) -> str:
    """What the hardware peak depends on: the build, its switches, the CPUs and threads, the device, and
    the precision of the matmuls (a reduced one only)."""
    parts: dict[str, Any] = {"build": config.build, "python": config.python, "env": dict(config.env),
                             "cpu_list": config.cpu_list, "intra_threads": config.intra_threads,
                             "inter_threads": config.inter_threads, "device": config.device}
    if precision.reduced(config.precision_policy):  # a bfloat16 run's peak is a bfloat16 matmul's (float32 keys kept)
        parts["precision"] = config.precision_policy
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


def known(store: Store, machine_id: int, config: RunConfig) -> dict[str, Any] | None:
    """The peak already measured for this run's key on this machine (this database, else the file
    cache), when it was measured on the run's device; None when it must be measured."""
    k = key(config)
    found = _stored(store.peak(machine_id, k)) or _from_file(store, machine_id, k)
    if found and (found.get("peak_device") or "cpu") != config.device:
        return None  # measured before peaks were taken on the training device: measure again
    return found


def doubt(config: RunConfig, event: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
    """Why a peak a worker measured cannot be trusted, or "": taken while other processes were busy (the
    state at the run's start), or below the rate the run itself achieved (a peak is an upper bound)."""
    gflops = event.get("gflops")
    busy = state.busy_share(config.machine_state)
    if busy is not None:
        return (f"measured while other processes used {busy[0]:.0f} % of a CPU ({busy[1]}): not kept; "
                "measured again on the next run")
    achieved = (summary.get("samples_per_s") or 0) * (config.flops_per_sample or 0) / 1e9
    if gflops is not None and achieved and float(gflops) < achieved:
        return (f"{float(gflops):.1f} GFLOP/s is below the {achieved:.1f} GFLOP/s the run itself achieved: a "
                "disturbed measurement, not kept; measured again on the next run")
    return ""


def record(store: Store, machine_id: int, config: RunConfig, event: Mapping[str, Any]) -> dict[str, Any]:
    """Store a peak a worker measured (database and file cache); returns the run's figures."""
    k = key(config)
    store.set_peak(machine_id, k, event.get("gflops"), event.get("bandwidth_gbs"), event)
    path = _file(store, machine_id, k)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**event, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
    except OSError:
        pass  # an unwritable cache only means measuring again
    return figures(event)


def _stored(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not row:
        return None
    try:
        details = json.loads(row.get("details") or "{}")
    except ValueError:
        details = {}
    return figures({**details, "gflops": row.get("peak_gflops"), "bandwidth_gbs": row.get("mem_bandwidth_gbs")})


def _file(store: Store, machine_id: int, k: str) -> Path:
    fp = store.machine_fingerprint(machine_id)
    return cache_dir() / "peaks" / f"{fp}-{k}.json"


def _from_file(store: Store, machine_id: int, k: str) -> dict[str, Any] | None:
    """A peak measured on this machine for this configuration into another database: copied into
    this one (with its original date), so the peak is measured once per machine, not per file."""
    try:
        event = json.loads(_file(store, machine_id, k).read_text())
    except (OSError, ValueError):
        return None
    store.set_peak(machine_id, k, event.get("gflops"), event.get("bandwidth_gbs"), event)
    return figures(event)
