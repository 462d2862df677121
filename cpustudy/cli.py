"""The ``cpustudy`` command: parses arguments and calls library functions.

Heavy modules (TensorFlow never; pandas, plotnine and rich only where a command needs them) are
imported inside the command functions, so ``cpustudy --help`` stays fast. Every user error is a
``UserError``, printed once in ``main`` as one line with exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
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


def _say(console: Any, prefix: str, line: str) -> None:
    console.print(prefix + line)


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, width=220)  # pipes and files: no folding
    return console


# -- commands --------------------------------------------------------------------------------------


def cmd_workloads(args: argparse.Namespace) -> int:
    from cpustudy.workloads import ALL

    rows = []
    for w in ALL.values():
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
    if args.check:
        from cpustudy import checks

        state = checks.machine_state()
        info["state"] = state
        info["warnings"] = checks.warnings(state)
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
    if args.check:
        st = info["state"]
        lines += [
            ("load average", " ".join(f"{x:.2f}" for x in st["loadavg"])),
            ("busy processes", ", ".join(f"{p['name']} ({p['pid']}) {p['cpu_percent']:.0f} %"
                                         for p in st["busy_processes"]) or "none"),
            ("governor", st["governor"] or "not readable here"),
            ("SMT active", {True: "yes", False: "no"}.get(st["smt_active"], "not readable here")),
            ("turbo", {True: "on", False: "off"}.get(st["turbo"], "not readable here")),
            ("verdict", "; ".join(info["warnings"]) or "quiet enough to measure"),
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
    from cpustudy.runner import RunSpec, plan
    from cpustudy.sweep import measuring

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
        build=args.build,
        device=args.device,
        warmup_steps=args.warmup_steps,
        input_pipeline=args.input,
        options={} if args.augment is None else {"augment": args.augment},
        validation=args.validation,
    )
    config = plan(spec, topo)  # every check happens before the database is touched
    with measuring(args.db) as session:
        return _run_one(session.store, session.machine_id, config, args.timeout)


def _run_one(store: Any, machine_id: int, config: dict[str, Any], timeout: float | None) -> int:
    from cpustudy.runner import execute
    from cpustudy.workloads import get

    w = get(config["workload"])
    err = _console(stderr=True)
    steps = config["steps_per_epoch"] or config["full_steps_per_epoch"]
    err.print(
        f"{w.name}: {config['vcpus']} vCPU(s) on CPU(s) {config['cpu_list']}, "
        f"{config['intra_threads']}/{config['inter_threads']} threads, build {config['build']}, "
        f"batch {config['batch_size']}, {config['epochs']} epoch(s) x {steps} steps, {config['data']} data"
    )
    outcome = _execute_with_progress(execute, store, machine_id, config, timeout, err)
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
        + (f"; validation {s['validation_time_s']:.2f} s per epoch"
           f"{' (projected)' if config.get('validation_steps') != config.get('full_validation_steps') else ''}, "
           "timed apart from training" if s.get("validation_time_s") is not None else "; not validated")
    )
    boundary, measured = s.get("epoch_boundary_s"), s.get("measured_epoch_time_s")
    if boundary and measured and boundary > 0.05 * measured:
        print(f"{PROG}: note: {boundary:.2f} s of each {measured:.2f} s epoch was spent outside its training "
              f"steps (data iterator set-up/tear-down; CPU busy {100 * (s.get('cpu_utilization') or 0):.0f} %); "
              "counted once per epoch, not per step; `--input tfdata` keeps one iterator across epochs",
              file=sys.stderr)
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
                    + (f"; validation {event['validation_s']:.3f} s" if event.get("validation_s") is not None else "")
                    + (f", val_acc {event['val_accuracy']:.4f}" if event.get("val_accuracy") is not None else "")
                    + (f"; GPU busy {event['gpu_util']:.0f} %" if event.get("gpu_util") is not None else "")
                    + (" (warm-up)" if event.get("warmup") else "")
                )

        return execute(store, machine_id, config, timeout_s=timeout, listener=listener)


def cmd_sweep(args: argparse.Namespace) -> int:
    from cpustudy import builds, machine, sweep, workloads
    from cpustudy.store import Store, default_path

    topo = machine.read_topology()
    wls = workloads.parse_list(args.workloads)
    build_names = [b.name for b in builds.parse_list(args.builds)]
    vcpus = sweep.parse_vcpus(args.vcpus, topo)
    m = machine.collect()
    cells = sweep.plan_sweep(
        wls, build_names, vcpus, repeats=args.repeats, machine_fingerprint=m.fingerprint, topo=topo,
        epochs=args.epochs, steps_per_epoch=args.steps_per_epoch, batch_size=args.batch_size,
        data=args.data, seed=args.seed, oversubscribe=args.oversubscribe, device=args.device,
        warmup_steps=args.warmup_steps, input_pipeline=args.input,
        options={} if args.augment is None else {"augment": args.augment},
        validation=args.validation,
    )
    from pathlib import Path

    db_path = Path(args.db) if args.db else default_path()
    if args.tuned:
        _apply_tunings(cells, db_path, m, sweep)
    if args.dry_run:
        store = Store.read(db_path) if db_path.is_file() else None
        return _print_plan(cells, sweep.pending(store, cells, args.fresh), store)
    with sweep.measuring(db_path, m) as session:
        store, stale, machine_id = session.store, session.stale, session.machine_id
        todo = sweep.pending(store, cells, args.fresh)
        err = _console(stderr=True)
        from cpustudy import checks

        for warning in checks.warnings(checks.machine_state()):
            err.print(f"warning: {warning} (timings may be noisy; see `cpustudy machine --check`)")
        if stale:
            err.print(f"{stale} run(s) left running by a killed process were marked failed")
        err.print(f"sweep: {len(cells)} cell(s) planned, {len(cells) - len(todo)} already measured, "
                  f"{len(todo)} to measure into {store.path}")
        t0 = time.perf_counter()
        outcomes = _sweep_with_progress(sweep, store, machine_id, todo, args.timeout, err)
        account = sweep.time_accounting(store, [o.run_id for _, o in outcomes], time.perf_counter() - t0)
        rows = sweep.summary_rows(store, cells)
    from cpustudy.analysis import results

    _console().print(results.to_table(rows, list(rows[0]), title="sweep summary (median over repeats)"))
    if account["overhead"]:
        a = account
        err.print(f"sweep time: {a['wall_s']:.0f} s wall for {a['timed_s']:.0f} s of timed training "
                  f"({a['overhead']:.2f}x): worker start-up {a['startup_s']:.0f} s, warm-up {a['warmup_s']:.0f} s, "
                  f"peak measurements {a['peak_s']:.0f} s, other {a['other_s']:.0f} s")
    failed = [o for _, o in outcomes if o.status != "ok"]
    if failed:
        print(f"{PROG}: {len(failed)} of {len(outcomes)} cell(s) failed (stored as failed; re-run the same "
              "command to retry them)", file=sys.stderr)
        return 1
    return 0


def _apply_tunings(cells: list[Any], db_path: Any, m: Any, sweep: Any) -> None:
    """Replace each cell's runtime setting by the one `cpustudy tune` stored for it."""
    from cpustudy import runner, workloads
    from cpustudy.store import Store
    from cpustudy.tune import setting_from

    with Store.read(db_path) as store:
        row = store.conn.execute("SELECT id FROM machines WHERE fingerprint = ?", (m.fingerprint,)).fetchone()
        for cell in cells:
            c = cell.config
            tuning = store.tuning(row[0], c["workload"], c["build"], c["vcpus"]) if row else None
            if tuning is None:
                raise UserError(f"no tuning stored for {c['workload']} {c['build']} at {c['vcpus']} vCPU(s) "
                                f"on this machine: run `cpustudy tune {c['workload']} --vcpus {c['vcpus']} "
                                f"--builds {c['build']} --db {db_path}` first, or drop --tuned")
            setting = setting_from(tuning).spec_args()
            spec = runner.RunSpec(workload=workloads.get(c["workload"]), vcpus=c["vcpus"], build=c["build"],
                                  repeat=c["repeat"], epochs=c["epochs"], steps_per_epoch=c["steps_per_epoch"],
                                  data=c["data_requested"], seed=c["seed"], oversubscribe=c["oversubscribed"],
                                  device=c["device"], warmup_steps=c["warmup_steps"], options=c["options"],
                                  **setting)
            new = runner.plan(spec)
            new["tuning_id"] = tuning["id"]
            new["cell_key"] = sweep.cell_key(new, m.fingerprint)
            cell.config = new


