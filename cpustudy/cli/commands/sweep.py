"""``cpustudy sweep``: measure the grid workloads x builds x vCPUs x repeats, resumably."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import cpustudy.cli.args as a
from cpustudy.precision import DEFAULT


def register(sub: Any) -> None:
    p = sub.add_parser("sweep", help="measure the grid workloads x builds x vCPUs x repeats (resumable)")
    p.add_argument("--vcpus", default="auto", help="comma-separated vCPU counts, or auto = 1,2,4,... "
                   "up to this machine's CPUs (default: auto)")
    p.add_argument("--builds", default="tf", help="comma-separated builds (default: tf)")
    p.add_argument("--workloads", default="all", help="comma-separated workloads, or all (default: all)")
    a.add_grid(p, "per cell")
    p.add_argument("--repeats", type=a.positive_int, default=1, help="measurements per cell (default: 1)")
    p.add_argument("--batch-sizes", metavar="LIST", help="comma-separated batch sizes, an axis of the grid like "
                   "builds (e.g. 32,128,512; default: --batch-size, else each workload's)")
    p.add_argument("--precisions", metavar="LIST", help="comma-separated precision policies, an axis of the grid "
                   "(e.g. float32,mixed_bfloat16; default: --precision)")
    a.add_measure(p)
    p.add_argument("--tuned", action="store_true",
                   help="use the setting `cpustudy tune` found for each workload, build and vCPU count")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated time; run nothing")
    p.add_argument("--fresh", action="store_true", help="measure every cell again, even those already ok")
    p.add_argument("--snapshot-to", metavar="PATH",
                   help="after every run starts and finishes, copy the database to PATH atomically (e.g. on a "
                   "bucket mount; keep --db on local disk); a --db that does not exist yet starts from PATH")
    a.add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import console, print_table, with_cell_progress
    from cpustudy.measure import sweep

    from cpustudy.errors import UserError
    from cpustudy.names import split_list

    if args.batch_sizes and args.batch_size:
        raise UserError("give --batch-size or --batch-sizes, not both")
    if args.precisions and args.precision != DEFAULT:
        raise UserError("give --precision or --precisions, not both")
    plan = sweep.plan_from(
        workloads=args.workloads, builds=args.builds, vcpus=args.vcpus, db=args.db, repeats=args.repeats,
        batch_sizes=a.int_list(args.batch_sizes, "--batch-sizes") if args.batch_sizes else (None,),
        precisions=split_list(args.precisions, "--precisions", "float32,mixed_bfloat16") if args.precisions
        else (args.precision,), target_accuracy=args.target_accuracy,
        tuned=args.tuned, epochs=a.target_epochs(args), steps_per_epoch=args.steps_per_epoch, batch_size=args.batch_size,
        data=args.data, seed=args.seed, oversubscribe=args.oversubscribe, device=args.device,
        warmup_steps=args.warmup_steps, input_pipeline=args.input, options=a.options(args.augment),
        validation=args.validation)
    if args.dry_run:
        d = plan.dry_run(args.fresh)
        print_table(d.rows, "sweep plan (dry run: nothing measured)")
        basis = "partly a rough guess from FLOPs (no earlier runs)" if d.guessed else "from earlier runs"
        todo = sum(r["status"] == "to measure" for r in d.rows)
        per_cell = f", {d.fixed_s / todo:.1f} s a cell" if todo else ""
        print(f"{todo} of {len(d.rows)} cell(s) to measure, estimated {d.total_s / 60:.1f} min ({basis}), of which "
              f"{d.fixed_s / 60:.1f} min is fixed cost: worker start-up{per_cell} (imports, data, model build)")
        return 0
    err = console(stderr=True)
    result = plan.measure(args.fresh, args.timeout, say=err.print,
                          progress=lambda run_cells, n: with_cell_progress(run_cells, n, err),
                          snapshot_to=args.snapshot_to)
    print_table(result.rows, "sweep summary (median over repeats)")
    if result.accounting_line:
        err.print(result.accounting_line)
    if result.failed:
        print(f"{a.PROG}: {result.failed} of {result.measured} cell(s) failed (stored as failed: `{a.PROG} results "
              f"--errors --db {plan.db_path}` shows why; re-run the same command to retry them)", file=sys.stderr)
        return 1
    return 0
