"""Time and cost to a target from what a database holds: the candidates a comparison weighs, their speed
runs and prices, the seeds' convergence, and the combination (:mod:`cpustudy.analysis.compare`) with this
machine's noise. ``cpustudy compare`` measures what is missing and answers from here; ``recommend
--target-accuracy`` and the report answer from here alone, so that all three give one time and one cost to
the target for one configuration: the billed time of one training (worker start to the target).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

import numpy as np
from scipy.special import betaincinv

from cpustudy import identity, precision, prices
from cpustudy.analysis import anchor, recalibration
from cpustudy.analysis import compare as combo
from cpustudy.analysis.costs import cpu_price, memory_need
from cpustudy.analysis.holdup import busy_reason, machine_noise
from cpustudy.analysis.projection import ProjectionError, default_error, projection_error
from cpustudy.analysis.runs import load_runs, periods, run_totals, session_of
from cpustudy.analysis.stats import DEFAULT_NOISE, Components, Noise
from cpustudy.errors import UserError
from cpustudy.identity import Configuration
from cpustudy.names import place_name
from cpustudy.prices.model import MEMORY_MARGIN, MEMORY_RESERVE_GIB
from cpustudy.rules import RULES, Rules
from cpustudy.store.rows import EpochRow, RunRow

if TYPE_CHECKING:
    from cpustudy.targets import Target
    from cpustudy.prices import Catalog, Price
    from cpustudy.store import Readable

#: The fewest training steps a speed probe's epoch may have (the projection was calibrated from 100).
MIN_PROBE_STEPS = 100


class Rented(Protocol):
    """A cloud candidate's place as the analysis reads it: the catalog row that prices it (``cloud.targets.CloudTarget``;
    the analysis does not import cloud/, which sits above it)."""

    @property
    def price(self) -> Price: ...


@dataclass(frozen=True)
class Candidate:
    """Where a training could run: this machine at N vCPUs, a cloud instance type, or a configuration
    stored from another machine; with the build it would run."""

    name: str  # as shown: ``here:2``, ``gcp:c4d-highcpu-8``, ``db:3f2a...:16`` (+ `` BUILD`` with several builds)
    kind: str  # here | cloud | stored
    build: str
    vcpus: int | None = None
    device: str = "cpu"
    target: Rented | None = None  # cloud: where it runs (a ``cloud.targets.CloudTarget``)
    machine: str | None = None  # stored: the machine's fingerprint
    instance: str | None = None  # cloud: ``CLOUD:INSTANCE_TYPE`` as its runs record it
    asked: str | None = None  # cloud: the target as ``--candidates`` named it (what its probe plan is asked for)


#: A comparison's settings: each one's label ("" alone), its seeds, its candidates' inputs.
Groups = list[tuple[str, list[combo.SeedResult], list[combo.CandidateInput]]]


@dataclass
class Comparison:
    workload: str
    target: float | Target  # a validation accuracy, or another metric's (``--target``)
    results: list[combo.CandidateResult]
    seeds: list[combo.SeedResult]
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plan_folder: str | None = None
    probe_cost_usd: float | None = None
    wall_s: float = 0.0
    training_wall_s: float | None = None  # one training to the target here (median of the convergence runs)
    steps: list[str] = field(default_factory=list)  # what settling the comparison added, and why it stopped
    checks: list[dict[str, object]] = field(default_factory=list)  # ``--check``: fresh trainings against the interval
    decision: combo.Decision | None = None  # how the decision ended, its rules, cost and value
    setting: str = ""  # the one training setting every figure is for, where the candidates' names omit it: fp32 b64
    # What the decision reads (not stored): per setting (label, seeds, candidate inputs), and the machine's noise.
    groups: Groups = field(default_factory=list, repr=False)
    noise: Noise | None = None
    factor: float | dict[str, float] = 1.0  # the backtest's recalibration the model was drawn with (per candidate where a mapping)

    def factor_of(self, candidate: str) -> float:
        """The recalibration ``candidate``'s figures were drawn with (1: none)."""
        f = self.factor
        return float(f.get(candidate, 1.0) if isinstance(f, dict) else f or 1.0)

    def as_json(self) -> str:
        t = combo.as_target(self.target)
        accuracy = t.value if (t.metric, t.op) == ("val_accuracy", ">=") else None
        return json.dumps({"workload": self.workload, "target_accuracy": accuracy, "target": t.text,
                           "candidates": [dataclasses.asdict(r) for r in self.results],
                           "seeds": [s.__dict__ for s in self.seeds], "assumptions": self.assumptions,
                           "notes": self.notes, "probe_plan": self.plan_folder,
                           "probe_cost_usd": self.probe_cost_usd, "settling": self.steps,
                           "wall_s": self.wall_s, "training_wall_s": self.training_wall_s, "checks": self.checks,
                           "decision": self.decision.as_dict() if self.decision else {}, "setting": self.setting},
                          indent=2, default=str) + "\n"


