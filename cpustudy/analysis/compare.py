"""Time and cost to a target accuracy per candidate machine, with how sure the answer is (``cpustudy compare``).

Two measurements meet here, each of its own:

* **Convergence** (:class:`SeedResult`): how many epochs a training needs to reach the target, per seed
  (weights, shuffles, dropout and augmentation all follow the seed). It depends on the model, its data,
  batch size, precision and optimizer, not on the machine (an assumption the comparison checks where
  the same seed was trained at two vCPU counts: :func:`agreement`). A seed that did not reach the target
  within its epochs is kept and counted, never dropped. A seed a race stopped early (censored: it could no
  longer make its setting the cheapest, ``censored_after``) counts with its margins up to where it stopped
  (it leaves the seeds still short of the target there); where margins are not known, as reaching the
  target one epoch after it stopped, its earliest (its setting's figures are then lower bounds).
* **Speed** (:class:`SpeedSample`): per candidate, each stored run's billed parts (:class:`Billed`: full-epoch time,
  measured or projected, the first epoch's tracing, validation and stall per epoch, the worker's start-up).

The combination (:func:`combine`), for a seed needing ``e`` epochs and a speed sample ``r``::

    time = r.billed.seconds(e) = e x (epoch_s + validation_s + stall_s)(r) + (tracing_s + startup_s)(r)
    cost = time x the candidate's hourly rate / 3600

That is the billed time of one training (worker start to the target). Every figure is a **prediction for one
training with a seed not yet seen** on a run not yet made, read from the draws of the one model of the measurements
(:class:`cpustudy.analysis.model.Model`, whose module says how a new seed's epochs and a candidate's billed time are
drawn; the decision reads what is known of each candidate's mean from the same draws).

Time and cost are the median and the central ``level`` interval of the draws (``Rules.level`` by default), printed
with their n; each candidate's probability of being the cheapest (and of meeting a deadline or budget) is
the share of draws where it was. Where the measurements cannot give an interval (one speed run and no
known spread; one seed that reached the target) it is not given, and ``interval_note`` says what would.
Checked by simulation (``tests/test_stats_calibration.py``): a fresh training falls inside the stated
interval at its stated level. Not covered: another machine of the same instance type, VM provisioning,
price changes.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from cpustudy.analysis.billed import Billed
from cpustudy.analysis.model import EPOCH_PRIOR, CandidateInput, Group, Model, SeedResult, SpeedSample
from cpustudy.analysis.runs import session_of, settings_of
from cpustudy.analysis.stats import NO_PRIOR, Noise
from cpustudy.errors import UserError
from cpustudy.rules import RULES, Rules
from cpustudy.store.rows import EpochRow, RunRow, value
from cpustudy.targets import Target, accuracy_value, of_run


@dataclass
class DecisionCost:
    """What deciding cost in this call: trainings' time here and its seconds, the seeds and speed runs measured;
    ``in_unit``: the seconds in the decision's unit (USD where every candidate is priced), where it saves against the
    default."""

    trainings: float
    seconds: float
    seeds: int
    speed_runs: int
    in_unit: float | None = None


@dataclass
class Decision:
    """How a comparison's decision ended (``stop``, ``why``) under its ``rules``, what it chose and why that one: the
    one record the command's output, its JSON, the answer page, ``--check`` and the statements read (built by
    :func:`cpustudy.decision.policy.decision`). ``leader``: the one leader rule's; ``choice``: what the answer names
    (the default where it ended "the same" with it); ``same``: the candidates within the indifference zone;
    ``saves_*``: against the default, per training, in ``unit``."""

    stop: str
    why: str
    rules: Rules
    cost: DecisionCost
    default: str | None = None
    choice: str | None = None
    leader: str | None = None
    expected_regret: float | None = None  # the choice's, where candidates were weighed
    unit: str | None = None  # of expected costs and savings: USD, or s where a candidate is not priced
    same: list[str] = field(default_factory=list)
    saves_per_training: float | None = None
    saves_share: float | None = None
    pays_after_trainings: float | None = None

    def as_dict(self) -> dict[str, object]:
        """For JSON and the statements: every field, the rules as their thresholds."""
        return {**asdict(self), "rules": self.rules.as_dict()}


@dataclass
class CandidateResult:
    candidate: str
    time_to_target_s: float | None
    time_low_s: float | None
    time_high_s: float | None
    cost_usd: float | None
    cost_low_usd: float | None
    cost_high_usd: float | None
    p_cheapest: float | None
    p_deadline: float | None  # P(time <= deadline), with --deadline
    p_budget: float | None  # P(cost <= budget), with --budget
    reached: float  # share of seeds that reached the target
    speed_runs: int
    usd_per_hour: float | None
    price: str
    basis: list[str]
    run_ids: list[int]
    level: float = RULES.level  # of the interval (low, high)
    seeds: int = 0  # seeds behind the epochs
    interval_note: str = ""  # why there is no interval, or what would narrow it
    # What is known of its *expected* cost of one training (``cpustudy.decision.policy``), where there is a choice:
    expected: float | None = None  # in ``expected_unit`` (USD where every candidate is priced, else s)
    expected_low: float | None = None  # 5 % quantile of what is known of that mean
    expected_high: float | None = None  # 95 %
    expected_unit: str = ""
    p_best: float | None = None  # P(lowest expected cost); sums to 1 over the candidates with figures
    regret: float | None = None  # expected relative regret of choosing it


def as_target(target: "float | Target") -> "Target":
    """A comparison's target: ``--target METRIC=VALUE`` as parsed, or ``--target-accuracy A`` as the validation
    accuracy at or above A."""
    return target if isinstance(target, Target) else Target("val_accuracy", ">=", float(target))


def target_words(target: "float | Target") -> str:
    """How a comparison names its target: ``validation accuracy 0.88``, or the target's text (``val_auc>=0.8``)."""
    t = as_target(target)
    return f"validation accuracy {t.value:g}" if (t.metric, t.op) == ("val_accuracy", ">=") else t.text


