"""``compare``'s one orchestrator: every comparison is a race over its settings, one setting a race of one
(``--precisions float32,mixed_bfloat16 --batch-sizes 64,256`` make several).

A precision or a batch size changes both the speed of an epoch and, possibly, the epochs to the target, so
neither can be read off a sweep's throughput: every (candidate, setting) is a candidate of its own, each
setting converges with its own seeds, and the combination (:func:`cpustudy.measure.compare.combined`) draws
every candidate's training from its own setting's seeds.

:func:`measure` runs one comparison, resuming from what is stored:

1. whether deciding can pay at all before anything is measured (``policy.before_measuring``: over ``--trainings``
   trainings, against the trainings of round 1: one a setting in a race, one setting's planned seeds); where it
   cannot, the default is the answer. One candidate has nothing to decide: its planned seeds are the interval
   asked for, measured whatever ``--trainings`` says;
2. round 1 (:func:`first_round`): the first seed of every setting (one setting: its ``--seeds`` planned seeds) and
   the speed probes of every local candidate, the settings in a random order (fixed by ``--first-seed``) and
   interleaved, so that no setting is confounded with the machine's drift over minutes; with ``--max-trainings 0``
   every setting's every seed after it (the fixed plan);
3. the one decision loop (:func:`cpustudy.measure.compare.decide`): one measurement at a time, a seed of a setting
   or a speed run of a candidate (a probe that left no usable speed run among them), the one the policy
   (:func:`cpustudy.decision.policy.next_step`) expects to be worth the most, until the decision is made, every
   candidate is the same within the indifference zone, measuring more cannot pay for itself, or ``--max-trainings``
   is spent. No setting is dropped. A seed of a setting other than the leader's is stopped once it can no longer
   make its setting the cheapest (:func:`censored`); it is counted as censored, not dropped: its margins to the
   target count up to where it stopped (:func:`cpustudy.analysis.model.epochs_of`);
4. the epilogue (:func:`cpustudy.measure.compare.conclude`): the statements stored, ``--check``, the backtest.

What a race cost is set against training every setting with every seed (:func:`race_cost`). Cloud candidates are
not raced over settings (their probes are planned per setting): compare one setting at a time for them. A reduced
precision this CPU would emulate is refused before anything runs (``spec.plan``).
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence, TypeVar

from cpustudy import precision
from cpustudy.analysis import compare as combo
from cpustudy.analysis import totarget
from cpustudy.analysis.stats import NO_PRIOR
from cpustudy.analysis.totarget import Comparison
from cpustudy.decision.policy import Step, before_measuring, leader, standing_of
from cpustudy.errors import UserError
from cpustudy.measure import compare as single
from cpustudy.measure.compare import CompareRequest, Planned
from cpustudy.measure.execute import Measurer, execute
from cpustudy.measure.sweep import Cell, pending
from cpustudy.names import int_list, split_list
from cpustudy.rules import RULES, Rules
from cpustudy.store import Known, Readable

T = TypeVar("T")


@dataclass(frozen=True)
class Setting:
    """How a candidate trains: its Keras precision policy and batch size (None: the workload's)."""

    precision: str
    batch_size: int | None

    def label(self, default_batch: int, precisions: bool, batches: bool) -> str:
        """``bf16 b256``: the axes that vary only."""
        return precision.setting_label(self.precision, self.batch_size or default_batch, precisions=precisions,
                                       batches=batches)


def parse_settings(precisions: str | None, batch_sizes: str | None, default_precision: str,
                default_batch: int | None) -> list[Setting]:
    """The settings ``--precisions`` x ``--batch-sizes`` name (each axis: its list, else the one value of
    ``--precision`` / ``--batch-size``), checked: a policy Keras knows, a positive batch size, none twice."""
    policies = split_list(precisions, "--precisions", "float32,mixed_bfloat16") if precisions else [default_precision]
    for policy in policies:
        problem = precision.unknown(policy)
        if problem:
            raise UserError(problem.replace("--precision ", "--precisions: "))
    batches: list[int | None] = [*int_list(batch_sizes, "--batch-sizes")] if batch_sizes else [default_batch]
    for axis, values in (("--precisions", policies), ("--batch-sizes", batches)):
        if len(set(values)) != len(values):
            raise UserError(f"{axis}: a value named twice: give each once")
    return [Setting(p, b) for p in policies for b in batches]


def check_default(request: CompareRequest, settings: Sequence[Setting]) -> None:
    """``--precision``/``--batch-size`` name the default setting: given beside ``--precisions``/``--batch-sizes``,
    it must be among the ``settings`` they make (:func:`parse_settings`; else the default silently became the first
    listed)."""
    for flag, value, flags, listed, made in (
            ("--precision", request.precision if request.precision_named else None, "--precisions",
             request.precisions, {s.precision for s in settings}),
            ("--batch-size", request.batch_size, "--batch-sizes", request.batch_sizes, {s.batch_size for s in settings})):
        if value is not None and value not in made:
            raise UserError(f"{flag} {value} is not among {flags} {listed}: {flag} names the default setting; give "
                            "one of them")


@dataclass
class Race:
    """A comparison planned: one single-setting plan per setting (``measure.compare.Planned``), its candidates
    named with the setting's label (``here:2 bf16 b256``; one setting: label "" and the names as given)."""

    request: CompareRequest
    plans: list[Planned]
    labels: list[str]

    @property
    def entries(self) -> list[tuple[str, Planned]]:
        """(label, plan) of each setting."""
        return list(zip(self.labels, self.plans))

    @property
    def raced(self) -> bool:
        """Whether several settings are raced (one setting is a race of one)."""
        return len(self.plans) > 1

    def label_of(self, cell: Cell) -> str:
        """A planned cell's setting in words, ``(bf16 b256)``; "" for one setting."""
        for label, p in self.entries:  # by key: a seed told to stop early is the same cell
            if label and any(c.key == cell.key for c in (*p.convergence, *p.probes)):
                return f"({label})"
        return ""


def plan(request: CompareRequest, plan_one: Callable[[CompareRequest], Planned] = single.plan_compare) -> Race:
    """Plan every setting of ``request`` with ``plan_one`` (the single-setting planner), checked before the
    database is touched."""
    settings = parse_settings(request.precisions, request.batch_sizes, request.precision, request.batch_size)
    check_default(request, settings)  # here: each setting's own request below has no lists left
    vary_p = len({s.precision for s in settings}) > 1
    vary_b = len({s.batch_size for s in settings}) > 1
    plans, labels = [], []
    for s in settings:
        p = plan_one(replace(request, precision=s.precision, batch_size=s.batch_size, precisions=None,
                             batch_sizes=None))
        if len(settings) > 1 and any(c.kind == "cloud" for c in p.candidates):
            raise UserError("--candidates: cloud candidates are compared one setting at a time (their probes are "
                            "planned per setting): leave them out of a --precisions/--batch-sizes comparison, or "
                            "give one --precision and --batch-size")
        label = s.label(int(p.workload.batch_size), vary_p, vary_b)
        if label:
            p.candidates = [replace(c, name=f"{c.name} {label}") for c in p.candidates]
        plans.append(p)
        labels.append(label)
    return Race(request, plans, labels)


def measure(race: Race, say: Callable[[str], None], progress: Callable[[str], None] | None = None,
            probes: tuple[str | None, float | None] = (None, None), measurer: Measurer = execute,
            rules: Rules = RULES) -> Comparison:
    """The one orchestrator of a comparison, one setting (a race of one) or several: what deciding can be worth
    first (:func:`~cpustudy.decision.policy.before_measuring`), round 1 (:func:`first_round`), with ``--max-trainings
    0`` the rest of the fixed plan, then the one decision loop (:func:`cpustudy.measure.compare.decide`) and its
    epilogue (:func:`cpustudy.measure.compare.conclude`), resuming from what is stored. ``probes``: the cloud
    candidates' probe plan and its estimated cost (``cpustudy.cloud.probes``); ``measurer``: what measures one run
    (a fresh worker unless given: ``rehearsal.replay`` plays one)."""
    from cpustudy.measure.session import measuring

    req, entries = race.request, race.entries
    if problem := rules.check():
        raise UserError(problem)
    t0 = time.perf_counter()
    with measuring(req.db, race.plans[0].machine) as session:
        known = Known(session.store)  # the store read once: every step reads this, learning each run measured
        m = single.Measuring(session.store, known, session.machine_id, req, entries, race.label_of, say, progress,
                             measurer, rules=rules, probes=probes)
        fresh = all(pending(known, p.convergence) == p.convergence for p in race.plans)
        choose = sum(len(p.candidates) for p in race.plans) > 1  # one candidate: its interval is what is asked
        stop = None if req.fixed_plan or not fresh or not choose else before_measuring(
            float(sum(_first_seeds(race, p) for p in race.plans)), single.default_of(entries, req), rules)
        if stop is not None:  # answered before anything runs, the kernels' reading included
            say(f"compare: {stop.why}")
            out = nothing_measured(race, known, stop, rules)
            out.wall_s = time.perf_counter() - t0
            return out
        kernels = reduced_precision_kernels(race, progress)
        for line in kernels:
            say(f"compare: {line}")
        single.measure_cells(m, first_round(race, known, say), "round 1" if race.raced else "planned")
        if req.fixed_plan:  # the fixed plan: every setting's every seed, round after round
            rest = interleave([[("convergence", c) for c in pending(known, p.convergence[_first_seeds(race, p):])]
                               for _, p in shuffled(race, req.first_seed)])
            single.measure_cells(m, rest, "the fixed plan")
        comparison = single.decide(m, lambda label, p, comp: censored(race, label, p.next_seed(known), comp, rules))
        if race.raced:
            comparison.steps.append(race_cost(race, known))
        single.conclude(m, comparison)
    comparison.notes += kernels
    comparison.wall_s = time.perf_counter() - t0
    comparison.training_wall_s = m.ledger.one_training()
    return comparison


def _first_seeds(race: Race, p: Planned) -> int:
    """How many of a setting's planned seeds round 1 trains: a race, one (the policy spends the rest where they can
    change the decision); one setting, all of them (they decide nothing between its candidates, which take the same
    epochs, but give the time to the target the interval ``--seeds`` asks for)."""
    return 1 if race.raced else len(p.convergence)


def first_round(race: Race, store: Readable, say: Callable[[str], None]) -> list[tuple[str, Cell]]:
    """Round 1: each setting's first seeds (:func:`_first_seeds`) and its speed probes still wanted (the reference,
    the first setting's first local candidate, re-timed where due and where this period measures anything else: a
    comparison run again with nothing left to measure measures nothing), the settings in a random order and
    interleaved."""
    plans = [p for _, p in shuffled(race, race.request.first_seed)]
    todos = [pending(store, p.convergence[:_first_seeds(race, p)]) for p in plans]
    wanted = [single.probes_wanted(p, store, len(todo)) for p, todo in zip(plans, todos)]
    if any(todos) or any(wanted):  # the reference re-timed where this period measures anything else
        i = next(k for k, p in enumerate(plans) if p is race.plans[0])
        wanted[i] = wanted[i] + single.reference_probe(plans[i], store, say, wanted[i])
    seeds, probes = sum(map(len, todos)), sum(map(len, wanted))
    first = interleave([single.order(todo, w) for todo, w in zip(todos, wanted)])
    if first:
        say(f"compare: {seeds} convergence run(s) and {probes} speed probe(s) to measure into {store.path}"
            + (f": round 1 of the race over {len(race.plans)} settings ({', '.join(race.labels)}, in a random order, "
               "interleaved)" if race.raced else ""))
    return first


def nothing_measured(race: Race, store: Readable, stop: Step, rules: Rules) -> Comparison:
    """The answer where nothing was worth measuring: every candidate without figures (the one builder,
    :func:`~cpustudy.analysis.totarget.compared`, given no seeds), the default chosen."""
    default = single.default_of(race.entries, race.request)
    groups: totarget.Groups = [(label, [], [combo.CandidateInput(c.name, [], None, "") for c in p.candidates])
                               for label, p in race.entries]
    out = totarget.compared(store, race.request.goal, groups, race.plans[0].reference, spot=race.request.spot,
                            noise=NO_PRIOR, factor=1.0, rules=rules)
    single.attach(out, None, stop, single.Ledger(), rules, default)
    if out.decision:
        out.decision.choice = default  # nothing measured, no leader: the default is the answer
    out.steps = [f"stopped: {stop.why}"]
    return out


def shuffled(race: Race, seed: int) -> list[tuple[str, Planned]]:
    """The settings in a random order fixed by ``seed`` (the request's first seed): no setting always goes
    first, when the machine is freshest."""
    return random.Random(seed).sample(race.entries, len(race.plans))


def interleave(queues: Sequence[Sequence[T]]) -> list[T]:
    """One item of each queue in turn, until all are empty: settings measured side by side, not one after
    another (a setting is not confounded with the machine's drift over minutes)."""
    out: list[T] = []
    rest = [list(q) for q in queues]
    while any(rest):
        for q in rest:
            if q:
                out.append(q.pop(0))
    return out


def reduced_precision_kernels(race: Race, progress: Callable[[str], None] | None = None) -> list[str]:
    """For every reduced precision and build raced here, which kernels its matmuls ran on (oneDNN's verbose
    output, ``environment.kernels``: AMX, AVX-512 BF16, or not known), in words."""
    from cpustudy.environment import kernels

    out = []
    for p in race.plans:
        policy = p.convergence[0].config.precision_policy
        if not precision.reduced(policy):
            continue
        for c in {c.build: c for c in p.candidates if c.kind == "here"}.values():
            cfg = p.probe_cell(c, 0).config
            if progress:
                progress(f"reading which kernels {policy} runs on in build {c.build}")
            out.append(kernels.sentence(kernels.reduced_precision_path(policy, cfg.python, cfg.env), c.build))
    return list(dict.fromkeys(out))


def censored(race: Race, label: str, cell: Cell, comparison: Comparison, rules: Rules = RULES) -> tuple[Cell, str]:
    """``cell`` (a seed of setting ``label``) told to stop once it can no longer make its setting the cheapest
    (:func:`cpustudy.analysis.compare.censor_after` against the upper bound of the leader, ``policy.leader`` under
    ``rules``), and the sentence saying so; unchanged, with "", for the leader's own setting or where nothing bounds it."""
    name = leader(standing_of(comparison, rules), comparison.results)
    lead = next((r for r in comparison.results if r.candidate == name), None)
    inputs = {g: candidates for g, _, candidates in comparison.groups}  # as last combined
    if lead is None or label not in inputs or lead.candidate in {c.candidate for c in inputs[label]}:
        return cell, ""
    priced = lead.p_cheapest is not None
    bound = lead.cost_high_usd if priced else lead.time_high_s
    k = None if bound is None else combo.censor_after(inputs[label], bound, int(cell.config.epochs), priced=priced)
    if k is None:
        return cell, ""
    what = f"{bound:.6f} USD" if priced else f"{bound:.0f} s"
    return (Cell(cell.config.with_(give_up_after=k), cell.spec),
            f"race: seed {cell.config.seed} of {label} stops after {k} epoch(s) short of the target: past that "
            f"even its fastest speed run costs more than {lead.candidate}'s upper bound ({what})")


def race_cost(race: Race, store: Readable) -> str:
    """What the race trained against training every setting with every seed, in seeds and in epochs (a
    setting's seeds not trained counted at its trained seeds' mean epochs)."""
    per = [single.seeds_of(p, store)[0] for p in race.plans]
    most = max(max(len(s) for s in per), race.request.seeds)
    trained = sum(len(s) for s in per)
    stopped = sum(1 for s in per for x in s if x.censored_after is not None)
    epochs = [[x.censored_after or x.epochs or x.max_epochs for x in s] for s in per]
    spent = sum(sum(e) for e in epochs)
    every = sum(statistics.mean(e) * most for e in epochs if e)
    return (f"the race trained {trained} seed(s) across {len(race.plans)} settings ({stopped} stopped early), "
            f"{spent} epochs; every setting with {most} seeds would have trained {len(race.plans) * most} seeds, "
            f"about {every:.0f} epochs ({spent / every:.0%} of it spent)" if every else
            f"the race trained {trained} seed(s) across {len(race.plans)} settings")


__all__: Sequence[str] = ("Race", "Setting", "measure", "plan", "parse_settings")
