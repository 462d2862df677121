"""``cpustudy import woolf2017 LOGS_DIR``: the 2017 study's per-epoch logs as a study of their own."""

from __future__ import annotations

import argparse

from cpustudy.cli.args import add_db
from cpustudy.cli.args import Subparsers


def register(sub: Subparsers) -> None:
    p = sub.add_parser("import", help="import results published elsewhere (the 2017 study's logs)",
                       description="Import published results as a study of their own.")
    isub = p.add_subparsers(dest="source", metavar="SOURCE", parser_class=type(p), required=True)
    w = isub.add_parser(
        "woolf2017",
        help="Max Woolf's 2017 per-epoch logs (gpu/, cpu-pip/cpuN/, cpu-compiled/cpuN/)",
        description="Import the per-epoch logs of 'Benchmarking TensorFlow on Cloud CPUs' (Woolf, 2017) as "
        "study woolf2017: one run per log file, one epoch row per line, in one transaction. Importing the "
        "same logs again adds no run (it fills in the validation of runs an earlier cpustudy imported without it).",
    )
    w.add_argument("logs_dir", metavar="LOGS_DIR", help="the study's logs/ folder (or the folder holding it)")
    add_db(w)
    w.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import say
    from cpustudy.store import Store
    from cpustudy.store.importers import woolf2017

    logs = woolf2017.read_logs(args.logs_dir)  # every file checked before the database is touched
    with Store.open(args.db) as store:
        r = woolf2017.write_logs(store, logs)
        path = store.path
    for s in r.skipped:
        say(f"note: skipped {s}", err=True)
    say(f"imported {r.added} run(s) with {r.epochs} epochs from {r.logs_dir} into {path} "
        f"(study {woolf2017.STUDY}, {len(r.workloads)} workloads)"
        + (f"; {r.present} already imported" if r.present else "")
        + (f" ({r.filled} of them given the validation loss and accuracy their logs hold, which an earlier "
           "import left out)" if r.filled else ""))
    return 0