def _print_plan(cells: list[Any], todo: list[Any], store: Any) -> int:
    from cpustudy import sweep
    from cpustudy.analysis import results

    todo_keys = {c.key for c in todo}
    rows, total, guessed = [], 0.0, False
    for c in cells:
        est, measured = sweep.estimate_seconds(store, c)
        if c.key in todo_keys:
            total += est
            guessed = guessed or not measured
        cfg = c.config
        rows.append({"workload": cfg["workload"], "build": cfg["build"], "vcpus": cfg["vcpus"],
                     "cpus": cfg["cpu_list"], "repeat": cfg["repeat"], "epochs": cfg["epochs"],
                     "steps_per_epoch": cfg["steps_per_epoch"] or cfg["full_steps_per_epoch"],
                     "data": cfg["data"], "status": "to measure" if c.key in todo_keys else "done",
                     "estimate_s": round(est, 1)})
    _console().print(results.to_table(rows, list(rows[0]), title="sweep plan (dry run: nothing measured)"))
    basis = "partly a rough guess from FLOPs (no earlier runs)" if guessed else "from earlier runs"
    print(f"{len(todo)} of {len(cells)} cell(s) to measure, estimated {total / 60:.1f} min ({basis})")
    return 0


def _sweep_with_progress(sweep: Any, store: Any, machine_id: int, todo: list[Any],
                         timeout: float | None, console: Any) -> list[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.progress import TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console) as bar:
        task = bar.add_task("sweep", total=len(todo))

        def on_start(i: int, cell: Any) -> None:
            bar.update(task, description=cell.label)

        def on_done(i: int, cell: Any, outcome: Any) -> None:
            bar.advance(task)
            if outcome.status == "ok":
                s = outcome.summary
                bar.console.print(f"  ok     {cell.label}: epoch {s['epoch_time_s']:.2f} s"
                                  + (" (projected)" if s.get("projected") else "")
                                  + f", {s['samples_per_s']:,.0f} samples/s")
            else:
                bar.console.print(f"  FAILED {cell.label}: {outcome.error}")

        return sweep.run_cells(store, machine_id, todo, timeout_s=timeout, on_start=on_start, on_done=on_done)


