"""Time and cost to a target accuracy per candidate machine, with how sure the answer is (``cpustudy compare``).

Two measurements meet here, each of its own:

* **Convergence** (:class:`SeedResult`): how many epochs a training needs to reach the target, per seed
  (weights, shuffles, dropout and augmentation all follow the seed). It depends on the model, its data,
  batch size, precision and optimizer, not on the machine (an assumption the comparison checks where
  the same seed was trained at two vCPU counts: :func:`agreement`). A seed that did not reach the target
  within its epochs is kept and counted, never dropped.
* **Speed** (:class:`SpeedSample`): per candidate, each stored run's full-epoch time (measured, or
  projected from capped epochs as the calibration checked), the first epoch's extra time (tracing),
  the validation after each epoch and the worker's start-up.

The combination (:func:`combine`), for a seed needing ``e`` epochs and a speed sample ``r``::

    time = e x epoch_s(r) + tracing_s(r) + e x validation_s(r) + startup_s(r)
    cost = time x the candidate's hourly rate / 3600

The uncertainty comes from resampling: every draw picks one measured seed (the same for every
candidate: the seed decides the epochs wherever it trains) and, per candidate, one measured speed
sample. Time and cost are given as the median and the 5th-95th percentiles of the draws (a 90 %
interval for *one* training with a seed not yet seen), and each candidate's probability of being the
cheapest (and of meeting a deadline or budget) is the share of draws where it was. The interval covers
the seed-to-seed variation of the seeds measured and the process-to-process variation of the speed
repeats; it does not cover another machine of the same instance type, a seed needing more epochs
than any measured one, the VM's provisioning, or price changes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

#: Draws of the resampling; the generator's seed is fixed, so the same measurements give the same answer.
DRAWS = 4000
INTERVAL = (5.0, 95.0)  # percentiles: a 90 % interval


@dataclass(frozen=True)
class SeedResult:
    """One seed's training to the target: after how many epochs it reached it, or that it did not
    within ``max_epochs``."""

    seed: int
    reached: bool
    epochs: int | None  # epochs to the target (the first epoch counts), None when not reached
    max_epochs: int
    run_id: int
    vcpus: int | None = None
    samples: int | None = None  # training samples seen to the target


@dataclass(frozen=True)
class SpeedSample:
    """One run's speed on a candidate: what a training there costs per epoch and once."""

    epoch_s: float  # a full epoch's training time (projected from capped epochs where ``projected``)
    tracing_s: float  # the first epoch's extra time (tracing, building the input pipeline)
    validation_s: float  # the validation after each epoch (0 without it)
    startup_s: float  # worker spawn -> first step (importing the framework, loading data)
    run_id: int
    projected: bool = False


@dataclass
class CandidateInput:
    """A candidate as the combination sees it: its speed samples and its price (None: not priced)."""

    candidate: str
    samples: list[SpeedSample]
    usd_per_hour: float | None
    price: str  # which rate, or why none
    basis: list[str] = field(default_factory=list)  # where its speed came from, and what it assumed


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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def epochs_to_target(epochs: Sequence[Mapping[str, Any]], target: float, *, higher_is_better: bool = True,
                     metric: str = "val_accuracy") -> int | None:
    """The first epoch (1-based, as stored) whose ``metric`` meets the target, else None."""
    for e in epochs:
        v = e.get(metric)
        if v is not None and (v >= target if higher_is_better else v <= target):
            return int(e["epoch"])
    return None


def seed_result(run: Mapping[str, Any], epochs: Sequence[Mapping[str, Any]], target: float) -> SeedResult | None:
    """A stored run as one seed's convergence to ``target``, or None where it cannot tell: a run that
    stopped at a lower target than this one, failed, or did not validate."""
    if run.get("status") != "ok" or not any(e.get("val_accuracy") is not None for e in epochs):
        return None
    stop = run.get("target_accuracy")
    hit = epochs_to_target(epochs, target)
    if hit is None and stop is not None and stop < target - 1e-12:
        return None  # it stopped at its own, lower target: what came after is unknown
    steps = epochs[0].get("steps") or run.get("full_steps_per_epoch")
    if run.get("steps_per_epoch") and run.get("full_steps_per_epoch") and run["steps_per_epoch"] < run[
            "full_steps_per_epoch"]:
        return None  # capped epochs saw part of the data: not a training's convergence
    samples = hit * int(steps) * int(run["batch_size"]) if hit is not None and steps and run.get("batch_size") \
        else None
    return SeedResult(int(run.get("seed") or 0), hit is not None, hit, int(run.get("epochs") or len(epochs)),
                      int(run["id"]),
                      run.get("vcpus"), samples)


