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
from typing import TYPE_CHECKING, Mapping, TypedDict

from cpustudy import precision
from cpustudy.cache import cache_dir, write_json
from cpustudy.environment import state
from cpustudy.store import Store
from cpustudy.store.rows import PeakRow
from cpustudy.worker.protocol import PeakEvent, RunConfig

if TYPE_CHECKING:
    from cpustudy.measure.tally import RunSummary


class PeakFigures(TypedDict):
    """A measured peak as a run stores it (``figures``)."""
    peak_gflops: float | None
    mem_bandwidth_gbs: float | None
    peak_device: str | None
    peak_precision: str | None


class IsaFigures(TypedDict):
    """The theoretical peak of a run's CPUs as a run stores it (``isa``)."""
    isa_peak_gflops: float | None
    isa_peak_basis: str | None


def figures(event: PeakEvent) -> PeakFigures:
    """A peak measurement as a run stores it: the rates, and the device and precision they were
    measured on and at (older peaks, measured before devices were told apart, say neither)."""
    return {"peak_gflops": event.get("gflops"), "mem_bandwidth_gbs": event.get("bandwidth_gbs"),
            "peak_device": event.get("device"), "peak_precision": event.get("precision")}


def key(config: RunConfig) -> str:
    """What the hardware peak depends on: the build, its switches, the CPUs and threads, the device, and
    the precision of the matmuls (a reduced one only)."""
    parts: dict[str, object] = {"build": config.build, "python": config.python, "env": dict(config.env),
                             "cpu_list": config.cpu_list, "intra_threads": config.intra_threads,
                             "inter_threads": config.inter_threads, "device": config.device}
    if precision.reduced(config.precision_policy):  # a bfloat16 run's peak is a bfloat16 matmul's (float32 keys kept)
        parts["precision"] = config.precision_policy
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


def known(store: Store, machine_id: int, config: RunConfig) -> PeakFigures | None:
    """The peak already measured for this run's key on this machine (this database, else the file
    cache), when it was measured on the run's device; None when it must be measured."""
    k = key(config)
    found = _stored(store.peak(machine_id, k)) or _from_file(store, machine_id, k)
    if found and (found.get("peak_device") or "cpu") != config.device:
        return None  # measured before peaks were taken on the training device: measure again
    return found


#: A peak at more vCPUs below this share of the one kept at fewer (same build, threads per vCPU, device
#: and precision on this machine) is a disturbed measurement: more cores never compute less. Not 1.0:
#: two vCPUs that are one core's SMT siblings share its FMA units, and repeats differ by a few percent.
FEWER_VCPUS_TOLERANCE = 0.9


def isa(machine: Mapping[str, object], config: RunConfig) -> IsaFigures:
    """The theoretical peak of the run's CPUs at its precision (an estimate, with its basis), as a run
    stores it; none for a run on a GPU."""
    from cpustudy.analysis.peakshare import PEAK_PRECISION
    from cpustudy.environment import isa as isa_mod

    none: IsaFigures = {"isa_peak_gflops": None, "isa_peak_basis": None}
    if config.device != "cpu":
        return none
    peak = isa_mod.theoretical(machine, len(config.cpus) or config.vcpus, PEAK_PRECISION.get(config.precision_policy or "", "fp32"))
    return {"isa_peak_gflops": peak.gflops, "isa_peak_basis": peak.basis} if peak else none


def at_fewer_vcpus(store: Store, machine_id: int, config: RunConfig) -> tuple[float, int] | None:
    """The highest peak kept on this machine at fewer vCPUs for the same build, device, precision and
    threads per vCPU, with its vCPUs; None where there is none."""
    best: tuple[float, int] | None = None
    for r in store.runs(status="ok"):
        peak, vcpus = r.get("peak_gflops"), r.get("vcpus")
        same = (r.get("machine_id") == machine_id and r.get("build") == config.build
                and (r.get("device") or "cpu") == config.device and not r.get("oversubscribed")
                and (r.get("precision_policy") or precision.DEFAULT) == (config.precision_policy or precision.DEFAULT)
                and peak and vcpus and vcpus < config.vcpus
                and _per_vcpu(r.get("intra_threads"), vcpus) == _per_vcpu(config.intra_threads, config.vcpus))
        if same and peak and vcpus and (best is None or float(peak) > best[0]):  # same: both set
            best = (float(peak), int(vcpus))
    return best


def _per_vcpu(threads: int | None, vcpus: int | None) -> float:
    """Intra-op threads per vCPU (threads default to the vCPUs)."""
    v = max(1, int(vcpus or 1))
    return float(threads or v) / v


def doubt(config: RunConfig, event: PeakEvent, summary: RunSummary,
          fewer: tuple[float, int] | None = None) -> str:
    """Why a peak a worker measured cannot be trusted, or "": taken while other processes were busy (the
    state at the run's start), below the rate the run itself achieved (a peak is an upper bound), or
    below the peak kept at ``fewer`` vCPUs (GFLOP/s, vCPUs) on this machine."""
    gflops = event.get("gflops")
    busy = state.busy_share(config.machine_state)
    if busy is not None:
        return (f"measured while other processes used {busy[0]:.0f} % of a CPU ({busy[1]}): not kept; "
                "measured again on the next run")
    achieved = (summary.get("samples_per_s") or 0) * (config.flops_per_sample or 0) / 1e9
    if gflops is not None and achieved and float(gflops) < achieved:
        return (f"{float(gflops):.1f} GFLOP/s is below the {achieved:.1f} GFLOP/s the run itself achieved: a "
                "disturbed measurement, not kept; measured again on the next run")
    if gflops is not None and fewer and float(gflops) < FEWER_VCPUS_TOLERANCE * fewer[0]:
        return (f"{float(gflops):.1f} GFLOP/s at {config.vcpus} vCPUs is below the {fewer[0]:.1f} GFLOP/s kept at "
                f"{fewer[1]} vCPU(s) on this machine: a disturbed measurement, not kept; measured again on the next run")
    return ""


def record(store: Store, machine_id: int, config: RunConfig, event: PeakEvent) -> PeakFigures:
    """Store a peak a worker measured (database and file cache); returns the run's figures."""
    k = key(config)
    store.set_peak(machine_id, k, event.get("gflops"), event.get("bandwidth_gbs"), event)
    path = _file(store, machine_id, k)
    # atomically (a reader in another process never sees half of it); an unwritable cache only means measuring again
    write_json(path, {**event, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return figures(event)


def _stored(row: PeakRow | None) -> PeakFigures | None:
    if not row:
        return None
    details: PeakEvent
    try:
        details = json.loads(row.get("details") or "{}")
    except ValueError:
        details = {}
    return figures({**details, "gflops": row.get("peak_gflops"), "bandwidth_gbs": row.get("mem_bandwidth_gbs")})


def _file(store: Store, machine_id: int, k: str) -> Path:
    fp = store.machine_fingerprint(machine_id)
    return cache_dir() / "peaks" / f"{fp}-{k}.json"


def _from_file(store: Store, machine_id: int, k: str) -> PeakFigures | None:
    """A peak measured on this machine for this configuration into another database: copied into
    this one (with its original date), so the peak is measured once per machine, not per file."""
    event: PeakEvent
    try:
        event = json.loads(_file(store, machine_id, k).read_text())
    except (OSError, ValueError):
        return None
    store.set_peak(machine_id, k, event.get("gflops"), event.get("bandwidth_gbs"), event)
    return figures(event)
