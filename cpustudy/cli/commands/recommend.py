"""``cpustudy recommend WORKLOAD``: the cheapest configuration that meets a deadline and the fastest
within a budget, from the stored runs and the price catalog, with what it rests on."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import cpustudy.cli.args as a

if TYPE_CHECKING:
    from cpustudy.store import Store
    from cpustudy.targets import Target
    from cpustudy.analysis.compare import CandidateResult
    from cpustudy.analysis.totarget import Comparison
    from cpustudy.analysis.recommend import Recommendation


def register(sub: a.Subparsers) -> None:
    p = sub.add_parser("recommend", help="the cheapest configuration within a deadline, the fastest within a budget",
                       description="Answer from the stored runs and the price catalog: the cheapest configuration "
                       "of WORKLOAD that meets --deadline, the fastest within --budget (both: both answers; "
                       "neither: the cheapest and the fastest), with the spread and the assumptions behind each. "
                       "Runs measured on a machine of your own are priced as the cheapest priced cloud family that "
                       "runs its CPU (where none is known or priced, gcp:n2-highcpu), as `cpustudy report` prices "
                       "them by default; runs measured on a cloud VM as that VM.")
    p.add_argument("workload", help="workload name (see `cpustudy workloads`), or a model file measured before "
                   "(or its NAME)")
    p.add_argument("--deadline", type=a.duration, metavar="DURATION", help="e.g. 90s, 10m, 1h30m, or seconds")
    p.add_argument("--budget", type=a.positive_float, metavar="USD", help="the most a training may cost")
    p.add_argument("--target", metavar="METRIC=VALUE",
                   help="judge by the time and cost to reach a target on any validation metric (val_auc=0.8, "
                   "val_loss<=0.3), from runs trained to it")
    p.add_argument("--target-accuracy", type=a.accuracy, metavar="A",
                   help="judge by the time and cost to reach validation accuracy A (runs measured with it)")
    p.add_argument("--on-demand", action="store_true", help="on-demand prices (default: spot)")
    p.add_argument("--prices", metavar="FILE", help="extra price rows (same columns as the catalog)")
    a.add_format(p, ("table", "json"))
    a.add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.analysis.recommend import recommend
    from cpustudy.analysis.summary import Options, analyze
    from cpustudy.cli.output import status
    from cpustudy.store import Store
    from cpustudy.workloads import ALL, userfile

    if userfile.looks_like_file(args.workload):  # a model file: its runs are stored under its NAME
        args.workload = userfile.read_source(args.workload).name
    deadline = args.deadline
    comparison = None
    with status("reading the runs and pricing them"), Store.read(args.db) as store:
        if args.workload not in ALL and args.workload not in store.workload_names():
            from cpustudy.names import unknown

            # a mistyped name: one line with "did you mean"
            raise unknown("workload", args.workload, [*ALL, *store.workload_names()], "cpustudy results")
        goal, notes = _goal(args), []
        if goal is not None:  # seeds trained to the target x each configuration's speed
            from cpustudy.analysis import totarget as compare
            from cpustudy.prices import Catalog

            comparison = compare.stored(store, args.workload, goal, catalog=Catalog.load(args.prices),
                                        spot=not args.on_demand, deadline_s=deadline, budget_usd=args.budget)
            notes.append(_pooled_note(store, comparison, goal) if comparison is not None else "")
        notes.append(_busy_note(store, args.workload, "in these figures" if comparison is None else
                                "left out as speed samples"))
        notes = [n for n in notes if n]
        if comparison is None:
            analysis = analyze(store, Options(on_demand=args.on_demand, prices=args.prices))
    if comparison is None and args.target is not None:
        from cpustudy.errors import UserError

        raise UserError(f"no run of {args.workload} trained to {args.target} (measure it with `cpustudy compare "
                        f"{args.workload} --target {args.target} ...` or `cpustudy run ... --target {args.target}`)")
    if comparison is not None:
        choices = _choices(comparison, deadline, args.budget)
        if args.format == "json":
            import json

            out = json.loads(comparison.as_json())
            out["decision"] = None  # no decision was measured here: recommend's answer is its choices
            label = {i.candidate: g for g, _, inputs in comparison.groups for i in inputs}  # several: each its own
            out["choices"] = [_choice_json(role, r, said, comparison.setting or (label.get(r.candidate, "") if r else ""))
                              for role, r, said in choices]
            out["notes"] = [*out.get("notes", []), *notes]
            sys.stdout.write(json.dumps(out, indent=2) + "\n")
            return 0 if any(r is not None for _, r, _ in choices) else 1
        code = _from_comparison(comparison, choices)
        for note in notes:
            print(f"note: {note}")
        return code
    return _show(args, recommend(analysis, args.workload, deadline_s=deadline, budget_usd=args.budget,
                                 target=args.target_accuracy), notes)


def _goal(args: argparse.Namespace) -> float | Target | None:
    """The target asked for: ``--target-accuracy`` or ``--target`` (parsed), not both; None: neither."""
    if args.target is None:
        return args.target_accuracy
    from cpustudy import targets
    from cpustudy.errors import UserError

    if args.target_accuracy is not None:
        raise UserError("give --target-accuracy A or --target METRIC=VALUE, not both")
    return targets.parse(args.target)


def _show(args: argparse.Namespace, rec: Recommendation, notes: list[str]) -> int:
    """A recommendation from the runs' summary (no target): as JSON, or a table and a line a choice; 1 where none."""
    from cpustudy.analysis.recommend import as_rows
    from cpustudy.cli.output import print_table

    if args.format == "json":
        import json
        from dataclasses import asdict

        sys.stdout.write(json.dumps({"workload": rec.workload, "measure": rec.measure,
                                     "choices": [asdict(c) for c in rec.choices], "notes": [*rec.notes, *notes]},
                                    indent=2, default=str) + "\n")
        return 0 if rec.choices else 1
    print(f"{args.workload}: judged by {rec.measure}")
    if rec.choices:
        print_table(as_rows(rec), f"recommendation for {args.workload}")
    for c in rec.choices:
        print(f"{c.role}: {c.config}, from run(s) {', '.join(map(str, c.run_ids))}; " + "; ".join(c.basis))
    for note in [*rec.notes, *notes]:
        print(f"note: {note}")
    return 0 if rec.choices else 1


