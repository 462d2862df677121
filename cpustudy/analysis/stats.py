"""cpustudy's statistics: every comparison and interval it states comes from here, computed on per-run
values (never on medians or ranges), with its error rate, its level and its n said.

**Comparisons** (:func:`compare_samples`): two sets of per-run times (or costs), compared on the log
scale (timings are multiplicative: a ratio is the effect, and log times are close to normal). The test
is Welch's t on the log times, each side's variance moderated by what the database knows of this
machine's process-to-process spread (:class:`Noise`, a prior worth ``df`` runs, as limma moderates a
gene's variance), and the variation between separate sweeps added to the standard error, since repeats
inside one sweep vary less than sweeps do (Kalibera and Jones, ISMM 2013). A comparison is a finding
only when both

* its p-value clears the error rate (``ALPHA`` for one comparison; on a report page, the threshold that
  Benjamini-Hochberg's procedure gives for the page's comparisons together: :func:`bh_threshold`): the p-value
  of a minimum-effect test, "the difference is under ``MIN_EFFECT``" (5 %) against "it is at least that", each
  direction at half the rate (a true 4 % is stated as a 5 % finding at most ALPHA / 2 of the time; tested as
  "not 0", in 22 % at 3 runs a side), and
* the difference clears ``MIN_EFFECT``: a smaller one is never called a difference, however significant (asv's
  minimum factor).

Where no difference is shown it is said as such; "the same within 5 %" is said only where an
equivalence test (two one-sided tests, TOST) shows it.

**Prediction intervals** are the one model of the measurements' (:mod:`cpustudy.analysis.model`), which reads its
variance components here (:class:`Components`).

Calibration is a measurement too: ``tests/test_stats_calibration.py`` simulates known truths through
these functions (no difference, a true 1.3x, fresh trainings against their intervals) and checks the
stated rates and levels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt
from scipy.special import stdtr, stdtrit


def t_sf(x: float, df: float) -> float:
    """Student's t upper tail, ``scipy.stats.t.sf(x, df)`` to the bit without its argument checks (a rehearsal or a
    calibration test asks it 10^5 times) or the import of ``scipy.stats`` (0.7 s of a command's start)."""
    return float(stdtr(df, -x))


def t_ppf(q: float, df: float) -> float:
    """Student's t quantile, ``scipy.stats.t.ppf(q, df)`` to the bit (see :func:`t_sf`)."""
    return float(stdtrit(df, q))


#: The smallest difference ever stated as a finding: 5 % (a ratio of 1.05 either way).
MIN_EFFECT = 0.05
#: The error rate: per comparison alone; on a report page, the false-discovery rate of its findings.
ALPHA = 0.05


@dataclass(frozen=True)
class Noise:
    """What is known, before a comparison, of how one configuration's run time varies on a machine, as
    standard deviations of log time (0.05 is about 5 %): between fresh processes inside one sweep
    (``within``, from ``df`` degrees of freedom of stored repeats) and between separate sweeps
    (``between``: how far one sweep's mean of a configuration moves from another's, beyond what its
    repeats explain)."""

    within: float
    df: float
    between: float
    source: str
    between_df: float = 0.0  # degrees of freedom of separate sweeps behind ``between``; 0: assumed, not measured here
    #: what ``between`` was read from: "repeats" (configurations' runs in several sessions), "anchor" (the anchor's
    #: sessions alone, :mod:`cpustudy.analysis.anchor`) or "assumed" (cpustudy's default)
    between_basis: str = "assumed"
    #: a projected epoch's own error against a full one (log root mean square, bias and spread together), and
    #: where it was read (:func:`cpustudy.analysis.projection.projection_error`); 0: not considered
    projection: float = 0.0
    projection_source: str = ""
    #: each configuration's own move per period (the interaction, log sd) as measured where configurations were timed
    #: together in several periods (:func:`interaction_of`), and its degrees of freedom; 0: not measured here
    interaction: float = 0.0
    interaction_df: float = 0.0

    @property
    def line(self) -> str:
        """The noise as the figures use it (:class:`Components`): between periods, the machine's shift (assumed
        where the database has not measured it) and each configuration's own move."""
        c = Components.of(self)
        return (f"noise between runs {100 * self.within:.1f} % ({self.df:.0f} degrees of freedom) and between periods "
                f"{100 * math.hypot(c.shift, c.interaction):.1f} % (the machine's shift {100 * c.shift:.1f} %, "
                f"{c.shift_basis}, "
                f"worth {c.between_df:.0f} periods; each configuration's own move {100 * c.interaction:.1f} %) "
                f"({self.source})")


#: A configuration's own move from period to period (the configuration x period interaction), as a log sd; the rest
#: of ``Noise.between`` is the machine's shift that moves every configuration alike. Two readings: 0.05 on an Emerald
#: Rapids VM (three sweeps, 2026-11-26: a configuration's sweep mean moved 7 %, 5 % of it its own) and 0.02 on a Zen 4
#: VM (2026-11-27, ``shared/measurements/zen4-two-sessions``: 1 and 2 vCPUs of one convnet both 7.5-10 % slower 30
#: minutes later, their ratio moved 3 %); their root mean square. An assumption, said where it decides: a contrast
#: within one period is never surer than it, and equal configurations in one period with a true 5 % interaction are
#: called different at most 5 % of the time (``tests/test_stats_calibration.py``). Where the database timed
#: configurations together in several periods, what they measure is pooled with it (:class:`Components`).
INTERACTION = 0.038
#: The machine's shift between periods (log sd) where the database has not measured it (no configuration timed in
#: several periods): a training in a later period meets it. Seen on these 2-core VMs: every training 1.8x faster an
#: hour later, and still so in the next session (Granite Rapids, 2026-11-29, ``reports/gnr2-one-candidate/``), about
#: 30 % slower 2.5 hours later (Granite Rapids, 2026-11-27), both configurations of a convnet 7.5-10 % slower 30
#: minutes later (Zen 4, 2026-11-27), 20-30 % between sessions on shared VMs. Rehearsed (``reports/rehearsal-400/``):
#: at 0.15, 81-84.5 % of fresh trainings in a later period fell inside a 90 % interval where the scenario's shift was
#: 0.25 or a comparison resumed, 83 % with settings; at 0.20, 85-93 % in every family (true shifts 0.15 and 0.25).
UNMEASURED_SHIFT = 0.20
#: ... worth this many periods (a contrast's t degrees of freedom for it): a shift of 0.25 has been seen too, so equal
#: speeds measured in two periods are called different at most 5 % of the time up to a true 0.25
#: (``tests/simsessions.py``). Measure both sides in one period, or a reference in both, or let the database learn
#: the machine's (configurations measured in several periods), and smaller differences can be findings.
UNMEASURED_DF = 3.0
#: Fewer degrees of freedom between periods than this measure the shift too loosely to stand alone (one of two periods
#: is a t with 1 degree of freedom: a 90 % interval 65x wide was stated from a shift of 0.32 measured so): they are
#: pooled with :data:`UNMEASURED_SHIFT`, worth :data:`UNMEASURED_DF` periods, and never taken under what they measured
#: (rehearsed, ``reports/rehearsal-400/``: with a true shift of 0.25 and two periods measured, 84.5 % of fresh
#: trainings in a later period inside the 90 % interval; pooled alone, 83.8 %; measured alone, 85 % from intervals
#: up to 65x wide).
FEW_PERIODS = 4.0
#: What :data:`INTERACTION` is worth (degrees of freedom) against the interaction a database measured.
INTERACTION_DF = 2.0


def between_measured(noise: "Noise") -> bool:
    """Whether the variation between sessions was measured from configurations' own runs in several sessions."""
    return noise.between_basis == "repeats" and bool(noise.between_df)


@dataclass(frozen=True)
class Components:
    """The variance components of a run's log time (standard deviations), read from a :class:`Noise`: run noise
    (``within``, worth ``within_df`` runs), the period shift every configuration of the machine shares (at least
    ``UNMEASURED_SHIFT`` where the database has not measured it), each configuration's own move per period
    (``INTERACTION``; ``Noise.between`` is both, worth ``between_df`` periods), and a projected epoch's error
    (``projection``). The one model of the measurements (:mod:`cpustudy.analysis.model`) and every finding
    (:func:`compare_samples`) read them here."""

    within: float
    within_df: float
    shift: float
    interaction: float
    between_df: float
    projection: float
    shift_basis: str = "assumed"  # how the shift is known: "measured here", "... pooled with the assumed", "assumed"

    @classmethod
    def of(cls, noise: "Noise") -> "Components":
        inter = INTERACTION
        if noise.interaction_df > 0:  # measured here: pooled with the assumed, worth INTERACTION_DF
            inter = math.sqrt((noise.interaction_df * noise.interaction ** 2 + INTERACTION_DF * INTERACTION ** 2)
                              / (noise.interaction_df + INTERACTION_DF))
        inter = min(inter, noise.between)
        shift = math.sqrt(noise.between ** 2 - inter ** 2)
        df, basis = max(noise.between_df, 1.0), "measured here"
        if between_measured(noise) and df < FEW_PERIODS:  # a few periods tell little: pooled with the assumed, never
            pooled = math.sqrt((df * shift ** 2 + UNMEASURED_DF * UNMEASURED_SHIFT ** 2) / (df + UNMEASURED_DF))
            shift = max(shift, pooled)  # under what they measured
            df, basis = df + UNMEASURED_DF, "measured here, pooled with the assumed"
        elif not between_measured(noise):
            basis = "assumed"
            if noise.source != NO_PRIOR.source:
                shift, df = max(shift, UNMEASURED_SHIFT), UNMEASURED_DF
        return cls(noise.within, noise.df, shift, inter, df, noise.projection, basis)


#: Nothing known beforehand: the samples alone (a plain Welch test; a t-predictive on their own spread).
NO_PRIOR = Noise(within=0.0, df=0.0, between=0.0, source="the samples alone")

#: Where a database cannot tell (one sweep, or no repeats): what cpustudy measured on its own machines.
#: Within (between fresh processes in one sweep): pooled over the repeats stored in reports/*/ and three
#: sweeps of the README's first command, 2-core VMs 2026-11-20..26: 5-6 % on Zen 3 and Zen 4, 9 % on a
#: busier Zen 3, 12 % on an Emerald Rapids VM (mnist_mlp's 3 s epochs vary most). Between sweeps: those
#: three sweeps (Emerald Rapids, 2026-11-26), a configuration's sweep mean moving 7 % from sweep to sweep
#: beyond its repeats (5 % of it its own, 5 % the sweep's shift of every configuration); and 4.06 against
#: 4.53 s of mnist_mlp at 1 vCPU in two sweeps on a Granite Rapids VM. Worth 4 runs (df), so a database's
#: own repeats soon outweigh it.
DEFAULT_NOISE = Noise(within=0.08, df=4.0, between=0.05, source="cpustudy's default: measured on 2-core VMs")


def _clean(values: Iterable[float]) -> npt.NDArray[np.float64]:
    x = np.asarray([float(v) for v in values], dtype=float)
    return x[np.isfinite(x) & (x > 0)]


def moderated(logs: npt.NDArray[np.float64], noise: Noise) -> tuple[float, float]:
    """(variance, degrees of freedom) of one side's log values, its own spread pooled with the prior's."""
    n = len(logs)
    ss = float(np.sum((logs - logs.mean()) ** 2)) if n > 1 else 0.0
    df = (n - 1) + noise.df
    if df <= 0:
        return math.nan, 0.0
    return (ss + noise.df * noise.within ** 2) / df, df


@dataclass(frozen=True)
class Contrast:
    """Two sets of per-run values compared: ``ratio`` = a / b (of geometric means), its confidence interval
    (``low``, ``high``) at 1 - ALPHA, the p-value of "a difference under ``min_effect``" (a minimum-effect
    test), and whether it ``holds`` as a finding at ``threshold`` (the per-comparison ALPHA unless a page's
    correction set another)."""

    ratio: float
    low: float
    high: float
    p: float
    df: float
    n_a: int
    n_b: int
    threshold: float = ALPHA
    min_effect: float = MIN_EFFECT
    why_untested: str = ""  # why no test was possible (then p is NaN)
    family: int = 1  # comparisons judged together (a page's), the threshold Benjamini-Hochberg's over them
    sessions_note: str = ""  # where the two sides' sessions differ and the variation between them was assumed

    @property
    def large_enough(self) -> bool:
        return math.isfinite(self.ratio) and abs(math.log(self.ratio)) >= math.log1p(self.min_effect)

    @property
    def significant(self) -> bool:
        return math.isfinite(self.p) and self.p <= self.threshold

    @property
    def holds(self) -> bool:
        return self.significant and self.large_enough

    @property
    def equivalent(self) -> bool:
        """The same within ``min_effect``: the (1 - 2 ALPHA) interval of the ratio inside the margin (TOST)."""
        if not math.isfinite(self.df) or self.df <= 0 or not math.isfinite(self.ratio):
            return False
        return self._tost_low > 1 / (1 + self.min_effect) and self._tost_high < 1 + self.min_effect

    _tost_low: float = math.nan
    _tost_high: float = math.nan

    def at(self, threshold: float, family: int = 1) -> "Contrast":
        """The same comparison judged at another threshold (a page's corrected one, over ``family``)."""
        from dataclasses import replace

        return replace(self, threshold=threshold, family=family)

    @property
    def reason(self) -> str:
        """Why it is not a finding (empty when it holds)."""
        if self.holds:
            return ""
        if self.why_untested:
            return self.why_untested
        # ``threshold`` is the cut p had to clear: on a corrected page Benjamini-Hochberg's (the largest p_(k) at
        # or under k/m x ALPHA), 0 where none cleared its rank's k/m x ALPHA; for one comparison that is ALPHA.
        level = level_text(self.threshold, self.family)
        if not self.large_enough:
            same = "; the same within " + f"{100 * self.min_effect:g} % (equivalence test)" if self.equivalent else ""
            return (f"a difference of {_pct(self.ratio)}, under the {100 * self.min_effect:g} % a finding needs"
                    f" ({self.n_a} and {self.n_b} runs){same}")
        return (f"{_pct(self.ratio)} could be noise: p = {self.p:.2g}, {level} "
                f"({self.n_a} and {self.n_b} runs; ratio {self.low:.2f}-{self.high:.2f} at {100 * (1 - ALPHA):.0f} %)"
                + (f"; {self.sessions_note}" if self.sessions_note else ""))


def level_text(threshold: float, family: int) -> str:
    """What a p-value that did not clear ``threshold`` was held to: on a page of ``family`` comparisons, their
    Benjamini-Hochberg cut; alone, the per-comparison level."""
    if family > 1:
        cut = (f"p at most {threshold:.2g} cleared it" if threshold > 0
               else f"none cleared k/m x {100 * ALPHA:g} % at its rank k")
        return (f"not significant among the page's {family} comparisons at a {100 * ALPHA:g} % "
                f"false-discovery rate (Benjamini-Hochberg: {cut})")
    return f"against the {100 * (threshold if threshold > 0 else ALPHA):.2g} % needed"


def _pct(ratio: float) -> str:
    return f"{abs(ratio - 1) * 100:.1f} %" if math.isfinite(ratio) else "an unknown difference"


def compare_samples(a: Sequence[float], b: Sequence[float], *, noise: Noise = NO_PRIOR, threshold: float = ALPHA,
                    min_effect: float = MIN_EFFECT, same_session: bool | None = None,
                    reference: tuple[Sequence[float], Sequence[float]] | None = None) -> Contrast:
    """Per-run values ``a`` and ``b`` (times or costs, positive) compared: see the module's docstring.
    With ``noise`` the prior spread of this machine (:func:`noise_from_groups`); without it, plain Welch
    on the logs, which needs two runs a side. The variation between periods enters as the machine's
    :class:`Components` say. ``same_session``: both sides were measured in one measuring period, so its shift moved
    both alike and only each side's own move in it (the interaction) is added; False: their periods differ, and
    each side's shift and interaction are added (where not measured, the shift assumed with few degrees of
    freedom), unless ``reference`` gives a third configuration's runs in ``a``'s period and in ``b``'s: then the
    contrast is a ratio of ratios (each side against the reference in its own period), free of the shift, paying
    the reference's runs and its own interaction in each period; None: the runs did not say (stored before
    sessions were kept), and ``noise.between`` is added."""
    la, lb = np.log(_clean(a)), np.log(_clean(b))
    na, nb = len(la), len(lb)
    if not na or not nb:
        return Contrast(math.nan, math.nan, math.nan, math.nan, 0.0, na, nb, threshold, min_effect,
                          why_untested="not measured on both sides")
    d = float(la.mean() - lb.mean())
    va, dfa = moderated(la, noise)
    vb, dfb = moderated(lb, noise)
    if dfa <= 0 or dfb <= 0:
        return Contrast(math.exp(d), math.nan, math.nan, math.nan, 0.0, na, nb, threshold, min_effect,
                          why_untested=f"{na} and {nb} run(s) and no known spread: a run alone cannot show a "
                          "difference (measure with --repeats 2 or more)")
    between, offset, note = _between_periods(noise, same_session, reference)
    d -= offset
    parts = [(va / na, dfa), (vb / nb, dfb), *between]
    se2 = sum(v for v, _ in parts)
    # Welch-Satterthwaite over every part with its own degrees of freedom
    tail = sum(v ** 2 / df for v, df in parts if v > 0 and math.isfinite(df))
    df = se2 ** 2 / tail if tail > 0 else math.inf
    se = math.sqrt(se2)
    margin = math.log1p(min_effect)  # the test is of a difference of at least min_effect, not of one above 0
    if se == 0:
        p = 0.0 if abs(d) > margin else 1.0
        q = q2 = 0.0
    else:
        p = min(1.0, 2 * t_sf((abs(d) - margin) / se, df)) if abs(d) > margin else 1.0
        q = t_ppf(1 - ALPHA / 2, df) * se
        q2 = t_ppf(1 - ALPHA, df) * se
    return Contrast(math.exp(d), math.exp(d - q), math.exp(d + q), p, df, na, nb, threshold, min_effect,
                      _tost_low=math.exp(d - q2), _tost_high=math.exp(d + q2), sessions_note=note)


def _between_periods(noise: Noise, same_session: bool | None, reference: tuple[Sequence[float], Sequence[float]] | None
                     ) -> tuple[list[tuple[float, float]], float, str]:
    """What the periods add to a contrast (see :func:`compare_samples`): its variance parts (variance, degrees of
    freedom: inf where taken as known), the reference's log ratio to take off it (0 unblocked), and the note where the
    shift is assumed."""
    comps = Components.of(noise)
    ra, rb = (np.log(_clean(x)) for x in reference) if reference and same_session is False else ((), ())
    if same_session:
        return [(2 * comps.interaction ** 2, math.inf)], 0.0, ""
    if len(ra) and len(rb):  # a ratio of ratios: each side against the reference measured in its own period
        parts = [(4 * comps.interaction ** 2, math.inf)]
        for r in (ra, rb):
            v, df = moderated(np.asarray(r), noise)
            parts.append((v / len(r) if df > 0 else comps.within ** 2 / len(r), df if df > 0 else math.inf))
        return parts, float(np.mean(ra) - np.mean(rb)), ""
    if same_session is None:
        return [(2 * noise.between ** 2, math.inf)], 0.0, ""
    note = ""
    if not between_measured(noise) and noise.source != NO_PRIOR.source:
        note = (f"measured in different periods, and the machine's shift between periods is not measured for "
                f"these configurations: {100 * comps.shift:.0f} % assumed (measure both in one period, or one "
                "configuration in both)")
    return [(2 * (comps.shift ** 2 + comps.interaction ** 2), comps.between_df)], 0.0, note


def paired_gain(ratios: Sequence[float], *, min_effect: float = MIN_EFFECT, alpha: float = ALPHA) -> bool:
    """Whether paired ratios (old / new time, each pair measured back to back) show a gain: a one-sided
    t-test on their logs clears ``alpha`` and their geometric mean clears ``min_effect``. Fewer than two
    pairs show nothing."""
    x = np.log(_clean(ratios))
    if len(x) < 2:
        return False
    mean = float(x.mean())
    if mean < math.log1p(min_effect):
        return False
    sd = float(x.std(ddof=1))
    if sd == 0:
        return True
    p = t_sf(mean / (sd / math.sqrt(len(x))), len(x) - 1)
    return p <= alpha


def bh_threshold(pvalues: Iterable[float], alpha: float = ALPHA) -> float:
    """The Benjamini-Hochberg threshold for a family of p-values: the largest p_(k) with
    p_(k) <= k/m x alpha (0.0 when none qualifies); comparisons with p at or below it are discoveries,
    and the expected share of false ones among them is at most ``alpha``."""
    p = sorted(x for x in pvalues if math.isfinite(x))
    m = len(p)
    best = 0.0
    for k, x in enumerate(p, start=1):
        if x <= k / m * alpha:
            best = x
    return best


# -- what a database knows of its machine's noise ----------------------------------------------------------


def interaction_of(groups: Sequence[Mapping[str, Sequence[float]]], runs_var: float) -> tuple[float, float]:
    """Each configuration's own move per period (log sd) and its degrees of freedom, from configurations timed
    together in several periods (``groups``: per configuration, its runs per period): their period means fitted as
    configuration + period (two-way, by alternating means) leave the interaction and the means' own run noise
    (``runs_var`` x mean 1/n), which is taken off. (0, 0) where no two periods timed two configurations each."""
    means = {(c, p): float(np.mean(np.log(_clean(runs)))) for c, g in enumerate(groups) for p, runs in g.items()
             if len(_clean(runs))}
    sizes = {(c, p): len(_clean(groups[c][p])) for c, p in means}
    while True:  # keep configurations in 2+ periods and periods with 2+ of them
        many = {c for c in {c for c, _ in means} if sum(1 for x, _ in means if x == c) > 1}
        shared = {p for p in {p for _, p in means} if sum(1 for _, y in means if y == p) > 1}
        kept = {k: v for k, v in means.items() if k[0] in many and k[1] in shared}
        if len(kept) == len(means):
            break
        means = kept
    configs, periods = sorted({c for c, _ in means}), sorted({p for _, p in means})
    df = len(means) - len(configs) - len(periods) + 1
    if not means or df <= 0:
        return 0.0, 0.0
    effect = {c: 0.0 for c in configs}
    shift = {p: 0.0 for p in periods}
    for _ in range(50):
        for c in configs:
            effect[c] = float(np.mean([v - shift[p] for (x, p), v in means.items() if x == c]))
        for p in periods:
            shift[p] = float(np.mean([v - effect[c] for (c, y), v in means.items() if y == p]))
    resid = sum((v - effect[c] - shift[p]) ** 2 for (c, p), v in means.items()) / df
    inv_n = float(np.mean([1 / sizes[k] for k in means]))
    return math.sqrt(max(resid - runs_var * inv_n, 0.0)), float(df)


def noise_from_groups(groups: Iterable[Sequence[Sequence[float]] | Mapping[str, Sequence[float]]],
                      fallback: Noise = DEFAULT_NOISE, source: str = "this database's repeats") -> Noise:
    """This machine's noise from stored repeats: ``groups`` has one entry per configuration, each a list
    of sweeps, each the per-run times of that configuration in that sweep. ``within``: the pooled spread
    of log times inside a (configuration, sweep); ``between``: the spread of a configuration's sweep means
    beyond what their repeats explain (method of moments), where two or more sweeps measured a
    configuration. What the database cannot tell comes from ``fallback``, which also counts as its
    ``df`` runs' worth of prior evidence for ``within``. Where a configuration's sweeps are a mapping (period ->
    runs), configurations timed together in several periods also measure the interaction (:func:`interaction_of`)."""
    ss, dfw = 0.0, 0
    spreads: list[tuple[float, int, float]] = []  # per configuration of several sweeps: SS of its means, df, mean 1/n
    groups = list(groups)
    for group in groups:
        sweeps = list(group.values()) if isinstance(group, Mapping) else group
        means, sizes = [], []
        for runs in sweeps:
            x = np.log(_clean(runs))
            if len(x) > 1:
                ss += float(np.sum((x - x.mean()) ** 2))
                dfw += len(x) - 1
            if len(x):
                means.append(float(x.mean()))
                sizes.append(len(x))
        if len(means) > 1:
            m = np.asarray(means)
            spreads.append((float(np.sum((m - m.mean()) ** 2)), len(m) - 1, float(np.mean([1 / s for s in sizes]))))
    # a sweep mean's spread holds its runs' own noise too (within^2 x mean(1/n)): taken off with the within
    # spread pooled over every configuration, whatever order they came in
    runs_var = (ss / dfw) if dfw else fallback.within ** 2
    between_ss = sum(s - d * inv_n * runs_var for s, d, inv_n in spreads)
    between_df = sum(d for _, d, _ in spreads)
    if not dfw and not between_df:
        return fallback
    within2 = (ss + fallback.df * fallback.within ** 2) / (dfw + fallback.df)
    if between_df:
        between = math.sqrt(max(between_ss / between_df, 0.0))
        between = max(between, fallback.between) if between_df < 4 else between  # a few sweeps tell little
        what = f"{source}: {dfw} repeat degrees of freedom, {between_df} between sweeps"
    else:
        between = fallback.between
        what = f"{source}: {dfw} repeat degrees of freedom; between sweeps, {fallback.source.split(':')[0]}"
    inter, inter_df = interaction_of([g for g in groups if isinstance(g, Mapping)], runs_var)
    if inter_df:
        what += f"; each configuration's own move per period {100 * inter:.1f} % ({inter_df:.0f} degrees of freedom)"
    return Noise(within=math.sqrt(within2), df=dfw + fallback.df, between=between, source=what,
                 between_df=between_df or fallback.between_df,
                 between_basis="repeats" if between_df else fallback.between_basis,
                 interaction=inter, interaction_df=inter_df)
