"""``cpustudy merge OTHER.sqlite``: add another cpustudy database's runs to this one."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from cpustudy.cli.args import add_db
from cpustudy.cli.args import Subparsers

if TYPE_CHECKING:
    from cpustudy.store.importers.merge import MergeResult


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


def unfinished_note(r: MergeResult) -> str:
    """The runs skipped as ``running`` in the other file: in progress where a process measures into it, else cut
    off (they will not finish in that file)."""
    n = r.runs_unfinished
    if r.measured_by is not None:
        return (f"note: skipped {n} run(s) still running in {r.other} (pid {r.measured_by} is measuring into it); "
                "merge again once they finish")
    shown = "; ".join(f"{study or 'run'} {workload} {build} {vcpus} vCPU(s) started {created}"
                      for study, workload, build, vcpus, created in r.unfinished[:3])
    more = f" and {n - 3} more" if n > 3 else ""
    return (f"note: skipped {n} run(s) that never finished in {r.other}: {shown}{more}. No process here is "
            "measuring into that file: they were cut off and will not finish there (if it is a copy of a database "
            "still measuring elsewhere, merge a later copy)")


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import say
    from cpustudy.store import Store
    from cpustudy.store.importers import merge

    merge.open_other(args.other).close()  # refuse a bad file before creating or touching --db
    with Store.open(args.db) as store:
        r = merge.merge(store, args.other)
        path = store.path
    if r.runs_unfinished:
        say(unfinished_note(r), err=True)
    say(f"merged {r.runs_added} run(s) with {r.epochs_added} epochs and {r.machines_added} new machine(s) "
        f"from {r.other} into {path}" + (f"; {r.runs_present} run(s) were already there" if r.runs_present else "")
        + (f"; {r.checks_added} check(s) of stated intervals" if r.checks_added else ""))
    return 0