def matches(run: RunRow, c: Candidate, ref: Configuration, fingerprint: str) -> bool:
    """Whether a stored run measured the speed of candidate ``c`` for the configuration ``ref`` (the
    convergence's): the same in the identity's ``setting`` view (the model and its version or file's
    content, switches and hyper-parameters, batch size, precision, validation, threads, XLA, input
    pipeline, no tuning), on the candidate's device, build, vCPUs and place, and usable as a speed sample
    (:func:`usable`; a capped run of at least ``MIN_PROBE_STEPS`` steps)."""
    if (run["status"] != "ok" or identity.FIELDS["study"](run) != "cpustudy"
            or run.get("projected") and (run.get("steps_per_epoch") or 0) < MIN_PROBE_STEPS
            or not usable(run) or not identity.same(run, ref.columns(), "setting")
            or identity.FIELDS["tuning_id"](run) is not None
            or run.get("device") != c.device or (c.device == "cpu" and run.get("build") != c.build)):
        return False
    if c.kind == "here":
        return run.get("machine") == fingerprint and not run.get("instance") and run.get("vcpus") == c.vcpus
    if c.kind == "cloud":
        return run.get("instance") == c.instance and (c.device == "gpu" or run.get("vcpus") == c.vcpus)
    # a place of the database (:func:`_places`) at its vCPUs, a GPU's too (the host feeding it); ``db:MACHINE:gpu``
    # (no vCPUs) every run of that GPU
    return run.get("machine") == c.machine and (c.vcpus is None or run.get("vcpus") == c.vcpus)


def usable(run: RunRow) -> bool:
    """Whether a run's time can serve as a speed sample: not oversubscribed, not measured on a busy machine."""
    return not (run.get("oversubscribed") or busy_reason(run.get("machine_state")))


def epochs_by_run(store: Readable, runs: Sequence[RunRow]) -> dict[int, list[EpochRow]]:
    by: dict[int, list[EpochRow]] = {}
    for e in store.epochs([r["id"] for r in runs]) if runs else []:
        by.setdefault(e["run_id"], []).append(e)
    return by


def seed_results(store: Readable, runs: Sequence[RunRow], target: float | Target,
                 by: dict[int, list[EpochRow]] | None = None) -> list[combo.SeedResult]:
    """The runs as seeds' convergence to ``target``; ``by``: their epochs by run, where already read."""
    by = by if by is not None else epochs_by_run(store, runs)
    return [s for s in (combo.seed_result(r, by.get(r["id"], []), target) for r in runs) if s is not None]


def distinct_seeds(seeds: Sequence[combo.SeedResult],
                   by: dict[int, list[EpochRow]]) -> tuple[list[combo.SeedResult], str]:
    """Seeds whose trainings were the same training (every epoch's loss and validation alike, to the bit):
    one seed, counted once, and a sentence saying so (empty where every seed trained its own way). A script
    or model file that seeds itself in a way cpustudy cannot override does this. ``by``: the seeds' epochs by
    run (``epochs_by_run``)."""
    first: dict[tuple, combo.SeedResult] = {}
    same: dict[tuple, list[int]] = {}
    out = []
    for s in seeds:
        trace = tuple((e.get("loss"), e.get("val_loss"), e.get("val_accuracy"))
                      for e in sorted(by.get(s.run_id, []), key=lambda e: e["epoch"]))
        if not any(t[0] is not None for t in trace):  # no loss recorded: nothing to tell trainings apart by
            out.append(s)
            continue
        if trace in first and first[trace].seed != s.seed:
            same.setdefault(trace, [first[trace].seed]).append(s.seed)
            continue
        first.setdefault(trace, s)
        out.append(s)
    if not same:
        return out, ""
    groups = "; ".join(", ".join(map(str, g)) for g in same.values())
    return out, (f"seeds {groups} trained the same training (every epoch's loss alike): counted as one seed each "
                 "group; the model or its script sets a seed of its own that cpustudy's does not reach")


