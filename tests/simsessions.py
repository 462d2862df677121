"""Known truths played through cpustudy's statements of certainty, session by session: what share of fresh
trainings in a *new* session fall inside the interval ``compare`` states, and how often equal speeds measured in two
sessions are called different. For ``tests/test_stats_calibration.py`` (``reports/session-calibration/simulate.py``
ran it as ``cpustudy.analysis.simulate``); a user rehearses a comparison with ``compare --simulate`` instead.

Each trial builds what a database would hold and hands it to the functions production calls, in the order it
calls them:

* the machine's anchor (:mod:`cpustudy.analysis.anchor`), timed in every stored session and in ``history`` earlier
  sessions of other work, seeing ``anchor_sees`` of each session's shift, read by :func:`anchor.prior`;
* the candidate's runs in ``sessions`` sessions of ``runs`` each, their totals per session through
  :func:`cpustudy.analysis.stats.noise_from_groups` with that prior (as :func:`cpustudy.analysis.holdup.machine_noise`
  groups them), and their speed samples, each with its session, through :func:`cpustudy.analysis.compare.combine`;
* :func:`cpustudy.analysis.totarget.session_note`, which says where the interval covers its session only;
* findings: :func:`cpustudy.analysis.holdup.compare_samples` with each run's session and that noise.

What the truth is made of, beyond the model's own family: a session's shift moves the whole training (its epochs
and its start-up) by ``exp(s)`` with ``s`` normal or Student-t with 3 degrees of freedom (heavy tails) of log sd
``shift``; runs vary by ``within`` inside a session; a new seed's epochs come from ``epochs``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from cpustudy.analysis import anchor, compare, holdup, stats, totarget
from cpustudy.analysis.billed import Billed

#: Epochs a seed needs, by name: a draw of ``n`` seeds' epochs.
EPOCHS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "always 3": lambda rng, n: np.full(n, 3),
    "1 or 2 (60/40)": lambda rng, n: np.where(rng.random(n) < 0.6, 1, 2),
    "10 + Poisson(4)": lambda rng, n: 10 + rng.poisson(4, n),
}

EPOCH_S, ONCE_S, VALIDATION = 2.0, 4.0, 0.1  # a run's per-epoch training, start-up, validation share


@dataclass(frozen=True)
class Truth:
    """One machine's and one model's truth, and what the database holds of them."""

    shift: float  # log sd of a session's shift of the whole training
    sessions: int = 1  # sessions in which the candidate was measured
    runs: int = 3  # speed runs per session
    seeds: int = 3  # seeds' epochs to the target
    within: float = 0.05  # log sd between runs of one session
    tails: str = "normal"  # of the session shift: "normal" or "t3"
    anchor_sees: float = 1.0  # share of a session's shift the anchor sees (0: it sees none)
    history: int = 0  # earlier sessions with the anchor timed (other work of this machine)
    others: int = 0  # (findings) other configurations measured in both sides' sessions, ``runs`` runs each
    epochs: str = "always 3"
    projection_bias: float | None = None  # speed runs projected from capped epochs, off by exp(bias) (None: full)
    interaction: float = 0.0  # (findings) log sd of each configuration's own move in each session

    def label(self) -> str:
        return (f"shift {self.shift:.2f} ({self.tails}), {self.sessions} session(s) x {self.runs} runs, "
                + (f"{self.seeds} seeds, " if self.seeds != 3 else "")
                + f"anchor sees {self.anchor_sees:.0%} over {self.history} earlier session(s), {self.epochs}"
                + (f", {self.others} other configuration(s) in both sessions" if self.others else "")
                + (f", speed runs projected {self.projection_bias:+.0%} off" if self.projection_bias is not None
                   else "")
                + (f", interaction {self.interaction:.0%}" if self.interaction else ""))


def _shift(rng: np.random.Generator, truth: Truth, n: int) -> np.ndarray:
    if truth.tails == "t3":  # a Student-t with 3 df scaled to log sd ``shift``
        return truth.shift * rng.standard_t(3, n) / math.sqrt(3.0)
    return rng.normal(0.0, truth.shift, n)


class _Rows:
    """What ``session_note`` reads of a store: the runs' sessions."""

    def __init__(self, sessions: dict[int, str]):
        self.sessions = sessions

    def runs(self, run_ids: Sequence[int] = (), **_: Any) -> list[dict[str, Any]]:
        return [{"id": i, "settings": {"session": self.sessions[i]}} for i in run_ids if i in self.sessions]