def _pooled_note(store: Store, comparison: Comparison, goal: float | Target) -> str:
    """Where a ``compare`` of this workload to this target was stated in the database: that this answer's seeds are
    every stored training of the setting to the target (``--check`` and held-out ones included), not that
    comparison's own, so its figures can differ from the compare's (empty where none was stated)."""
    value = goal if isinstance(goal, float) else goal.value
    stated = [s for s in store.statements()
              if s["workload"] == comparison.workload and abs(float(s["target_accuracy"]) - float(value)) < 1e-9]
    if not stated:
        return ""
    which = "of each setting" if len(comparison.groups) > 1 else "of this setting"
    return (f"seeds: every stored training {which} to the target is one ({len(comparison.seeds)} here, "
            f"--check and held-out trainings included); the compare stated here (latest "
            f"{stated[-1]['stated_at'][:16].replace('T', ' ')}) stated its figures over its own seeds, so the two can "
            "differ")


def _known(value: float | None) -> float:
    """A time or cost to order by; unknown ones last (the lists ordered hold only known ones)."""
    return float("inf") if value is None else value


def _cheapest(comparison: Comparison, priced: list[CandidateResult]) -> tuple[CandidateResult | None, str]:
    """The cheapest by compare's one rule (:func:`cpustudy.decision.policy.leader`) over the priced candidates:
    the least expected regret in cost, with its P(lowest expected cost) in words. Each weighed candidate's expected
    cost, P(lowest expected cost) and expected regret are set on its result, as compare's decision sets them, so the
    table and the JSON show the numbers the choice rests on."""
    from cpustudy.decision import policy

    names = {r.candidate for r in priced}
    st = policy.standing_of(comparison, names=names)
    name = policy.leader(st, [r for r in comparison.results if r.candidate in names])
    p_best = st.p_best[name] if st is not None and name is not None else None
    if st is not None:
        for r in comparison.results:
            if r.candidate in st.expected:
                r.expected, r.expected_unit = st.expected[r.candidate], st.unit
                r.expected_low, r.expected_high = st.low[r.candidate], st.high[r.candidate]
                r.p_best, r.regret = st.p_best[r.candidate], st.regret[r.candidate]
    said = ", the least expected cost" + (f" (P(lowest expected cost) {p_best:.0%})" if p_best is not None else "")
    return next((r for r in priced if r.candidate == name), None), said


Choices = list[tuple[str, "CandidateResult | None", str]]