#: ``compare --check``'s seeds start here, apart from any a comparison trains (from ``--first-seed``): its fresh
#: trainings are held against an interval, so they are never part of one.
CHECK_FIRST_SEED = 10_001


def is_check(run: RunRow) -> bool:
    """Whether ``run`` is one of ``compare --check``'s fresh trainings (a seed from :data:`CHECK_FIRST_SEED`)."""
    return (run.get("seed") or 0) >= CHECK_FIRST_SEED and bool(run.get("target_accuracy") or run.get("target"))


PERIOD_ICC = 0.1  # the least ICC of one period's checks (:func:`coverage`): why 0.1, docs/method.md


def coverage(inside: Sequence[bool], period: Sequence[str], statement: Sequence[str],
             level: float) -> tuple[float, float, float]:
    """The share of checks ``inside`` their interval: its ``level`` interval and effective n, Clopper-Pearson at n over
    the design effect 1 + sum (m - 1) ICC over the checks' periods (their shift) and statements (its error); m the
    mean cluster size (sum of sizes squared over n), ICC one-way ANOVA's, the periods' never under ``PERIOD_ICC``."""
    x = np.asarray(inside, dtype=float)
    n, k, tail, deff = len(x), float(x.sum()), (1 - level) / 2, 1.0
    for groups, least in ((period, PERIOD_ICC), (statement, 0.0)):
        keys, idx = np.unique(np.asarray(groups), return_inverse=True)
        g, size = len(keys), np.bincount(idx).astype(float)
        m, share = float((size ** 2).sum() / n), np.bincount(idx, weights=x) / size
        msb, msw = (size * (share - k / n) ** 2).sum() / max(g - 1, 1), (size * share * (1 - share)).sum() / max(n - g, 1)
        den = msb + ((n - m) / max(g - 1, 1) - 1) * msw
        deff += (m - 1) * (float(np.clip((msb - msw) / den, least, 1.0)) if g > 1 and n > g and den > 0 else least)
    n_eff, k_eff = n / min(n, deff), k / min(n, deff)
    low = float(betaincinv(k_eff, n_eff - k_eff + 1, tail)) if k else 0.0
    high = float(betaincinv(k_eff + 1, n_eff - k_eff, 1 - tail)) if k < n else 1.0
    return low, high, n_eff


@dataclass(frozen=True)
class Backtest:
    """How this machine's checks held the ``level`` intervals stated before them (:func:`backtest`): ``inside`` of
    ``n``, the share's interval and effective n (:func:`coverage`), and of those in a later period, of ``later_n``."""

    n: int
    inside: int
    periods: int
    statements: int
    n_eff: float
    low: float
    high: float
    later_n: int
    later_inside: int
    level: float
    held_out: int = 0  # of the n, held out by ``cpustudy backtest`` (the rest: ``compare --check``)
    others: str = ""

    @property
    def line(self) -> str:
        same = self.n - self.later_n  # counted above too; only not as later
        where = f"the other {same}" if self.later_n else "the one" if self.n == 1 else f"all {self.n}"
        later = (f"{self.later_inside} of {self.later_n} inside" if self.later_n else "none yet") + (
            f" ({where} trained in the same period as runs behind their interval)" if same else "")
        kinds = ("--check" if not self.held_out else "held out by `cpustudy backtest`" if self.held_out == self.n
                 else f"{self.n - self.held_out} by --check, {self.held_out} held out by `cpustudy backtest`")
        return (f"backtest on this machine: {self.inside} of {self.n} fresh training(s) ({kinds}) inside their stated "
                f"{self.level:.0%} intervals ({self.inside / self.n:.0%}; {self.periods} period(s), {self.statements} "
                f"statement(s), effective n {self.n_eff:.1f}): {self.level:.0%} interval {self.low:.0%}-{self.high:.0%}"
                f"; of these, in a later period than every run behind their interval (those count most): {later}"
                + (f"; left out: {self.others}" if self.others else ""))


