"""``cpustudy tune``: search threads, oneDNN, XLA and input pipeline for the fastest setting."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import cpustudy.cli.args as a
from cpustudy.names import int_list

if TYPE_CHECKING:
    from cpustudy.measure.tune import Tuning


def register(sub: a.Subparsers) -> None:
    p = sub.add_parser("tune", help="search threads, oneDNN, XLA and input pipeline for the fastest setting")
    p.add_argument("workload", help="workload name (see `cpustudy workloads`) or a model file (./my_model.py)")
    p.add_argument("--vcpus", type=a.positive_int, required=True, help="vCPUs to tune for")
    p.add_argument("--builds", default="tf", help="comma-separated builds to tune (default: tf)")
    p.add_argument("--batch-sizes", metavar="LIST",
                   help="also try these batch sizes (a different batch size is a different workload setting)")
    p.add_argument("--epochs", type=a.positive_int, default=3, help="epochs per trial (default: 3)")
    p.add_argument("--steps-per-epoch", type=a.positive_int, default=20, help="steps per trial epoch (default: 20)")
    p.add_argument("--confirm", type=a.positive_int, default=3,
                   help="paired default-vs-best repeats that give the gain and its spread (default: 3)")
    p.add_argument("--rechecks", type=int, default=1, metavar="N",
                   help="more runs of a candidate (and of the best) whose first trial is close or faster (default: 1)")
    p.add_argument("--data", choices=("auto", "real", "synthetic"), default="synthetic",
                   help="data source (default: synthetic)")
    p.add_argument("--augment", choices=("host", "model", "none"), default=None,
                   help="cifar10_cnn: where its augmentation runs in every trial (default: host)")
    a.add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import console
    from cpustudy.measure import tune

    err = console(stderr=True)
    for head, result in tune.tune_builds(
            args.workload, args.vcpus, args.builds, db=args.db, epochs=args.epochs,
            steps_per_epoch=args.steps_per_epoch, confirm=args.confirm, rechecks=args.rechecks,
            batch_sizes=int_list(args.batch_sizes, "--batch-sizes") if args.batch_sizes else None,
            data=args.data, options=a.options(args.augment), progress=lambda line: err.print("  " + line)):
        print(f"{head}: {outcome_line(result)}")
    return 0


def outcome_line(result: Tuning) -> str:
    """What a tuning found, in one sentence (after ``WORKLOAD BUILD N vCPU(s): ``)."""
    if result["rejected_by_confirmation"]:
        return (f"the search's fastest ({result['search_winner']}) was not shown to beat the default by 3 % in "
                f"the paired confirmation (ratios {result['gain_low']:.2f}-{result['gain_high']:.2f}; a paired t-test "
                "at 5 %): keeping the default (gain 1.00x)")
    if not result["changed"]:
        return f"no setting beat the default by 3 % or more in {result['trials']} trials (gain 1.00x)"
    if result["gain"] is None:
        return f"fastest in the search: {result['label']}, but its confirmation runs failed (gain unknown)"
    return (f"fastest {result['label']}: {result['gain']:.2f}x the default (range {result['gain_low']:.2f}-"
            f"{result['gain_high']:.2f} over {result['confirmed_pairs']} paired repeats)")