def cmd_tune(args: argparse.Namespace) -> int:
    from cpustudy import builds, tune, workloads
    from cpustudy.runner import RunSpec, plan
    from cpustudy.sweep import measuring

    w = workloads.get(args.workload)
    build_list = builds.parse_list(args.builds)
    batch_sizes = _int_list(args.batch_sizes, "--batch-sizes") if args.batch_sizes else None
    options = {} if args.augment is None else {"augment": args.augment}
    if args.rechecks < 0:
        raise UserError(f"--rechecks must be 0 or more, got {args.rechecks}")
    for b in build_list:  # every check before anything runs
        plan(RunSpec(workload=w, vcpus=args.vcpus, build=b.name, epochs=args.epochs,
                     steps_per_epoch=args.steps_per_epoch, data=args.data, options=options))
    err = _console(stderr=True)
    with measuring(args.db) as session:
        store, machine_id = session.store, session.machine_id
        for b in build_list:
            backend_tf = b.env.get("KERAS_BACKEND", "tensorflow") == "tensorflow"
            result = tune.tune(store, machine_id, w, args.vcpus, b.name, epochs=args.epochs,
                               steps_per_epoch=args.steps_per_epoch, confirm=args.confirm, rechecks=args.rechecks,
                               batch_sizes=batch_sizes, data=args.data, backend_tf=backend_tf,
                               pinned_by_build=tune.pinned_dimensions(b), options=options,
                               progress=lambda line: err.print("  " + line))
            head = f"{w.name} {b.name} {args.vcpus} vCPU(s): "
            if result["rejected_by_confirmation"]:
                print(head + f"the search's fastest ({result['search_winner']}) did not beat the default by 3 % "
                      f"in the paired confirmation (ratios {result['gain_low']:.2f}-{result['gain_high']:.2f}): "
                      "keeping the default (gain 1.00x)")
            elif not result["changed"]:
                print(head + f"no setting beat the default by 3 % or more in {result['trials']} trials "
                      "(gain 1.00x)")
            elif result["gain"] is None:
                print(head + f"fastest in the search: {result['label']}, but its confirmation runs failed "
                      "(gain unknown)")
            else:
                print(head + f"fastest {result['label']}: {result['gain']:.2f}x the default (range "
                      f"{result['gain_low']:.2f}-{result['gain_high']:.2f} over {result['confirmed_pairs']} "
                      "paired repeats)")
    return 0


