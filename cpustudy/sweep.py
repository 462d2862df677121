"""Sweeps: the grid workloads x builds x vCPU counts x repeats, one fresh worker per cell.

* Everything is validated before the first cell runs (unknown names, builds not set up, more vCPUs
  than the machine has).
* Cells are interleaved: consecutive cells differ in build (and the build order rotates), so slow
  drift of a shared machine hits every configuration alike.
* Resumable: a cell is done when an ``ok`` run with its key exists; ``fresh`` measures again. A
  killed sweep leaves at most one run ``running``; the next sweep marks it failed and measures the
  cell again, so re-running the same command ends with exactly the planned ``ok`` runs.
* One measurement at a time per database: an exclusive lock file beside it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from cpustudy import machine as machine_mod
from cpustudy.errors import UserError
from cpustudy.runner import RunOutcome, RunSpec, execute, plan
from cpustudy.store import Store
from cpustudy.workloads import Workload

KEY_FIELDS = (
    "workload", "device", "build", "vcpus", "repeat", "epochs", "steps_per_epoch", "batch_size",
    "data", "seed", "intra_threads", "inter_threads", "jit_compile", "options", "params",
    "input_pipeline", "env", "warmup_steps", "tuning_id", "validation",
)
DEFAULT_STARTUP_S = 10.0


def parse_vcpus(text: str, topo: machine_mod.CpuTopology) -> list[int]:
    """``auto`` (1, 2, 4, ... up to this machine's CPUs) or a comma-separated list."""
    if text.strip() == "auto":
        out, n = [], 1
        while n < topo.logical:
            out.append(n)
            n *= 2
        return out + [topo.logical]
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            n = int(part)
        except ValueError:
            raise UserError(f"--vcpus: {part!r} is not a whole number (give e.g. 1,2 or auto)") from None
        if n <= 0:
            raise UserError(f"--vcpus: {n} must be positive (give e.g. 1,2 or auto)")
        values.append(n)
    if not values:
        raise UserError("--vcpus: give one or more counts, e.g. 1,2, or auto")
    return sorted(dict.fromkeys(values))


def cell_key(config: dict[str, Any], machine_fingerprint: str) -> str:
    key = {k: config.get(k) for k in KEY_FIELDS}
    key["machine"] = machine_fingerprint
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]


@dataclass
class Cell:
    config: dict[str, Any]

    @property
    def key(self) -> str:
        return self.config["cell_key"]

    @property
    def label(self) -> str:
        c = self.config
        return f"{c['workload']} {c['build']} {c['vcpus']} vCPU r{c['repeat']}"


def interleave(workloads: Sequence[Workload], builds: Sequence[str], vcpus: Sequence[int],
               repeats: int) -> list[tuple[Workload, str, int, int]]:
    """Grid order: builds alternate from cell to cell, and their order rotates."""
    out = []
    turn = 0
    for r in range(repeats):
        for w in workloads:
            for v in vcpus:
                k = turn % len(builds)
                for b in list(builds[k:]) + list(builds[:k]):
                    out.append((w, b, v, r))
                turn += 1
    return out


def plan_sweep(
    workloads: Sequence[Workload],
    builds: Sequence[str],
    vcpus: Sequence[int],
    *,
    repeats: int = 1,
    machine_fingerprint: str,
    topo: machine_mod.CpuTopology | None = None,
    **spec_args: Any,
) -> list[Cell]:
    """Every cell's worker configuration; raises ``UserError`` before anything runs."""
    if repeats <= 0:
        raise UserError(f"--repeats must be a positive whole number, got {repeats}")
    topo = topo or machine_mod.read_topology()
    cells = []
    for w, b, v, r in interleave(workloads, builds, vcpus, repeats):
        config = plan(RunSpec(workload=w, vcpus=v, build=b, repeat=r, **spec_args), topo)
        config["cell_key"] = cell_key(config, machine_fingerprint)
        cells.append(Cell(config))
    return cells


def pending(store: Store | None, cells: Iterable[Cell], fresh: bool = False) -> list[Cell]:
    cells = list(cells)
    if fresh or store is None:
        return cells
    done = {r["cell_key"] for r in store.runs(status="ok", cell_keys=[c.key for c in cells])}
    return [c for c in cells if c.key not in done]


def estimate_seconds(store: Store | None, cell: Cell) -> tuple[float, bool]:
    """Expected wall time of a cell and whether it comes from earlier runs (else a rough guess).

    Earlier ok runs of the same workload, build and vCPUs give the step time and startup; without
    them, the workload's FLOPs at an assumed 20 GFLOP/s per vCPU (a guess, labelled as such).
    """
    c = cell.config
    steps = c["steps_per_epoch"] or c["full_steps_per_epoch"]
    if store is not None:
        rows = [r for r in store.runs(status="ok") if r["workload"] == c["workload"]
                and r["build"] == c["build"] and r["vcpus"] == c["vcpus"] and r["step_time_s"]]
        if rows:
            step = statistics.median(r["step_time_s"] for r in rows)
            start = statistics.median(r["startup_s"] or DEFAULT_STARTUP_S for r in rows)
            return start + c["epochs"] * steps * step, True
    step = c["flops_per_sample"] * c["batch_size"] / (20e9 * c["vcpus"])
    return DEFAULT_STARTUP_S + c["epochs"] * steps * max(step, 1e-3), False


