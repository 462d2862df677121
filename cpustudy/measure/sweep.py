"""Sweeps: the grid workloads x builds x vCPU counts x repeats, one fresh worker per cell.

* Everything is validated before the first cell runs (unknown names, builds not set up, more vCPUs
  than the machine has).
* Cells are interleaved: consecutive cells differ in build (and the build order rotates), so slow
  drift of a shared machine hits every configuration alike.
* Resumable: a cell is done when an ``ok`` run with its key exists; ``fresh`` measures again. A
  killed sweep leaves at most one run ``running``; the next sweep marks it failed and measures the
  cell again, so re-running the same command ends with exactly the planned ``ok`` runs.
* One measurement at a time per database (``cpustudy.measure.session``).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Mapping, Protocol, Sequence, TypeVar, Unpack

from cpustudy import precision
from cpustudy.analysis.billed import to_target_s
from cpustudy.environment import builds as builds_mod
from cpustudy.environment import machine as machine_mod
from cpustudy.errors import UserError
from cpustudy.names import and_list, split_list
from cpustudy.identity import Configuration
from cpustudy.measure.execute import RunOutcome, execute
from cpustudy.measure.request import SweepRequest
from cpustudy.measure.spec import Host, RunSpec, SpecArgs, plan
from cpustudy.store import Readable, Store, default_path
from cpustudy.store.rows import RunRow
from cpustudy.worker.protocol import RunConfig
from cpustudy.workloads import Workload, parse_list

DEFAULT_STARTUP_S = 10.0
#: The most cells a sweep plans: beyond it, the grid is a typo (``--repeats 1000000``), not a study.
MAX_CELLS = 10_000


def parse_vcpus(text: str, topo: machine_mod.CpuTopology) -> list[int]:
    """``auto`` (1, 2, 4, ... up to this machine's CPUs) or a comma-separated list, where ``all`` is all of
    this machine's CPUs (``1,all``: one against all)."""
    if text.strip() == "auto":
        out, n = [], 1
        while n < topo.logical:
            out.append(n)
            n *= 2
        return out + [topo.logical]
    values = []
    for part in split_list(text, "--vcpus", "1,2 or auto"):
        if part == "all":
            values.append(topo.logical)
            continue
        try:
            n = int(part)
        except ValueError:
            raise UserError(f"--vcpus: {part!r} is not a whole number or all (give e.g. 1,2, 1,all or auto)") from None
        if n <= 0:
            raise UserError(f"--vcpus: {n} must be positive (give e.g. 1,2 or auto)")
        values.append(n)
    if not values:
        raise UserError("--vcpus: give one or more counts, e.g. 1,2, or auto")
    return sorted(dict.fromkeys(values))


def cell_key(config: RunConfig, machine_fingerprint: str) -> str:
    """A cell's identity: its configuration's key on this machine (:meth:`Configuration.key`)."""
    return Configuration.of(config).key(machine_fingerprint)


@dataclass
class Cell:
    """One measurement of a sweep: what was asked (``spec``, where a tuning is applied) and what it
    planned to (``config``, with its cell key)."""

    config: RunConfig
    spec: RunSpec | None = None

    @property
    def key(self) -> str:
        assert self.config.cell_key is not None
        return self.config.cell_key

    @property
    def label(self) -> str:
        c = self.config
        extra = f" b{c.batch_size}" + (f" {c.precision_policy}" if precision.reduced(c.precision_policy) else "")
        return f"{c.workload} {c.build}{extra} {c.vcpus} vCPU r{c.repeat}"


B = TypeVar("B")


def interleave(workloads: Sequence[Workload], builds: Sequence[B], vcpus: Sequence[int],
               repeats: int) -> list[tuple[Workload, B, int, int]]:
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
    host: Host | None = None,
    batch_sizes: Sequence[int | None] = (None,),
    precisions: Sequence[str] = (precision.DEFAULT,),
    **spec_args: Unpack[SpecArgs],
) -> list[Cell]:
    """Every cell's worker configuration; raises ``UserError`` before anything runs. Batch sizes and
    precisions are axes like builds: each (build, batch size, precision) is a variant, and consecutive
    cells differ in variant."""
    if repeats <= 0:
        raise UserError(f"--repeats must be a positive whole number, got {repeats}")
    host = host or Host.here(topo)
    variants = [(b, bs, p) for b in builds for bs in batch_sizes for p in precisions]
    size = len(workloads) * len(variants) * len(vcpus) * repeats
    if size > MAX_CELLS:
        raise UserError(f"{size:,} cells ({len(workloads)} workload(s) x {len(variants)} build/batch/precision "
                        f"variant(s) x {len(vcpus)} vCPU count(s) x {repeats} repeat(s)): more than {MAX_CELLS:,}, "
                        f"which at ~{DEFAULT_STARTUP_S:.0f} s of start-up each is {size * DEFAULT_STARTUP_S / 86400:,.0f}"
                        " days before any training: narrow the grid (fewer repeats, workloads or vCPU counts)")
    cells = []
    for w, (b, bs, p), v, r in interleave(workloads, variants, vcpus, repeats):
        args: SpecArgs = {**spec_args, "precision_policy": p}
        if bs is not None:
            args["batch_size"] = bs
        spec = RunSpec(workload=w, vcpus=v, build=b, repeat=r, **args)
        config = plan(spec, host=host)
        cells.append(Cell(config.with_(cell_key=cell_key(config, machine_fingerprint)), spec))
    return cells