def _int_list(text: str, flag: str) -> list[int]:
    try:
        values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise UserError(f"{flag}: give whole numbers separated by commas, e.g. 32,64,128") from None
    if not values or min(values) <= 0:
        raise UserError(f"{flag}: give positive whole numbers separated by commas, e.g. 32,64,128")
    return values


def cmd_bench_overhead(args: argparse.Namespace) -> int:
    import statistics

    from cpustudy import bench, machine, workloads
    from cpustudy.runner import RunSpec, plan
    from cpustudy.sweep import measuring

    wls = workloads.parse_list(args.workloads)
    if args.epochs < 2:
        raise UserError("--epochs must be 2 or more: the first epoch is a warm-up, the rest are timed")
    topo = machine.read_topology()
    vcpus = args.vcpus or topo.logical
    configs = [plan(RunSpec(workload=w, vcpus=vcpus, build=args.build, epochs=args.epochs,
                            steps_per_epoch=args.steps_per_epoch, data="synthetic", measure_peak=False,
                            validation="none"), topo)  # the plain Keras side does not validate
               for w in wls]
    err = _console(stderr=True)
    rows = []
    with measuring(args.db) as session:
        store, machine_id = session.store, session.machine_id
        for config in configs:
            config["study"] = "bench-overhead"
            try:
                res = bench.overhead(store, machine_id, config, args.rounds,
                                     progress=partial(_say, err, f"  {config['workload']} "))
            except RuntimeError as exc:
                raise UserError(f"{config['workload']}: {exc}") from None
            low, high = res.interval()
            rows.append({"workload": res.workload, "vcpus": res.vcpus,
                         "cpustudy_epoch_s": statistics.median(res.cpustudy_s),
                         "plain_keras_epoch_s": statistics.median(res.plain_s),
                         "ratio": res.ratio, "ci95_low": low, "ci95_high": high,
                         "ratio_min": min(res.ratios), "ratio_max": max(res.ratios), "rounds": args.rounds})
    return _emit_rows(args, rows, list(rows[0]), "cpustudy epoch time / plain Keras fit (1.00 = no overhead; median over rounds, 95 % bootstrap interval)")


def cmd_builds_list(args: argparse.Namespace) -> int:
    from cpustudy import builds, machine
    from cpustudy.runner import probe_software

    m = machine.collect(use_cpuinfo=False)
    cpu_isa = {f.upper() for f, on in m.isa.items() if on}
    rows = []
    for b in builds.all_builds().values():
        ready, why = b.readiness(set(m.flags))
        row: dict[str, Any] = {"build": b.name, "kind": b.kind, "ready": ready, "status": why,
                               "description": b.description}
        if ready and not args.no_probe:
            sw = probe_software(b.python, b.worker_env())
            if sw.get("error"):
                row.update(ready=False, status=f"probe failed: {sw['error']}")
            else:
                missing = set((sw.get("tf_missing_isa") or "").split())
                row.update(
                    tf=sw.get("tf_version"), keras=sw.get("keras_version"), backend=sw.get("keras_backend"),
                    onednn=sw.get("onednn"),
                    tf_not_compiled_for=" ".join(sorted(missing)) if sw.get("tf_isa_report") else
                    ("n/a" if sw.get("tf_version") is None else "nothing reported"),
                    cpu_offers=" ".join(sorted(cpu_isa)),
                )
        rows.append(row)
    columns = ["build", "kind", "ready", "tf", "keras", "backend", "onednn", "tf_not_compiled_for", "status"]
    if args.format != "table":
        columns = list(dict.fromkeys(columns + ["cpu_offers", "description"]))
    else:
        print(f"this CPU offers: {' '.join(sorted(cpu_isa))}")
    return _emit_rows(args, rows, columns, "builds")