def backtest(store: Readable, machine_id: int | None = None, level: float | None = None) -> Backtest | None:
    """This machine's stored checks of intervals stated at ``level`` (default: the latest check's) as a
    :class:`Backtest`, clustered by the periods they trained in and the statements they were held against."""
    every = store.checks(machine_id)
    level = float(every[-1]["level"] if level is None and every else level or 0)
    rows = [r for r in every if round(float(r["level"]), 6) == round(level, 6)]
    if not rows:
        return None
    others = sorted({float(r["level"]) for r in every} - {float(r["level"]) for r in rows})
    period = periods(store.runs())
    sessions = [session_of({"settings": r.get("run_settings")}) for r in rows]
    when = [period.get(s, s) or f"run {r['run_id']}" for r, s in zip(rows, sessions)]
    said = [f"{r['candidate']} {r['low_s']} {r['high_s']} {r.get('stated_session')}" for r in rows]
    low, high, n_eff = coverage([bool(r["inside"]) for r in rows], when, said, level)
    later = [r for r, s in zip(rows, sessions) if s and (behind := json.loads(r["data_sessions"] or "[]"))
             and period.get(s, s) not in {period.get(x, x) for x in behind}]  # in none of its runs' periods
    return Backtest(len(rows), sum(int(r["inside"]) for r in rows), len(set(when)), len(set(said)), n_eff, low, high,
                    len(later), sum(int(r["inside"]) for r in later), level,
                    sum(r.get("kind") == "held out" for r in rows), f"{len(every) - len(rows)} check(s) of "
                    f"{', '.join(f'{x:.0%}' for x in others)} intervals" if others else "")


def speed_samples(store: Readable, c: Candidate, ref: Configuration, fingerprint: str,
                  runs: Sequence[RunRow] | None = None,
                  by: dict[int, list[EpochRow]] | None = None) -> list[combo.SpeedSample]:
    """Candidate ``c``'s speed samples among ``runs`` (default: every ok run), never a ``--check`` training (it is
    held against the interval, so it is no part of it); ``by``: their epochs by run, where already read."""
    every = runs if runs is not None else store.runs(status="ok")
    runs = [r for r in every if matches(r, c, ref, fingerprint) and not is_check(r)]
    if not runs:
        return []
    by = by if by is not None else epochs_by_run(store, runs)
    period = periods(every)  # sessions within an hour of each other are one draw of the machine's shift
    samples = (combo.speed_sample(r, by.get(r["id"], [])) for r in runs)
    return [dataclasses.replace(s, session=period.get(s.session, s.session)) for s in samples if s is not None]


def price_of(catalog: Catalog, spot: bool, family_asked: str | None, c: Candidate,
             stored_instance: str | None, machine: Mapping[str, object], memory_gib: float | None = None) -> tuple[float | None, str]:
    """A candidate's rate: its cloud instance, the instance its stored runs ran on, or for runs on a machine of
    one's own the family asked for, else the cheapest family that runs its CPU (``prices.own_family``), at
    the vCPUs that hold the same cores. An instance without the ``memory_gib`` the training needs is never
    priced (its note says why), so never the cheapest."""

    price: Price | None
    if c.kind == "cloud":
        assert c.target is not None  # a cloud candidate is made with its target
        price = c.target.price
        note = ""
    elif stored_instance:
        try:
            price = catalog.instance(stored_instance)
        except UserError:
            return None, f"measured on {stored_instance}, which the price catalog lacks"
        note = f"measured on {stored_instance}"
    elif c.device == "gpu":
        return None, ("this machine's GPU, not priced: no instance of it is known here" if c.kind == "here" else
                      "a GPU measured elsewhere, not priced here (its runs name no instance)")
    else:
        price, note = cpu_price(catalog, family_asked, machine, int(c.vcpus or 1), None, spot, memory_gib)
        if price is None:
            return None, note
        note = (f"priced as {price.name} ({family_asked}{'; ' + note if note else ''})" if family_asked
                else f"priced as {price.name}: {note}; --family chooses another")
    if memory_gib is not None and price.memory_gib is not None and price.memory_gib < memory_gib:
        return None, (f"{price.name} has {price.memory_gib:g} GiB, less than the {memory_gib:.1f} GiB this training "
                      f"needs (its runs' peak resident memory x {MEMORY_MARGIN:g} + {MEMORY_RESERVE_GIB:g} GiB for "
                      "the OS): not a candidate")
    q = prices.quote(price, spot)
    if q is None:
        return None, "; ".join(x for x in (note, prices.unpriced_note(price, spot)) if x)
    return q.usd_per_hour, "; ".join(x for x in (f"{price.name} {q.kind} {q.usd_per_hour:.4g} USD/h ({price.region}, "
                                                 f"as of {price.as_of})", note) if x)