def pending(store: Readable, cells: Iterable[Cell], fresh: bool = False) -> list[Cell]:
    cells = list(cells)
    if fresh:
        return cells
    done = {r["cell_key"] for r in store.runs(status="ok", cell_keys=[c.key for c in cells])}
    return [c for c in cells if c.key not in done]


def reference_cell(store: Store, cells: Sequence[Cell], todo: Sequence[Cell], machine_fingerprint: str) -> Cell | None:
    """The reference re-timed in this measuring period: where this sweep goes on (cells still ``todo``) after cells
    measured only in an earlier period (their latest run ended more than ``runs.PERIOD_GAP_S`` ago), one more run of
    the first of them, so that the report reads cross-period contrasts against it (a ratio of ratios, free of the
    machine's shift: :func:`cpustudy.analysis.holdup.reference`); None where nothing was measured before, nothing is
    left to measure, or a done cell was measured in this period."""
    from cpustudy.analysis.runs import PERIOD_GAP_S, ago_s

    waiting = {c.key for c in todo}
    done = [c for c in cells if c.key not in waiting]
    if not todo or not done:
        return None
    first = done[0]

    def again(repeat: int) -> Cell:
        config = first.config.with_(repeat=repeat)
        return Cell(config.with_(cell_key=cell_key(config, machine_fingerprint)),
                    replace(first.spec, repeat=repeat) if first.spec else None)

    earlier = [again(max(c.config.repeat for c in cells) + 1)]  # earlier periods' references, then the next one
    while store.runs(status="ok", cell_keys=[earlier[-1].key]):
        earlier.append(again(earlier[-1].config.repeat + 1))
    if ago_s(store.runs(status="ok", cell_keys=[c.key for c in done + earlier[:-1]])) <= PERIOD_GAP_S:
        return None
    return earlier[-1]


#: Training FLOP/s assumed per vCPU (CPU) or per GPU when nothing was measured: a rough guess.
GUESS_FLOPS = {"cpu": 20e9, "gpu": 20e12}


@dataclass(frozen=True)
class Estimate:
    """The expected wall time of one cell: its training and its fixed part, the worker's start-up
    (spawn to the first step: imports, data, model build)."""

    training_s: float
    startup_s: float
    measured: bool  # from earlier runs of the same configuration (else a rough guess from FLOPs)

    @property
    def total_s(self) -> float:
        return self.training_s + self.startup_s