def _anchor_rows(rng: np.random.Generator, shifts: Sequence[float], truth: Truth) -> list[dict[str, Any]]:
    rows = []
    for k, s in enumerate(shifts):
        for _ in range(3):
            seconds = 0.0095 * math.exp(truth.anchor_sees * s + rng.normal(0.0, 0.03))
            rows.append({"machine": "m", "software": {"anchor": {"version": anchor.VERSION, "seconds": seconds}},
                         "settings": {"session": f"a{k}"}})
    return rows


@dataclass
class Coverage:
    truth: Truth
    trials: int
    inside: int  # fresh trainings in a new session inside the stated interval
    labelled: int  # intervals that said they cover their session only
    inside_unlabelled: int
    width: float  # median high/low of the stated intervals
    width_vs_truth: float  # median (high - low) / the truth's own central 90 % range

    @property
    def share(self) -> float:
        return self.inside / self.trials

    @property
    def share_unlabelled(self) -> float | None:
        n = self.trials - self.labelled
        return self.inside_unlabelled / n if n else None

    def line(self) -> str:
        rest = self.share_unlabelled
        return (f"{self.truth.label()}: {self.share:.1%} inside of {self.trials}; said 'the shift is assumed' "
                f"{self.labelled / self.trials:.0%}"
                + (f", the rest {rest:.1%} inside" if rest is not None else "")
                + f"; width {self.width:.2f}x, {self.width_vs_truth:.2f}x the truth's range")


def _training(rng: np.random.Generator, truth: Truth, epochs: float, s: float) -> float:
    x = EPOCH_S * math.exp(s + rng.normal(0.0, truth.within))
    return epochs * (1 + VALIDATION) * x + ONCE_S * math.exp(s + rng.normal(0.0, truth.within))


def truth_range(truth: Truth, rng: np.random.Generator, n: int = 20000) -> float:
    """The width of the central 90 % of a fresh training's billed time in a new session, under the truth."""
    ep = EPOCHS[truth.epochs](rng, n)
    s = _shift(rng, truth, n)
    t = [_training(rng, truth, float(e), float(x)) for e, x in zip(ep, s)]
    lo, hi = np.quantile(t, [0.05, 0.95])
    return float(hi - lo)


def coverage(truth: Truth, trials: int = 1000, seed: int = 0, draws: int = 2000, by_session: bool = True,
             projection_error: bool = True) -> Coverage:
    """``trials`` comparisons under ``truth``, each followed by one fresh training in a session of its own.
    ``by_session=False``: the speed samples do not say their session (runs stored before sessions were kept, or
    cpustudy before the combination read them: every sample pooled as if from one session);
    ``projection_error=False``: a projected run's own error left out (as before it was counted)."""
    rng = np.random.default_rng(seed)
    central = truth_range(truth, np.random.default_rng(seed + 1))
    inside = labelled = inside_unlabelled = 0
    widths, rel = [], []
    for t in range(trials):
        shifts = _shift(rng, truth, truth.history + truth.sessions + 1)
        history, stored, new = shifts[:truth.history], shifts[truth.history:-1], float(shifts[-1])
        prior = anchor.prior(_anchor_rows(rng, list(history) + list(stored), truth))
        ep = EPOCHS[truth.epochs](rng, truth.seeds + 1)
        seeds = [compare.SeedResult(i, True, int(e), 100, 10_000 + i) for i, e in enumerate(ep[:-1])]
        samples: list[compare.SpeedSample] = []
        totals: list[list[float]] = []
        sessions: dict[int, str] = {}
        for k, s in enumerate(stored):
            session = f"s{k}"
            group = []
            for _ in range(truth.runs):
                x = EPOCH_S * math.exp(s + rng.normal(0.0, truth.within))
                once = ONCE_S * math.exp(s + rng.normal(0.0, truth.within))
                run_id = len(samples)
                projected = truth.projection_bias is not None
                epoch = x * math.exp(truth.projection_bias or 0.0)
                samples.append(compare.SpeedSample(Billed(epoch, 0.0, VALIDATION * x, once), run_id, projected,
                                                   session=session if by_session else ""))
                sessions[run_id] = session
                group.append(once + 3 * (1 + VALIDATION) * x)  # the run's total: a 3-epoch run
            totals.append(group)
        for result in seeds:
            sessions[result.run_id] = "s0"
        noise = stats.noise_from_groups([totals], fallback=prior)
        if projection_error:  # no projection measured against full epochs in this database: cpustudy's default
            noise = totarget.with_projection(noise, None)
        cand = compare.CandidateInput("here", samples, 0.1, "simulated")
        r = compare.combine(seeds, [cand], draws=draws, rng_seed=t, noise=noise)[0]
        assert r.time_low_s is not None and r.time_high_s is not None, r.interval_note
        said = "the shift to a later period is assumed" in " ".join(totarget.session_note(_Rows(sessions), [r], seeds, noise))
        fresh = _training(rng, truth, float(ep[-1]), new)
        hit = r.time_low_s <= fresh <= r.time_high_s
        inside += hit
        labelled += said
        inside_unlabelled += hit and not said
        widths.append(r.time_high_s / r.time_low_s)
        rel.append((r.time_high_s - r.time_low_s) / central)
    return Coverage(truth, trials, inside, labelled, inside_unlabelled, float(np.median(widths)),
                    float(np.median(rel)))