def candidate_inputs(store: Readable, candidates: Sequence[Candidate], ref: Configuration, fingerprint: str, runs: Sequence[RunRow],
            catalog: Catalog, spot: bool, family: str | None) -> list[combo.CandidateInput]:
    """Each candidate's speed samples among ``runs`` (their epochs read once), its price and its basis."""
    by = epochs_by_run(store, runs)
    out = []
    for c in candidates:
        samples = speed_samples(store, c, ref, fingerprint, runs, by)
        ids = {s.run_id for s in samples}
        used = [r for r in runs if r["id"] in ids]
        instance = next((r.get("instance") for r in used if r.get("instance")), None) if c.kind == "stored" else None
        # Its machine: from the runs it used, else from any run of that machine (a candidate whose runs were all
        # left out, busy, is still priced as the CPU it is on, not as an unknown one).
        on = used[0] if used else next((r for r in runs if r.get("machine") == (c.machine or fingerprint)), None) \
            if c.kind in ("here", "stored") else None
        rate, price = price_of(catalog, spot, family, c, instance,
                               prices.machine_of(on) if on else {}, memory_need(used) or memory_need(runs))
        why = basis(c, samples, used)
        if not samples and c.kind == "here":  # where it ran on a busy machine, left out as every comparison leaves it
            busy = [x for x in (busy_reason(r.get("machine_state")) for r in runs_of(c, ref, fingerprint, runs)) if x]
            why += [f"its {len(busy)} run(s) were measured on a busy machine ({busy[0]}) and left out: measure again "
                    "when nothing else runs"] if busy else []
        out.append(combo.CandidateInput(c.name, samples, rate, price, why))
    return out


def runs_of(c: Candidate, ref: Configuration, fingerprint: str, runs: Sequence[RunRow]) -> list[RunRow]:
    """A local candidate's stored runs of ``ref``'s setting (the identity's ``setting`` view) on this machine, those
    left out as speed samples (busy, oversubscribed) included."""
    return [r for r in runs if r.get("machine") == fingerprint and r.get("vcpus") == c.vcpus
            and (r.get("build") or "tf") == c.build and identity.same(r, ref.columns(), "setting")]


def basis(c: Candidate, samples: Sequence[combo.SpeedSample], runs: Sequence[RunRow]) -> list[str]:
    if not samples:
        return ["not measured" + (": a probe is planned" if c.kind == "cloud" else "")]
    projected = sum(s.projected for s in samples)
    out = [f"{len(samples)} run(s)" + (f", {projected} projected from capped epochs (their interval carries the "
                                       "projection's own error)" if projected else ", full epochs")]
    cpus = sorted({str(r.get("cpu_model")) for r in runs if r.get("cpu_model")})
    if cpus:
        out.append("on " + "; ".join(cpus))
    if len(samples) < 2:
        out.append("a single speed run: fresh processes vary up to 1.5x")
    return out


def stored_noise(store: Readable) -> Noise:
    """What the database's stored repeats tell of its machines' noise (``holdup.machine_noise`` of its runs)."""
    prior = anchor.prior(store.runs(status="ok"), DEFAULT_NOISE)
    try:
        runs = load_runs(store)
    except UserError:  # nothing comparable stored yet
        return with_projection(prior, None)
    return with_projection(machine_noise(run_totals(runs), prior), projection_error(runs))


