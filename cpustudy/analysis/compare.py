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

That is the billed time of one training: worker start to the target, start-up, tracing, every epoch with
its idle stalls and the validation after it. Every figure is a **prediction for one training with a seed
not yet seen** on a run not yet made (:mod:`cpustudy.analysis.stats`): each draw takes

* the new seed's epochs to the target, from how far past (or short of) it each measured seed's metric
  was at every epoch it trained (:func:`epochs_by_margins`: epoch by epoch, a Student-t predictive of
  the margins of the seeds still short of the target before it; past the seeds' cap, not reached). So
  seeds that all took one epoch but reached the target by a hair still leave a new seed its chance of
  needing two. Where the margins cannot tell (seeds stored without their metric, a single seed): whether
  it reaches the target at all (where some measured seed did not: the share of those that did, drawn
  from its Beta(reached + 1/2, missed + 1/2) posterior), and its epochs: a Student-t predictive of the
  log epochs of the seeds that reached it (their spread pooled with ``EPOCH_PRIOR``), rounded to whole
  epochs. One draw serves every candidate (the seed decides the epochs wherever it trains);
* per candidate, a new run's per-epoch and once-only times: Student-t predictives of their logs over the
  candidate's speed runs, their spread pooled with the machine's noise (``noise``: the database's
  repeats, and the variation between sweeps a new run meets); where some of its runs were projected from
  capped epochs, the projection's own error too (``noise.projection``, times the share projected: one bias
  all its projected runs share).

Time and cost are the median and the central ``level`` interval of the draws (``Rules.level`` by default), printed
with their n; each candidate's probability of being the cheapest (and of meeting a deadline or budget) is
the share of draws where it was. Where the measurements cannot give an interval (one speed run and no
known spread; one seed that reached the target) it is not given, and ``interval_note`` says what would.
Checked by simulation (``tests/test_stats_calibration.py``): a fresh training falls inside the stated
interval at its stated level. Not covered: another machine of the same instance type, VM provisioning,
price changes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from cpustudy.analysis import stats
from cpustudy.analysis.billed import Billed
from cpustudy.analysis.runs import session_of
from cpustudy.analysis.stats import NO_PRIOR, Noise
from cpustudy.rules import RULES

if TYPE_CHECKING:
    from cpustudy.targets import Target

#: What is known beforehand of how the epochs to a target vary between seeds, on the log scale: worth
#: one seed. Without it, seeds that all took the same epochs would promise that every seed does.
EPOCH_PRIOR = Noise(within=0.10, df=1.0, between=0.0, source="a prior worth one seed: 10 % between seeds")


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
    censored_after: int | None = None  # a race stopped it after this many epochs, short of the target
    margins: tuple[float, ...] = ()  # per trained epoch, how far its metric was past the target (< 0: short)
    setting: str = ""  # its training setting's label where several are compared (``bf16 b64``)

    def outcome(self, unreached: str = "not reached") -> str:
        """Its epochs to the target in words: the number, ``stopped after K (censored)`` for a seed a race stopped,
        else ``unreached``."""
        if self.reached:
            return f"{self.epochs}"
        return f"stopped after {self.censored_after} (censored)" if self.censored_after is not None else unreached

    @property
    def earliest(self) -> int | None:
        """The epochs to the target as the combination counts them: reached, or a censored seed's earliest."""
        if self.reached:
            return self.epochs
        return self.censored_after + 1 if self.censored_after is not None else None


@dataclass(frozen=True)
class SpeedSample:
    """One run's speed on a candidate: what a training there bills (:class:`Billed`) and where it came from."""

    billed: Billed
    run_id: int
    projected: bool = False
    session: str = ""  # the measuring session it came from ("" where the run did not say: one unknown session)


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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def as_target(target: "float | Target") -> "Target":
    """A comparison's target: ``--target METRIC=VALUE`` as parsed, or ``--target-accuracy A`` as the validation
    accuracy at or above A."""
    from cpustudy.targets import Target

    return target if isinstance(target, Target) else Target("val_accuracy", ">=", float(target))


