"""``cpustudy merge OTHER.sqlite``: add another cpustudy database's runs to this one."""

from __future__ import annotations

import argparse

from cpustudy.cli.args import add_db
from cpustudy.cli.args import Subparsers


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "merge",
        help="merge results measured elsewhere (another cpustudy database) into this one",
        description="Add the runs, epochs and machines of OTHER that this database lacks (runs are matched "
        "by uuid, machines by fingerprint), in one transaction. Merging the same file twice adds nothing.",
    )
    p.add_argument("other", metavar="OTHER.sqlite", help="the cpustudy database to merge in (read only)")
    add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import say
    from cpustudy.store import Store
    from cpustudy.store.importers import merge

    merge.open_other(args.other).close()  # refuse a bad file before creating or touching --db
    with Store.open(args.db) as store:
        r = merge.merge(store, args.other)
        path = store.path
    if r.runs_unfinished:
        say(f"note: skipped {r.runs_unfinished} run(s) still running in {r.other}; merge again once they "
            "finish", err=True)
    say(f"merged {r.runs_added} run(s) with {r.epochs_added} epochs and {r.machines_added} new machine(s) "
        f"from {r.other} into {path}" + (f"; {r.runs_present} run(s) were already there" if r.runs_present else "")
        + (f"; {r.checks_added} check(s) of stated intervals" if r.checks_added else ""))
    return 0
