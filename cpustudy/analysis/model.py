"""One model of what a comparison's measurements say, fitted once per question: every number an answer states
(a new training's interval, P(cheapest in one training), P(deadline), P(budget), and the decision's expected cost,
P(lowest expected cost), expected regret and who is within the indifference zone) is read from its draws.

**Epochs to the target, per setting** (:func:`epochs_of`). The parameters behind the seeds are drawn from their
posterior, and from each draw both what the decision needs (the setting's *mean* epochs billed, a seed that never
reaches the target billed to the cap) and what an interval needs (one *new* seed's epochs) are computed:

* by margins (every seed stored how far its metric was past the target at each epoch): a new seed's margin at
  epoch k is normal about mu_k with the seeds' pooled spread sigma; sigma^2 is drawn from its scaled
  inverse-chi-square posterior and mu_k | sigma from N(the seeds' mean at k, sigma^2 / n_k). Then P(reached at k) =
  Phi(mu_k / sigma) epoch by epoch gives the whole distribution of the first epoch at the target: its mean, and a
  new seed drawn from it. Marginally a new seed's margin is the Student-t predictive of
  the epoch-by-epoch draws it replaced, so intervals keep their calibration; the mean now carries
  what two or three agreeing seeds leave unknown (the old sd over sqrt(seeds) said they left almost nothing);
* otherwise a new seed by log epochs of the seeds that reached it (their spread pooled with ``EPOCH_PRIOR``: (mu,
  sigma) drawn likewise, rounded to whole epochs), and the mean from the share of seeds needing each whole number
  of epochs near those seen (a Dirichlet posterior, each count plus one half): seeds that agree on a few epochs
  leave the mean as unknown as a 1-in-(seeds + 2) chance of a neighbour says;
* seeds that never reached it: P(reaching) from its Beta(reached + 1/2, missed + 1/2) posterior, one draw shared.

**Log time of a training, per candidate** (:class:`cpustudy.analysis.stats.Components`): a run's log time = the candidate's effect + the
period's shift (shared by every candidate measured on the machine in that period) + the candidate's own move in
that period (interaction) + run noise (+ a projection bias shared by its projected runs). A period is
:func:`cpustudy.analysis.runs.periods`'s (sessions less than an hour apart), the ``session`` its speed samples carry.
What is known of the candidate's effect is its runs' mean of period means, less each period's shift (one draw per
period, shared by every candidate the period measured: a contrast within one period is free of it, one across
periods pays it), less the interaction and run noise averaged over its periods and runs, less the projection
bias. One new training adds a new period's shift and interaction and its own run noise. Run noise and
interaction share one scale draw (chi-square over their degrees of freedom), so that a new training's log time is
a Student-t predictive (within^2 (1 + 1/n) + shift^2 + interaction^2 for one period). Each component is sized in
:class:`cpustudy.analysis.stats.Components` (findings read the same) and enters the draws here only.

**Recalibration** (``factor``, from the backtest): multiplies every drawn deviation of log time, so the interval
and every probability read from the draws move together.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import numpy.typing as npt
from scipy.special import ndtr

from cpustudy.analysis.billed import Billed
from cpustudy.analysis.stats import Components, Noise

#: Draws of a figure, one a draw.
Floats = npt.NDArray[np.float64]

#: No new training takes more than 100x a measured one (a Student-t's far tail).
_CAP = math.log(100.0)


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


@dataclass(frozen=True)
class Group:
    """One training setting: its label, its seeds and its candidates' inputs."""

    label: str
    seeds: Sequence[SeedResult]
    candidates: Sequence[CandidateInput]


@dataclass(frozen=True)
class EpochDraws:
    """A setting's epochs per draw: ``mean`` billed over new seeds (a seed never reaching the target billed to the
    cap), ``new`` one new seed (inf: never reached), ``note`` why no interval can be stated (or "")."""

    mean: Floats
    new: Floats
    note: str = ""

    @property
    def log_var(self) -> float:
        """The variance of the log mean epochs: how much is unknown of the setting's mean."""
        return float(np.var(np.log(self.mean)))