def metric_value(epoch: EpochRow, metric: str) -> float | None:
    """A stored epoch's value of a validation metric: its column (``val_accuracy``, ``val_loss``), else the
    metrics fit logged (stored as JSON), where the accuracy may go under any of Keras' names."""
    v = value(epoch, metric)
    if v is not None:
        return float(v)
    logs = epoch.get("metrics")
    if isinstance(logs, str):
        try:
            logs = json.loads(logs)
        except ValueError:
            logs = None
    if not isinstance(logs, Mapping):
        return None
    if logs.get(metric) is not None:
        return float(logs[metric])
    return accuracy_value(logs, "val_") if metric == "val_accuracy" else None


def epochs_to_target(epochs: Sequence[EpochRow], target: "float | Target") -> int | None:
    """The first epoch (1-based, as stored) whose metric meets the target, else None."""
    t = as_target(target)
    for e in epochs:
        if t.reached(metric_value(e, t.metric)):
            return int(e["epoch"])
    return None


def seed_result(run: RunRow, epochs: Sequence[EpochRow],
                target: "float | Target") -> SeedResult | None:
    """A stored run as one seed's convergence to ``target`` (a validation accuracy, or ``--target``'s), or None
    where it cannot tell: a run that stopped at its own target before reaching this one, failed, or did not
    validate the metric."""
    t = as_target(target)
    if run.get("status") != "ok" or not any(metric_value(e, t.metric) is not None for e in epochs):
        return None
    hit = epochs_to_target(epochs, t)
    if hit is None and _stopped_at_own_target(run, epochs):
        return None  # it stopped at its own target, short of this one: what came after is unknown
    steps = epochs[0].get("steps") or run.get("full_steps_per_epoch")
    if (capped := run.get("steps_per_epoch")) and (full := run.get("full_steps_per_epoch")) and capped < full:
        return None  # capped epochs saw part of the data: not a training's convergence
    samples = hit * int(steps) * int(batch) if hit is not None and steps and (batch := run.get("batch_size")) \
        else None
    max_epochs = int(run.get("epochs") or len(epochs))
    # the epochs after which a race told it to stop short of its target (its stored settings), or None
    give_up = int(g) if (g := settings_of(run.get("settings")).get("give_up_after")) else None
    censored = give_up if hit is None and give_up is not None and give_up < max_epochs and len(epochs) <= give_up \
        else None
    return SeedResult(int(run.get("seed") or 0), hit is not None, hit, max_epochs, int(run["id"]),
                      run.get("vcpus"), samples, censored, margins(epochs, t, hit))


