"""The decision's own quantity, when it is made, and what to measure next: pure functions of the measurements.

**What is known of each candidate's mean** (:func:`standing`). A prediction interval and P(cheapest in one
training) carry each training's own luck (run noise, the seed), so they never settle a difference smaller
than that luck however much is measured. A decision needs what is known of each candidate's *expected*
cost, read from the one model of the measurements (:class:`cpustudy.analysis.model.Model`, whose draws the
intervals read too): per draw, a setting's mean epochs (shared by its candidates) and a candidate's mean log
time of one training at them, with the period shifts, its own move per period, run noise and projection bias
the model knows of. From those draws: each candidate's expected cost (time, where nothing is priced),
**P(lowest expected cost)** (the draws where it is lowest; they sum to 1), its **expected regret** (how much more
than the unknown best it is expected to cost, relative: ``E[(cost_c - min) / min]``) and P(within
``indifference`` of the lowest).

**When to stop** (:func:`next_step`, rules in :class:`cpustudy.rules.Rules`): first, a setting still
in contention (P(lowest expected cost) of at least ``exclude`` over the settings) with fewer than ``min_seeds``
seeds gets another. Then: the leader is within ``indifference`` of the lowest expected cost with probability
``confidence`` or its expected regret is at most ``regret``: "the same" where other candidates' expected regret is
within ``indifference`` too (each named), else "decided"; or no measurement is expected to save what it costs over
``trainings`` trainings (not worth it; as for "the same", the default is the answer where it is within
``indifference``). Otherwise the next measurement is the one expected to save the most per second of measuring: a seed of a
setting (its epochs' doubt, where the leader and a challenger train in different settings) or a speed run of a
candidate. What a measurement saves is the knowledge gradient of the leader's pair it moves most (Frazier,
Powell and Dayanik 2008), valued at its best run of 1, 2, 4 or 8 such measurements (KG*: one alone rarely
turns a decision), times the leader's expected cost of a training and ``trainings``; a measurement costs its time
here at the hourly rate of what it trains on (in USD where every candidate is priced, else in seconds).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Iterable, Mapping, Sequence

import numpy as np

from cpustudy.analysis import compare as combo
from cpustudy.analysis.model import Group, Model, epochs_spread
from cpustudy.analysis.stats import NO_PRIOR, Noise
from cpustudy.analysis.totarget import Comparison
from cpustudy.rules import RULES, Rules


_NORMAL = NormalDist()

#: How measuring stops, named once (a :class:`Step`'s kind, and so a decision's ``stop``): the leader is known
#: ("decided"), two or more are the same within ``indifference`` ("same"), no measurement pays for itself
#: ("not worth it"), nothing that could decide can be measured ("stuck"), one candidate's interval is measured
#: ("settled").
DECIDED, SAME, NOT_WORTH_IT, STUCK, SETTLED = "decided", "same", "not worth it", "stuck", "settled"
STOPS = frozenset({DECIDED, SAME, NOT_WORTH_IT, STUCK, SETTLED})
#: The stops that name an answer from what was weighed: an unmeasured candidate leaves them undecided.
ANSWERS = frozenset({DECIDED, SAME, SETTLED})
#: A decision's stop where no step stopped it: measuring ran into its limit of trainings, or only the planned
#: runs were measured (``--max-trainings 0``).
LIMIT, FIXED_PLAN = "limit", "fixed plan"


@dataclass
class Standing:
    """What is known of each candidate's expected cost of one training (``unit``: USD where every candidate is
    priced, else s), from :func:`standing`."""

    unit: str
    expected: dict[str, float]
    low: dict[str, float]  # 5 % quantile of what is known of the mean
    high: dict[str, float]  # 95 %
    p_best: dict[str, float]  # P(lowest expected cost); sums to 1
    regret: dict[str, float]  # expected relative regret of choosing it
    time_s: dict[str, float]  # expected time of one training (s), priced or not
    group_of: dict[str, str] = field(default_factory=dict)
    epoch_var: dict[str, float] = field(default_factory=dict)  # per setting: var of its log mean epochs
    seeds: dict[str, int] = field(default_factory=dict)
    speed_var: dict[str, float] = field(default_factory=dict)  # per candidate: var of its log mean speed
    runs: dict[str, int] = field(default_factory=dict)
    p_within: dict[str, float] = field(default_factory=dict)  # P(within ``indifference`` of the lowest expected cost)

    def same(self, rules: Rules) -> list[str]:
        """The candidates expected to cost at most ``rules.indifference`` more than the best (expected regret), least
        first: what a stop names as the same."""
        return sorted((n for n, r in self.regret.items() if r <= rules.indifference), key=lambda n: self.regret[n])



def leader(st: Standing | None, results: Sequence[combo.CandidateResult] = ()) -> str | None:
    """The one rule naming a comparison's answer (its decision's choice, the race's leader): the least expected
    regret (ties: the likelier lowest expected cost); without a Standing (fewer than two to weigh), the measured
    one of least median cost where all are priced, else of least median time; None where none is measured."""
    if st is not None:
        return min(st.regret, key=lambda n: (st.regret[n], -st.p_best[n]))
    timed = [r for r in results if r.time_to_target_s is not None]
    priced = all(r.cost_usd is not None for r in timed)
    return min(timed, key=lambda r: (r.cost_usd if priced else r.time_to_target_s) or 0.0).candidate if timed else None


def standing(groups: Sequence[Group], *, noise: Noise = NO_PRIOR, rules: Rules = RULES,
             factor: float | Mapping[str, float] = 1.0) -> Standing | None:
    """What is known of every measured candidate's expected cost, read from the one model of the measurements
    (:class:`cpustudy.analysis.model.Model`; ``factor`` its recalibration); None where fewer than two candidates
    have figures (nothing to choose between)."""
    model = Model(groups, noise=noise, draws=rules.draws, factor=factor)
    if len(model.fitted) < 2:
        return None
    out = Standing("USD" if model.priced else "s", {}, {}, {}, {}, {}, {})
    for label, ep in model.epochs.items():
        out.epoch_var[label] = ep.log_var
        out.seeds[label] = model.seeds[label]
    costs = model.mean_cost()
    times = model.mean_time()
    for name, f in model.fitted.items():
        out.group_of[name] = f.label
        out.speed_var[name] = f.runs_var
        out.runs[name] = len(f.input.samples)
    names = list(costs)
    m = np.vstack([costs[n] for n in names])
    best = m.min(axis=0)
    out.p_best = model.p_lowest(costs)
    for i, n in enumerate(names):
        out.expected[n] = float(m[i].mean())
        out.low[n], out.high[n] = (float(x) for x in np.percentile(m[i], [5.0, 95.0]))
        out.regret[n] = float(np.mean((m[i] - best) / best))
        out.p_within[n] = float(np.mean(m[i] <= (1 + rules.indifference) * best))
        out.time_s[n] = float(times[n].mean())
    return out


@dataclass(frozen=True)
class Step:
    """What the decision does next: stop (one of :data:`STOPS`) or measure a ``seed`` of ``setting`` or a
    ``speed`` run of ``candidates``; ``why`` in words."""

    kind: str
    why: str
    setting: str | None = None
    candidates: tuple[str, ...] = ()

    @property
    def stops(self) -> bool:
        return self.kind in STOPS


def before_measuring(first_round: float, default: str | None, rules: Rules = RULES) -> Step | None:
    """Whether measuring can pay before anything is measured: deciding can save at most ``rules.prior_saving`` of a
    training over ``rules.trainings`` trainings, and the first round takes ``first_round`` trainings' time at least;
    a stop naming ``default`` where it cannot, else None (measure)."""
    worth = rules.trainings * rules.prior_saving
    if worth >= first_round:
        return None
    need = math.ceil(first_round / rules.prior_saving)
    return Step(NOT_WORTH_IT, f"before measuring: over {rules.trainings} trainings deciding can save at most "
                f"{worth:.1f} trainings' time (at most {rules.prior_saving:.0%} of each, assumed), and its first round "
                f"alone takes {first_round:g} or more: nothing measured, the default {default} is the answer "
                f"(--trainings {need} or more makes measuring worth it)")


def standing_of(comparison: Comparison, rules: Rules = RULES, names: set[str] | None = None) -> Standing | None:
    """What is known of each candidate's expected cost in ``comparison`` (:func:`standing` of its groups, its noise
    and recalibration), over ``names`` (default: every candidate); None with fewer than two to choose from."""
    groups = [Group(label, seeds, [i for i in inputs if names is None or i.candidate in names])
              for label, seeds, inputs in comparison.groups]
    return standing(groups, noise=comparison.noise or NO_PRIOR, rules=rules, factor=comparison.factor) if groups \
        else None


def leader_of(comparison: Comparison, names: set[str] | None = None) -> tuple[str | None, float | None]:
    """:func:`leader` of a comparison read from the store (``recommend``, the report's findings), over ``names``
    (default: every candidate), with its P(lowest expected cost) where candidates were weighed."""
    st = standing_of(comparison, names=names)
    name = leader(st, [r for r in comparison.results if names is None or r.candidate in names])
    return name, (st.p_best[name] if st is not None and name is not None else None)


def choice(st: Standing | None, step: Step | None, default: str | None,
           results: Sequence[combo.CandidateResult] = (), rules: Rules = RULES) -> str | None:
    """What the answer names: the default where the comparison ended "the same" or "not worth it" with the default
    among those within the indifference zone (no reason to move), else the leader (:func:`leader`)."""
    if st is not None and step is not None and step.kind in (SAME, NOT_WORTH_IT) and default in st.same(rules):
        return default
    return leader(st, results)


def decision(st: Standing | None, step: Step | None, default: str | None, results: Sequence[combo.CandidateResult],
             rules: Rules, cost: combo.DecisionCost) -> combo.Decision:
    """The decision, from what is known (``st``, ``results``), how measuring ended (``step``; None: the fixed plan)
    and the rules: its leader (:func:`leader`) and choice (:func:`choice`), the candidates within the indifference
    zone, what deciding cost (``cost``, in seconds here; put in the decision's unit) and what the choice saves per
    training against the default. Pure: it measures and changes nothing."""
    chosen = choice(st, step, default, results, rules)
    out = combo.Decision(step.kind if step else FIXED_PLAN,
                         step.why if step else "the planned runs only (--max-trainings 0)", rules,
                         dataclasses.replace(cost), default=default, choice=chosen, leader=leader(st, results))
    if st is None or chosen is None:
        return out
    out.expected_regret, out.unit, out.same = st.regret[chosen], st.unit, st.same(rules)
    if default in st.expected and default != chosen:
        saves = st.expected[default] - st.expected[chosen]
        spent = cost.seconds * (st.expected[default] / st.time_s[default]) if st.unit == "USD" else cost.seconds
        out.saves_per_training = saves
        out.saves_share = saves / st.expected[default] if st.expected[default] else None
        out.cost.in_unit = spent
        out.pays_after_trainings = spent / saves if saves > 0 else None
    return out


def _amount(x: float, unit: str) -> str:
    return f"{x:.3g} USD" if unit == "USD" else f"{x:.0f} s"


def _pct(x: float) -> str:
    return f"{x:.1%}" if x < 0.1 else f"{x:.0%}"


def next_step(st: Standing, *, measurable: Iterable[str], seed_cost_s: Mapping[str, float],
              probe_cost_s: Mapping[str, float], seeds_left: Mapping[str, int], default: str | None = None,
              rules: Rules = RULES) -> Step:
    """Whether the decision is made, and if not the measurement worth the most per second (see the module's
    docstring). ``measurable``: candidates that can be measured here; ``seed_cost_s``: per setting, what one
    more seed takes (s); ``probe_cost_s``: per candidate, what one more speed run takes; ``seeds_left``: per
    setting, how many more seeds it may get; ``default``: the candidate the user would take anyway."""
    lead = str(leader(st))
    r = st.regret[lead]
    thin = _thin(st, seeds_left, seed_cost_s, rules)
    if thin is not None:
        return Step("seed", f"{lead} leads (expected regret {_pct(r)}), but setting {thin} is still in contention "
                    f"with {st.seeds.get(thin, 0)} seed(s): a seed more before anything is decided (one seed tells "
                    "nothing of how its epochs vary)", setting=thin)
    if st.p_within[lead] >= rules.confidence or r <= rules.regret:
        return _known(st, lead, default, rules)
    can = set(measurable)
    # (seconds saved over the trainings served, cost s, step): a single measurement rarely turns a decision on
    # its own, so each kind is valued as its best run of 1, 2, 4 or 8 (per measurement: the KG* of Frazier,
    # Powell and Dayanik), so that a difference worth several runs to find is found.
    options: list[tuple[float, float, Step]] = []
    # In one unit: USD where every candidate is priced (a saving at the leader's expected cost, a measurement at the
    # hourly rate of what it trains on), seconds otherwise.
    per_training = st.expected[lead] * rules.trainings
    rate = {c: st.expected[c] / st.time_s[c] if st.unit == "USD" and st.time_s[c] else 1.0 for c in st.regret}

    for label in sorted({st.group_of[c] for c in st.regret}):
        cost = seed_cost_s.get(label)
        if cost and seeds_left.get(label, 0) > 0:
            cost *= min(rate[c] for c in st.regret if st.group_of[c] == label)
            saves = max(_worth(st, lead, label, None, m) * per_training / m for m in (1, 2, 4, 8))
            options.append((saves, cost, Step("seed", "", setting=label)))
    for c in st.regret:
        cost = probe_cost_s.get(c)
        if c in can and cost:
            saves = max(_worth(st, lead, None, c, m) * per_training / m for m in (1, 2, 4, 8))
            options.append((saves, cost * rate[c], Step("speed", "", candidates=(c,))))
    if not options:
        return Step(STUCK, f"{lead} leads with expected regret {_pct(r)}, and nothing that could tell it from "
                    "its challengers can be measured here")
    saves, cost, best = max(options, key=lambda o: o[0] / o[1])
    if saves < cost:
        near = [c for c in st.same(rules) if c != lead]
        keep = f"; the default {default} is among them: keep it" if default in near else ""  # as :func:`choice` does
        return Step(NOT_WORTH_IT, f"{lead} leads with expected regret {_pct(r)}; no measurement is expected to "
                    f"save what it costs over {rules.trainings} trainings (the best: {_amount(saves, st.unit)} saved "
                    f"for {_amount(cost, st.unit)} of measuring)"
                    + (f"; within {rules.indifference:.0%} of it: {', '.join(near)}{keep}" if near else ""))
    rival = max((c for c in st.regret if c != lead), key=lambda x: st.p_best[x])
    what = (f"a seed of {best.setting}: its epochs" if best.kind == "seed" else
            f"a speed run of {best.candidates[0]}: its speed")
    why = (f"{lead} leads (expected regret {_pct(r)}, P(lowest expected cost) {st.p_best[lead]:.0%}; {rival} "
           f"{st.p_best[rival]:.0%}); {what} is expected to save {_amount(saves, st.unit)} over "
           f"{rules.trainings} trainings for {_amount(cost, st.unit)} of measuring, the most for what it costs")
    return Step(best.kind, why, setting=best.setting, candidates=best.candidates)


def _known(st: Standing, lead: str, default: str | None, rules: Rules) -> Step:
    """The stop once the leader is known well enough: "the same" naming every candidate within the indifference zone
    where there are two or more, else "decided"."""
    r = st.regret[lead]
    sure = (f"within {rules.indifference:.0%} of the lowest expected cost with probability "
            f"{st.p_within[lead]:.0%}, expected regret {_pct(r)} (stopped at {rules.confidence:.0%}, or at "
            f"{rules.regret:.0%} expected regret)")
    same = st.same(rules)
    if len(same) > 1:
        keep = default if default in same else lead
        return Step(SAME, f"{', '.join(same)} are the same within {rules.indifference:.0%} (expected regret "
                    f"{_pct(st.regret[same[0]])}-{_pct(st.regret[same[-1]])}): any will do, the default is {keep}; "
                    f"{lead} leads, {sure}")
    return Step(DECIDED, f"{lead}: {sure}; P(lowest expected cost) {st.p_best[lead]:.0%}")


def _change_sd(st: Standing, lead: str, c: str, seed_of: str | None, speed_of: str | None, m: int) -> float:
    """How far ``m`` more seeds of ``seed_of`` (or speed runs of ``speed_of``) are expected to move the log
    ratio of challenger ``c``'s mean cost to the leader's: the sd of the change of its posterior mean (a
    mean of n known to var v moves by var v m / (n + m) with m more)."""
    if seed_of is not None and st.group_of[c] != st.group_of[lead] and seed_of in (st.group_of[c], st.group_of[lead]):
        n = st.seeds.get(seed_of, 1)
        return math.sqrt(st.epoch_var.get(seed_of, 0.0) * m / (n + m))
    if speed_of is not None and speed_of in (c, lead):
        n = st.runs.get(speed_of, 1)
        return math.sqrt(st.speed_var.get(speed_of, 0.0) * m / (n + m))
    return 0.0


def _worth(st: Standing, lead: str, seed_of: str | None, speed_of: str | None, m: int) -> float:
    """What ``m`` more such measurements are expected to save per training, relative: the knowledge
    gradient of the pair they move most, sd x (z Phi(z) + phi(z)), z = -gap / sd, where sd is how far m
    measurements are expected to move the pair's log ratio."""
    best = 0.0
    for c in (c for c in st.regret if c != lead):
        sd = _change_sd(st, lead, c, seed_of, speed_of, m)
        if sd <= 0:
            continue
        z = -abs(math.log(st.expected[c] / st.expected[lead])) / sd
        best = max(best, sd * (z * _NORMAL.cdf(z) + _NORMAL.pdf(z)))
    return best


def unmeasured_step(step: Step, unmeasured: Sequence[str], measurable: Iterable[str]) -> Step:
    """Never decided while a candidate is unmeasured: a speed run of the first one measurable here comes first;
    where none is, a stop that would say "decided" or "the same" says instead what it could not weigh."""
    if not unmeasured:
        return step
    can = [c for c in unmeasured if c in set(measurable)]
    if can:
        return Step("speed", f"{can[0]} has no usable speed run yet: nothing is decided while a candidate is "
                    "unmeasured", candidates=(can[0],))
    if step.kind not in ANSWERS:
        return step
    return Step(STUCK, f"among the measured, {step.why}; not decided: {', '.join(unmeasured)} unmeasured and not "
                "measurable here")


def _thin(st: Standing, seeds_left: Mapping[str, int], seed_cost_s: Mapping[str, float], rules: Rules) -> str | None:
    """A setting still in contention (one of its candidates has P(lowest expected cost) of at least
    ``rules.exclude`` over the number of settings) with fewer than ``rules.min_seeds`` seeds that can get another,
    the likeliest first; None where there is none (or only one setting)."""
    labels = {st.group_of[c] for c in st.regret}
    if len(labels) < 2:
        return None
    bound = rules.exclude / len(labels)
    thin = [(max(st.p_best[c] for c in st.regret if st.group_of[c] == label), label) for label in labels
            if st.seeds.get(label, 0) < rules.min_seeds and seeds_left.get(label, 0) > 0 and seed_cost_s.get(label)]
    thin = [(p, label) for p, label in thin if p >= bound]
    return max(thin)[1] if thin else None


def one_candidate_step(results: Sequence[combo.CandidateResult], seeds: Sequence[combo.SeedResult],
                       measurable: Iterable[str] = (), rules: Rules = RULES, planned: int = 3) -> Step:
    """With nothing to choose between (one candidate with figures): ``settled`` once its interval is within
    ``rules.narrow``, or once its ``planned`` seeds (``--seeds``) gave an interval whose spread is half or more the
    seeds' own epochs (more seeds measure how seeds vary, they do not narrow it: measured on, 1-or-2-epoch seeds
    spent the whole budget); else a seed while fewer than ``planned`` seeds (or no interval), a speed run where its
    runs make most of the spread. ``measurable``: candidates measurable here."""
    can = set(measurable)
    name = leader(None, results)
    if name is None:
        return Step(STUCK, "no candidate measured")
    lead = next(r for r in results if r.candidate == name)
    if lead.time_low_s and lead.time_high_s and lead.time_high_s / lead.time_low_s <= rules.narrow:
        return Step(SETTLED, f"{lead.candidate}'s {lead.level:.0%} interval is within {rules.narrow:g}x")
    seed_spread = epochs_spread(seeds) if len(seeds) > 1 else math.inf
    total = _spread(lead)
    seeds_make_it = seed_spread ** 2 >= 0.5 * total ** 2
    if len(seeds) >= planned and math.isfinite(total) and seeds_make_it:
        return Step(SETTLED, f"{lead.candidate}'s {lead.level:.0%} interval rests on its {len(seeds)} planned "
                    f"seeds; half or more of its spread ({total:.2f} log) is how many epochs a new seed may need "
                    f"({seed_spread:.2f} log), which more seeds would pin down, not narrow (--seeds N for more)")
    if len(seeds) < planned or seeds_make_it or lead.candidate not in can:
        return Step("seed", f"{len(seeds)} of {planned} planned seeds" if len(seeds) < planned else
                    f"the seeds' epochs (log spread {seed_spread:.2f}) make half or more of the interval's spread "
                    f"({total:.2f}), and no interval is stated yet")
    return Step("speed", f"{lead.candidate}'s speed runs make most of its interval's spread", candidates=(lead.candidate,))


def _spread(r: combo.CandidateResult) -> float:
    """A candidate's spread of one training's log time, read from its interval (inf: none given)."""
    if not (r.time_low_s and r.time_high_s):
        return math.inf
    return math.log(r.time_high_s / r.time_low_s) / (2 * NormalDist().inv_cdf(0.5 + r.level / 2))


__all__: Sequence[str] = ("ANSWERS", "DECIDED", "FIXED_PLAN", "Group", "LIMIT", "NOT_WORTH_IT", "SAME", "SETTLED", "STOPS",
                          "STUCK", "Standing", "Step", "before_measuring", "choice", "leader", "next_step",
                          "one_candidate_step", "standing", "unmeasured_step")