@dataclass
class Findings:
    truth: Truth
    ratio: float
    same_session: bool
    trials: int
    found: int

    @property
    def share(self) -> float:
        return self.found / self.trials

    def line(self) -> str:
        where = "one session" if self.same_session else "two sessions"
        return (f"true ratio {self.ratio:.2f}, {where}, {self.truth.label()}: called different in "
                f"{self.share:.1%} of {self.trials}")


def findings(truth: Truth, ratio: float, same_session: bool, trials: int = 1000, seed: int = 0,
             sessions_known: bool = True, reference: bool = False) -> Findings:
    """Two configurations of true speed ratio ``ratio``, ``truth.runs`` runs each, measured in one session or
    each in its own, judged as a report judges them with the noise the database would estimate (their own
    sessions' repeats, the anchor's prior over ``history`` earlier sessions and theirs). ``sessions_known=False``:
    the runs do not say their sessions (as every contrast was judged before cpustudy told sessions apart:
    cpustudy's default variation between them added). ``reference``: a third configuration, ``truth.runs`` runs in
    each side's session, blocks the contrast (:func:`cpustudy.analysis.holdup.reference`). Each configuration moves by
    its own ``truth.interaction`` in each session."""
    rng = np.random.default_rng(seed)
    found = 0

    def runs(speed: float, s: float) -> list[float]:
        own = rng.normal(0.0, truth.interaction) if truth.interaction else 0.0
        return list(speed * math.exp(s + own) * np.exp(rng.normal(0.0, truth.within, truth.runs)))

    for _ in range(trials):
        shifts = _shift(rng, truth, truth.history + 2)
        history, (sa, sb) = shifts[:truth.history], shifts[truth.history:]
        if same_session:
            sb = sa
        seen = list(history) + ([sa] if same_session else [sa, sb])
        prior = anchor.prior(_anchor_rows(rng, seen, truth))
        a, b = runs(10.0 * ratio, sa), runs(10.0, sb)
        groups = [[a], [b]]
        ref = (runs(7.0, sa), runs(7.0, sb)) if reference else None
        if ref:
            groups.append(list(ref))
        for _ in range(truth.others):  # another configuration in each side's session: the between measured
            speed = 10.0 * math.exp(rng.normal(0.0, 0.3))
            groups.append([list(speed * math.exp(s) * np.exp(rng.normal(0.0, truth.within, truth.runs)))
                           for s in ([sa] if same_session else [sa, sb])])
        noise = stats.noise_from_groups(groups, fallback=prior)
        if sessions_known:
            found += holdup.compare_samples(a, b, sessions_a=["1"] * truth.runs,
                                            sessions_b=["1" if same_session else "2"] * truth.runs, noise=noise,
                                            reference=ref).holds
        else:
            found += holdup.compare_samples(a, b, noise=noise).holds
    return Findings(truth, ratio, same_session, trials, found)