class SweepLock:
    """An exclusive lock beside the database: one measuring process per database at a time."""

    def __init__(self, db_path: Path) -> None:
        self.path = Path(str(db_path) + ".lock")
        self.fd: int | None = None

    def __enter__(self) -> "SweepLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 64).decode(errors="replace").strip() or "another process"
            os.close(self.fd)
            self.fd = None
            raise UserError(
                f"{self.path.name[:-5]} is being measured into by pid {holder}: wait for it to finish "
                "or use another --db (parallel measurements on one machine distort each other)"
            ) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


@contextlib.contextmanager
def measuring(db: str | Path | None, machine: machine_mod.Machine | None = None) -> Iterator[Session]:
    """Open the database for measuring: the lock held, runs left ``running`` by a killed process
    marked failed, and this machine's row. Every measuring command goes through here."""
    store = Store.open(db)
    try:
        with SweepLock(store.path):
            stale = store.fail_stale_running()
            m = machine or machine_mod.collect()
            yield Session(store, store.machine_id(m.as_dict()), stale)
    finally:
        store.close()


@dataclass
class Session:
    store: Store
    machine_id: int
    stale: int


@dataclass
class SweepReport:
    planned: int
    skipped: int
    outcomes: list[tuple[Cell, RunOutcome]] = field(default_factory=list)

    @property
    def failed(self) -> list[tuple[Cell, RunOutcome]]:
        return [(c, o) for c, o in self.outcomes if o.status != "ok"]


def run_cells(
    store: Store,
    machine_id: int,
    cells: Sequence[Cell],
    *,
    timeout_s: float | None = None,
    on_start: Callable[[int, Cell], None] | None = None,
    on_done: Callable[[int, Cell, RunOutcome], None] | None = None,
) -> list[tuple[Cell, RunOutcome]]:
    """Measure each cell in a fresh worker; a failed cell is stored as failed and the sweep goes on."""
    out = []
    for i, cell in enumerate(cells):
        if on_start:
            on_start(i, cell)
        outcome = execute(store, machine_id, cell.config, timeout_s=timeout_s)
        out.append((cell, outcome))
        if on_done:
            on_done(i, cell, outcome)
    return out


def summary_rows(store: Store, cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """Per (workload, build, vCPUs): ok runs, median epoch time and its spread over repeats."""
    runs = store.runs(cell_keys=[c.key for c in cells])
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for c in cells:
        groups.setdefault((c.config["workload"], c.config["build"], c.config["vcpus"]), [])
    keys = {c.key: (c.config["workload"], c.config["build"], c.config["vcpus"]) for c in cells}
    for r in runs:
        groups[keys[r["cell_key"]]].append(r)
    rows = []
    for (w, b, v), rs in groups.items():
        ok = [r for r in rs if r["status"] == "ok"]
        times = [r["epoch_time_s"] for r in ok if r["epoch_time_s"]]
        rows.append({
            "workload": w, "build": b, "vcpus": v,
            "ok": len(ok), "failed": len([r for r in rs if r["status"] == "failed"]),
            "epoch_time_s": statistics.median(times) if times else None,
            "spread_s": (max(times) - min(times)) if len(times) > 1 else None,
            "samples_per_s": statistics.median(r["samples_per_s"] for r in ok) if ok else None,
            "projected": any(r["projected"] for r in ok),
        })
    return rows


def time_accounting(store: Store, run_ids: Sequence[int], wall_s: float) -> dict[str, float | None]:
    """Where a sweep's wall time went: timed training (what the results are made of), warm-up
    (first epochs and ``--warmup-steps``), worker start-up (spawn to first step: mostly importing
    TensorFlow), peak measurements, and the rest (process exit, machine-state samples, bookkeeping).
    ``overhead`` is wall time / timed training (1.00 = every second went into timed epochs)."""
    runs = store.runs(run_ids=run_ids) if run_ids else []
    epochs = store.epochs(run_ids) if run_ids else []
    timed = sum(e["elapsed_s"] for e in epochs if not e["warmup"])
    warmup = sum(e["elapsed_s"] for e in epochs if e["warmup"])
    startup = peak = 0.0
    for r in runs:
        startup += r["startup_s"] or 0.0
        software = json.loads(r["software"] or "{}")
        warmup += (software.get("warmup") or {}).get("seconds") or 0.0
        peak += (software.get("peak") or {}).get("seconds") or 0.0
    return {
        "wall_s": wall_s, "timed_s": timed, "warmup_s": warmup, "startup_s": startup, "peak_s": peak,
        "other_s": max(0.0, wall_s - timed - warmup - startup - peak),
        "overhead": wall_s / timed if timed > 0 else None,
    }