def _stream(rng_seed: int, *key: object) -> np.random.Generator:
    """A generator fixed by what it draws for (a candidate's runs, a period, a setting's seeds), so the same
    measurements give the same draws whatever else is compared, and whatever the candidates are called."""
    return np.random.default_rng([rng_seed, *(zlib.crc32(str(k).encode()) for k in key)])


def _period_keys(samples: Sequence[SpeedSample]) -> dict[str, tuple[int, int]]:
    """What each period's draws are keyed by: its first run (its name is a random session id, which would give the
    same database other draws in another process), and where periods share a first run (samples not from a store),
    its place among them by name, so that no two periods ever draw alike."""
    first: dict[str, int] = {}
    for s in samples:
        first[s.session] = min(s.run_id, first.get(s.session, s.run_id))
    return {p: (run, sorted(q for q in first if first[q] == run).index(p)) for p, run in first.items()}


def _sigma2(ss: float, df: float, rng: np.random.Generator, draws: int) -> Floats:
    """Draws of a variance from its scaled inverse-chi-square posterior (sum of squares ``ss`` over ``df``)."""
    return ss / rng.chisquare(df, draws)


def epochs_of(seeds: Sequence[SeedResult], draws: int, rng: np.random.Generator,
              prior: Noise = EPOCH_PRIOR) -> EpochDraws | None:
    """A setting's epochs per draw (see the module's docstring); None where no seed reached the target."""
    cap = float(max(s.max_epochs for s in seeds))
    out = _by_margins(seeds, draws, rng, cap)
    if out is None:
        out = _by_log_epochs(seeds, draws, rng, prior)
    if out is None:
        return None
    missed = [s for s in seeds if not s.reached and s.censored_after is None]
    if missed and len(missed) < len(seeds):
        p = rng.beta(len(seeds) - len(missed) + 0.5, len(missed) + 0.5, draws)
        out = EpochDraws(p * out.mean + (1 - p) * cap, np.where(rng.random(draws) < p, out.new, np.inf), out.note)
    return out


def _by_margins(seeds: Sequence[SeedResult], draws: int, rng: np.random.Generator, cap: float) -> EpochDraws | None:
    if len(seeds) < 2 or any(not s.margins for s in seeds):
        return None
    going = [s for s in seeds if s.reached or s.censored_after is not None]
    if len(going) < 2:
        return None
    longest = max(len(s.margins) for s in going)
    at = [np.array([s.margins[k] for s in going if len(s.margins) > k]) for k in range(longest)]
    df = sum(len(v) - 1 for v in at)
    ss = sum(float(((v - v.mean()) ** 2).sum()) for v in at if len(v) > 1)
    if df < 1 or ss <= 1e-12 * sum(float((v ** 2).sum()) for v in at):  # margins that agree (to rounding): no spread
        return None
    sigma = np.sqrt(_sigma2(ss, df, rng, draws))
    alive = np.ones(draws)  # P(not yet reached) before epoch k, per draw
    mean = np.zeros(draws)
    new = np.full(draws, np.inf)
    u = rng.random(draws)
    cum = np.zeros(draws)
    for k in range(int(cap)):
        v = at[min(k, longest - 1)]
        mu = v.mean() + sigma / math.sqrt(len(v)) * rng.standard_normal(draws)
        hit = alive * ndtr(mu / sigma)
        mean += (k + 1) * hit
        cum_next = cum + hit
        new = np.where(np.isinf(new) & (u < cum_next), k + 1, new)
        cum, alive = cum_next, alive - hit
    mean += cap * alive
    return EpochDraws(mean, new)