def with_projection(noise: Noise, error: ProjectionError | None) -> Noise:
    """``noise`` with the projection's own error (:func:`cpustudy.analysis.projection.projection_error`; None:
    cpustudy's default, nothing measured both ways), which a candidate's projected speed runs carry into its
    interval."""
    error = error or default_error()
    return dataclasses.replace(noise, projection=error.sd, projection_source=error.source)


def interval_notes(results: Sequence[combo.CandidateResult]) -> list[str]:
    """Where no interval could be given, why (once per reason)."""
    why: dict[str, list[str]] = {}
    for r in results:
        if r.interval_note and r.speed_runs:
            why.setdefault(r.interval_note, []).append(r.candidate)
    return [f"{', '.join(names)}: no interval: {note}" for note, names in why.items()]


def assumptions(target: float | Target, spot: bool, ref: Configuration, seeds: Sequence[combo.SeedResult],
                 noise: Noise = DEFAULT_NOISE, settings: bool = False, level: float = RULES.level) -> list[str]:
    reached = [s for s in seeds if s.reached]
    per = ", ".join(s.outcome() for s in seeds)
    out = [
        f"epochs to {combo.target_words(target)}: {per} over {len(seeds)} seed(s) "
        f"({', '.join(str(s.seed) for s in seeds)}), trained at {ref.vcpus} vCPU(s) with "
        + ("each setting's batch size and precision" if settings else f"batch size {ref.batch_size}, {ref.precision_policy}")
        + f", {ref.data} data, at most {ref.epochs} epochs; "
        f"{len(reached)} of {len(seeds)} reached it",
        "the seed decides the epochs on every candidate (the same model, data, batch size and precision); "
        "other builds and frameworks, and other thread counts, may change float order and so the epochs",
        "billed time to target = epochs x (full-epoch training time + validation + the stall between epochs) + "
        "the first epoch's tracing + the worker's start-up (worker start to the target); cost = time x the "
        "candidate's hourly rate (" + ("spot" if spot else "on-demand") + ")",
        f"each interval is a {level:.0%} prediction interval for one training with a new seed on a new run: the "
        f"{len(seeds)} seeds' "
        + ("margins past the target at every epoch they trained (how close each came, not only its epochs)"
           if all(s.margins for s in seeds) and len(seeds) > 1 else "spread of epochs (rounded to whole epochs)")
        + ", each candidate's speed runs and this "
        f"machine's {noise.line}"
        + (f"; a projected epoch's own error, {noise.projection_source}" if noise.projection else "")
        + "; not another machine of the same instance type, VM provisioning (a cloud VM "
        "bills its start too), or price changes",
    ]
    if spot:
        out.append("spot: a preemption restarts a training that keeps no checkpoint, up to its whole time "
                   "again plus the new VM's start (minutes)")
    return out


def session_note(store: Readable, results: Sequence[combo.CandidateResult], seeds: Sequence[combo.SeedResult],
                 noise: Noise) -> list[str]:
    """Where every run behind the intervals comes from one measuring period and the variation between periods is not
    measured here, a note that the intervals assume the machine's shift to a later period (``stats.UNMEASURED_SHIFT``)."""
    ids = sorted({int(i) for r in results for i in r.run_ids} | {s.run_id for s in seeds})
    if not ids or noise.between_basis == "repeats":  # measured for these configurations
        return []
    behind = store.runs(run_ids=ids)
    period = periods(store.runs(status="ok"))  # over every run, as the speed samples' periods are (sessions between chain)
    sessions = {period.get(session_of(r), session_of(r)) for r in behind} - {""}
    if len(sessions) > 1:
        return []
    shift = Components.of(noise).shift
    head = (f"the shift to a later period is assumed, not measured: every run behind the intervals comes from one "
            f"measuring period (sessions less than an hour apart), and they take the machine's shift between periods as "
            f"{shift:.0%}")
    if noise.between_basis == "anchor":
        return [head + f" (this machine's anchor says {noise.between:.0%}: a 10 ms kernel on one core, which can miss "
                "what moves a training; on a Granite Rapids VM it missed a 20 % shift). Compare again in another "
                "session, or --check in a later one, and the database learns it"]
    return [head + " (20-30 % has been seen between sessions on shared VMs). Compare again in another session, or "
            "--check in a later one, and the database learns it"]