def estimate_cell(ok_runs: Sequence[RunRow], cell: Cell) -> Estimate:
    """A sweep cell's :class:`Estimate`.

    Earlier ok runs (``ok_runs``) of the same workload, build and device (and vCPUs, on a CPU; a GPU's
    speed hardly depends on its host's vCPUs), of the cell's precision where any ran it, give the time per sample
    (at the cell's batch size, a step's samples) and the start-up; without them, the workload's FLOPs at
    ``GUESS_FLOPS`` and ``DEFAULT_STARTUP_S`` (a guess, to be labelled as such). The start-up is the cell's fixed
    cost: spawn to the first step (imports, data, model build).
    """
    c = cell.config
    rows = [r for r in ok_runs if r["workload"] == c.workload and r["build"] == c.build
            and (r.get("device") or "cpu") == c.device and (c.device == "gpu" or r["vcpus"] == c.vcpus)
            and r["step_time_s"]]
    rows = [r for r in rows if (r.get("precision_policy") or precision.DEFAULT) == c.precision_policy] or rows
    steps = c.epochs * c.steps_run
    if rows:
        step = statistics.median((r["step_time_s"] or 0.0) * (c.batch_size / b if (b := r.get("batch_size")) else 1.0)
                                 for r in rows)  # each has a step time
        start = statistics.median(r["startup_s"] or DEFAULT_STARTUP_S for r in rows)
        return Estimate(steps * step, start, True)
    step = (c.flops_per_sample or 0) * c.batch_size / (GUESS_FLOPS[c.device] * (c.vcpus if c.device == "cpu" else 1))
    return Estimate(steps * max(step, 1e-3), DEFAULT_STARTUP_S, False)


def interrupted(run: RunRow) -> bool:
    """A run stopped by the user (Ctrl-C) or by its measuring process being killed: not a failure of
    the measurement, and measured again by the next sweep."""
    return run["status"] == "failed" and str(run.get("error") or "").startswith("interrupted")


def summary_rows(store: Store, cells: Sequence[Cell]) -> list[dict[str, object]]:
    """Per (workload, build, vCPUs, batch size, precision, capped or full epochs): ok runs, failed runs
    (not counting interrupted ones), median epoch time and its spread over repeats, and with a target the median
    billed time to it (``analysis.billed.to_target_s``) of the runs that reached it. A cell measured both
    projected and in full epochs (``--calibrate``) has a row for each: they are compared, never pooled."""
    from cpustudy.analysis.totarget import epochs_by_run  # pandas with it: read once the sweep has measured

    runs = store.runs(cell_keys=[c.key for c in cells])

    def setting(c: RunConfig) -> tuple[str, str, int, int, str, bool]:
        return (c.workload, c.build, c.vcpus, c.batch_size, c.precision_policy, c.steps_per_epoch is not None)

    groups: dict[tuple[str, str, int, int, str, bool], list[RunRow]] = {}
    for c in cells:
        groups.setdefault(setting(c.config), [])
    keys: dict[str | None, tuple[str, str, int, int, str, bool]] = {c.key: setting(c.config) for c in cells}
    for r in runs:
        groups[keys[r["cell_key"]]].append(r)
    several = len({k[3:5] for k in groups}) > 1  # batch size or precision is an axis of this sweep
    epochs = epochs_by_run(store, [r for r in runs if r["status"] == "ok" and r.get("target_reached")])
    rows = []
    for (w, b, v, bs, p, _), rs in groups.items():
        ok = [r for r in rs if r["status"] == "ok"]
        times = [t for r in ok if (t := r["epoch_time_s"])]
        rates = [x for r in ok if (x := r["samples_per_s"]) is not None]
        row: dict[str, object] = {"workload": w, "build": b, "vcpus": v}
        if several:
            row.update(batch_size=bs, precision=p)
        row.update({
            "ok": len(ok), "failed": len([r for r in rs if r["status"] == "failed" and not interrupted(r)]),
            "epoch_time_s": statistics.median(times) if times else None,
            "spread_s": (max(times) - min(times)) if len(times) > 1 else None,
            "samples_per_s": statistics.median(rates) if rates else None,
            "projected": any(r["projected"] for r in ok),
        })
        reached = [r for r in ok if r.get("target_reached")]
        if any(r.get("target_accuracy") is not None for r in ok):
            billed = [t for t in (to_target_s(r, epochs.get(r["id"], [])) for r in reached) if t is not None]
            row["to_target_s"] = statistics.median(billed) if billed else None  # billed, as compare bills one
        rows.append(row)
    return rows


