"""The ``cpustudy`` command: parses arguments and calls library functions.

Heavy modules (TensorFlow never; pandas, plotnine and rich only where a command needs them) are
imported inside the command functions, so ``cpustudy --help`` stays fast. Every user error is a
``UserError``, printed once in ``main`` as one line with exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, NoReturn, Sequence

from cpustudy import __version__
from cpustudy.errors import UserError

PROG = "cpustudy"


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a one-line ``UserError`` naming the help to read."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see `{self.prog} --help`)")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive whole number")
    return value


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, width=220)  # pipes and files: no folding
    return console


# -- commands --------------------------------------------------------------------------------------


def cmd_workloads(args: argparse.Namespace) -> int:
    from cpustudy.workloads import WORKLOADS

    rows = []
    for w in WORKLOADS.values():
        f = w.flops()
        rows.append(
            {
                "workload": w.name,
                "model": w.title,
                "dataset": w.dataset,
                "input": w.input_desc,
                "batch_size": w.batch_size,
                "epochs": w.epochs,
                "samples_per_epoch": w.samples_per_epoch,
                "steps_per_epoch": w.steps_per_epoch,
                "optimizer": w.optimizer,
                "train_mflops_per_sample": round(f.train / 1e6, 3),
                "forward_mflops_per_sample": round(f.forward / 1e6, 3),
                "bound": "memory" if w.memory_bound else "compute",
            }
        )
    columns = list(rows[0])
    if args.format == "table":
        columns = ["workload", "dataset", "input", "batch_size", "epochs", "samples_per_epoch",
                   "train_mflops_per_sample", "bound"]
    return _emit_rows(args, rows, columns, "cpustudy workloads (training FLOPs: forward + backward)")


def cmd_machine(args: argparse.Namespace) -> int:
    from cpustudy import machine
    from cpustudy.runner import probe_software

    m = machine.collect()
    info: dict[str, Any] = m.as_dict()
    if not args.no_probe:
        info["software"] = probe_software()
    if args.format == "json":
        sys.stdout.write(json.dumps(info, indent=2, default=str) + "\n")
        return 0
    lines = [
        ("CPU", f"{m.cpu_model} ({m.cpu_vendor}, {m.arch})"),
        ("topology", f"{m.logical_cpus} logical CPUs, {m.physical_cores} cores, "
                     f"{m.threads_per_core} thread(s) per core, {m.sockets} socket(s), "
                     f"{m.numa_nodes} NUMA node(s)"),
        ("instruction sets", m.isa_summary),
        ("memory", f"{m.memory_bytes / 2**30:.1f} GiB"),
        ("cgroup CPU quota", "none" if m.cgroup_cpus is None else f"{m.cgroup_cpus:g} CPUs"),
        ("OS", m.os),
        ("fingerprint", m.fingerprint),
    ]
    sw = info.get("software")
    if sw:
        if sw.get("error"):
            lines.append(("TensorFlow", f"could not be probed: {sw['error']}"))
        else:
            lines += [
                ("Python", sw.get("python_version", "")),
                ("TensorFlow", str(sw.get("tf_version", "not used"))),
                ("Keras", f"{sw.get('keras_version')} (backend {sw.get('keras_backend')})"),
                ("oneDNN", {True: "on", False: "off"}.get(sw.get("onednn"), "unknown")),
                ("TF not compiled for", sw.get("tf_missing_isa") or "nothing it reports"),
            ]
    out = _console()
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        out.print(f"{k:<{width}}  {v}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from cpustudy import machine, workloads
    from cpustudy.runner import RunSpec, execute, plan
    from cpustudy.store import Store

    w = workloads.get(args.workload)
    topo = machine.read_topology()
    spec = RunSpec(
        workload=w,
        vcpus=args.vcpus or topo.logical,
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
        batch_size=args.batch_size,
        data=args.data,
        seed=args.seed,
        oversubscribe=args.oversubscribe,
        intra_threads=args.intra_threads,
        inter_threads=args.inter_threads,
        options={} if args.augment is None else {"augment": args.augment},
    )
    config = plan(spec, topo)  # every check happens before the database is touched
    store = Store.open(args.db)
    machine_id = store.machine_id(machine.collect().as_dict())
    err = _console(stderr=True)
    steps = config["steps_per_epoch"] or config["full_steps_per_epoch"]
    err.print(
        f"{w.name}: {config['vcpus']} vCPU(s) on CPU(s) {config['cpu_list']}, "
        f"{config['intra_threads']}/{config['inter_threads']} threads, batch {config['batch_size']}, "
        f"{config['epochs']} epoch(s) x {steps} steps, {config['data']} data"
    )
    outcome = _execute_with_progress(execute, store, machine_id, config, args.timeout, err)
    s = outcome.summary
    if outcome.status != "ok":
        print(f"{PROG}: run {outcome.run_id} failed: {outcome.error} "
              f"(stored; `{PROG} results --db {store.path}` shows the worker's stderr tail)",
              file=sys.stderr)
        return 1
    basis = "projected from" if s.get("projected") else "median of"
    print(
        f"run {outcome.run_id} ok: {w.name} {config['vcpus']} vCPU(s), {config['data']} data: "
        f"{s['samples_per_s']:,.0f} samples/s, epoch {s['epoch_time_s']:.2f} s "
        f"({basis} {s['timed_epochs'] or 1} epoch(s) of {steps} steps), startup {s['startup_s']:.1f} s"
    )
    if not s.get("timed_epochs"):
        print(f"{PROG}: note: only the warm-up epoch ran; use --epochs 2 or more for a steady-state time",
              file=sys.stderr)
    return 0


def _execute_with_progress(
    execute: Callable[..., Any], store: Any, machine_id: int, config: dict[str, Any],
    timeout: float | None, console: Any,
) -> Any:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    total = int(config["epochs"])
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} epochs"),
        TimeElapsedColumn(), console=console, transient=True,
    ) as progress:
        task = progress.add_task("starting worker", total=total)

        def listener(kind: str, event: dict[str, Any]) -> None:
            if kind == "software":
                progress.update(task, description="preparing data")
            elif kind == "train_start":
                progress.update(task, description="training")
            elif kind == "epoch":
                progress.advance(task)
                acc = event.get("accuracy")
                progress.console.print(
                    f"  epoch {event['epoch']}/{total}: {event['elapsed_s']:.3f} s, "
                    f"{event['samples_per_s']:,.0f} samples/s, loss {event['loss']:.4f}"
                    + (f", acc {acc:.4f}" if acc is not None else "")
                    + (" (warm-up)" if event.get("warmup") else "")
                )

        return execute(store, machine_id, config, timeout_s=timeout, listener=listener)


def cmd_results(args: argparse.Namespace) -> int:
    from cpustudy import results
    from cpustudy.store import Store

    with Store.read(args.db) as store:
        if args.per_epoch:
            rows, columns, title = results.epoch_rows(store), results.EPOCH_COLUMNS, "epochs"
        else:
            rows, columns, title = results.run_rows(store), results.RUN_COLUMNS, "runs"
    if args.format == "table" and not args.per_epoch:
        columns = results.TABLE_COLUMNS
    return _emit_rows(args, rows, list(columns), f"{title} in {args.db or 'the database'}")


def _emit_rows(args: argparse.Namespace, rows: list[dict[str, Any]], columns: list[str], title: str) -> int:
    from cpustudy import results

    fmt = getattr(args, "format", "table")
    if fmt == "csv":
        sys.stdout.write(results.to_csv(rows, columns))
    elif fmt == "json":
        sys.stdout.write(results.to_json(rows, columns))
    else:
        _console().print(results.to_table(rows, columns, title=title))
    return 0


# -- parser ----------------------------------------------------------------------------------------


def _add_db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="PATH", default=None,
                   help="SQLite results database (default: $CPUSTUDY_DB or ./cpustudy.sqlite)")


def _add_format(p: argparse.ArgumentParser, choices: Sequence[str] = ("table", "csv", "json")) -> None:
    p.add_argument("--format", choices=choices, default="table", help="output format (default: table)")


def build_parser() -> Parser:
    parser = Parser(
        prog=PROG,
        description="Measure which CPU configuration (vCPUs, TensorFlow/Keras build) trains a "
        "deep-learning workload fastest and cheapest, and how it compares with a GPU.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    p = sub.add_parser("workloads", help="the study's workloads: shapes, defaults, FLOPs per sample")
    _add_format(p)
    p.set_defaults(func=cmd_workloads)

    p = sub.add_parser("machine", help="this machine: CPU, instruction sets, topology, TF build")
    p.add_argument("--no-probe", action="store_true", help="do not start TensorFlow to read its build")
    _add_format(p, ("table", "json"))
    p.set_defaults(func=cmd_machine)

    p = sub.add_parser("run", help="measure one workload on N vCPUs (one fresh worker process)")
    p.add_argument("workload", help="workload name (see `cpustudy workloads`)")
    p.add_argument("--vcpus", type=positive_int, help="vCPUs to pin to (default: all this process may use)")
    p.add_argument("--epochs", type=positive_int, help="epochs to run (default: the study's)")
    p.add_argument("--steps-per-epoch", type=positive_int,
                   help="cap steps per epoch; the full-epoch time is then projected and labelled so")
    p.add_argument("--batch-size", type=positive_int, help="batch size (default: the study's)")
    p.add_argument("--data", choices=("auto", "real", "synthetic"), default="auto",
                   help="real Keras datasets (from the cache), synthetic data of the same shapes, or "
                   "auto = real when cached (default: auto)")
    p.add_argument("--seed", type=int, default=0, help="random seed for data and weights (default: 0)")
    p.add_argument("--intra-threads", type=positive_int, help="TF intra-op threads (default: vCPUs)")
    p.add_argument("--inter-threads", type=positive_int, help="TF inter-op threads (default: vCPUs)")
    p.add_argument("--oversubscribe", action="store_true",
                   help="allow more vCPUs than this machine has (stored as oversubscribed)")
    p.add_argument("--no-augment", dest="augment", action="store_false", default=None,
                   help="cifar10_cnn: train without real-time augmentation")
    p.add_argument("--timeout", type=positive_int, metavar="SECONDS",
                   help="fail the measurement after this many seconds")
    _add_db(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("results", help="stored measurements, one row per run (or per epoch)")
    p.add_argument("--per-epoch", action="store_true", help="one row per epoch")
    _add_format(p)
    _add_db(p)
    p.set_defaults(func=cmd_results)

    from cpustudy import cli_report  # light: its commands import pandas/plotnine when they run

    cli_report.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted (what was measured so far is stored)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