def _places(runs: Sequence[RunRow], ref: Configuration) -> dict[tuple, Candidate]:
    """Every place (the identity's ``place`` view: machine, device, vCPU count and CPU build) with runs of ``ref``'s
    configuration: a candidate each, named by :func:`cpustudy.names.place_name`; two machines of one CPU model (or
    instance type) apart by their fingerprints, so that neither's runs are taken for the other's."""
    places: dict[tuple, Candidate] = {}
    for r in runs:
        where = identity.values(r, "place")  # a GPU's builds are one place: its candidate's build is "gpu"
        key = tuple(where.values())
        c = Candidate(place_name(r), "stored", str(where["cpu_build"] or "gpu"), vcpus=r.get("vcpus"),
                      device=str(where["device"]), machine=r.get("machine"))
        if key not in places and matches(r, c, ref, ""):
            places[key] = c
    names = [c.name for c in places.values()]
    return {k: dataclasses.replace(c, name=f"{c.name} ({str(c.machine)[:8]})") if names.count(c.name) > 1 else c
            for k, c in places.items()}


def compared(store: Readable, goal: float | Target, groups: Groups, ref: Configuration, *, spot: bool, noise: Noise,
             factor: float | dict[str, float], notes: Sequence[str] = (), rules: Rules = RULES,
             deadline_s: float | None = None, budget_usd: float | None = None, setting: str = "") -> Comparison:
    """The one builder of a comparison, being measured (``compare``) or from a database (:func:`stored`): per setting
    (a label, its seeds, its candidates' inputs; several: a race, each setting converging with its own seeds), every
    figure drawn from the one model (:func:`cpustudy.analysis.compare.combine_groups`) at ``rules.level`` from
    ``rules.draws`` draws with the backtest's ``factor``; the assumptions, then ``notes`` and what every comparison
    says of its intervals, the shift between periods and the draws no candidate reaches the target in. With no seed in
    any setting (the policy stopped before anything was measured): every candidate named, without figures."""
    raced, seeds = len(groups) > 1, [s for _, ss, _ in groups for s in ss]
    results = combo.combine_groups([(ss, inputs) for _, ss, inputs in groups], deadline_s=deadline_s,
                                   budget_usd=budget_usd, noise=noise, draws=rules.draws, level=rules.level,
                                   factor=factor) if seeds else [
        combo.CandidateResult(i.candidate, None, None, None, None, None, None, None, None, None, 0.0, 0, i.usd_per_hour,
                              i.price, [], [], level=rules.level) for _, _, inputs in groups for i in inputs]
    out = Comparison(ref.workload, goal, results, seeds, groups=groups, noise=noise, factor=factor, setting=setting)
    if not seeds:
        return out
    out.assumptions = assumptions(goal, spot, ref, seeds, noise, settings=raced, level=rules.level)
    if raced:
        out.assumptions.append("each setting (precision, batch size) converges with its own seeds: a candidate's "
                               "epochs are drawn from its own setting's")
    out.notes += [*notes, *interval_notes(results), *session_note(store, results, seeds, noise), *unreached(results)]
    return out


def unreached(results: Sequence[combo.CandidateResult]) -> list[str]:
    """Where P(cheapest in one training) sums to less than 1, what the rest is: draws in which a new seed reaches the
    target on no candidate within the epochs allowed (the seeds' margins leave it a chance)."""
    shown = [r.p_cheapest for r in results if r.p_cheapest is not None]
    total = sum(shown)
    if not shown or total > 0.995:
        return []
    return [f"P(cheapest in one training) sums to {total:.1%}: in the other {1 - total:.1%} of draws a new seed "
            "does not reach the target within --max-epochs on any candidate"]