def _busy_note(store: "Store", workload: str, where: str) -> str:
    """How many of the workload's runs started on a busy machine, and ``where`` their times went (left out of the
    speed samples every comparison reads, or in a sweep summary's figures), in words; empty where none did."""
    from cpustudy.analysis.holdup import busy_reason

    base = workload.split(" (")[0]  # a summary's variant, "mnist_mlp (learnable data)", is its workload's runs'
    runs = [r for r in store.runs(status="ok") if r.get("workload") == base]
    busy = [why for why in (busy_reason(r.get("machine_state")) for r in runs) if why]
    if not busy:
        return ""
    share = f"every run of {workload} ({len(runs)})" if len(busy) == len(runs) else \
        f"{len(busy)} of the {len(runs)} runs of {workload}"
    return (f"{share} started on a busy machine ({busy[0].removeprefix('busy: ')}), {where}: measure again when "
            "nothing else runs")


def _choices(comparison: Comparison, deadline: float | None, budget: float | None) -> Choices:
    """The choices from the same combination `compare` prints: the cheapest by compare's rule (the least expected
    cost), the fastest by the median, or the cheapest (fastest) of those meeting the deadline (budget) in 90 % of
    trainings: (role, the candidate's result or None where none qualifies, what the role adds in words)."""
    measured = [r for r in comparison.results if r.time_to_target_s is not None]
    priced = [r for r in measured if r.cost_usd is not None]
    sure = 0.9
    choices: Choices = []
    if deadline is not None:
        ok = [r for r in priced if (r.p_deadline or 0) >= sure]
        choices.append((f"cheapest meeting the {deadline:g} s deadline in {sure:.0%} of trainings",
                        min(ok, key=lambda r: _known(r.cost_usd)) if ok else None, ""))
    if budget is not None:
        ok = [r for r in measured if (r.p_budget or 0) >= sure]
        choices.append((f"fastest within {budget:g} USD in {sure:.0%} of trainings",
                        min(ok, key=lambda r: _known(r.time_to_target_s)) if ok else None, ""))
    if deadline is None and budget is None:
        choices.append(("cheapest", *_cheapest(comparison, priced)))
        choices.append(("fastest", min(measured, key=lambda r: _known(r.time_to_target_s)) if measured else None, ""))
    return choices


def _choice_json(role: str, r: CandidateResult | None, said: str, setting: str) -> dict[str, object]:
    """One choice for ``--format json``: what the table's answer line says, as numbers; P(lowest expected cost) and
    expected regret where the choice rests on them (the cheapest)."""
    if r is None:
        return {"role": role, "candidate": None}
    weighed = role == "cheapest"
    return {"role": role, "candidate": r.candidate, "setting": setting, "time_to_target_s": r.time_to_target_s,
            "time_low_s": r.time_low_s, "time_high_s": r.time_high_s, "cost_usd": r.cost_usd,
            "cost_low_usd": r.cost_low_usd, "cost_high_usd": r.cost_high_usd, "level": r.level,
            "p_best": r.p_best if weighed else None, "regret": r.regret if weighed else None, "why": said.removeprefix(", "), "run_ids": r.run_ids, "price": r.price}


def _from_comparison(comparison: Comparison, choices: Choices) -> int:
    """The answer from the same combination `compare` prints: each stored configuration's time and cost to
    the target over the seeds trained to it, then the choices (:func:`_choices`), each named with its setting
    (precision, batch size)."""
    from cpustudy.cli.commands.compare import rows
    from cpustudy.cli.output import print_table

    from cpustudy.analysis.compare import target_words

    setting = f", {comparison.setting}" if comparison.setting else ""
    print(f"{comparison.workload}{setting}: judged by the time and cost of one training to "
          f"{target_words(comparison.target)}, over {len(comparison.seeds)} seed(s) and each configuration's speed runs")
    print_table(rows(comparison), f"median [{comparison.results[0].level if comparison.results else 0.9:.0%} prediction interval]")
    for role, r, said in choices:
        if r is None:
            print(f"{role}: none")
            continue
        cost = f", {r.cost_usd:.3g} USD" if r.cost_usd is not None else ""
        print(f"{role}: {r.candidate}{setting}: {r.time_to_target_s:.0f} s{cost}{said}, from run(s) "
              f"{', '.join(map(str, r.run_ids))} ({r.price})")
    for line in comparison.assumptions:
        print(f"assumed: {line}")
    return 0 if any(r is not None for _, r, _ in choices) else 1