def target_words(target: "float | Target") -> str:
    """How a comparison names its target: ``validation accuracy 0.88``, or the target's text (``val_auc>=0.8``)."""
    t = as_target(target)
    return f"validation accuracy {t.value:g}" if (t.metric, t.op) == ("val_accuracy", ">=") else t.text


def metric_value(epoch: Mapping[str, Any], metric: str) -> float | None:
    """A stored epoch's value of a validation metric: its column (``val_accuracy``, ``val_loss``), else the
    metrics fit logged (stored as JSON), where the accuracy may go under any of Keras' names."""
    import json

    from cpustudy.targets import accuracy_value

    v = epoch.get(metric)
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


def epochs_to_target(epochs: Sequence[Mapping[str, Any]], target: "float | Target") -> int | None:
    """The first epoch (1-based, as stored) whose metric meets the target, else None."""
    t = as_target(target)
    for e in epochs:
        if t.reached(metric_value(e, t.metric)):
            return int(e["epoch"])
    return None


def seed_result(run: Mapping[str, Any], epochs: Sequence[Mapping[str, Any]],
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
    if run.get("steps_per_epoch") and run.get("full_steps_per_epoch") and run["steps_per_epoch"] < run[
            "full_steps_per_epoch"]:
        return None  # capped epochs saw part of the data: not a training's convergence
    samples = hit * int(steps) * int(run["batch_size"]) if hit is not None and steps and run.get("batch_size") \
        else None
    max_epochs = int(run.get("epochs") or len(epochs))
    give_up = _give_up_after(run)
    censored = give_up if hit is None and give_up is not None and give_up < max_epochs and len(epochs) <= give_up \
        else None
    return SeedResult(int(run.get("seed") or 0), hit is not None, hit, max_epochs, int(run["id"]),
                      run.get("vcpus"), samples, censored, margins(epochs, t, hit))


def margins(epochs: Sequence[Mapping[str, Any]], target: "Target", hit: int | None) -> tuple[float, ...]:
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


def _give_up_after(run: Mapping[str, Any]) -> int | None:
    """The epochs after which a race told this run to stop short of its target (its stored settings), or None."""
    import json

    try:
        value = json.loads(run.get("settings") or "{}").get("give_up_after")
    except (ValueError, AttributeError):
        return None
    return int(value) if value else None


def _stopped_at_own_target(run: Mapping[str, Any], epochs: Sequence[Mapping[str, Any]]) -> bool:
    from cpustudy.errors import UserError
    from cpustudy.targets import of_run

    try:
        own = of_run(run.get("target"), run.get("target_accuracy"))
    except UserError:  # a target text this version cannot read: whether it stopped there, as the run stored it
        return bool(run.get("target_reached"))
    return own is not None and epochs_to_target(epochs, own) is not None


def speed_sample(run: Mapping[str, Any], epochs: Sequence[Mapping[str, Any]]) -> SpeedSample | None:
    """A stored ok run's speed: its billed parts (:meth:`Billed.of_run`), None where it has none."""
    billed = Billed.of_run(run, epochs)
    return None if billed is None else SpeedSample(billed, int(run["id"]), bool(run.get("epoch_time_s") and
                                                                              run.get("projected")), session_of(dict(run)))


def _interval(values: np.ndarray, level: float) -> tuple[float | None, float | None, float | None]:
    """Median and the central ``level`` interval; a bound past every finite draw (seeds that never
    reached) is None."""
    tail = 50.0 * (1 - level)
    with np.errstate(invalid="ignore"):  # between two never-reached draws: inf - inf, read as never
        q = np.percentile(values, [50.0, tail, 100.0 - tail])
    out = [float(x) if math.isfinite(x) else None for x in q]
    return out[0], out[1], out[2]


def draw_epochs(seeds: Sequence[SeedResult], draws: int, rng: np.random.Generator,
                prior: Noise = EPOCH_PRIOR) -> tuple[np.ndarray, str]:
    """Epochs to the target of ``draws`` new seeds (inf: never reached), and why their spread is unknown
    (empty when known): see the module's docstring."""
    by_margins = epochs_by_margins(seeds, draws, rng)
    if by_margins is not None:
        return by_margins, ""
    reached = [float(s.earliest) for s in seeds if s.earliest]  # a censored seed at its earliest
    n, r = len(seeds), len(reached)
    if not r:
        return np.full(draws, np.inf), "no seed reached the target"
    note = ""
    pred = stats.predict_log(reached, prior)
    if r == 1:  # the prior alone spreads it: drawn (P(cheapest) needs draws), but no interval is stated
        note = "one seed's epochs: the seeds' spread is unknown (a second seed gives an interval)"
    if pred is None:
        epochs = np.full(draws, reached[0])
    else:
        cap = math.log(100.0 * max(reached))  # a Student-t's far tail: no seed needs 100x the slowest one's
        epochs = np.maximum(1.0, np.round(np.exp(np.minimum(pred.draw(rng, draws), cap))))
    if r < n:
        p = rng.beta(r + 0.5, n - r + 0.5, draws)
        epochs = np.where(rng.random(draws) < p, epochs, np.inf)
    return epochs, note


def epochs_by_margins(seeds: Sequence[SeedResult], draws: int, rng: np.random.Generator) -> np.ndarray | None:
    """Epochs to the target of ``draws`` new seeds from how far each seed's metric was past the target at each
    epoch it trained (``SeedResult.margins``), or None where the margins cannot tell (a seed without them, or
    no two seeds at any epoch).

    Epoch by epoch, among the seeds still short of the target before it (those that reached it earlier have
    left; a seed a race stopped leaves when it stopped), a new seed's margin at that epoch is drawn from the
    Student-t predictive of theirs (their mean, the between-seed spread pooled over every epoch with two or
    more values); the first epoch whose drawn margin is at or past the target is the new seed's. Past the
    last epoch any seed trained the last one's predictive stands (an epoch no better than the last: on the
    cautious side); past the seeds' cap (``max_epochs``) the new seed has not reached it (inf). So three
    seeds that each reached 0.86 in one epoch with 0.862, 0.865 and 0.873 give a new seed about one chance in
    five of needing a second: the epochs alone (1, 1, 1) cannot tell that.

    Seeds that never reached the target within their epochs are left to the Beta posterior of reaching at
    all, as without margins: a seed that is behind stays behind, which epoch-by-epoch draws would not
    know (simulated with a quarter of seeds never reaching: 80 % inside a "90 %" interval with them in the
    epoch-by-epoch draws)."""
    if len(seeds) < 2 or any(not s.margins for s in seeds):
        return None
    never = [s for s in seeds if not s.reached and s.censored_after is None]
    going = [s for s in seeds if s.reached or s.censored_after is not None]
    if len(going) < 2:
        return None
    longest = max(len(s.margins) for s in going)
    at = [np.array([s.margins[k] for s in going if len(s.margins) > k]) for k in range(longest)]
    df = sum(len(v) - 1 for v in at)
    ss = sum(float(((v - v.mean()) ** 2).sum()) for v in at if len(v) > 1)
    if df < 1 or ss <= 0:
        return None
    var = ss / df
    cap = max(s.max_epochs for s in seeds)
    out = np.full(draws, np.inf)
    open_ = np.ones(draws, dtype=bool)
    for k in range(cap):
        v = at[min(k, longest - 1)]
        drawn = v.mean() + math.sqrt(var * (1 + 1 / len(v))) * rng.standard_t(df, draws)
        hit = open_ & (drawn >= 0)
        out[hit] = k + 1
        open_ &= ~hit
        if not open_.any():
            break
    if never:
        reached = sum(1 for s in seeds if s.reached)
        p = rng.beta(reached + 0.5, len(never) + 0.5, draws)
        out = np.where(rng.random(draws) < p, out, np.inf)
    return out


def _times(epochs: np.ndarray, samples: Sequence[SpeedSample], noise: Noise, draws: int,
           rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """One new training's billed time per draw on a candidate, and why its spread is unknown (or "").

    For a draw's epochs ``e``, each speed run stands for a whole training of ``e`` epochs (its per-epoch
    time x e + its once-only time: a run's slow spell slows both); a new run's training is drawn from the
    Student-t predictive of those trainings' log times (:func:`cpustudy.analysis.stats.predict_log`,
    vectorised over the draws). The seeds' and the runs' predictives are drawn independently: with few of
    either, the interval is somewhat wider than its level (simulated: 89-97 % inside a 90 % interval;
    Welch-Satterthwaite's single t for the sum fell to 72 % where all seeds took the same epochs)."""
    finite = np.isfinite(epochs)
    e = np.where(finite, epochs, 1.0)
    logs = np.log(np.stack([s.billed.seconds(e) for s in samples], axis=1))  # draws x runs
    n = len(samples)
    sessions: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        sessions.setdefault(s.session, []).append(i)
    # a projected epoch's own error (one bias shared by the candidate's projected runs): its share of the runs
    projection2 = (noise.projection * float(np.mean([s.projected for s in samples]))) ** 2
    if len(sessions) > 1:
        center, scale, df = _across_sessions(logs, list(sessions.values()), noise)
    else:
        spread = stats.predictive_scale(((logs - logs.mean(axis=1, keepdims=True)) ** 2).sum(axis=1), n, noise)
        if spread is None:
            note = (f"one speed run and no known spread of this machine: no interval ({n + 1} runs, or repeats "
                    "stored in the database, give one)")
            return np.where(finite, np.exp(logs[:, 0]), np.inf), note
        center, (scale, df) = logs.mean(axis=1), spread
    scale = np.sqrt(scale ** 2 + projection2)
    t = np.exp(center + np.minimum(scale * rng.standard_t(df, draws), math.log(100.0)))
    return np.where(finite, t, np.inf), ""


def _across_sessions(logs: np.ndarray, groups: Sequence[Sequence[int]], noise: Noise) -> tuple[np.ndarray, np.ndarray, float]:
    """The predictive of a new run in a new session from runs measured in several sessions (``groups``: the
    columns of ``logs`` per session), as a random-effects model: the centre is the mean of the sessions' means
    (each session one vote, however many runs it measured); the spread of a new run is its own (``within``,
    pooled inside sessions with the machine's), its session's shift (``between``) and the centre's uncertainty
    ((between^2 + within^2 / n_s) summed over the sessions / sessions^2). ``between`` pools what these sessions'
    means say (beyond their runs' noise) with the machine's (``noise.between``, worth its ``between_df``, at
    least one). Degrees of freedom: the fewer of within's and between's. With every run in one session this
    is :func:`cpustudy.analysis.stats.predictive_scale`'s ``within^2 (1 + 1/n) + 2 between^2``."""
    k = len(groups)
    means = np.stack([logs[:, g].mean(axis=1) for g in groups], axis=1)  # draws x sessions
    ss = sum(((logs[:, g] - means[:, [j]]) ** 2).sum(axis=1) for j, g in enumerate(groups))
    sizes = np.array([len(g) for g in groups], dtype=float)
    df_w = (logs.shape[1] - k) + noise.df
    within2 = ((ss + noise.df * noise.within ** 2) / df_w if df_w > 0
               else ((means - means.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) / (k - 1))
    own = ((means - means.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) / (k - 1) - within2 * np.mean(1 / sizes)
    prior_df = max(noise.between_df, 1.0)
    between2 = ((k - 1) * np.maximum(own, 0.0) + prior_df * noise.between ** 2) / (k - 1 + prior_df)
    var_mean = (k * between2 + within2 * np.sum(1 / sizes)) / k ** 2
    scale = np.sqrt(between2 + within2 + var_mean)
    df = float(min(df_w if df_w > 0 else k - 1, (k - 1) + prior_df))
    return means.mean(axis=1), scale, df


def combine(seeds: Sequence[SeedResult], candidates: Sequence[CandidateInput], *, deadline_s: float | None = None,
            budget_usd: float | None = None, draws: int = RULES.draws, rng_seed: int = 0, level: float = RULES.level,
            noise: Noise = NO_PRIOR, epoch_prior: Noise = EPOCH_PRIOR) -> list[CandidateResult]:
    """Each candidate's time and cost to the target for one new training, with their ``level`` prediction
    intervals and P(cheapest) (see the module's docstring); candidates with no speed sample get a row with
    no figures. ``noise``: the machine's known spread (:func:`cpustudy.analysis.stats.noise_from_groups`);
    by default the speed samples alone."""
    return combine_groups([(seeds, candidates)], deadline_s=deadline_s, budget_usd=budget_usd, draws=draws,
                          rng_seed=rng_seed, level=level, noise=noise, epoch_prior=epoch_prior)


def combine_groups(groups: Sequence[tuple[Sequence[SeedResult], Sequence[CandidateInput]]], *,
                   deadline_s: float | None = None, budget_usd: float | None = None, draws: int = RULES.draws,
                   rng_seed: int = 0, level: float = RULES.level, noise: Noise = NO_PRIOR,
                   epoch_prior: Noise = EPOCH_PRIOR) -> list[CandidateResult]:
    """:func:`combine` for candidates that converge differently: each group is one training setting
    (a precision, a batch size) with its own seeds' epochs and its candidates; every candidate's figures come
    from its own group's seeds, and P(cheapest) is taken over all groups' candidates together (a new training
    of each setting converges on its own: their epoch draws are independent)."""
    if not groups or any(not seeds for seeds, _ in groups):
        raise ValueError("combine needs at least one seed's convergence for every setting")
    if not 0 < level < 1:
        raise ValueError(f"level {level}: give a share between 0 and 1")
    rng = np.random.default_rng(rng_seed)
    # Each candidate's own figures from one stream seeded alike (the same measurements give the same
    # figures whatever else is compared); P(cheapest) from independent streams, as new runs on separate
    # machines are.
    times: dict[str, np.ndarray] = {}
    apart: dict[str, np.ndarray] = {}
    notes: dict[str, str] = {}
    of: dict[str, tuple[Sequence[SeedResult], CandidateInput]] = {}
    for g, (seeds, candidates) in enumerate(groups):
        stream = rng if g == 0 else np.random.default_rng([rng_seed, 2, g])
        drawn, epoch_note = draw_epochs(seeds, draws, stream, epoch_prior)
        for c in candidates:
            of[c.candidate] = (seeds, c)
            notes[c.candidate] = epoch_note
            if c.samples:
                times[c.candidate], own = _times(drawn, c.samples, noise, draws, np.random.default_rng([rng_seed, 1]))
                notes[c.candidate] = "; ".join(x for x in (epoch_note, own) if x)
                apart[c.candidate], _ = _times(drawn, c.samples, noise, draws, stream)
    rates = {name: c.usd_per_hour / 3600.0 for name, (_, c) in of.items()
             if name in times and c.usd_per_hour is not None}
    costs = {name: times[name] * rate for name, rate in rates.items()}
    cheapest = _p_cheapest({name: apart[name] * rate for name, rate in rates.items()}, draws)
    out = []
    for name, (seeds, c) in of.items():
        t = times.get(name)
        cost = costs.get(name)
        tm, tl, th = _interval(t, level) if t is not None else (None, None, None)
        cm, cl, ch = _interval(cost, level) if cost is not None else (None, None, None)
        note = notes.get(name, "")
        if note:  # a point figure only: no interval stated at any level
            tl = th = cl = ch = None
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