def margins(epochs: Sequence[EpochRow], target: "Target", hit: int | None) -> tuple[float, ...]:
    """A seed's margin past ``target`` at each epoch it trained, to the one that reached it (``hit``): the
    metric minus the target (the target minus it, for a metric to bring down); empty where an epoch's value
    is missing (the margins then say nothing)."""
    out = []
    for e in sorted(epochs, key=lambda e: e.get("epoch") or 0)[:hit or None]:
        v = metric_value(e, target.metric)
        if v is None or not math.isfinite(v):
            return ()
        out.append(v - target.value if target.op == ">=" else target.value - v)
    return tuple(out)


def _stopped_at_own_target(run: RunRow, epochs: Sequence[EpochRow]) -> bool:
    try:
        own = of_run(run.get("target"), run.get("target_accuracy"))
    except UserError:  # a target text this version cannot read: whether it stopped there, as the run stored it
        return bool(run.get("target_reached"))
    return own is not None and epochs_to_target(epochs, own) is not None


def speed_sample(run: RunRow, epochs: Sequence[EpochRow]) -> SpeedSample | None:
    """A stored ok run's speed: its billed parts (:meth:`Billed.of_run`), None where it has none."""
    billed = Billed.of_run(run, epochs)
    return None if billed is None else SpeedSample(billed, int(run["id"]), bool(run.get("epoch_time_s") and
                                                                              run.get("projected")), session_of(run))


def _interval(values: npt.NDArray[np.float64], level: float) -> tuple[float | None, float | None, float | None]:
    """Median and the central ``level`` interval; a bound past every finite draw (seeds that never
    reached) is None."""
    tail = 50.0 * (1 - level)
    with np.errstate(invalid="ignore"):  # between two never-reached draws: inf - inf, read as never
        q = np.percentile(values, [50.0, tail, 100.0 - tail])
    out = [float(x) if math.isfinite(x) else None for x in q]
    return out[0], out[1], out[2]


def combine(seeds: Sequence[SeedResult], candidates: Sequence[CandidateInput], *, deadline_s: float | None = None,
            budget_usd: float | None = None, draws: int = RULES.draws, rng_seed: int = 0, level: float = RULES.level,
            noise: Noise = NO_PRIOR, epoch_prior: Noise = EPOCH_PRIOR, factor: float | Mapping[str, float] = 1.0) -> list[CandidateResult]:
    """Each candidate's time and cost to the target for one new training, with their ``level`` prediction
    intervals and P(cheapest) (see the module's docstring); candidates with no speed sample get a row with
    no figures. ``noise``: the machine's known spread (:func:`cpustudy.analysis.stats.noise_from_groups`);
    by default the speed samples alone."""
    return combine_groups([(seeds, candidates)], deadline_s=deadline_s, budget_usd=budget_usd, draws=draws,
                          rng_seed=rng_seed, level=level, noise=noise, epoch_prior=epoch_prior, factor=factor)


