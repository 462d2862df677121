"""``cpustudy run``: measure one workload on N vCPUs in one fresh worker, and say in words what is about to run,
what came out and what to note."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Iterable, Mapping

import cpustudy.cli.args as a
from cpustudy.precision import reduced

if TYPE_CHECKING:
    from cpustudy.measure.execute import RunOutcome
    from cpustudy.store import Store
    from cpustudy.worker.protocol import RunConfig


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
    from cpustudy.measure.execute import execute
    from cpustudy.measure.session import measuring
    from cpustudy.measure.spec import Host, RunSpec, plan
    from cpustudy.workloads import get

    topo = machine.read_topology()
    config = plan(RunSpec(  # every check happens before the database is touched
        workload=get(args.workload), vcpus=args.vcpus or topo.logical, epochs=a.target_epochs(args),
        steps_per_epoch=args.steps_per_epoch, batch_size=args.batch_size, data=args.data, seed=args.seed,
        oversubscribe=args.oversubscribe, intra_threads=args.intra_threads, inter_threads=args.inter_threads,
        build=args.build, device=args.device, warmup_steps=args.warmup_steps, input_pipeline=args.input,
        options=a.options(args.augment), validation=args.validation, precision_policy=args.precision,
        target_accuracy=args.target_accuracy, target=a.target_text(args)), Host(topo))
    err = console(stderr=True)
    with measuring(args.db) as session:
        err.print(plan_line(config))
        outcome = with_epoch_progress(
            lambda listener: execute(session.store, session.machine_id, config, timeout_s=args.timeout,
                                     listener=listener), config.epochs, err)
        db = session.store.path
        others = peers(session.store, session.machine_id, config, outcome.run_id)
        stored = session.store.runs(run_ids=[outcome.run_id]) if args.format == "json" else []
    if outcome.status != "ok":
        print(f"{a.PROG}: run {outcome.run_id} failed: {outcome.error} "
              f"(stored; `{a.PROG} results --errors --db {db}` shows it with the worker's output)", file=sys.stderr)
        return 1
    if args.format == "json":  # the stored run as the database holds it: one object
        import json

        sys.stdout.write(json.dumps(stored[0] if stored else {"id": outcome.run_id}, indent=2, default=str) + "\n")
    else:
        print(outcome_line(config, outcome))
    for note in outcome_notes(outcome, script=config.script, peers=others):
        print(f"{a.PROG}: note: {note}", file=sys.stderr)
    if config.model_file:  # where its FLOPs came from, or why there are none (no GFLOP/s, no % of peak)
        flops = (f"{config.flops_per_sample / 1e6:.4g} MFLOP per training sample ({config.flops_source})"
                 if config.flops_per_sample else f"FLOPs {config.flops_source}, so no GFLOP/s or % of peak")
        print(f"{a.PROG}: note: {'script' if config.script else 'model file'} {config.model_file}, content {str(config.model_hash)[:12]}: {flops}",
              file=sys.stderr)
    return 0


def plan_line(c: RunConfig) -> str:
    return (f"{c.workload}: {c.vcpus} vCPU(s) on CPU(s) {c.cpu_list}, {c.intra_threads}/{c.inter_threads} threads, "
            f"build {c.build}, batch {c.batch_size}, {c.epochs} epoch(s) x {c.steps_run} steps, {c.data} data")


def outcome_line(c: RunConfig, outcome: RunOutcome) -> str:
    s = outcome.summary
    basis = "projected from" if s.get("projected") else "median of"
    if s.get("validation_time_s") is not None:
        projected = " (projected)" if c.validation_steps != c.full_validation_steps else ""
        validation = f"; validation {s['validation_time_s']:.2f} s per epoch{projected}, timed apart from training"
    else:
        validation = "; not validated"
    target = ""
    if c.target_accuracy is not None:
        target = (f"; reached validation accuracy {c.target_accuracy:g} after {s['epochs_to_target']} epoch(s), "
                  f"{s['time_to_target_s']:.1f} s of training" if s.get("target_reached") else
                  f"; did NOT reach validation accuracy {c.target_accuracy:g} within {c.epochs} epoch(s)")
    precision = f", {c.precision_policy}" if reduced(c.precision_policy) else ""
    return (f"run {outcome.run_id} ok: {c.workload} {c.vcpus} vCPU(s), {c.data} data{precision}: "
            f"{s['samples_per_s']:,.0f} samples/s, epoch {s['epoch_time_s']:.2f} s "
            f"({basis} {s['timed_epochs'] or 1} epoch(s) of {c.steps_run} steps), startup {s['startup_s']:.1f} s"
            + validation + target)


def outcome_notes(outcome: RunOutcome, script: bool = False,
                  peers: Iterable[tuple[float | None, float | None]] = ()) -> list[str]:
    """Notes on a finished run; ``peers``: the (wait share, epoch time) of the other runs of its configuration on
    this machine, which its wait for a CPU is judged against."""
    from cpustudy.environment.state import contended

    s = outcome.summary
    notes = []
    boundary, measured = s.get("epoch_boundary_s"), s.get("measured_epoch_time_s")
    stall, stall_max = s.get("stall_s"), s.get("stall_max_s")
    if stall_max:
        why = ("the script's fit makes a new tf.data iterator every epoch (Keras 3 does for arrays and a "
               "finite pipeline) and dropping the old one waits on its autotuning thread (one repeated pipeline "
               "with steps_per_epoch keeps one)" if script else
               "with `--input numpy`, Keras 3 replacing its per-epoch tf.data iterator waits on the old one's "
               "autotuning thread (`--input tfdata`, the default on TensorFlow, keeps one)")
        notes.append(f"idle stall between epochs: {stall:.2f} s per epoch (median; up to {stall_max:.2f} s) with no "
                     f"CPU time, left out of the epoch time and stored apart (stall_s): {why}; on a busy machine "
                     "other processes' contention also reads as idle time")
    wait = s.get("wait_share")
    if contended(wait, s.get("epoch_time_s"), peers):
        notes.append(f"contended: the worker's threads waited for a CPU {100 * (wait or 0):.0f} % of the time inside the "
                     "steps (wait_share), more than the other runs of the same settings here, and its epochs were "
                     "slower than theirs: other work took its CPUs (or its own threads did); measure it again")
    if boundary and measured and boundary > 0.05 * measured:
        notes.append(f"{boundary:.2f} s of each {measured:.2f} s epoch was spent outside its training steps "
                     f"(data iterator set-up/tear-down; CPU busy {100 * (s.get('cpu_utilization') or 0):.0f} %); "
                     "counted once per epoch, not per step")
    if not s.get("timed_epochs"):
        notes.append("only the warm-up epoch ran; use --epochs 2 or more for a steady-state time")
    return notes


def peers(store: Store, machine_id: int, config: RunConfig, run_id: int) -> list[tuple[float | None, float | None]]:
    """The (wait share, epoch time) of the other finished runs of ``config``'s configuration on this machine
    (every field of its identity but the repeat and the seed), read from each run's stored settings (its whole
    planned configuration, as ``config`` is: the columns keep mappings as JSON text)."""
    import json

    from cpustudy.identity import Configuration

    def identity(values: Mapping[str, object]) -> dict[str, object]:
        out = Configuration.from_fields(values).identity()
        out.pop("repeat", None)
        out.pop("seed", None)
        return out

    mine = identity(config.as_dict())
    out = []
    for r in store.runs(status="ok"):
        if r["id"] != run_id and r.get("machine_id") == machine_id and r.get("workload") == config.workload:
            try:
                same = identity(json.loads(r["settings"] or "{}")) == mine
            except (TypeError, ValueError):
                continue
            if same:
                out.append((r.get("wait_share"), r.get("epoch_time_s")))
    return out
