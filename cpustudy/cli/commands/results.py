"""``cpustudy results``: stored measurements, one row per run (or per epoch)."""

from __future__ import annotations

import argparse

from cpustudy.cli.args import add_db, add_format
from cpustudy.cli.args import Subparsers


def register(sub: Subparsers) -> None:
    p = sub.add_parser("results", help="stored measurements, one row per run (or per epoch)")
    p.add_argument("--per-epoch", action="store_true", help="one row per epoch")
    p.add_argument("--errors", action="store_true",
                   help="failed runs with their whole error: the reason and the tail of the worker's output "
                   "(a run interrupted from outside is marked so: not a failed measurement)")
    add_format(p)
    add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.analysis import results
    from cpustudy.cli.output import emit_rows, print_errors
    from cpustudy.store import Store

    with Store.read(args.db) as store:
        if args.errors:
            # a run stopped from outside (Ctrl-C, SIGTERM, its process killed) is stored as failed with an error
            # that says interrupted: marked so, since a sweep does not count it as a failed measurement
            failed = [{**r, "interrupted": str(r["error"]).startswith("interrupted")} for r in results.error_rows(store)]
        elif args.per_epoch:
            rows, columns, title = results.epoch_rows(store), list(results.EPOCH_COLUMNS), "epochs"
        else:
            rows, columns, title = results.run_rows(store), list(results.RUN_COLUMNS), "runs"
    if args.errors:
        return print_errors(args, failed)
    note = None
    if args.format == "table" and not args.per_epoch:
        columns = list(results.TABLE_COLUMNS)
        # A projected epoch time is marked in its own cell: at 80 columns a `projected` column beside it did
        # not fit, and the time was shown as if measured.
        rows = [{**r, "epoch_time_s": results.cell(r["epoch_time_s"]) + "*"}
                if r.get("projected") and r.get("epoch_time_s") is not None else r for r in rows]
        if any(r.get("projected") for r in rows):
            note = "* projected to a full epoch from the steps run (basis: from what)"
        by = results.measured_by(rows)
        note = "; ".join(x for x in (note, by) if x) or None
    return emit_rows(args, rows, columns, f"{title} in {args.db or 'the database'}", note=note)