@dataclass(frozen=True)
class TimeAccounting:
    """Where a sweep's wall time went: timed training (what the results are made of), warm-up (first
    epochs and ``--warmup-steps``), worker start-up (spawn to first step: mostly importing TensorFlow),
    peak measurements, and the rest (process exit, machine-state samples, bookkeeping)."""

    wall_s: float
    timed_s: float
    warmup_s: float
    startup_s: float
    peak_s: float
    other_s: float

    @property
    def overhead(self) -> float | None:
        """Wall time / timed training (1.00 = every second went into timed epochs); None with none."""
        return self.wall_s / self.timed_s if self.timed_s > 0 else None


def time_accounting(store: Store, run_ids: Sequence[int], wall_s: float) -> TimeAccounting:
    """The :class:`TimeAccounting` of the runs ``run_ids`` in ``wall_s`` seconds."""
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
    return TimeAccounting(wall_s=wall_s, timed_s=timed, warmup_s=warmup, startup_s=startup, peak_s=peak,
                          other_s=max(0.0, wall_s - timed - warmup - startup - peak))


def apply_tunings(cells: list[Cell], store: Store, machine_fingerprint: str, db_label: str) -> list[Cell]:
    """Each cell with the runtime setting `cpustudy tune` stored for it on this machine (``--tuned``).

    The tuning's runtime switches (threads, XLA, oneDNN, input pipeline) replace those of the cell's
    request; everything else the sweep asked for (batch sizes, precisions, target, data, epochs, ...)
    is kept. A batch size the tuner chose applies only where the sweep did not ask for one."""
    from cpustudy.measure.tune import Switches

    machine_id = store.find_machine(machine_fingerprint)
    out = []
    for cell in cells:
        c, spec = cell.config, cell.spec
        if spec is None:
            raise ValueError("apply_tunings needs the cells' requests (plan_sweep keeps them)")
        tuning = store.tuning(machine_id, c.workload, c.build, c.vcpus) if machine_id is not None else None
        if tuning is None:
            raise UserError(f"no tuning stored for {c.workload} {c.build} at {c.vcpus} vCPU(s) "
                            f"on this machine: run `cpustudy tune {c.workload} --vcpus {c.vcpus} "
                            f"--builds {c.build} --db {db_label}` first, or drop --tuned")
        new_spec = Switches(**tuning["setting"]).applied_to(spec)
        new = plan(new_spec).with_(tuning_id=tuning["id"])
        out.append(Cell(new.with_(cell_key=cell_key(new, machine_fingerprint)), new_spec))
    return out


@dataclass
class DryRun:
    rows: list[dict[str, object]]  # each cell, whether it is still to measure, its estimated seconds
    total_s: float  # the estimate of what is to measure
    fixed_s: float  # of which fixed cost: worker start-up, once per cell
    guessed: bool  # part of it is a guess (no earlier runs)


def plan_rows(store: Store | None, cells: Sequence[Cell], todo: Sequence[Cell]) -> DryRun:
    """A dry run's table and estimate (:class:`DryRun`)."""
    todo_keys = {c.key for c in todo}
    ok_runs = store.runs(status="ok") if store is not None else []  # read once, not once per cell
    rows, total, fixed, guessed = [], 0.0, 0.0, False
    for c in cells:
        e = estimate_cell(ok_runs, c)
        if c.key in todo_keys:
            total += e.total_s
            fixed += e.startup_s
            guessed = guessed or not e.measured
        cfg = c.config
        rows.append({"workload": cfg.workload, "build": cfg.build, "vcpus": cfg.vcpus, "cpus": cfg.cpu_list,
                     "batch_size": cfg.batch_size, "precision": cfg.precision_policy,
                     "target": cfg.target_accuracy, "tuning": cfg.tuning_id,
                     "repeat": cfg.repeat, "epochs": cfg.epochs, "steps_per_epoch": cfg.steps_run,
                     "data": cfg.data, "status": "to measure" if c.key in todo_keys else "done",
                     "estimate_s": round(e.total_s, 1), "fixed_s": round(e.startup_s, 1)})
    return DryRun(rows, total, fixed, guessed)


