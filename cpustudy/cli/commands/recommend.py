"""``cpustudy recommend WORKLOAD``: the cheapest configuration that meets a deadline and the fastest
within a budget, from the stored runs and the price catalog, with what it rests on."""

from __future__ import annotations

import argparse
from typing import Any

import cpustudy.cli.args as a


def register(sub: Any) -> None:
    p = sub.add_parser("recommend", help="the cheapest configuration within a deadline, the fastest within a budget",
                       description="Answer from the stored runs and the price catalog: the cheapest configuration "
                       "of WORKLOAD that meets --deadline, the fastest within --budget (both: both answers; "
                       "neither: the cheapest and the fastest), with the spread and the assumptions behind each.")
    p.add_argument("workload", help="workload name (see `cpustudy workloads`), or a model file measured before "
                   "(or its NAME)")
    p.add_argument("--deadline", type=a.duration, metavar="DURATION", help="e.g. 90s, 10m, 1h30m, or seconds")
    p.add_argument("--budget", type=a.positive_float, metavar="USD", help="the most a training may cost")
    p.add_argument("--target-accuracy", type=a.accuracy, metavar="A",
                   help="judge by the time and cost to reach validation accuracy A (runs measured with it)")
    p.add_argument("--on-demand", action="store_true", help="on-demand prices (default: spot)")
    p.add_argument("--prices", metavar="FILE", help="extra price rows (same columns as the catalog)")
    a.add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.analysis.recommend import as_rows, recommend
    from cpustudy.analysis.summary import Options, analyze
    from cpustudy.cli.output import print_table, status
    from cpustudy.store import Store
    from cpustudy.workloads import ALL, userfile

    if userfile.looks_like_file(args.workload):  # a model file: its runs are stored under its NAME
        args.workload = userfile.read_source(args.workload).name
    deadline = args.deadline
    with status("reading the runs and pricing them"), Store.read(args.db) as store:
        if args.workload not in ALL and args.workload not in store.workload_names():
            from cpustudy.names import unknown

            # a mistyped name: one line with "did you mean"
            raise unknown("workload", args.workload, [*ALL, *store.workload_names()], "cpustudy results")
        analysis = analyze(store, Options(on_demand=args.on_demand, prices=args.prices))
    rec = recommend(analysis, args.workload, deadline_s=deadline, budget_usd=args.budget, target=args.target_accuracy)
    print(f"{args.workload}: judged by {rec.measure}")
    if rec.choices:
        print_table(as_rows(rec), f"recommendation for {args.workload}")
    for c in rec.choices:
        print(f"{c.role}: {c.config}, from run(s) {', '.join(map(str, c.run_ids))}; " + "; ".join(c.basis))
    for note in rec.notes:
        print(f"note: {note}")
    return 0 if rec.choices else 1