def cmd_builds_setup(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cpustudy import builds

    b = builds.load(args.name)
    builds.setup(b, wheel=Path(args.wheel) if args.wheel else None, dry_run=args.dry_run,
                 log=lambda line: print(line, file=sys.stderr))
    if not args.dry_run and b.kind != "project":
        print(f"build {b.name} is ready in {b.home}")
    return 0


def cmd_builds_image(args: argparse.Namespace) -> int:
    from cpustudy import images

    if args.name not in images.IMAGES:
        raise UserError(f"unknown image {args.name!r}: choose one of {', '.join(images.IMAGES)}")
    return images.build_image(args.name, march=args.march, tag=args.tag, tf_version=args.tf_version,
                              context=None, dry_run=args.dry_run)


def cmd_results(args: argparse.Namespace) -> int:
    from cpustudy.analysis import results
    from cpustudy.store import Store

    columns: Sequence[str]
    with Store.read(args.db) as store:
        if args.per_epoch:
            rows, columns, title = results.epoch_rows(store), results.EPOCH_COLUMNS, "epochs"
        else:
            rows, columns, title = results.run_rows(store), results.RUN_COLUMNS, "runs"
    if args.format == "table" and not args.per_epoch:
        columns = results.TABLE_COLUMNS
    return _emit_rows(args, rows, list(columns), f"{title} in {args.db or 'the database'}")


def _emit_rows(args: argparse.Namespace, rows: list[dict[str, Any]], columns: list[str], title: str) -> int:
    from cpustudy.analysis import results

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


def _add_settings_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                   help="train on the CPUs (default) or on a GPU, for the baseline")
    p.add_argument("--input", choices=("numpy", "tfdata"), default="numpy",
                   help="input pipeline: NumPy arrays into fit (the study's way, default) or a cached, "
                   "shuffled, prefetched tf.data pipeline")
    p.add_argument("--warmup-steps", type=int, default=0, metavar="N",
                   help="untimed training steps before the first epoch (default: 0; the first epoch is "
                   "always flagged warm-up)")