class CellRun(Protocol):
    """The cells to measure, measured (``SweepPlan.measure``'s ``run``) with the hooks a progress display passes."""

    def __call__(self, *, on_start: Callable[[int, Cell], None] | None = None,
                 on_done: Callable[[int, Cell, RunOutcome], None] | None = None) -> list[tuple[Cell, RunOutcome]]: ...


@dataclass
class SweepResult:
    rows: list[dict[str, object]]  # per (workload, build, vCPUs): ok, failed, median epoch time
    measured: int
    failed: int
    accounting: TimeAccounting  # where the wall time went


@dataclass
class SweepPlan:
    """A sweep's cells on this machine, against one database (``plan_from``)."""

    cells: list[Cell]
    db_path: Path
    machine: machine_mod.Machine

    def dry_run(self, fresh: bool) -> DryRun:
        if not self.db_path.is_file():
            return plan_rows(None, self.cells, self.cells)
        with Store.read(self.db_path) as store:
            todo = pending(store, self.cells, fresh)
            ref = reference_cell(store, self.cells, todo, self.machine.fingerprint)
            return plan_rows(store, self.cells + ([ref] if ref else []), ([ref] if ref else []) + todo)

    def measure(self, fresh: bool, timeout_s: float | None, say: Callable[[str], None],
                progress: Callable[[CellRun, int], list[tuple[Cell, RunOutcome]]],
                snapshot_to: str | Path | None = None) -> SweepResult:
        """Measure what is not measured yet (everything with ``fresh``), under ``progress``; with
        ``snapshot_to``, start from that snapshot if the database is new and keep it up to date
        (:func:`cpustudy.measure.session.measuring`)."""
        import time

        from cpustudy.environment import cloud, state
        from cpustudy.measure.session import measuring

        with measuring(self.db_path, self.machine, snapshot_to) as session:
            store = session.store
            if session.restored:
                say(f"resumed from the snapshot {snapshot_to}")
            todo = pending(store, self.cells, fresh)
            ref = reference_cell(store, self.cells, todo, self.machine.fingerprint)
            if ref is not None:
                say(f"sweep: {ref.label} was measured in an earlier period (more than an hour ago): one more run of "
                    "it first, this period's reference (the report reads contrasts across periods against it)")
                todo = [ref] + todo
            for warning in state.warnings(state.machine_state()):
                say(f"warning: {warning} (timings may be noisy; see `cpustudy machine --check`)")
            if session.stale:
                say(f"{session.stale} run(s) left running by a killed process were marked failed")
            say(f"sweep: {len(self.cells)} cell(s) planned, {len(self.cells) - len(todo)} already measured, "
                f"{len(todo)} to measure into {store.path}")
            t0 = time.perf_counter()
            where = cloud.context(starts=session.starts)
            if where and where.get("recoveries"):
                say(f"this job has been cut and started again {where['recoveries']} time(s) (recorded with each run)")
            def run(*, on_start: Callable[[int, Cell], None] | None = None,
                    on_done: Callable[[int, Cell, RunOutcome], None] | None = None) -> list[tuple[Cell, RunOutcome]]:
                """Each cell in a fresh worker, ``where`` this job runs recorded with its run; a failed cell is stored
                as failed and the sweep goes on."""
                out = []
                for i, cell in enumerate(todo):
                    if on_start:
                        on_start(i, cell)
                    config = cell.config.with_(cloud=where) if where is not None else cell.config
                    out.append((cell, execute(store, session.machine_id, config, timeout_s=timeout_s)))
                    if on_done:
                        on_done(i, cell, out[-1][1])
                return out

            outcomes = progress(run, len(todo))
            account = time_accounting(store, [o.run_id for _, o in outcomes], time.perf_counter() - t0)
            rows = summary_rows(store, self.cells)
        failed = sum(o.status != "ok" for _, o in outcomes)
        return SweepResult(rows, len(outcomes), failed, account)