def _by_log_epochs(seeds: Sequence[SeedResult], draws: int, rng: np.random.Generator,
                   prior: Noise) -> EpochDraws | None:
    reached = np.log([float(s.earliest) for s in seeds if s.earliest])  # a censored seed at its earliest
    r = len(reached)
    if not r:
        return None
    note = "one seed's epochs: the seeds' spread is unknown (a second seed gives an interval)" if r == 1 else ""
    df = (r - 1) + prior.df
    ss = float(((reached - reached.mean()) ** 2).sum()) + prior.df * prior.within ** 2
    if df <= 0 or ss <= 0:
        e = np.full(draws, math.exp(reached[0]))
        return EpochDraws(e, e.copy(), note)
    sigma = np.sqrt(_sigma2(ss, df, rng, draws))
    mu = reached.mean() + sigma / math.sqrt(r) * rng.standard_normal(draws)
    top = math.log(100.0) + reached.max()

    new = np.maximum(1.0, np.round(np.exp(np.minimum(mu + sigma * rng.standard_normal(draws), top))))
    return EpochDraws(_mean_whole_epochs(seeds, draws, rng), new, note)


def _mean_whole_epochs(seeds: Sequence[SeedResult], draws: int, rng: np.random.Generator) -> Floats:
    """Draws of a setting's mean epochs where the margins cannot tell: the share of new seeds needing each whole
    number of epochs, from one fewer than the fewest seen to one more than the most (at least 1, at most the cap),
    drawn from its Dirichlet posterior (each seen count plus one half). Epochs are few small whole numbers: two seeds
    that both took 2 leave about one new seed in seven needing 1 or 3 (a log-normal of their log spread said none)."""
    ks, alpha = whole_epochs(seeds)
    return rng.dirichlet(alpha, draws) @ ks.astype(float)


def whole_epochs(seeds: Sequence[SeedResult]) -> tuple[npt.NDArray[np.int64], Floats]:
    """The whole numbers of epochs a new seed may need, from one fewer than the fewest seen to one more than the most
    (at least 1, at most the cap), and the Dirichlet posterior's parameters of their shares (each count plus one
    half); no epochs where no seed reached the target."""
    seen = [int(s.earliest) for s in seeds if s.earliest]
    if not seen:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    cap = max(s.max_epochs for s in seeds)
    ks = np.arange(max(1, min(seen) - 1), min(cap, max(seen) + 1) + 1)
    return ks, np.array([seen.count(int(k)) + 0.5 for k in ks])


def epochs_spread(seeds: Sequence[SeedResult]) -> float:
    """How far a new seed's epochs vary (sd of their log) by :func:`whole_epochs`'s expected shares: seeds that
    agree still leave a neighbour's chance (three seeds at 1 epoch: 0.23); inf where none reached the target."""
    ks, alpha = whole_epochs(seeds)
    if not len(ks):
        return math.inf
    p, logs = alpha / alpha.sum(), np.log(ks.astype(float))
    return float(np.sqrt(p @ (logs - p @ logs) ** 2))


@dataclass
class Fitted:
    """One candidate in the model: per draw, the log time of one training at its setting's mean epochs with what is
    known of its effect (``mean_log``), one new training's time (``new_s``, inf: the seed never reached the target),
    the variance of its mean that more runs would shrink (``runs_var``), and why no interval can be stated (or "")."""

    label: str
    input: CandidateInput
    mean_log: Floats
    new_s: Floats
    runs_var: float
    note: str = ""


def _period_means(samples: Sequence[SpeedSample], epochs: Floats) -> tuple[Floats, list[list[int]], Floats]:
    """The runs' log billed times at ``epochs`` (draws x runs), the runs grouped by period (``SpeedSample.session``)
    and each period's mean (draws x periods)."""
    logs = np.log(np.stack([s.billed.seconds(epochs) for s in samples], axis=1))
    by: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by.setdefault(s.session, []).append(i)
    groups = list(by.values())
    return logs, groups, np.stack([logs[:, g].mean(axis=1) for g in groups], axis=1)


