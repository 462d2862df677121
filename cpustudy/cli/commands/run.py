"""``cpustudy run``: measure one workload on N vCPUs in one fresh worker."""

from __future__ import annotations

import argparse
import sys

import cpustudy.cli.args as a
from cpustudy.measure.request import target_epochs, target_text


def register(sub: a.Subparsers) -> None:
    p = sub.add_parser("run", help="measure one workload on N vCPUs (one fresh worker process)")
    p.add_argument("workload", help="workload name (see `cpustudy workloads`) or a model file (./my_model.py: "
                   "build_model() and load_data(); see the README's 'Your own model')")
    p.add_argument("--vcpus", type=a.positive_int, help="vCPUs to pin to (default: all this process may use)")
    a.add_grid(p, "to run")
    p.add_argument("--intra-threads", type=a.positive_int, help="TF intra-op threads (default: vCPUs)")
    p.add_argument("--inter-threads", type=a.positive_int, help="TF inter-op threads (default: vCPUs)")
    p.add_argument("--build", default="tf", help="build to measure (default: tf; see `cpustudy builds list`)")
    a.add_measure(p)
    a.add_format(p, ("table", "json"))
    a.add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import console, with_epoch_progress
    from cpustudy.environment import machine
    from cpustudy.measure import wording
    from cpustudy.measure.execute import execute
    from cpustudy.measure.session import measuring
    from cpustudy.measure.spec import Host, RunSpec, plan
    from cpustudy.workloads import get

    topo = machine.read_topology()
    config = plan(RunSpec(  # every check happens before the database is touched
        workload=get(args.workload), vcpus=args.vcpus or topo.logical, epochs=target_epochs(args),
        steps_per_epoch=args.steps_per_epoch, batch_size=args.batch_size, data=args.data, seed=args.seed,
        oversubscribe=args.oversubscribe, intra_threads=args.intra_threads, inter_threads=args.inter_threads,
        build=args.build, device=args.device, warmup_steps=args.warmup_steps, input_pipeline=args.input,
        options=a.options(args.augment), validation=args.validation, precision_policy=args.precision,
        target_accuracy=args.target_accuracy, target=target_text(args)), Host(topo))
    err = console(stderr=True)
    with measuring(args.db) as session:
        err.print(wording.plan_line(config))
        outcome = with_epoch_progress(
            lambda listener: execute(session.store, session.machine_id, config, timeout_s=args.timeout,
                                     listener=listener), config.epochs, err)
        db = session.store.path
        others = wording.peers(session.store, session.machine_id, config, outcome.run_id)
        stored = session.store.runs(run_ids=[outcome.run_id]) if args.format == "json" else []
    if outcome.status != "ok":
        print(f"{a.PROG}: run {outcome.run_id} failed: {outcome.error} "
              f"(stored; `{a.PROG} results --errors --db {db}` shows it with the worker's output)", file=sys.stderr)
        return 1
    if args.format == "json":  # the stored run as the database holds it: one object
        import json

        sys.stdout.write(json.dumps(stored[0] if stored else {"id": outcome.run_id}, indent=2, default=str) + "\n")
    else:
        print(wording.outcome_line(config, outcome))
    for note in wording.outcome_notes(outcome, script=config.script, peers=others):
        print(f"{a.PROG}: note: {note}", file=sys.stderr)
    if config.model_file:  # where its FLOPs came from, or why there are none (no GFLOP/s, no % of peak)
        flops = (f"{config.flops_per_sample / 1e6:.4g} MFLOP per training sample ({config.flops_source})"
                 if config.flops_per_sample else f"FLOPs {config.flops_source}, so no GFLOP/s or % of peak")
        print(f"{a.PROG}: note: {'script' if config.script else 'model file'} {config.model_file}, content {str(config.model_hash)[:12]}: {flops}",
              file=sys.stderr)
    return 0