def stored(store: Readable, workload: str, target: float | Target, *, catalog: Catalog, spot: bool = True, family: str | None = None,
           deadline_s: float | None = None, budget_usd: float | None = None,
           noise: Noise | None = None, convergence: tuple | None = None) -> Comparison | None:
    """The comparison the stored runs of ``workload`` support for ``target``: the seeds trained to it (or
    past it) in full epochs, in the configuration (file content, batch size, precision, switches) with the
    most seeds and every other that differs from it in batch size or precision alone (a race's settings, each
    converging with its own seeds and its candidates named with its label, as ``compare`` raced them;
    ``convergence``: only the one of that identity key, ``identity.key(run, "convergence")``), and every
    machine, instance and vCPU count with speed runs of a setting as its candidate. None where no stored run
    trained to the target."""

    runs = [r for r in store.runs(status="ok") if r["workload"] == workload and r.get("study") == "cpustudy"]
    by = epochs_by_run(store, runs)
    aimed = {r["id"]: r for r in runs if r.get("target_accuracy") is not None or r.get("target")}
    found: dict[tuple, dict[int, tuple[combo.SeedResult, RunRow]]] = {}
    for s in seed_results(store, list(aimed.values()), target, by):
        found.setdefault(identity.key(aimed[s.run_id], "convergence"), {}).setdefault(s.seed, (s, aimed[s.run_id]))
    if convergence is not None and convergence not in found:  # asked for one configuration (its convergence key)
        return None
    key = convergence if convergence is not None else max(found, key=lambda k: len(found[k]), default=None)
    if key is None:
        return None
    named = identity.VIEWS["convergence"]
    axes = [i for i, name in enumerate(named) if name in ("batch_size", "precision")]
    rest = lambda k: tuple(v for i, v in enumerate(k) if i not in axes)  # noqa: E731
    keys = [key] + ([k for k in found if k != key and rest(k) == rest(key)] if convergence is None else [])
    vary = {named[i] for i in axes if len({k[i] for k in keys}) > 1}
    groups: Groups = []
    notes: list[str] = []
    places: dict[str, Candidate] = {}
    for k in keys:
        seeds, same_note = distinct_seeds(sorted((s for s, _ in found[k].values()), key=lambda s: s.seed), by)
        ref = Configuration.from_row(next(iter(found[k].values()))[1])
        label = precision.setting_label(ref.precision_policy, ref.batch_size, precisions="precision" in vary,
                                        batches="batch_size" in vary)
        mine = {c.name: c for c in (dataclasses.replace(c, name=f"{c.name} {label}".strip())
                                   for c in _places(runs, ref).values())}
        given = candidate_inputs(store, list(mine.values()), ref, "", runs, catalog, spot, family)
        groups.append((label, [dataclasses.replace(s, setting=label) for s in seeds], given))
        places.update(mine)
        notes += [f"{label}: {same_note}" if label else same_note] if same_note else []
    if not any(s.reached for _, seeds, _ in groups for s in seeds):
        return None
    factor, lines = _factors(store, {name: c.machine for name, c in places.items()})
    ref = Configuration.from_row(next(iter(found[key].values()))[1])  # the most-seeded (or asked-for) setting's
    others_said = [f"also trained to the target, left out of this answer (it answers for the configuration with the "
                   f"most seeds, batch size {ref.batch_size}, {ref.precision_policy}"
                   + (" and the settings differing from it in batch size or precision alone" if len(keys) > 1 else "")
                   + "): " + ", ".join(f"{name} {value}" for name, value, mine in zip(named, k, key) if value != mine)
                   + f", {len(found[k])} seed(s)" for k in found if k not in keys]
    setting = "" if len(keys) > 1 else precision.setting_label(ref.precision_policy, ref.batch_size)
    return compared(store, target, groups, ref, spot=spot, noise=noise or stored_noise(store), factor=factor,
                    notes=[*sorted(set(lines)), *notes, *others_said], deadline_s=deadline_s, budget_usd=budget_usd,
                    setting=setting)


def _factors(store: Readable, machine_of: dict[str, str | None]) -> tuple[dict[str, float], list[str]]:
    """Each candidate's recalibration factor, by the backtest of the machine it ran on (``machine_of``: candidate
    name to fingerprint), and the sentences saying so (named by machine where there are several)."""
    factor: dict[str, float] = {}
    lines: list[str] = []
    for fingerprint in sorted({m for m in machine_of.values() if m}):
        f, said = recalibration.factor(store, fingerprint)
        factor.update({name: f for name, m in machine_of.items() if m == fingerprint})
        lines += [f"{fingerprint}: {line}" for line in said] if len(machine_of) > 1 else said
    return factor, lines