def _offsets(samples: Sequence[SpeedSample], at_mean: tuple[Floats, list[list[int]], Floats],
             comps: Components, draws: int, rng: np.random.Generator) -> tuple[Floats, Floats, float, str]:
    """The candidate's own random parts per draw: (what is unknown of its effect beyond the shared shifts, one new
    training's own deviation, the run-noise share of the first's variance, note). ``at_mean``: its runs at the
    setting's mean epochs (:func:`_period_means`)."""
    logs, groups, means = at_mean
    n, k = len(samples), len(groups)
    ss = sum(((logs[:, g] - means[:, [j]]) ** 2).sum(axis=1) for j, g in enumerate(groups))
    inv_n = float(np.sum([1 / len(g) for g in groups]))
    df_w = (n - k) + comps.within_df
    if df_w > 0:
        within2 = (ss + comps.within_df * comps.within ** 2) / df_w
    elif k > 1:
        within2 = ((means - means.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) / (k - 1)
    else:
        note = (f"one speed run and no known spread of this machine: no interval ({n + 1} runs, or repeats "
                "stored in the database, give one)")
        zero = np.zeros(draws)
        return zero, zero, 0.0, note
    df = df_w if df_w > 0 else float(k - 1)
    between2 = np.full(draws, comps.shift ** 2 + comps.interaction ** 2)
    if k > 1:  # the candidate's own periods say how far it moves beyond its runs' noise, pooled with the machine's
        own = ((means - means.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) / (k - 1) - within2 * inv_n / k
        between2 = ((k - 1) * np.maximum(own, 0.0) + comps.between_df * between2) / (k - 1 + comps.between_df)
        df = min(df, (k - 1) + comps.between_df)
    inter2 = np.minimum(comps.interaction ** 2, between2)
    shift2 = between2 - inter2  # the period shift as its periods saw it; the machine's share of it is drawn shared
    beyond = np.maximum(shift2 - comps.shift ** 2, 0.0)
    share = float(np.mean([bool(s.projected) for s in samples]))
    runs2 = within2 * inv_n / k ** 2
    scale = rng.chisquare(df, draws) / df if math.isfinite(df) else np.ones(draws)
    effect = np.sqrt((runs2 + (inter2 + beyond) / k) / scale) * rng.standard_normal(draws) \
        + comps.projection * share * rng.standard_normal(draws)
    fresh = np.sqrt((within2 + inter2 + shift2) / scale) * rng.standard_normal(draws)  # a new period and run
    return effect, fresh, float(np.median(runs2)), ""


class Model:
    """The one model of a comparison's measurements (see the module's docstring): ``groups`` its settings,
    ``noise`` the machine's known spread, ``factor`` the backtest's recalibration (1: none; a mapping: per candidate,
    by its machine's checks)."""

    def __init__(self, groups: Sequence[Group], *, noise: Noise, draws: int, rng_seed: int = 0,
                 epoch_prior: Noise = EPOCH_PRIOR, factor: float | Mapping[str, float] = 1.0) -> None:
        self.comps = Components.of(noise)
        self.draws = draws
        self.epochs: dict[str, EpochDraws] = {}
        self.fitted: dict[str, Fitted] = {}
        self.seeds: dict[str, int] = {}
        self.notes: dict[str, str] = {}  # per candidate without figures: why
        self.of: dict[str, tuple[Group, CandidateInput]] = {}
        for g in groups:
            key = ",".join(str(s.run_id) for s in sorted(g.seeds, key=lambda s: s.run_id)) or g.label
            ep = epochs_of(g.seeds, draws, _stream(rng_seed, "epochs", key), epoch_prior) if g.seeds else None
            for c in g.candidates:
                self.of[c.candidate] = (g, c)
                self.notes[c.candidate] = ep.note if ep is not None else "no seed reached the target"
            if ep is not None:
                self.epochs[g.label] = ep
                self.seeds[g.label] = len(g.seeds)
        shift = self._shifts(groups, rng_seed)
        for g in groups:
            ep = self.epochs.get(g.label)
            if ep is None:
                continue
            finite = np.isfinite(ep.new)
            new_e = np.where(finite, ep.new, 1.0)
            for c in g.candidates:
                if not c.samples:
                    continue
                # by its runs, not its name: a database's answer (``totarget.stored``, its places named otherwise)
                # draws what compare drew for the same runs
                rng = _stream(rng_seed, "candidate", *sorted(s.run_id for s in c.samples))
                f = factor.get(c.candidate, 1.0) if isinstance(factor, Mapping) else factor
                at_mean = _period_means(c.samples, ep.mean)
                effect, fresh, runs_var, note = _offsets(c.samples, at_mean, self.comps, draws, rng)
                own = -np.mean([shift[p] for p in {s.session for s in c.samples}], axis=0)
                dev = np.clip(f * (effect + own) if not note else 0.0, -_CAP, _CAP)
                mean_log = at_mean[2].mean(axis=1) + dev
                new_log = _period_means(c.samples, new_e)[2].mean(axis=1) + dev + np.clip(f * fresh, -_CAP, _CAP)
                self.fitted[c.candidate] = Fitted(g.label, c, mean_log, np.where(finite, np.exp(new_log), np.inf),
                                                  runs_var, "; ".join(x for x in (ep.note, note) if x))

    def _shifts(self, groups: Sequence[Group], rng_seed: int) -> dict[str, Floats]:
        """Per period, draws of its shift of the machine (log; shared by every candidate measured in it). A candidate
        measured in two or more periods (the most; ties: the most runs) is the reference: its period means less their
        mean are the shifts, known to its run noise and its own move in each period (so a contrast across periods is
        a ratio of ratios); a period it did not measure is a draw of the machine's shift about it."""
        draws, comps = self.draws, self.comps
        key = _period_keys([s for g in groups for c in g.candidates for s in c.samples])
        shift = {p: comps.shift * _stream(rng_seed, "period", *k).standard_normal(draws) for p, k in key.items()}
        timed = [(len({s.session for s in c.samples}), len(c.samples), c.candidate, g.label)
                 for g in groups for c in g.candidates if g.label in self.epochs]
        most = max(timed, default=None)
        if most is None or most[0] < 2:
            return shift
        _, _, name, label = most
        samples = self.of[name][1].samples
        _, by, means = _period_means(samples, self.epochs[label].mean)
        centre = means.mean(axis=1)
        for j, idx in enumerate(by):
            p = samples[idx[0]].session
            known = math.sqrt(comps.within ** 2 / len(idx) + comps.interaction ** 2)
            shift[p] = means[:, j] - centre + known * _stream(rng_seed, "period", *key[p]).standard_normal(draws)
        return shift

    def rate(self, name: str) -> float | None:
        """The candidate's price per second (None: not priced)."""
        usd = self.of[name][1].usd_per_hour
        return None if usd is None else usd / 3600.0

    @property
    def priced(self) -> bool:
        """Whether every candidate with figures is priced: then costs are in USD, else in seconds."""
        return all(self.rate(n) is not None for n in self.fitted)

    def mean_cost(self) -> dict[str, Floats]:
        """Per candidate with figures, draws of its expected cost of one training (USD where every candidate is
        priced, else s): what the decision weighs."""
        return {n: np.exp(f.mean_log) * (self.rate(n) or 0.0 if self.priced else 1.0) for n, f in self.fitted.items()}

    def mean_time(self) -> dict[str, Floats]:
        return {n: np.exp(f.mean_log) for n, f in self.fitted.items()}

    def p_lowest(self, costs: Mapping[str, Floats]) -> dict[str, float]:
        """Per candidate, the share of draws in which it costs least (ties shared; draws where none is finite count
        for none)."""
        if not costs:
            return {}
        names = list(costs)
        m = np.vstack([costs[n] for n in names])
        best = m.min(axis=0)
        winners = (m == best) & np.isfinite(best)
        share = winners / np.maximum(winners.sum(axis=0), 1)
        return {n: float(share[i].sum() / m.shape[1]) for i, n in enumerate(names)}


__all__: Sequence[str] = ("EPOCH_PRIOR", "CandidateInput", "EpochDraws", "Fitted", "Group", "Model", "SeedResult", "SpeedSample", "epochs_of",
                          "epochs_spread", "whole_epochs")
