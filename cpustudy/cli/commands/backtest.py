"""``cpustudy backtest``: every stored fresh training held against the interval the runs stored before it give
(``cpustudy.analysis.backtest``), stored as a check; how this database's intervals held, per machine."""

from __future__ import annotations

import argparse

import cpustudy.cli.args as a


def register(sub: a.Subparsers) -> None:
    p = sub.add_parser("backtest", help="hold each stored training against the interval its earlier runs gave",
                       description="For every training stored to a validation-accuracy target (a compare's seed, "
                       "a `cpustudy run --target-accuracy`, a --check) that came after other runs of its "
                       "configuration: the interval compare states from the runs stored before it (its own session "
                       "left out) for its machine and vCPUs, and whether it fell inside. Each is stored as a check; "
                       "then, per machine, how many fell inside and, from 10 checks on, how much wider intervals "
                       "must be for 90 % to (compare widens them by that from then on; it never narrows them).")
    p.add_argument("--on-demand", action="store_true", help="on-demand prices (default: spot)")
    p.add_argument("--prices", metavar="FILE", help="extra price rows (same columns as the catalog)")
    a.add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.analysis.backtest import run_backtest
    from cpustudy.cli.output import print_table, status
    from cpustudy.prices import Catalog

    with status("holding out the stored trainings") as say:
        out = run_backtest(args.db, catalog=Catalog.load(args.prices), spot=not args.on_demand, progress=say)
    if out.added:
        print_table([{"run": c["run_id"], "candidate": c["candidate"], "billed_s": round(c["billed_s"], 1),
                      "interval_s": f"{c['low_s']:.1f}-{c['high_s']:.1f}", "inside": "yes" if c["inside"] else "NO"}
                     for c in out.added],
                    f"{len(out.added)} training(s) held out against the interval their earlier runs gave")
    else:
        print("no stored training to hold out that is not checked already (a training needs earlier seeds of its "
              "configuration and earlier speed runs at its place)")
    for machine, bt, inf in out.machines:
        print(f"{machine}:")
        if bt is not None:
            print(f"  {bt.line}")
        print(f"  {inf.line}")
    return 0