def combine_groups(groups: Sequence[tuple[Sequence[SeedResult], Sequence[CandidateInput]]], *,
                   deadline_s: float | None = None, budget_usd: float | None = None, draws: int = RULES.draws,
                   rng_seed: int = 0, level: float = RULES.level, noise: Noise = NO_PRIOR,
                   epoch_prior: Noise = EPOCH_PRIOR, factor: float | Mapping[str, float] = 1.0) -> list[CandidateResult]:
    """:func:`combine` for candidates that converge differently: each group is one training setting
    (a precision, a batch size) with its own seeds' epochs and its candidates; every candidate's figures come
    from its own group's seeds, and P(cheapest) is taken over all groups' candidates together (a new training
    of each setting converges on its own: their epoch draws are independent). Each candidate's figures are read
    from the model's draws: the median and central ``level`` interval of its time and cost, P(cheapest) among the
    priced, P(deadline) and P(budget)."""
    if not groups or any(not seeds for seeds, _ in groups):
        raise ValueError("combine needs at least one seed's convergence for every setting")
    if not 0 < level < 1:
        raise ValueError(f"level {level}: give a share between 0 and 1")
    model = Model([Group(str(g), seeds, candidates) for g, (seeds, candidates) in enumerate(groups)], noise=noise,
                  draws=draws, rng_seed=rng_seed, epoch_prior=epoch_prior, factor=factor)
    fitted = model.fitted
    costs = {n: f.new_s * rate for n, f in fitted.items() if (rate := model.rate(n)) is not None}
    cheapest = model.p_lowest(costs)
    out = []
    for name, (group, c) in model.of.items():
        f = fitted.get(name)
        t = f.new_s if f is not None else None
        cost = costs.get(name)
        tm, tl, th = _interval(t, level) if t is not None else (None, None, None)
        cm, cl, ch = _interval(cost, level) if cost is not None else (None, None, None)
        note = f.note if f is not None else model.notes.get(name, "")
        if note:  # a point figure only: no interval stated at any level
            tl = th = cl = ch = None
        seeds = group.seeds
        out.append(CandidateResult(
            candidate=name, time_to_target_s=tm, time_low_s=tl, time_high_s=th, cost_usd=cm,
            cost_low_usd=cl, cost_high_usd=ch, p_cheapest=cheapest.get(name),
            p_deadline=float(np.mean(t <= deadline_s)) if t is not None and deadline_s is not None else None,
            p_budget=float(np.mean(cost <= budget_usd)) if cost is not None and budget_usd is not None else None,
            reached=sum(s.reached for s in seeds) / len(seeds), speed_runs=len(c.samples), usd_per_hour=c.usd_per_hour,
            price=c.price, basis=list(c.basis), run_ids=sorted(x.run_id for x in c.samples), level=level,
            seeds=len(seeds), interval_note=note))
    return out


def censor_after(candidates: Sequence[CandidateInput], bound: float, max_epochs: int, *,
                 priced: bool) -> int | None:
    """The most epochs a seed of a setting may take and still let one of its ``candidates`` come in under
    ``bound`` (the leading candidate's upper bound: its cost in USD where ``priced``, else its time in s),
    each candidate taken at its fastest speed run: past that, the seed cannot make its setting the
    cheapest (the fastest), and a race may stop it (``SeedResult.censored_after``). At least 1; None where
    every epoch up to ``max_epochs`` still could (nothing to stop) or no candidate has a speed run."""
    most: int | None = None
    for c in candidates:
        rate = (c.usd_per_hour / 3600.0 if c.usd_per_hour else None) if priced else 1.0
        if rate is None:
            continue
        for s in c.samples:
            room = bound / rate - s.billed.once_s
            e = math.floor(room / s.billed.per_epoch_s) if s.billed.per_epoch_s > 0 else max_epochs
            most = e if most is None else max(most, e)
    if most is None or most >= max_epochs:
        return None
    return max(1, most)


@dataclass(frozen=True)
class Agreement:
    """The same seeds trained at two thread counts: whether the epochs to the target agreed."""

    seeds: int  # seeds trained at both
    same: int  # of which the epochs to target (or not reaching it) agreed
    rows: list[tuple[int, dict[int, int | None]]]  # seed -> {vcpus: epochs to target}

    @property
    def line(self) -> str:
        places = sorted({v for _, by in self.rows for v in by})
        per = "; ".join(f"seed {s}: " + ", ".join(f"{by.get(v) or 'not reached'} at {v}" for v in places)
                        for s, by in self.rows)
        return (f"epochs to the target agree for {self.same} of {self.seeds} seed(s) trained at "
                f"{' and '.join(map(str, places))} vCPUs ({per})")


def agreement(results: Iterable[SeedResult]) -> Agreement | None:
    """Seeds trained at more than one vCPU count (different thread counts change the order of float
    sums): how often their epochs to the target agree. None when no seed was."""
    by: dict[int, dict[int, int | None]] = {}
    for r in results:
        if r.vcpus is not None:
            by.setdefault(r.seed, {}).setdefault(int(r.vcpus), r.epochs if r.reached else None)
    both = [(s, v) for s, v in sorted(by.items()) if len(v) > 1]
    if not both:
        return None
    same = sum(len(set(v.values())) == 1 for _, v in both)
    return Agreement(len(both), same, both)
