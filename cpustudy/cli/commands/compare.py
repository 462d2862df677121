"""``cpustudy compare WORKLOAD|MODEL_FILE --target-accuracy A --candidates LIST``: time and cost to a
target accuracy on each candidate machine, with 90 % prediction intervals and the probability of being the cheapest."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

import cpustudy.cli.args as a
from cpustudy.decision.words import decision_lines
from cpustudy.errors import UserError
from cpustudy.rules import RULES, Rules

if TYPE_CHECKING:
    from cpustudy.analysis.totarget import Comparison


def register(sub: a.Subparsers) -> None:
    p = sub.add_parser(
        "compare", help="time and cost to a target accuracy on candidate machines, with how sure that is",
        description="Train WORKLOAD (or a model file) to --target-accuracy with several seeds here (how many "
        "epochs it needs, and how much that varies), time each candidate (here: capped epochs in fresh workers; "
        "cloud: a plan of probe jobs, costed before anything is launched; stored runs count), and combine: "
        "time and cost to the target per candidate with 90 % intervals, the probability that each is the "
        "cheapest in one training, and what is known of each one's expected cost: P(lowest expected cost) and the "
        "expected regret of choosing it. Measures one thing at a time, the one worth the most, until the decision "
        "is made. Interrupted, the same command resumes from what it stored.")
    p.add_argument("workload", help="workload name (see `cpustudy workloads`) or a model file (./my_model.py)")
    _goal_and_candidates(p.add_argument_group("the target and the candidates"))
    _decision(p.add_argument_group("the decision and what it may measure"))
    _settings(p.add_argument_group("what every candidate trains"))
    _limits_and_prices(p.add_argument_group("limits, prices and cloud probes"))
    _output(p.add_argument_group("output and rehearsal"))
    a.add_format(p, ("table", "json"))
    a.add_db(p)
    p.set_defaults(func=run)


def _goal_and_candidates(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--target-accuracy", type=float, metavar="A",
                   help="the validation accuracy to reach (above 0, at most 1)")
    g.add_argument("--target", metavar="METRIC=VALUE",
                   help="instead: a target on any validation metric fit logs (val_auc=0.8, val_loss<=0.3)")
    g.add_argument("--candidates", required=True, metavar="LIST",
                   help="comma-separated: here:N or here:all (this machine at N vCPUs), CLOUD:INSTANCE_TYPE "
                   "(gcp:c4d-highcpu-8, aws:c7i.4xlarge), CLOUD:GPU:1 (gcp:T4:1), db:MACHINE:VCPUS (runs stored "
                   "from another machine: a fingerprint prefix or host name)")
    g.add_argument("--builds", default="tf", help="CPU builds, each a candidate axis (default: tf)")
    g.add_argument("--gpu-builds", default="jax-here", help="the build GPU candidates run (default: jax-here)")


def _decision(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--seeds", type=int, default=3, metavar="N",
                   help="seeds trained to the target (default: 3; each reaches it after its own number of epochs): "
                   "with one setting, all of them first; with several, one each first and up to N each where they "
                   "decide")
    g.add_argument("--check", type=int, default=0, metavar="N",
                   help="after the answer, train its choice (where it is a local candidate) N more times with seeds "
                   "the comparison has not used, and say how many land inside its stated interval (default: 0)")
    g.add_argument("--max-trainings", type=float, default=None, metavar="T",
                   help="measure until the decision is made (see --regret, --indifference, --trainings) within T "
                   f"trainings' time in all (default: {RULES.budget_trainings:g}, and {RULES.budget_per_setting:g} "
                   "more for each setting past the first; 0: the planned seeds and repeats only)")
    g.add_argument("--regret", type=float, default=RULES.regret, metavar="SHARE",
                   help="decided once choosing the leader is expected to cost at most this share more than the best "
                   f"(default: {RULES.regret:g})")
    g.add_argument("--indifference", type=float, default=RULES.indifference, metavar="SHARE",
                   help="candidates within this expected regret are the same: any will do (default: "
                   f"{RULES.indifference:g})")
    g.add_argument("--trainings", type=int, default=RULES.trainings, metavar="N",
                   help="how many trainings the answer will serve: measuring stops once it cannot pay for itself "
                   f"over them (default: {RULES.trainings})")
    g.add_argument("--first-seed", type=int, default=1, metavar="S", help="seeds S, S+1, ... (default: 1)")
    g.add_argument("--max-epochs", type=a.positive_int, metavar="E",
                   help="the most epochs a seed trains (default: the workload's epochs); one that does not reach "
                   "the target by then is counted as such")
    g.add_argument("--convergence-at", default="here:all", metavar="here:N",
                   help="where the seeds train (default: here:all)")
    g.add_argument("--repeats", type=int, default=2, metavar="N",
                   help="speed measurements per candidate, fresh workers, interleaved (default: 2, so that a "
                   "comparison costs about one training more than its seeds; the convergence runs count for the "
                   "candidate they ran on)")
    g.add_argument("--probe-steps", type=int, default=100, metavar="N",
                   help="training steps of each speed probe's epochs (default and least: 100; a full epoch if shorter)")


def _settings(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--batch-size", type=a.positive_int, help="batch size (default: the workload's)")
    g.add_argument("--precision", choices=a.POLICIES, default=None, help="Keras precision policy (default: "
                   "float32; bf16 and float32 converge separately)")
    g.add_argument("--precisions", metavar="LIST",
                   help="several precision policies as candidates, e.g. float32,mixed_bfloat16: each converges with "
                   "its own seeds, raced (one seed of each first, more where they decide); only those this CPU "
                   "runs natively")
    g.add_argument("--batch-sizes", metavar="LIST",
                   help="several batch sizes as candidates, e.g. 64,256 (with --precisions: every pair), raced alike")
    g.add_argument("--data", choices=("auto", "real", "learnable"), default="auto",
                   help="real dataset (from the cache), learnable synthetic data, or auto = real when cached "
                   "(default; synthetic data is refused: it cannot converge)")


def _limits_and_prices(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--deadline", type=a.duration, metavar="DURATION", help="also: P(time to target <= it)")
    g.add_argument("--budget", type=a.positive_float, metavar="USD", help="also: P(cost to target <= it)")
    g.add_argument("--probe-budget", type=a.positive_float, metavar="USD",
                   help="the most the cloud probes may cost (their estimate; refused before anything is written)")
    g.add_argument("--probe-plan", metavar="DIR", default="cpustudy-probes",
                   help="folder of the cloud probes' plan (default: ./cpustudy-probes)")
    g.add_argument("--workdir", help="the cpustudy checkout the probe VMs install, as a wheel built from it when "
                   "the probes are planned (default: this one)")
    g.add_argument("--on-demand", action="store_true", help="on-demand prices (default: spot)")
    g.add_argument("--family", metavar="CLOUD:FAMILY",
                   help="price this machine's candidates as this instance family (default: the cheapest priced "
                   "cloud family that runs this machine's CPU, see `cpustudy machine`; where none is known or "
                   "priced, gcp:n2-highcpu); cloud candidates are priced as their own instance")
    g.add_argument("--prices", metavar="FILE", help="extra price rows (same columns as the catalog)")

    g.add_argument("--timeout", type=a.positive_int, metavar="SECONDS", help="fail a measurement after this long")

def _output(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--out", metavar="DIR", help="also draw the answer there: a chart of time and cost to the target "
                   "(answer.png, answer.svg), index.html and index.md (created; other files left alone)")
    g.add_argument("--simulate", metavar="SCENARIO.json",
                   help="rehearse instead of measuring: the same comparison, decided by the same loop, against a "
                   "simulated measurer that plays the scenario's true speeds, epochs and noise (docs/compare.md, "
                   "Rehearsal); nothing trains and nothing is stored; prints each trial's answer beside its truth")
    g.add_argument("--trials", type=a.positive_int, default=None, metavar="N",
                   help="with --simulate: how many comparisons to rehearse (default: 20)")


def _span(mid: float | None, low: float | None, high: float | None, fmt: str, unit: str = "") -> str:
    if mid is None:
        return "not reached" if low is None and high is None else "-"
    def one(x: float | None) -> str:
        return "never" if x is None else format(x, fmt)
    return f"{format(mid, fmt)}{unit} [{one(low)}-{one(high)}]"


def rows(comparison: Any) -> list[dict[str, Any]]:
    deadline, budget = comparison_has(comparison, "p_deadline"), comparison_has(comparison, "p_budget")
    out = []
    for r in comparison.results:
        measured = r.speed_runs > 0
        row: dict[str, Any] = {
            "candidate": r.candidate,
            "time_to_target": _span(r.time_to_target_s, r.time_low_s, r.time_high_s, ".0f", " s") if measured
            else "not measured",
            "cost_usd": (_span(r.cost_usd, r.cost_low_usd, r.cost_high_usd, ".3g") if r.usd_per_hour is not None
                         else "not priced") if measured else "-",
            "p_cheapest": None if r.p_cheapest is None else f"{r.p_cheapest:.0%}",
        }
        if r.p_best is not None:
            row["p_lowest_expected"] = f"{r.p_best:.0%}"
            row["regret"] = f"{r.regret:.1%}"
        if deadline:
            row["p_deadline"] = None if r.p_deadline is None else f"{r.p_deadline:.0%}"
        if budget:
            row["p_budget"] = None if r.p_budget is None else f"{r.p_budget:.0%}"
        row["n"] = f"{r.seeds} seeds, {r.speed_runs} speed run{'s' if r.speed_runs != 1 else ''}"
        row["reached"] = f"{r.reached:.0%}"
        row["basis"] = "; ".join(r.basis)
        out.append(row)
    return out


def comparison_has(comparison: Comparison, key: str) -> bool:
    return any(getattr(r, key) is not None for r in comparison.results)


#: What only a real comparison uses (a rehearsal ignores it): flag -> its attribute and its default.
REAL_ONLY = {"--check": ("check", 0), "--out": ("out", None), "--timeout": ("timeout", None),
             "--deadline": ("deadline", None), "--budget": ("budget", None), "--probe-budget": ("probe_budget", None),
             "--probe-plan": ("probe_plan", "cpustudy-probes"), "--workdir": ("workdir", None)}


def check_mode(args: argparse.Namespace) -> None:
    """``--trials`` only with ``--simulate``; with it, nothing a rehearsal ignores (a flag given is never dropped
    silently). Before anything is planned, let alone trained."""
    if not args.simulate:
        if args.trials is not None:
            raise UserError("--trials rehearses a scenario: give --simulate SCENARIO.json too")
        return
    given = [flag for flag, (attr, default) in REAL_ONLY.items() if getattr(args, attr) != default]
    if given:
        raise UserError(f"--simulate rehearses without measuring: {', '.join(given)} "
                        f"{'is' if len(given) == 1 else 'are'} for a real comparison only: leave "
                        f"{'it' if len(given) == 1 else 'them'} out (or drop --simulate)")


def run(args: argparse.Namespace) -> int:
    check_mode(args)
    from cpustudy.cli.commands.cloud import workdir_of
    from cpustudy.cli.output import console, status
    from cpustudy.cloud.probes import plan_probes
    from cpustudy.measure.compare import CompareRequest, plan_compare

    request = CompareRequest(
        workload=args.workload, target=args.target_accuracy, target_text=args.target, candidates=args.candidates, seeds=args.seeds,
        first_seed=args.first_seed, max_epochs=args.max_epochs, builds=args.builds, gpu_builds=args.gpu_builds,
        batch_size=args.batch_size, precision=args.precision or a.DEFAULT,
        precision_named=args.precision is not None, data=args.data, repeats=args.repeats,
        probe_steps=args.probe_steps, convergence_at=args.convergence_at, deadline_s=args.deadline,
        budget_usd=args.budget, probe_budget_usd=args.probe_budget, spot=not args.on_demand, family=args.family,
        prices=args.prices, probe_plan=args.probe_plan, workdir=workdir_of(args.workdir), db=args.db, timeout=args.timeout,
        max_trainings=args.max_trainings, precisions=args.precisions, batch_sizes=args.batch_sizes, checks=args.check)
    a.check_out_folder(args.out)  # before anything is measured, not after
    rules = Rules(regret=args.regret, indifference=args.indifference, trainings=args.trainings)
    problem = rules.check()
    if problem:
        raise UserError(problem)
    err = console(stderr=True)
    if args.simulate:
        return rehearse(args, request, rules)
    from cpustudy.cloud import targets as cloud_targets
    from cpustudy.measure import race

    with status("checking the candidates and planning every setting's runs"):
        planned = race.plan(request, lambda r: plan_compare(r, clouds=cloud_targets))  # before the database is touched
    with status("planning the cloud candidates' probes"):
        probes = plan_probes(planned.plans[0], err.print)  # costed and held to --probe-budget; nothing launched
    with status("comparing") as update:
        comparison = race.measure(planned, say=err.print, progress=update, probes=probes, rules=rules)
    return show(args, comparison)


def rehearse(args: argparse.Namespace, request: Any, rules: Rules) -> int:
    """``--simulate``: the comparison rehearsed against a scenario, trial after trial."""
    import json

    from cpustudy.cli.output import status
    from cpustudy import rehearsal

    scenario = rehearsal.Scenario.load(args.simulate)
    with status("rehearsing") as update:
        result = rehearsal.rehearse(request, scenario, args.trials or 20, rules, progress=update)
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return 0
    for row in result["trials"]:
        if row["choice"] is None:  # nothing stated (every seed missed the target): nothing to set beside the truth
            print(f"trial {row['trial']}: {row['stop']}")
            continue
        stated, regret = row.get("stated_regret"), row.get("realised_regret")
        print(f"trial {row['trial']}: {row['stop']}, chose {row['choice']} (expected regret stated "
              + ("-" if stated is None else f"{stated:.1%}") + ", realised "
              + ("-" if regret is None else f"{regret:.1%}") + f"; truly best {', '.join(row['truly_best'])})")
    s = result["summary"]

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.0%}" if x >= 0.1 else f"{x:.1%}"

    for line in [f"{s['trials']} trials; how they ended: " + ", ".join(f"{k} {n}" for k, n in s["stops"].items()),
            f"expected regret stated at the stop {pct(s['mean_stated_regret'])} on average, realised "
            f"{pct(s['mean_realised_regret'])} (against the scenario's true costs)",
            f"two or more named the same within the indifference zone in {pct(s.get('said_same'))} of trials; the "
            f"choice within it of the best in {pct(s['within_indifference'])}; "
            f"decided with a realised regret over twice the threshold in {pct(s['decided_over_twice_regret'])}",
            f"the choice's P(lowest expected cost) {pct(s['mean_p_best_of_choice'])} on average; truly best in "
            f"{pct(s['choice_truly_best'])}; by bins of the stated P: " + (", ".join(
                f"{b['stated']:.2f} stated, {b['truly_best']:.2f} truly best ({b['trials']} trials)"
                for b in s.get("p_best_bins") or []) or "-"),
            f"deciding took {s['mean_deciding_s'] or 0:.0f} s of (simulated) measuring on average",
            f"over {s['trainings']} trainings, measuring and the choice's regret cost "
            f"{s['horizon_measured'] or 0:.2f} trainings' time on average; taking the default unmeasured, "
            f"{s['horizon_default'] or 0:.2f}",
            f"a fresh training of the choice in a later period inside its stated interval: {pct(s['fresh_inside'])} "
            f"of {s['fresh_checked']}"]:
        print(f"rehearsal: {line}")
    return 0


def show(args: argparse.Namespace, comparison: Comparison) -> int:
    """Print a comparison as ``--format`` asks."""
    from cpustudy.cli.output import print_table

    if args.format == "json":
        sys.stdout.write(comparison.as_json())
        return _draw(args, comparison)
    level = comparison.results[0].level if comparison.results else RULES.level
    from cpustudy.analysis.compare import target_words

    print_table(rows(comparison), f"{comparison.workload} to {target_words(comparison.target)}: billed time and "
                f"cost of one new training, median [{level:.0%} prediction interval]")
    for line in comparison.assumptions:
        print(f"assumed: {line}")
    for line in comparison.notes:
        print(f"note: {line}")
    for line in comparison.steps:
        print(f"settling: {line}")
    for line in check_lines(comparison):
        print(f"check: {line}")
    for line in decision_lines(comparison.decision):
        print(f"decision: {line}")
    if comparison.training_wall_s:
        print(f"this comparison took {comparison.wall_s:.0f} s here; one training to the target took "
              f"{comparison.training_wall_s:.0f} s (median of its convergence runs): "
              f"{comparison.wall_s / comparison.training_wall_s:.1f} trainings")
    return _draw(args, comparison)


def check_lines(comparison: Comparison) -> list[str]:
    """``--check``'s trainings in words, and how many landed inside the interval stated before them."""
    if not comparison.checks:
        return []
    out = []
    for c in comparison.checks:
        span = (f"[{c['low_s']:.0f}-{c['high_s']:.0f}] s" if c["low_s"] is not None and c["high_s"] is not None
                else "no interval")
        got = "not reached" if c["billed_s"] is None else f"{c['billed_s']:.1f} s ({c['epochs']} epoch(s))"
        out.append(f"seed {c['seed']} on {c['candidate']}: {got}, "
                   + ("inside" if c["inside"] else "outside") + f" its {c['level']:.0%} interval {span}")
    inside = sum(1 for c in comparison.checks if c["inside"])
    out.append(f"{inside} of {len(comparison.checks)} fresh training(s) inside the stated interval")
    return out


def _draw(args: argparse.Namespace, comparison: Comparison) -> int:
    """``--out DIR``: the answer drawn there (imported here: plotnine is never loaded for ``--help``)."""
    if args.out:
        from cpustudy.report.answer import write_answer

        print("wrote " + ", ".join(str(p) for p in write_answer(comparison, args.out)), file=sys.stderr)
    return 0