def plan_from(request: SweepRequest, db: str | None) -> SweepPlan:
    """The request's sweep on this machine (names and vCPU counts checked, every cell planned)."""
    host = Host.here()
    m = machine_mod.collect()
    vcpus = parse_vcpus(request.vcpus or "auto", host.topo)
    refuse_beyond_this_machine(request, vcpus, host.topo.logical, m.as_dict(), db)
    cells = request_cells(request, machine_fingerprint=m.fingerprint, host=host, vcpus=vcpus)
    db_path = Path(db) if db else default_path()
    if request.tuned:
        with Store.read(db_path) as store:
            cells = apply_tunings(cells, store, m.fingerprint, str(db_path))
    return SweepPlan(cells, db_path, m)


def request_cells(request: SweepRequest, *, machine_fingerprint: str, host: Host, vcpus: Sequence[int]) -> list[Cell]:
    """The cells of ``request`` on ``host`` (a ``spec.Host``) at ``vcpus``, as ``sweep --dry-run`` lists them."""
    workloads = parse_list(request.workloads)
    builds = [b.name for b in builds_mod.parse_list(request.builds)]
    cells = plan_sweep(workloads, builds, vcpus, repeats=request.repeats, machine_fingerprint=machine_fingerprint,
                       host=host, batch_sizes=request.batch_sizes or (None,), precisions=request.precisions,
                       **request.spec_args())
    if not (request.calibrate and request.steps_per_epoch):
        return cells
    in_full: SpecArgs = {**request.spec_args(), "steps_per_epoch": None}
    full = plan_sweep(workloads, builds[:1], [min(vcpus)], repeats=request.repeats,
                      machine_fingerprint=machine_fingerprint, host=host,
                      batch_sizes=(request.batch_sizes or (None,))[:1], precisions=request.precisions[:1], **in_full)
    return beside_their_projections(cells, full)


def beside_their_projections(cells: Sequence[Cell], full: Sequence[Cell]) -> list[Cell]:
    """The sweep's cells with each full-epoch cell (``--calibrate``) right after the capped cell of the same
    workload, build, vCPUs, batch size, precision and repeat, so that both meet the same machine state."""
    out = list(cells)
    for f in full:
        c = f.config
        twin = (c.workload, c.build, c.vcpus, c.batch_size, c.precision_policy, c.repeat)
        at = next((i for i, x in enumerate(out) if x.config.steps_per_epoch is not None and
                   (x.config.workload, x.config.build, x.config.vcpus, x.config.batch_size,
                    x.config.precision_policy, x.config.repeat) == twin), len(out) - 1)
        out.insert(at + 1, f)
    return out


class BeyondThisMachine(UserError):
    """vCPU counts this machine cannot give, refused: the command line adds the way that does measure
    them (``cloud.suggest.cloud_way``, composed above measuring: measure/ does not import cloud/)."""

    def __init__(self, message: str, request: SweepRequest, vcpus: Sequence[int], info: Mapping[str, object]) -> None:
        super().__init__(message)
        self.request, self.vcpus, self.info = request, list(vcpus), dict(info)


def refuse_beyond_this_machine(request: SweepRequest, vcpus: Sequence[int], usable: int, info: Mapping[str, object],
                               db: str | None) -> None:
    """Refuse, before any cell is planned or anything is stored, vCPU counts this machine cannot give
    (``usable``: the logical CPUs cpustudy may use) unless ``--oversubscribe``: pinned to fewer CPUs, such a
    cell measures contention, not that many vCPUs (:class:`BeyondThisMachine`, the refusal with the fix here).
    Mistyped workload and build names are refused first, as a sweep that fits refuses them: they are the first
    thing to fix, and the cloud plan needs them."""
    too_many = [v for v in vcpus if v > usable]
    if not too_many or request.oversubscribe:
        return
    parse_list(request.workloads)
    builds_mod.parse_list(request.builds)
    raise BeyondThisMachine(f"{and_list(too_many)} vCPUs cannot be measured honestly here: this machine lets cpustudy "
                            f"use {usable} logical CPU(s); use --vcpus {usable} or fewer, or --oversubscribe to measure "
                            "anyway (stored as oversubscribed)", request, vcpus, info)
