"""``cpustudy bench overhead``: cpustudy's epoch time against a plain Keras fit, interleaved."""

from __future__ import annotations

import argparse

import cpustudy.cli.args as a

TITLE = ("cpustudy epoch time / plain Keras fit (1.00 = no overhead; median over rounds, "
         "95 % bootstrap interval)")


def register(sub: a.Subparsers) -> None:
    p = sub.add_parser("bench", help="benchmarks of cpustudy itself")
    bsub = p.add_subparsers(dest="bench_command", metavar="ACTION", parser_class=type(p), required=True)
    q = bsub.add_parser("overhead", help="cpustudy's epoch time against a plain Keras fit, interleaved")
    q.add_argument("--workloads", default="mnist_mlp,cifar10_cnn", help="default: mnist_mlp,cifar10_cnn")
    q.add_argument("--vcpus", type=a.positive_int, help="vCPUs (default: all this process may use)")
    q.add_argument("--build", default="tf", help="build (default: tf)")
    q.add_argument("--epochs", type=a.positive_int, default=6, help="epochs per run, the first untimed (default: 6)")
    # 6 rounds of 60-step epochs read 1.053 (95 % interval 1.028-1.09) for cifar10_cnn at 2 vCPUs on a Zen 4 VM,
    # 10 rounds of 100 steps right after 0.998 (0.98-1.02): shorter and fewer rounds let the host's slow spells
    # decide the figure.
    q.add_argument("--steps-per-epoch", type=a.positive_int, default=100, help="steps per epoch (default: 100)")
    q.add_argument("--rounds", type=a.positive_int, default=10, help="interleaved rounds (default: 10)")
    q.add_argument("--input", choices=("auto", "numpy", "tfdata"), default="auto",
                   help="cpustudy's input pipeline (default: auto, cpustudy's default: tfdata on TensorFlow)")
    q.add_argument("--plain", choices=("same", "arrays"), default="same",
                   help="what the plain fit is fed: same = cpustudy's input pipeline (cpustudy's own cost); "
                   "arrays = the same arrays into fit, Keras' own path (what a user's script does)")
    a.add_format(q)
    a.add_db(q)
    q.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import console, emit_rows
    from cpustudy.measure import overhead

    err = console(stderr=True)
    rows = overhead.measure_overhead(
        args.workloads, vcpus=args.vcpus, build=args.build, epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch, rounds=args.rounds, db=args.db, input_pipeline=args.input,
        plain=args.plain,
        progress=lambda workload, line: err.print(f"  {workload} {line}"))
    return emit_rows(args, rows, list(rows[0]), TITLE)
