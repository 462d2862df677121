"""``cpustudy tune``: find the fastest runtime setting for a workload on N vCPUs with one build.

The search is coordinate descent from TensorFlow's defaults over: input pipeline (NumPy arrays or
tf.data), oneDNN (off/on), XLA (off/on), intra-op and inter-op threads, and batch size only when
asked (``--batch-sizes``; a different batch size is a different workload setting and is stored as
such). Each trial is a short measurement in a fresh worker, stored with ``study = 'tune'``. A switch
left at its default is not tried at the value the default resolved to (oneDNN as TensorFlow reports
it, XLA as Keras resolved it): that would run the same program again.

Fresh processes on a shared machine differ by 10-30 % and are sometimes bimodal, so one trial per
setting is not evidence. A candidate whose trial comes within ``RECHECK`` of the best so far (or
beats it) is measured again, alternating with the best (``rechecks`` more runs of each), and the two
are compared by the median of all their trials; a clearly slower candidate is dropped after one.
The winner is then confirmed against the default in interleaved pairs; the gain is the median of the
paired ratios default/best, with their range as its spread. A winner that loses that confirmation is
not kept.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Iterator, Mapping, NotRequired, TypedDict

from cpustudy.environment import builds
from cpustudy.environment import machine as machine_mod
from cpustudy.errors import UserError
from cpustudy.measure.execute import execute
from cpustudy.measure.session import measuring
from cpustudy.measure.spec import RunSpec, plan
from cpustudy.store import Store
from cpustudy.workloads import Workload, get

IMPROVEMENT = 0.97  # a change is kept only when it is at least 3 % faster
RECHECK = 1.10  # a candidate whose trial is within 10 % of the best (or faster) is measured again


#: A value a tuned dimension takes (a switch, a thread count, an input pipeline, a batch size).
Switch = bool | int | str


@dataclass(frozen=True)
class Switches:
    intra_threads: int
    inter_threads: int
    onednn: bool | None = None  # None: TensorFlow's default for this CPU
    xla: bool | None = None  # None: Keras' default (off on a CPU-only TensorFlow)
    input_pipeline: str = "auto"
    batch_size: int | None = None  # None: the workload's

    def with_(self, dim: str, value: Switch) -> "Switches":
        """This setting with the dimension ``dim`` (one of its fields, named at run time) set to ``value``."""
        return Switches(**{**asdict(self), dim: value})

    def applied_to(self, spec: RunSpec) -> RunSpec:
        """``spec`` with this setting's runtime switches (over its own extra settings), and its batch size where
        ``spec`` asks for none (a sweep's own batch sizes stay: ``sweep.apply_tunings``)."""
        env = {} if self.onednn is None else {"TF_ENABLE_ONEDNN_OPTS": "1" if self.onednn else "0"}
        return replace(spec, intra_threads=self.intra_threads, inter_threads=self.inter_threads, jit_compile=self.xla,
                       input_pipeline=self.input_pipeline, env={**spec.env, **env},
                       batch_size=self.batch_size if spec.batch_size is None else spec.batch_size)

    def label(self) -> str:
        parts = [f"threads {self.intra_threads}/{self.inter_threads}",
                 f"oneDNN {'default' if self.onednn is None else 'on' if self.onednn else 'off'}",
                 f"XLA {'default' if self.xla is None else 'on' if self.xla else 'off'}",
                 f"input {self.input_pipeline}"]
        if self.batch_size:
            parts.append(f"batch {self.batch_size}")
        return ", ".join(parts)


def default_setting(vcpus: int) -> Switches:
    return Switches(intra_threads=vcpus, inter_threads=vcpus)


def dimensions(vcpus: int, backend_tf: bool, batch_sizes: list[int] | None) -> dict[str, list[Switch]]:
    dims: dict[str, list[Switch]] = {}
    if backend_tf:
        dims["input_pipeline"] = ["tfdata", "numpy"]  # "auto" resolves to tfdata on TensorFlow: numpy is the change
        dims["onednn"] = [False, True]
    dims["xla"] = [False, True]
    dims["intra_threads"] = sorted({1, max(1, vcpus // 2), vcpus})
    dims["inter_threads"] = sorted({1, min(2, vcpus), vcpus})
    if batch_sizes:
        dims["batch_size"] = list(batch_sizes)
    return dims


@dataclass
class Trial:
    setting: Switches
    epoch_time_s: float | None
    run_id: int


@dataclass
class Trials:
    """One tuning's trials: each runs a setting in a fresh worker (stored with ``study = 'tune'``) and
    is kept with what it measured."""

    store: Store
    machine_id: int
    workload: Workload
    vcpus: int
    build: str
    epochs: int
    steps_per_epoch: int
    data: str
    options: Mapping[str, object] | None
    progress: Callable[[str], None]
    trials: list[Trial] = field(default_factory=list)

    def measure(self, setting: Switches, tag: str) -> float | None:
        """Seconds per sample (so that settings with other batch sizes compare fairly) of one new
        trial of ``setting``; None where it failed."""
        # Trials compare training time, which validation does not enter: they skip it.
        spec = setting.applied_to(RunSpec(workload=self.workload, vcpus=self.vcpus, build=self.build,
                                          epochs=self.epochs, steps_per_epoch=self.steps_per_epoch, data=self.data,
                                          options=dict(self.options or {}), validation="none"))
        config = plan(spec).with_(study="tune", tune={"tag": tag, "setting": asdict(setting)})
        outcome = execute(self.store, self.machine_id, config)
        rate = outcome.summary.get("samples_per_s") if outcome.status == "ok" else None
        t = 1.0 / rate if rate else None
        self.trials.append(Trial(setting, t, outcome.run_id))
        shown = f"{t * 1e6:.1f} us/sample" if t else f"failed: {outcome.error}"
        self.progress(f"{tag}: {setting.label()}: {shown}")
        return t

    def estimate(self, setting: Switches) -> float:
        """Median seconds per sample over every successful trial of ``setting``."""
        return statistics.median(t.epoch_time_s for t in self.trials if t.setting == setting and t.epoch_time_s)

    def resolved_switches(self) -> dict[str, Switch | None]:
        """oneDNN as TensorFlow reported it, XLA as Keras resolved it and the input pipeline ``auto`` chose, in
        the last trial's run."""
        (row,) = self.store.runs(run_ids=[self.trials[-1].run_id])
        resolved: dict[str, Switch | None] = {dim: None if row[dim] is None else bool(row[dim]) for dim in ("onednn", "xla")}
        resolved["input_pipeline"] = row["input_pipeline"]  # what ``auto`` resolved to
        return resolved


class Tuning(TypedDict):
    """What a tuning found (``tune``), as ``Store.add_tuning`` stores it (``id``: its row, once stored)."""
    workload: str
    build: str
    vcpus: int
    setting: dict[str, Switch | None]
    label: str
    changed: bool
    search_winner: str
    rejected_by_confirmation: bool
    default_time_s: float
    best_time_s: float
    gain: float | None
    gain_low: float | None
    gain_high: float | None
    confirmed_pairs: int
    trials: int
    id: NotRequired[int]


def tune(trials: Trials, *, confirm: int = 3, rechecks: int = 1, batch_sizes: list[int] | None = None,
         backend_tf: bool = True, pinned_by_build: tuple[str, ...] = ()) -> Tuning:
    """Search, confirm, store and return the tuning of ``trials``' workload, build and vCPUs (see the module's
    docstring)."""
    store, workload, vcpus, build = trials.store, trials.workload, trials.vcpus, trials.build
    default = default_setting(vcpus)
    if trials.measure(default, "default") is None:
        raise UserError(f"the default setting of {workload.name} on {build} failed to run: "
                        f"see `cpustudy results --errors --db {store.path}` for its error")
    search_winner = search(trials, default, dimensions(vcpus, backend_tf, batch_sizes),
                           set(pinned_by_build or ()), rechecks)
    best_t = trials.estimate(search_winner)
    ratios, default_times, best_times = confirmation(trials, default, search_winner, confirm)
    # The search's winner that did not beat the default by the search's own margin in the paired
    # confirmation (a lucky trial on a noisy machine) is not kept: the default is, and the result
    # says so, rather than store a setting that is no faster.
    best = default if ratios and not confirmed(ratios) else search_winner
    per_epoch = workload.samples_per_epoch  # seconds per sample -> seconds per full epoch (projected)
    result: Tuning = {
        "workload": workload.name, "build": build, "vcpus": vcpus,
        "setting": asdict(best), "label": best.label(), "changed": best != default,
        "search_winner": search_winner.label(), "rejected_by_confirmation": best != search_winner,
        "default_time_s": per_epoch * (statistics.median(default_times) if default_times else best_t),
        # The kept default's time is the default's: the rejected winner's times are not the setting's.
        "best_time_s": (per_epoch * statistics.median(default_times) if best == default and default_times
                        else per_epoch * (statistics.median(best_times) if best_times else best_t)),
        # No change found (or the winner lost its confirmation): gain 1, the default stays; a change
        # whose confirmation pairs all failed: unknown.
        "gain": 1.0 if best == default else (statistics.median(ratios) if ratios else None),
        "gain_low": min(ratios) if ratios else None,
        "gain_high": max(ratios) if ratios else None,
        "confirmed_pairs": len(ratios),
        "trials": len(trials.trials),
    }
    result["id"] = store.add_tuning(trials.machine_id, result)
    return result


def search(trials: Trials, default: Switches, dims: dict[str, list[Switch]], pinned: set[str],
           rechecks: int) -> Switches:
    """Coordinate descent from ``default`` (its trial the last one run) over ``dims``, one dimension at a
    time, leaving alone those the build pins (changing one would measure another build)."""
    best = default
    # Asking explicitly for what the default resolved to would measure the same program again.
    resolved = trials.resolved_switches()
    for dim, values in dims.items():
        if dim in pinned:
            continue
        for value in values:
            current = getattr(best, dim)
            if current == value or (current in (None, "auto") and resolved.get(dim) == value):
                continue
            candidate = best.with_(dim, value)
            if improves(trials, best, candidate, dim, resolved, rechecks):
                best = candidate
                if dim in resolved:
                    resolved[dim] = value
    return best


def improves(trials: Trials, best: Switches, candidate: Switches, dim: str, resolved: dict[str, Switch | None],
             rechecks: int) -> bool:
    """Whether ``candidate`` (``best`` with ``dim`` changed) is faster than ``best`` by ``IMPROVEMENT``:
    tried once, and measured again beside the best (``rechecks`` times) when within ``RECHECK`` of it."""
    t = trials.measure(candidate, f"try {dim}")
    if t is None:
        return False
    if resolved.get(dim) is not None and trials.resolved_switches()[dim] == resolved[dim]:
        # Asked for, but not applied (Keras turns XLA off for a model it cannot compile,
        # such as cifar10_cnn with its augmentation layers): the same program as the best.
        trials.progress(f"  {dim} {getattr(candidate, dim)} was not applied by the framework: not a change")
        return False
    if t < trials.estimate(best) * RECHECK:
        for _ in range(rechecks):  # close or better: measure both again before deciding
            trials.measure(best, "recheck best")
            trials.measure(candidate, f"recheck {dim}")
    return trials.estimate(candidate) < trials.estimate(best) * IMPROVEMENT


def confirmation(trials: Trials, default: Switches, best: Switches,
                 confirm: int) -> tuple[list[float], list[float], list[float]]:
    """``best`` against ``default`` in ``confirm`` interleaved pairs (which runs first alternates): the
    ratios default/best of the pairs where both ran, and the two settings' times in them. Nothing to
    confirm where the search kept the default."""
    ratios: list[float] = []
    default_times: list[float] = []
    best_times: list[float] = []
    if best == default:
        return ratios, default_times, best_times
    for r in range(confirm):
        order = [("default", default), ("best", best)]
        if r % 2:
            order.reverse()
        got: dict[str, float | None] = {tag: trials.measure(s, f"confirm {tag}") for tag, s in order}
        d, b = got["default"], got["best"]
        if d and b:
            default_times.append(d)
            best_times.append(b)
            ratios.append(d / b)
    return ratios, default_times, best_times


def confirmed(ratios: list[float]) -> bool:
    """Whether paired default/best ratios confirm a change (``cpustudy.analysis.stats.paired_gain``): a
    one-sided paired t-test on their logs at 5 %, and a gain of at least the search's 3 % margin (a tie is
    not a gain; a lucky pair on a noisy machine is not either)."""
    from cpustudy.analysis.stats import paired_gain

    return paired_gain(ratios, min_effect=1 / IMPROVEMENT - 1)


def pinned_dimensions(build: builds.Build) -> tuple[str, ...]:
    """The tuner's dimensions a build fixes (``tf-eigen`` fixes oneDNN, ``tf-xla`` fixes XLA)."""
    pinned = []
    if "TF_ENABLE_ONEDNN_OPTS" in build.env:
        pinned.append("onednn")
    if build.jit_compile is not None:
        pinned.append("xla")
    return tuple(pinned)


def refuse_beyond_this_machine(vcpus: int, topo: machine_mod.CpuTopology | None = None,
                               quota: float | None = None) -> None:
    """Refuse ``vcpus`` this machine cannot give (more than its logical CPUs, or than a cgroup quota allows).
    ``run`` and ``sweep`` measure such a count with ``--oversubscribe``; ``tune`` does not: the fastest
    setting found with fewer CPUs than vCPUs is the fastest under contention, and ``sweep --tuned`` would
    apply it to real ones."""
    topo = topo or machine_mod.read_topology()
    usable = topo.logical
    if quota is None:
        quota = machine_mod.cgroup_cpu_quota()
    why = None
    if vcpus > usable:
        why = f"this machine lets cpustudy use {usable} logical CPU(s)"
    elif quota is not None and vcpus > quota + 1e-9:
        usable = max(1, int(quota))
        why = f"a cgroup CPU quota (docker --cpus) allows {quota:g} CPUs"
    if why:
        raise UserError(f"{vcpus} vCPUs cannot be tuned here: {why}; use --vcpus {usable} or fewer, or tune on a "
                        f"machine with {vcpus} (tune has no --oversubscribe: a setting tuned on fewer CPUs than "
                        "vCPUs is tuned for contention)")


def tune_builds(workload_name: str, vcpus: int, builds_text: str, *, db: str | None, epochs: int = 3,
                steps_per_epoch: int = 20, confirm: int = 3, rechecks: int = 1, batch_sizes: list[int] | None = None,
                data: str = "synthetic", options: Mapping[str, object] | None = None,
                progress: Callable[[str], None] = lambda s: None) -> Iterator[tuple[str, Tuning]]:
    """Tune ``workload_name`` at ``vcpus`` for each build in ``builds_text`` (every setting checked
    before anything runs); yields ``("WORKLOAD BUILD N vCPU(s)", result)`` as each build is done."""
    w = get(workload_name)
    build_list = builds.parse_list(builds_text)
    if rechecks < 0:
        raise UserError(f"--rechecks must be 0 or more, got {rechecks}")
    refuse_beyond_this_machine(vcpus)
    for b in build_list:
        plan(RunSpec(workload=w, vcpus=vcpus, build=b.name, epochs=epochs, steps_per_epoch=steps_per_epoch,
                     data=data, options=dict(options or {})))
    with measuring(db) as session:
        for b in build_list:
            trials = Trials(session.store, session.machine_id, w, vcpus, b.name, epochs, steps_per_epoch, data,
                            options, progress)
            result = tune(trials, confirm=confirm, rechecks=rechecks, batch_sizes=batch_sizes,
                          backend_tf=b.env.get("KERAS_BACKEND", "tensorflow") == "tensorflow",
                          pinned_by_build=pinned_dimensions(b))
            yield f"{w.name} {b.name} {vcpus} vCPU(s)", result
