"""``cpustudy sweep``: measure the grid workloads x builds x vCPUs x repeats, resumably."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import cpustudy.cli.args as a

if TYPE_CHECKING:
    from cpustudy.measure.sweep import TimeAccounting


def register(sub: a.Subparsers) -> None:
    p = sub.add_parser("sweep", help="measure the grid workloads x builds x vCPUs x repeats (resumable)",
                       description="Measure every cell of the grid workloads x builds x vCPUs (x batch sizes x "
                       "precisions) x repeats in a fresh worker, interleaved and resumable. vCPU counts above this "
                       "machine's CPUs are refused unless --oversubscribe; the refusal names the `cpustudy cloud "
                       "plan` that measures the same grid on cloud VMs of those sizes, with its estimated cost.")
    a.add_sweep_request(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated time; run nothing")
    p.add_argument("--fresh", action="store_true", help="measure every cell again, even those already ok")
    p.add_argument("--snapshot-to", metavar="PATH",
                   help="after every run starts and finishes, copy the database to PATH atomically (e.g. on a "
                   "bucket mount; keep --db on local disk); a --db that does not exist yet starts from PATH")
    a.add_format(p, ("table", "json"))
    a.add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import console, print_table, with_cell_progress
    from cpustudy.measure import sweep

    request = a.sweep_request(args)
    try:
        plan = sweep.plan_from(request, args.db)
    except sweep.BeyondThisMachine as exc:  # add the way that does measure it: a cloud plan of the same grid
        from cpustudy.cloud.suggest import cloud_way
        from cpustudy.errors import UserError

        raise UserError(f"{exc}\n{cloud_way(exc.request, exc.vcpus, exc.info, args.db)}") from None
    if args.dry_run:
        d = plan.dry_run(args.fresh)
        basis = "partly a rough guess from FLOPs (no earlier runs)" if d.guessed else "from earlier runs"
        todo = sum(r["status"] == "to measure" for r in d.rows)
        if args.format == "json":  # the plan's cells as the table's rows, and the estimate the table's line gives
            import json

            sys.stdout.write(json.dumps({
                "dry_run": True, "cells": d.rows, "to_measure": todo, "estimate_s": round(d.total_s, 1),
                "fixed_s": round(d.fixed_s, 1), "fixed_s_per_cell": round(d.fixed_s / todo, 1) if todo else None,
                "estimate_basis": basis}, indent=2, default=str) + "\n")
            return 0
        print_table(d.rows, "sweep plan (dry run: nothing measured)")
        per_cell = f", {d.fixed_s / todo:.1f} s a cell" if todo else ""
        print(f"{todo} of {len(d.rows)} cell(s) to measure, estimated {d.total_s / 60:.1f} min ({basis}), of which "
              f"{d.fixed_s / 60:.1f} min is fixed cost: worker start-up{per_cell} (imports, data, model build)")
        return 0
    err = console(stderr=True)
    result = plan.measure(args.fresh, args.timeout, say=err.print,
                          progress=lambda run_cells, n: with_cell_progress(run_cells, n, err),
                          snapshot_to=args.snapshot_to)
    if args.format == "json":  # one object per cell measured, as the table's rows
        import json

        sys.stdout.write(json.dumps(result.rows, indent=2, default=str) + "\n")
    else:
        print_table(result.rows, "sweep summary (median over repeats)")
    if request.calibrate and result.measured:
        from cpustudy.analysis import projection

        check = stored_check(plan.db_path)
        if check:
            print_table(check, f"projections checked against full epochs (agree within ±{projection.TOLERANCE:.0%})")
    if line := accounting_line(result.accounting):
        err.print(line)
    if result.failed:
        print(f"{a.PROG}: {result.failed} of {result.measured} cell(s) failed (stored as failed: `{a.PROG} results "
              f"--errors --db {plan.db_path}` shows why; re-run the same command to retry them)", file=sys.stderr)
        return 1
    return 0


def stored_check(db_path: str | Path) -> list[dict[str, object]]:
    """:func:`cpustudy.analysis.projection.projection_check` of the runs stored in ``db_path``, one plain row per configuration measured
    both ways, as ``sweep --calibrate`` prints it after its runs (the report shows the same table); none
    where no run finished ok."""
    from cpustudy.analysis.projection import pair_range, projection_check
    from cpustudy.analysis.frames import records
    from cpustudy.analysis.runs import load_runs
    from cpustudy.errors import UserError
    from cpustudy.store import Store

    with Store.read(db_path) as store:
        try:
            runs = load_runs(store)
        except UserError:  # no comparable run (every one failed): nothing to check, and the sweep says why
            return []
    check = projection_check(runs)
    # The verdict before the figures behind it: a narrow terminal drops the last columns first.
    return [{"workload": r["workload"], "build": r["build"], "vcpus": r["vcpus"], "projected/full": r["ratio"],
             "verdict": r["verdict"],
             "pairs": pair_range(r),
             "projected_s": r["projected_s"], "full_s": r["full_s"], "steps (capped)": r["steps_per_epoch"]}
            for r in records(check)]


def accounting_line(t: TimeAccounting) -> str | None:
    """Where a sweep's wall time went, in one line; None where nothing was timed."""
    if t.overhead is None:
        return None
    return (f"sweep time: {seconds(t.wall_s)} s wall for {seconds(t.timed_s)} s of timed training "
            f"({t.overhead:.2f}x): worker start-up {seconds(t.startup_s)} s, warm-up "
            f"{seconds(t.warmup_s)} s, peak measurements {seconds(t.peak_s)} s, other {seconds(t.other_s)} s")


def seconds(s: float) -> str:
    """Seconds with the digits that matter: whole from 10 s, tenths from 1 s, two significant digits below
    (a short sweep's 0.39 s of timed training is not '0 s')."""
    if s >= 10:
        return f"{s:.0f}"
    if s >= 1:
        return f"{s:.1f}"
    return f"{s:.2g}" if s > 0 else "0"
