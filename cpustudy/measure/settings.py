"""``compare`` over training settings: ``--precisions float32,mixed_bfloat16 --batch-sizes 64,256``.

A precision or a batch size changes both the speed of an epoch and, possibly, the epochs to the target, so
neither can be read off a sweep's throughput: every (candidate, setting) is a candidate of its own, each
setting converges with its own seeds, and the combination (:func:`cpustudy.analysis.compare.combine_groups`)
draws every candidate's training from its own setting's seeds, with P(cheapest) over all of them together.

**Raced, not exhaustive.** Trainings are spent where they can change the decision:

1. a first round: one seed of every setting and the speed probes of every local candidate in every setting,
   the settings in a random order (fixed by ``--first-seed``) and interleaved, a run of one setting then a run
   of the next, so that no setting is confounded with the machine's drift over minutes;
2. then the one decision loop (:func:`cpustudy.measure.compare.decide`): one measurement at a time, a seed of
   a setting (up to ``--seeds`` each) or a speed run of a candidate, the one the policy
   (:func:`cpustudy.decision.policy.next_step`) expects to remove the most doubt per second, until the
   decision is made, every candidate is the same within the indifference zone, measuring more cannot pay for
   itself, or ``--max-trainings`` is spent. No setting is dropped: one that cannot be the cheapest is simply
   not worth measuring, and stays in the table with its figures. A seed of a setting other than the leader's
   is stopped once it can no longer make its setting the cheapest: past the epochs at which even its
   setting's fastest speed run costs more than the leader's upper bound
   (:func:`cpustudy.analysis.compare.censor_after`). It is counted as censored, not dropped: its margins to
   the target count up to where it stopped (:func:`cpustudy.analysis.model.epochs_of`; without them, as reaching the target one
   epoch later, its earliest, said in its basis as lower-bound figures). With ``--max-trainings 0`` every
   setting trains every seed (the fixed plan).

What the race cost is set against training every setting with every seed, in seeds and in epochs (the steps
say both). Cloud
candidates are not raced over settings (their probes are planned per setting): compare one setting at a time
for them. A reduced precision this CPU would emulate is refused before anything runs (``spec.plan``).
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Callable, Sequence

from cpustudy import precision
from cpustudy.analysis import compare as combo
from cpustudy.analysis.totarget import Comparison
from cpustudy.decision.policy import Step, before_measuring, leader, standing_of
from cpustudy.errors import UserError
from cpustudy.measure import compare as single
from cpustudy.measure.compare import CompareRequest, Planned
from cpustudy.measure.execute import Measurer, execute
from cpustudy.measure.sweep import Cell
from cpustudy.names import split_list
from cpustudy.rules import RULES, Rules
from cpustudy.store import Store


@dataclass(frozen=True)
class Setting:
    """How a candidate trains: its Keras precision policy and batch size (None: the workload's)."""

    precision: str
    batch_size: int | None

    def label(self, default_batch: int, precisions: bool, batches: bool) -> str:
        """``bf16 b256``: the axes that vary only."""
        parts = []
        if precisions:
            parts.append(precision.TAGS.get(self.precision, "fp32"))
        if batches:
            parts.append(f"b{self.batch_size or default_batch}")
        return " ".join(parts)


def parse_settings(precisions: str | None, batch_sizes: str | None, default_precision: str,
                default_batch: int | None) -> list[Setting]:
    """The settings ``--precisions`` x ``--batch-sizes`` name (each axis: its list, else the one value of
    ``--precision`` / ``--batch-size``), checked: a policy Keras knows, a positive batch size, none twice."""
    policies = split_list(precisions, "--precisions", "float32,mixed_bfloat16") if precisions else [default_precision]
    for policy in policies:
        problem = precision.unknown(policy)
        if problem:
            raise UserError(problem.replace("--precision ", "--precisions: "))
    batches: list[int | None] = [default_batch]
    if batch_sizes:
        batches = []
        for item in split_list(batch_sizes, "--batch-sizes", "64,256"):
            if not item.isdigit() or int(item) < 1:
                raise UserError(f"--batch-sizes: {item!r} is not a batch size: give positive whole numbers, e.g. 64,256")
            batches.append(int(item))
    for axis, values in (("--precisions", policies), ("--batch-sizes", batches)):
        if len(set(values)) != len(values):
            raise UserError(f"{axis}: a value named twice: give each once")
    return [Setting(p, b) for p in policies for b in batches]


@dataclass
class SettingsPlan:
    """One single-setting plan per setting (``measure.compare.Planned``), its candidates named with the
    setting's label (``here:2 bf16 b256``)."""

    request: CompareRequest
    plans: list[Planned]
    labels: list[str]


def plan_settings(request: CompareRequest, plan_one: Callable[[CompareRequest], Planned]) -> SettingsPlan:
    """Plan every setting of ``request`` with ``plan_one`` (the single-setting planner), checked before the
    database is touched."""
    from cpustudy.workloads import get

    workload = get(request.workload)
    settings = parse_settings(request.precisions, request.batch_sizes, request.precision, request.batch_size)
    vary_p = len({s.precision for s in settings}) > 1
    vary_b = len({s.batch_size for s in settings}) > 1
    plans, labels = [], []
    for s in settings:
        p = plan_one(replace(request, precision=s.precision, batch_size=s.batch_size, precisions=None,
                             batch_sizes=None))
        if any(c.kind == "cloud" for c in p.candidates):
            raise UserError("--candidates: cloud candidates are compared one setting at a time (their probes are "
                            "planned per setting): leave them out of a --precisions/--batch-sizes comparison, or "
                            "give one --precision and --batch-size")
        label = s.label(int(workload.batch_size), vary_p, vary_b)
        p.candidates = [replace(c, name=f"{c.name} {label}") for c in p.candidates]
        plans.append(p)
        labels.append(label)
    return SettingsPlan(request, plans, labels)


def measure_settings(sp: SettingsPlan, say: Callable[[str], None], progress: Callable[[str], None] | None = None,
                     measurer: Measurer = execute, rules: Rules = RULES) -> Comparison:
    """Race the settings (see the module's docstring) and combine them into one comparison; ``measurer``: what
    measures one run (a fresh worker unless given)."""
    from cpustudy.measure.session import measuring
    from cpustudy.measure.sweep import pending

    req = sp.request
    t0 = time.perf_counter()
    ledger = single.Ledger()
    steps: list[str] = []
    kernels = reduced_precision_kernels(sp, progress)
    for line in kernels:
        say(f"compare: {line}")
    with measuring(req.db, sp.plans[0].machine) as session:
        store, mid = session.store, session.machine_id
        combined = partial(single.combined, list(zip(sp.labels, sp.plans)), store, rules)
        m = single.Measuring(store, mid, req, say, progress, measurer, ledger, rules)
        run = partial(single.measure_cells, m, label_of=partial(_label_of, sp))

        order = shuffled(sp, req.first_seed)
        fresh = all(pending(store, p.convergence) == p.convergence for p in sp.plans)
        stop = None if req.fixed_plan or not fresh else before_measuring(
            float(len(sp.plans)), single.default_of(list(zip(sp.labels, sp.plans))), rules)
        if stop is not None:
            say(f"compare: {stop.why}")
            return nothing_measured(sp, stop, rules)
        comparison = _round_one(sp, order, store, say, run, combined, steps)
        if req.fixed_plan:  # the fixed plan: every setting's every seed, round after round
            rest = interleave([[("convergence", c) for c in pending(store, p.convergence[1:])] for _, p in order])
            run(rest, stage="the fixed plan")
            comparison = combined()
        comparison.steps = steps
        comparison = single.decide(list(zip(sp.labels, sp.plans)), m, comparison, combined,
                                   seed_cell=lambda label, p, comp: censored(sp, label, next_seed(p, store), comp, rules),
                                   label_of=partial(_label_of, sp))
        comparison.steps.append(race_cost(sp, store))
        single.conclude(list(zip(sp.labels, sp.plans)), m, comparison)
    comparison.notes += kernels
    comparison.wall_s = time.perf_counter() - t0
    comparison.training_wall_s = ledger.one_training()
    return comparison


def _round_one(sp: SettingsPlan, order: list[tuple[str, Planned]], store: Store, say: Callable[[str], None],
               run: Callable[..., None], combined: Callable[[], Comparison],
               steps: list[str]) -> Comparison:
    """Round 1 of the race: one seed of each setting and its speed probes (the reference re-timed where due),
    interleaved; a probe left without a usable speed run measured once more; the comparison after it."""
    from cpustudy.measure.sweep import pending

    first = interleave([single.order(pending(store, p.convergence[:1]),  # the first setting's holds the reference
                                     single.probes_now(p, store, say, 1, reference=p is sp.plans[0]))
                        for _, p in order])
    if first:
        say(f"compare: round 1 of the race over {len(sp.plans)} settings ({', '.join(lb for lb, _ in order)}, "
            f"in a random order, interleaved): {len(first)} run(s) into {store.path}")
    run(first, stage="round 1")
    comparison = combined()
    unmeasured = [r.candidate for r in comparison.results if r.speed_runs == 0]
    again = [c for c in (_probe_again(sp, name) for name in unmeasured) if c is not None]
    if again:  # a probe left out (a busy machine, a failure): once more before the decision reads it
        steps.append(f"measured again, no usable speed run after round 1: {', '.join(unmeasured)}")
        run([("speed", c) for c in again], stage="round 1")
        comparison = combined()
    return comparison


def nothing_measured(sp: SettingsPlan, stop: Step, rules: Rules) -> Comparison:
    """The answer where nothing was worth measuring: every candidate without figures, the default chosen."""
    default = single.default_of(list(zip(sp.labels, sp.plans)))
    results = [combo.CandidateResult(c.name, None, None, None, None, None, None, None, None, None, 0.0, 0, None,
                                     "", [], []) for p in sp.plans for c in p.candidates]
    out = Comparison(sp.plans[0].reference.workload, sp.request.goal, results, [])
    single.attach(out, None, stop, single.Ledger(), rules, default)
    if out.decision:
        out.decision.choice = default  # nothing measured, no leader: the default is the answer
    out.steps = [f"stopped: {stop.why}"]
    return out


def next_seed(p: Planned, store: Store) -> Cell:
    """The cell of a setting's next seed: its first planned seed not trained yet, else one more (``another_seed``)."""
    from cpustudy.measure.sweep import pending

    todo = pending(store, p.convergence)
    return todo[0] if todo else p.another_seed()


def shuffled(sp: SettingsPlan, seed: int) -> list[tuple[str, Planned]]:
    """The settings in a random order fixed by ``seed`` (the request's first seed): no setting always goes
    first, when the machine is freshest."""
    pairs = list(zip(sp.labels, sp.plans))
    order = random.Random(seed).sample(range(len(pairs)), len(pairs))
    return [pairs[i] for i in order]


def interleave(queues: Sequence[Sequence[Any]]) -> list[Any]:
    """One item of each queue in turn, until all are empty: settings measured side by side, not one after
    another (a setting is not confounded with the machine's drift over minutes)."""
    out: list[Any] = []
    rest = [list(q) for q in queues]
    while any(rest):
        for q in rest:
            if q:
                out.append(q.pop(0))
    return out


def reduced_precision_kernels(sp: SettingsPlan, progress: Callable[[str], None] | None = None) -> list[str]:
    """For every reduced precision and build raced here, which kernels its matmuls ran on (oneDNN's verbose
    output, ``environment.kernels``: AMX, AVX-512 BF16, or not known), in words."""
    from cpustudy.environment import kernels

    out = []
    for p in sp.plans:
        policy = p.convergence[0].config.precision_policy
        if not precision.reduced(policy):
            continue
        for c in {c.build: c for c in p.candidates if c.kind == "here"}.values():
            cfg = p.probe_cell(c, 0).config
            if progress:
                progress(f"reading which kernels {policy} runs on in build {c.build}")
            out.append(kernels.sentence(kernels.reduced_precision_path(policy, cfg.python, cfg.env), c.build))
    return list(dict.fromkeys(out))


def _probe_again(sp: SettingsPlan, name: str) -> Cell | None:
    """Another speed probe of the local candidate ``name`` (its next repeat), or None for another kind."""
    for p in sp.plans:
        for c in p.candidates:
            if c.name == name and c.kind == "here":
                return p.another_probe(c)
    return None


def _label_of(sp: SettingsPlan, cell: Cell) -> str:
    for label, p in zip(sp.labels, sp.plans):  # by key: a seed told to stop early is the same cell
        if any(c.key == cell.key for c in (*p.convergence, *p.probes)):
            return f"({label})"
    return ""


def censored(sp: SettingsPlan, label: str, cell: Cell, comparison: Comparison, rules: Rules = RULES) -> tuple[Cell, str]:
    """``cell`` (a seed of setting ``label``) told to stop once it can no longer make its setting the cheapest
    (:func:`cpustudy.analysis.compare.censor_after` against the upper bound of the leader, ``policy.leader`` under
    ``rules``), and the sentence saying so; unchanged, with "", for the leader's own setting or where nothing bounds it."""
    from cpustudy.measure.sweep import Cell

    name = leader(standing_of(comparison, rules), comparison.results)
    lead = next((r for r in comparison.results if r.candidate == name), None)
    inputs = {g: candidates for g, _, candidates in comparison.groups}  # as last combined
    if lead is None or label not in inputs:
        return cell, ""
    if lead.candidate in {c.candidate for c in inputs[label]}:
        return cell, ""
    priced = lead.p_cheapest is not None
    bound = lead.cost_high_usd if priced else lead.time_high_s
    if bound is None:
        return cell, ""
    k = combo.censor_after(inputs[label], bound, int(cell.config.epochs), priced=priced)
    if k is None:
        return cell, ""
    what = f"{bound:.6f} USD" if priced else f"{bound:.0f} s"
    return (Cell(cell.config.with_(give_up_after=k), cell.spec),
            f"race: seed {cell.config.seed} of {label} stops after {k} epoch(s) short of the target: past that "
            f"even its fastest speed run costs more than {lead.candidate}'s upper bound ({what})")


def race_cost(sp: SettingsPlan, store: Store) -> str:
    """What the race trained against training every setting with every seed, in seeds and in epochs (a
    setting's seeds not trained counted at its trained seeds' mean epochs)."""
    per = [single.seeds_of(p, store)[0] for p in sp.plans]
    most = max(max(len(s) for s in per), sp.request.seeds)
    trained = sum(len(s) for s in per)
    stopped = sum(1 for s in per for x in s if x.censored_after is not None)
    epochs = [[x.censored_after or x.epochs or x.max_epochs for x in s] for s in per]
    spent = sum(sum(e) for e in epochs)
    every = sum(statistics.mean(e) * most for e in epochs if e)
    return (f"the race trained {trained} seed(s) across {len(sp.plans)} settings ({stopped} stopped early), "
            f"{spent} epochs; every setting with {most} seeds would have trained {len(sp.plans) * most} seeds, "
            f"about {every:.0f} epochs ({spent / every:.0%} of it spent)" if every else
            f"the race trained {trained} seed(s) across {len(sp.plans)} settings")


def several(request: CompareRequest) -> bool:
    """Whether ``request`` names more than one setting (then :func:`measure_settings` compares them)."""
    return len(parse_settings(request.precisions, request.batch_sizes, request.precision, request.batch_size)) > 1


__all__: Sequence[str] = ("Setting", "SettingsPlan", "measure_settings", "plan_settings", "parse_settings",
                          "several")
