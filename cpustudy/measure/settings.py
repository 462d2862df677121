"""``compare`` over training settings: ``--precisions float32,mixed_bfloat16 --batch-sizes 64,256``.

A precision or a batch size changes both the speed of an epoch and, possibly, the epochs to the target, so
neither can be read off a sweep's throughput: every (candidate, setting) is a candidate of its own, each
setting converges with its own seeds, and the combination (:func:`cpustudy.analysis.compare.combine_groups`)
draws every candidate's training from its own setting's seeds, with P(cheapest) over all of them together.

**Raced, not exhaustive.** Trainings are spent where they can change the decision:

1. a first round: one seed of every setting, and the speed probes of every local candidate in every setting
   (interleaved, as the single-setting comparison orders them);
2. the race: a setting none of whose candidates is the cheapest in at least :data:`RACE_KEEP` of new
   trainings is dropped (named, with its figures so far; it stays in the table, marked);
3. the settings still in the race get their remaining ``--seeds`` one round at a time (the likeliest
   cheapest setting first), the race judged again after every seed. A seed of any other setting is stopped
   once it can no longer make its setting the cheapest: past the epochs at which even its setting's fastest
   speed run costs more than the leading candidate's upper bound
   (:func:`cpustudy.analysis.compare.censor_after`). It is counted as censored, not dropped: its margins to
   the target count up to where it stopped (``epochs_by_margins``; without them, as reaching the target
   one epoch later, its earliest, said in its basis as lower-bound figures);
4. settling as a single comparison settles (:func:`cpustudy.analysis.compare.next_step`), a seed going to
   the setting of the likeliest cheapest candidate.

What the race cost is set against training every setting with every seed, in seeds and in epochs (the steps
say both). Cloud
candidates are not raced over settings (their probes are planned per setting): compare one setting at a time
for them. A reduced precision this CPU would emulate is refused before anything runs (``spec.plan``).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from cpustudy import precision
from cpustudy.analysis import compare as combo
from cpustudy.analysis import totarget
from cpustudy.analysis.totarget import Comparison
from cpustudy.errors import UserError
from cpustudy.names import split_list

#: After the first round, a setting stays in the race while one of its candidates is the cheapest in at least
#: this share of new trainings.
RACE_KEEP = 0.02


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


def settings_of(precisions: str | None, batch_sizes: str | None, default_precision: str,
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

    request: Any
    plans: list[Any]
    labels: list[str]
    dropped: dict[str, str] = field(default_factory=dict)  # label -> why the race dropped it
    inputs: dict[str, list[Any]] = field(default_factory=dict)  # label -> its candidates' inputs, as last joined


def plan_settings(request: Any, plan_one: Callable[[Any], Any]) -> SettingsPlan:
    """Plan every setting of ``request`` with ``plan_one`` (the single-setting planner), checked before the
    database is touched."""
    from cpustudy.workloads import get

    workload = get(request.workload)
    settings = settings_of(request.precisions, request.batch_sizes, request.precision, request.batch_size)
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


def measure_settings(sp: SettingsPlan, say: Callable[[str], None],
                     progress: Callable[[str], None] | None = None) -> Comparison:
    """Race the settings (see the module's docstring) and combine them into one comparison."""
    from cpustudy.measure import compare as single
    from cpustudy.measure.session import measuring
    from cpustudy.measure.sweep import pending

    req = sp.request
    t0 = time.perf_counter()
    walls: list[float] = []
    steps: list[str] = []
    kernels = reduced_precision_kernels(sp, progress)
    for line in kernels:
        say(f"compare: {line}")
    with measuring(req.db, sp.plans[0].machine) as session:
        store, mid = session.store, session.machine_id

        def run(work: list[tuple[str, Any]], stage: str) -> None:
            for i, (kind, cell) in enumerate(work):
                if progress:
                    progress(f"{stage} [{i + 1}/{len(work)}] {kind}: {single._what(kind, cell, req.goal_words)} "
                             f"{_label_of(sp, cell)}")
                single._run_one(store, mid, kind, cell, req, say, walls, _label_of(sp, cell))

        first: list[tuple[str, Any]] = []
        for p in sp.plans:  # round 1: a seed of every setting, every local candidate's probes
            first += single._order(pending(store, p.convergence[:1]), pending(store, p.probes))
        if first:
            say(f"compare: round 1 of the race over {len(sp.plans)} settings: {len(first)} run(s) into {store.path}")
        run(first, "round 1")
        comparison = joint(sp, store)
        unmeasured = [r.candidate for r in comparison.results if r.speed_runs == 0]
        again = [c for c in (_probe_again(sp, name) for name in unmeasured) if c is not None]
        if again:  # a probe left out (a busy machine, a failure): once more before the race judges it
            steps.append(f"measured again, no usable speed run after round 1: {', '.join(unmeasured)}")
            run([("speed", c) for c in again], "round 1")
            comparison = joint(sp, store)
        _judge(sp, comparison, "its first seed", steps, say)
        for i in range(1, max(len(p.convergence) for p in sp.plans)):
            for label, p in _by_promise(sp, comparison):
                if label in sp.dropped or i >= len(p.convergence) or not pending(store, p.convergence[i:i + 1]):
                    continue
                cell, why = censored(sp, label, p.convergence[i], comparison)
                if why:
                    steps.append(why)
                    say(f"compare: {why}")
                run([("convergence", cell)], f"round {i + 1}")  # a seed told to stop is not one training's time
                comparison = joint(sp, store)
                _judge(sp, comparison, f"{i + 1} seeds", steps, say)
        comparison = settle(sp, store, mid, comparison, say, run, walls, t0, steps)
        steps.append(race_cost(sp, store))
        local = {c.name: (p, c) for p in sp.plans for c in p.candidates if c.kind == "here"}
        comparison.checks = single.check_winner(local, req.checks, store, mid, comparison, say, progress)
    comparison.steps = steps
    comparison.notes += kernels
    comparison.wall_s = time.perf_counter() - t0
    comparison.training_wall_s = statistics.median(walls) if walls else None
    return comparison


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


def _probe_again(sp: SettingsPlan, name: str) -> Any:
    """Another speed probe of the local candidate ``name`` (its next repeat), or None for another kind."""
    for p in sp.plans:
        for c in p.candidates:
            if c.name == name and c.kind == "here":
                return p.another_probe(c)
    return None


def _label_of(sp: SettingsPlan, cell: Any) -> str:
    for label, p in zip(sp.labels, sp.plans):  # by key: a seed told to stop early is the same cell
        if any(c.key == cell.key for c in (*p.convergence, *p.probes)):
            return f"({label})"
    return ""


def joint(sp: SettingsPlan, store: Any) -> Comparison:
    """Every setting's seeds and candidates combined in one comparison (``combine_groups``)."""
    from cpustudy.measure import compare as single

    req = sp.request
    groups, seeds_all, notes = [], [], []
    runs = store.runs(status="ok")
    for label, p in zip(sp.labels, sp.plans):
        seeds, same = single._seeds(p, store)
        if not seeds:
            notes.append(f"{label}: no convergence run finished (see `cpustudy results --errors`): left out")
            continue
        ref = p.convergence[0].config
        inputs = totarget.candidate_inputs(store, p.candidates, ref, p.fingerprint, runs, p.catalog, req.spot,
                                           req.family)
        if label in sp.dropped:
            for i in inputs:
                i.basis = [*i.basis, f"dropped by the race: {sp.dropped[label]}"]
        stopped = [s for s in seeds if s.censored_after is not None]
        if stopped:
            how = ("counted with their margins to the target up to where they stopped" if all(s.margins for s in seeds)
                   else "counted at their earliest (one epoch after they stopped): its figures are lower bounds")
            for i in inputs:
                i.basis = [*i.basis, f"{len(stopped)} seed(s) stopped by the race short of the target, {how}"]
        sp.inputs[label] = inputs
        groups.append((seeds, inputs))
        seeds_all += seeds
        reached = ", ".join(s.outcome() for s in seeds)
        notes.append(f"{label}: {len(seeds)} seed(s), epochs to the target {reached}" + (f"; {same}" if same else ""))
    if not groups:
        raise UserError("no convergence run finished in any setting (see `cpustudy results --errors`): nothing to "
                        "compare; the same command measures what is missing")
    if not any(s.reached for s in seeds_all):
        raise UserError(f"no seed of any setting reached {req.goal_words}: give an easier target or more "
                        "--max-epochs (what was measured is stored)")
    noise = totarget.machine_noise(store)
    results = combo.combine_groups(groups, deadline_s=req.deadline_s, budget_usd=req.budget_usd, noise=noise)
    ref = sp.plans[0].convergence[0].config
    out = Comparison(ref.workload, req.goal, results, seeds_all)
    out.assumptions = totarget.assumptions(req.goal, req.spot, ref, seeds_all, noise, settings=True)
    out.assumptions.append("each setting (precision, batch size) converges with its own seeds: a candidate's "
                           "epochs are drawn from its own setting's")
    out.notes += notes + totarget.interval_notes(results)
    return out


def _judge(sp: SettingsPlan, comparison: Comparison, after: str, steps: list[str], say: Callable[[str], None]) -> None:
    """The race judged on ``comparison``: the settings it drops now, added to ``sp.dropped`` and said."""
    for label, why in race(sp, comparison).items():
        sp.dropped[label] = why
        steps.append(f"race: dropped {label} after {after}: {why}")
        say(f"compare: {steps[-1]}")


def _by_promise(sp: SettingsPlan, comparison: Comparison) -> list[tuple[str, Any]]:
    """The settings, the one with the likeliest cheapest (else the fastest) candidate first."""
    def promise(item: tuple[str, Any]) -> float:
        names = {c.name for c in item[1].candidates}
        mine = [r for r in comparison.results if r.candidate in names]
        if any(r.p_cheapest is not None for r in mine):
            return -max(r.p_cheapest or 0.0 for r in mine)
        return min((r.time_to_target_s for r in mine if r.time_to_target_s), default=math.inf)
    return sorted(zip(sp.labels, sp.plans), key=promise)


def censored(sp: SettingsPlan, label: str, cell: Any, comparison: Comparison) -> tuple[Any, str]:
    """``cell`` (a seed of setting ``label``) told to stop once it can no longer make its setting the cheapest
    (:func:`cpustudy.analysis.compare.censor_after` against the leading candidate's upper bound), and the
    sentence saying so; unchanged, with "", for the leader's own setting or where nothing bounds it."""
    from cpustudy.measure.sweep import Cell

    lead = _leader(comparison)
    if lead is None or label not in sp.inputs:
        return cell, ""
    if lead.candidate in {c.candidate for c in sp.inputs[label]}:
        return cell, ""
    priced = lead.p_cheapest is not None
    bound = lead.cost_high_usd if priced else lead.time_high_s
    if bound is None:
        return cell, ""
    k = combo.censor_after(sp.inputs[label], bound, int(cell.config.epochs), priced=priced)
    if k is None:
        return cell, ""
    what = f"{bound:.6f} USD" if priced else f"{bound:.0f} s"
    return (Cell(cell.config.with_(give_up_after=k), cell.spec),
            f"race: seed {cell.config.seed} of {label} stops after {k} epoch(s) short of the target: past that "
            f"even its fastest speed run costs more than {lead.candidate}'s upper bound ({what})")


def race_cost(sp: SettingsPlan, store: Any) -> str:
    """What the race trained against training every setting with every seed, in seeds and in epochs (a
    setting's seeds not trained counted at its trained seeds' mean epochs)."""
    from cpustudy.measure import compare as single

    per = [single._seeds(p, store)[0] for p in sp.plans]
    most = max(len(s) for s in per)
    trained = sum(len(s) for s in per)
    stopped = sum(1 for s in per for x in s if x.censored_after is not None)
    epochs = [[x.censored_after or x.epochs or x.max_epochs for x in s] for s in per]
    spent = sum(sum(e) for e in epochs)
    every = sum(statistics.mean(e) * most for e in epochs if e)
    return (f"the race trained {trained} seed(s) across {len(sp.plans)} settings ({stopped} stopped early), "
            f"{spent} epochs; every setting with {most} seeds would have trained {len(sp.plans) * most} seeds, "
            f"about {every:.0f} epochs ({spent / every:.0%} of it spent)" if every else
            f"the race trained {trained} seed(s) across {len(sp.plans)} settings")


def race(sp: SettingsPlan, comparison: Comparison) -> dict[str, str]:
    """The settings still in the race that it rules out now: none of their candidates is the cheapest in
    :data:`RACE_KEEP` of new trainings (P(cheapest) already carries the seeds' uncertainty of the epochs,
    through the epochs' prior, and the speed runs'); with no prices, none's time interval reaches below the
    fastest's upper bound. Never all of those still in it."""
    results = comparison.results
    priced = [r for r in results if r.cost_usd is not None and r.p_cheapest is not None]
    if priced:
        def alive(r: combo.CandidateResult) -> bool:
            return (r.p_cheapest or 0.0) >= RACE_KEEP
        what = "its candidates are the cheapest in {p} of new trainings at most (under " + f"{RACE_KEEP:.0%})"
    else:
        timed = [r for r in results if r.time_to_target_s is not None]
        if not timed:
            return {}
        leader = min(timed, key=lambda r: r.time_to_target_s or math.inf)
        bound = leader.time_high_s if leader.time_high_s is not None else leader.time_to_target_s

        def alive(r: combo.CandidateResult) -> bool:
            low = r.time_low_s if r.time_low_s is not None else r.time_to_target_s
            return low is not None and bound is not None and low <= bound
        what = "its time is above the fastest's upper bound (" + (f"{bound:.0f} s" if bound is not None else "?") + ")"
    dropped: dict[str, str] = {}
    running = [(label, p) for label, p in zip(sp.labels, sp.plans) if label not in sp.dropped]
    for label, p in running:
        mine = [r for r in results if r.candidate in {c.name for c in p.candidates}]
        if mine and not any(alive(r) for r in mine):
            best = max((r.p_cheapest or 0.0) for r in mine)
            dropped[label] = what.format(p=f"{best:.1%}")
    if len(dropped) == len(running):
        return {}
    return dropped


def _leader(comparison: Comparison) -> combo.CandidateResult | None:
    priced = [r for r in comparison.results if r.p_cheapest is not None]
    if priced:
        return max(priced, key=lambda r: r.p_cheapest or 0.0)
    timed = [r for r in comparison.results if r.time_to_target_s is not None]
    return min(timed, key=lambda r: r.time_to_target_s or math.inf) if timed else None


def settle(sp: SettingsPlan, store: Any, machine_id: int, comparison: Comparison, say: Callable[[str], None],
           run: Callable[[list[tuple[str, Any]], str], None], walls: list[float], t0: float,
           steps: list[str]) -> Comparison:
    """Settle across the settings still in the race, as ``measure.compare`` settles one (``next_step``):
    a seed goes to the likeliest cheapest candidate's setting."""
    from cpustudy.measure import compare as single

    req = sp.request
    if not req.max_trainings:
        return comparison
    alive = [(label, p) for label, p in zip(sp.labels, sp.plans) if label not in sp.dropped]
    local = {c.name: (p, c) for _, p in alive for c in p.candidates if c.kind == "here"}
    racing = {c.name for _, p in alive for c in p.candidates}
    while True:
        lead = _leader(comparison)
        lead_plan = next((p for _, p in alive if lead is not None and lead.candidate in {c.name for c in p.candidates}),
                         alive[0][1])
        seeds, _ = single._seeds(lead_plan, store)
        step = combo.next_step([r for r in comparison.results if r.candidate in racing], seeds, local)
        stop = single.stop_line(step, walls, t0, comparison, req.max_trainings)
        if stop:
            steps.append(stop)
            break
        if step.kind == "seed":
            cells: list[tuple[str, Any]] = [("convergence", lead_plan.another_seed())]
        else:
            cells = [("speed", local[name][0].another_probe(local[name][1])) for name in step.candidates]
        steps.append(f"added {' and '.join(single._what(k, c, req.goal_words) + ' ' + _label_of(sp, c) for k, c in cells)}"
                     f": {step.why}")
        say(f"compare: not settled yet, {steps[-1]}")
        run(cells, "settling")
        comparison = joint(sp, store)
    return comparison


def several(request: Any) -> bool:
    """Whether ``request`` names more than one setting (then :func:`measure_settings` compares them)."""
    return len(settings_of(request.precisions, request.batch_sizes, request.precision, request.batch_size)) > 1


__all__: Sequence[str] = ("RACE_KEEP", "Setting", "SettingsPlan", "measure_settings", "plan_settings", "settings_of",
                          "several")