def speed_sample(run: Mapping[str, Any], epochs: Sequence[Mapping[str, Any]]) -> SpeedSample | None:
    """A stored ok run's speed. A run that reached its target in its first epoch has no timed epoch: its
    first epoch, tracing and all, stands for every epoch (an overestimate, never an underestimate)."""
    if run.get("status") != "ok":
        return None
    first = next((e for e in epochs if e.get("warmup")), None)
    if not run.get("epoch_time_s"):
        full = run.get("full_steps_per_epoch")
        if first is None or len(epochs) != 1 or (full and first.get("steps") and first["steps"] < full):
            return None
        val = first.get("validation_s") if run.get("validation") != "none" else 0.0
        return SpeedSample(float(first["elapsed_s"]), 0.0, float(val or 0.0), float(run.get("startup_s") or 0.0),
                           int(run["id"]), False)
    measured = run.get("measured_epoch_time_s") or run["epoch_time_s"]
    tracing = max(0.0, float(first["elapsed_s"]) - float(measured)) if first else 0.0
    validation = float(run.get("validation_time_s") or 0.0) if run.get("validation") != "none" else 0.0
    return SpeedSample(float(run["epoch_time_s"]), tracing, validation, float(run.get("startup_s") or 0.0),
                       int(run["id"]), bool(run.get("projected")))


def _times(epochs: np.ndarray, s: Sequence[SpeedSample], picks: np.ndarray) -> np.ndarray:
    epoch = np.array([x.epoch_s for x in s])[picks]
    val = np.array([x.validation_s for x in s])[picks]
    fixed = np.array([x.tracing_s + x.startup_s for x in s])[picks]
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(epochs), epochs * (epoch + val) + fixed, np.inf)


def _interval(values: np.ndarray) -> tuple[float | None, float | None, float | None]:
    """Median and the 90 % interval; a bound past every finite draw (seeds that never reached) is None."""
    with np.errstate(invalid="ignore"):  # between two never-reached draws: inf - inf, read as never
        q = np.percentile(values, [50.0, *INTERVAL])
    out = [float(x) if math.isfinite(x) else None for x in q]
    return out[0], out[1], out[2]


def combine(seeds: Sequence[SeedResult], candidates: Sequence[CandidateInput], *, deadline_s: float | None = None,
            budget_usd: float | None = None, draws: int = DRAWS, rng_seed: int = 0) -> list[CandidateResult]:
    """Each candidate's time and cost to the target with their 90 % intervals and P(cheapest) (see the
    module's docstring); candidates with no speed sample get a row with no figures."""
    if not seeds:
        raise ValueError("combine needs at least one seed's convergence")
    rng = np.random.default_rng(rng_seed)
    epochs = np.array([s.epochs if s.reached else np.inf for s in seeds], dtype=float)
    drawn = epochs[rng.integers(0, len(seeds), draws)]  # one seed per draw, shared by every candidate
    reached = sum(s.reached for s in seeds) / len(seeds)
    times: dict[str, np.ndarray] = {}
    for c in candidates:
        if c.samples:
            times[c.candidate] = _times(drawn, c.samples, rng.integers(0, len(c.samples), draws))
    costs = {c.candidate: times[c.candidate] * c.usd_per_hour / 3600.0 for c in candidates
             if c.candidate in times and c.usd_per_hour is not None}
    cheapest = _p_cheapest(costs, draws)
    out = []
    for c in candidates:
        t = times.get(c.candidate)
        cost = costs.get(c.candidate)
        tm, tl, th = _interval(t) if t is not None else (None, None, None)
        cm, cl, ch = _interval(cost) if cost is not None else (None, None, None)
        out.append(CandidateResult(
            candidate=c.candidate, time_to_target_s=tm, time_low_s=tl, time_high_s=th, cost_usd=cm,
            cost_low_usd=cl, cost_high_usd=ch, p_cheapest=cheapest.get(c.candidate),
            p_deadline=float(np.mean(t <= deadline_s)) if t is not None and deadline_s is not None else None,
            p_budget=float(np.mean(cost <= budget_usd)) if cost is not None and budget_usd is not None else None,
            reached=reached, speed_runs=len(c.samples), usd_per_hour=c.usd_per_hour, price=c.price,
            basis=list(c.basis), run_ids=sorted(x.run_id for x in c.samples)))
    return out


def _p_cheapest(costs: Mapping[str, np.ndarray], draws: int) -> dict[str, float]:
    """Per priced candidate, the share of draws in which it costs least (ties shared); draws in which
    no candidate reaches the target count for none."""
    if not costs:
        return {}
    names = list(costs)
    m = np.vstack([costs[n] for n in names])
    best = m.min(axis=0)
    finite = np.isfinite(best)
    winners = (m == best) & finite
    share = winners / np.maximum(winners.sum(axis=0), 1)
    return {n: float(share[i].sum() / draws) for i, n in enumerate(names)}


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