def _add_measure_args(p: argparse.ArgumentParser) -> None:
    _add_settings_args(p)
    p.add_argument("--augment", choices=("host", "model", "none"), default=None,
                   help="cifar10_cnn: where the real-time augmentation runs: host = in the input pipeline "
                   "on host threads (default, as the study's ImageDataGenerator), model = as Keras layers on "
                   "the training device, none")
    p.add_argument("--no-augment", dest="augment", action="store_const", const="none",
                   help="cifar10_cnn: train without real-time augmentation (= --augment none)")
    p.add_argument("--validation", choices=("study", "none"), default="study",
                   help="validate on the test set after every epoch as the study's examples did, timed apart "
                   "from training (default: study), or not at all")
    p.add_argument("--timeout", type=positive_int, metavar="SECONDS",
                   help="fail a measurement after this many seconds (a sweep records it and goes on)")


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
    p.add_argument("--check", action="store_true",
                   help="also check whether the machine is quiet: load, busy processes, governor, SMT, turbo")
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
    p.add_argument("--build", default="tf", help="build to measure (default: tf; see `cpustudy builds list`)")
    _add_measure_args(p)
    _add_db(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("sweep", help="measure the grid workloads x builds x vCPUs x repeats (resumable)")
    p.add_argument("--vcpus", default="auto", help="comma-separated vCPU counts, or auto = 1,2,4,... "
                   "up to this machine's CPUs (default: auto)")
    p.add_argument("--builds", default="tf", help="comma-separated builds (default: tf)")
    p.add_argument("--workloads", default="all", help="comma-separated workloads, or all (default: all)")
    p.add_argument("--epochs", type=positive_int, help="epochs per cell (default: the study's)")
    p.add_argument("--steps-per-epoch", type=positive_int,
                   help="cap steps per epoch; full-epoch times are then projected and labelled so")
    p.add_argument("--batch-size", type=positive_int, help="batch size (default: each workload's)")
    p.add_argument("--repeats", type=positive_int, default=1, help="measurements per cell (default: 1)")
    p.add_argument("--data", choices=("auto", "real", "synthetic"), default="auto",
                   help="data source (default: auto = real when cached, else synthetic)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--oversubscribe", action="store_true",
                   help="allow more vCPUs than this machine has (stored as oversubscribed)")
    _add_measure_args(p)
    p.add_argument("--tuned", action="store_true",
                   help="use the setting `cpustudy tune` found for each workload, build and vCPU count")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated time; run nothing")
    p.add_argument("--fresh", action="store_true", help="measure every cell again, even those already ok")
    _add_db(p)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("tune", help="search threads, oneDNN, XLA and input pipeline for the fastest setting")
    p.add_argument("workload", help="workload name (see `cpustudy workloads`)")
    p.add_argument("--vcpus", type=positive_int, required=True, help="vCPUs to tune for")
    p.add_argument("--builds", default="tf", help="comma-separated builds to tune (default: tf)")
    p.add_argument("--batch-sizes", metavar="LIST",
                   help="also try these batch sizes (a different batch size is a different workload setting)")
    p.add_argument("--epochs", type=positive_int, default=3, help="epochs per trial (default: 3)")
    p.add_argument("--steps-per-epoch", type=positive_int, default=20, help="steps per trial epoch (default: 20)")
    p.add_argument("--confirm", type=positive_int, default=3,
                   help="paired default-vs-best repeats that give the gain and its spread (default: 3)")
    p.add_argument("--rechecks", type=int, default=1, metavar="N",
                   help="more runs of a candidate (and of the best) whose first trial is close or faster (default: 1)")
    p.add_argument("--data", choices=("auto", "real", "synthetic"), default="synthetic",
                   help="data source (default: synthetic)")
    p.add_argument("--augment", choices=("host", "model", "none"), default=None,
                   help="cifar10_cnn: where its augmentation runs in every trial (default: host)")
    _add_db(p)
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("bench", help="benchmarks of cpustudy itself")
    bsub = p.add_subparsers(dest="bench_command", metavar="ACTION", parser_class=Parser, required=True)
    q = bsub.add_parser("overhead", help="cpustudy's epoch time against a plain Keras fit, interleaved")
    q.add_argument("--workloads", default="mnist_mlp,cifar10_cnn", help="default: mnist_mlp,cifar10_cnn")
    q.add_argument("--vcpus", type=positive_int, help="vCPUs (default: all this process may use)")
    q.add_argument("--build", default="tf", help="build (default: tf)")
    q.add_argument("--epochs", type=positive_int, default=6, help="epochs per run, the first untimed (default: 6)")
    q.add_argument("--steps-per-epoch", type=positive_int, default=60, help="steps per epoch (default: 60)")
    q.add_argument("--rounds", type=positive_int, default=6, help="interleaved rounds (default: 6)")
    _add_format(q)
    _add_db(q)
    q.set_defaults(func=cmd_bench_overhead)

    p = sub.add_parser("builds", help="TensorFlow/Keras builds: list, set up, build images")
    bsub = p.add_subparsers(dest="builds_command", metavar="ACTION", parser_class=Parser, required=True)
    q = bsub.add_parser("list", help="every build, whether it is ready here, and what TF reports of it")
    q.add_argument("--no-probe", action="store_true", help="do not start each build's TensorFlow")
    _add_format(q)
    q.set_defaults(func=cmd_builds_list)
    q = bsub.add_parser("setup", help="make a build's environment (venv or overlay) in the user cache")
    q.add_argument("name", help="build name (see `cpustudy builds list`)")
    q.add_argument("--wheel", metavar="PATH", help="for `source`: the wheel built with builds/build_tensorflow.sh")
    q.add_argument("--dry-run", action="store_true", help="print the commands; run nothing")
    q.set_defaults(func=cmd_builds_setup)
    q = bsub.add_parser("image", help="run (or print) the docker build command for an image in docker/")
    q.add_argument("name", help="image: cpu-pip, cpu-compiled or gpu")
    q.add_argument("--march", help="cpu-compiled: the -march target, e.g. x86-64-v4, znver4, native")
    q.add_argument("--tag", help="image tag (default: cpustudy:NAME[-MARCH])")
    q.add_argument("--tf", dest="tf_version", help="TensorFlow version to build (default: the project's)")
    q.add_argument("--dry-run", action="store_true", help="print the command; run nothing")
    q.set_defaults(func=cmd_builds_image)

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
