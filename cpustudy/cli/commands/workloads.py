"""``cpustudy workloads``: the study's workloads, their shapes, defaults and FLOPs."""

from __future__ import annotations

import argparse

from cpustudy.cli.args import add_format
from cpustudy.cli.args import Subparsers

TABLE_COLUMNS = ["workload", "dataset", "input", "batch_size", "epochs", "samples_per_epoch",
                 "train_mflops_per_sample", "bound"]


def register(sub: Subparsers) -> None:
    p = sub.add_parser("workloads", help="the study's workloads: shapes, defaults, FLOPs per sample")
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import emit_rows
    from cpustudy.workloads import describe_all

    rows = describe_all()
    columns = TABLE_COLUMNS if args.format == "table" else list(rows[0])
    return emit_rows(args, rows, columns, "cpustudy workloads (training FLOPs: forward + backward)")
