"""The ``report``, ``import`` and ``merge`` commands.

Light at import time: pandas, plotnine and matplotlib are imported inside the command functions, so
``cpustudy --help`` stays fast. ``register(sub)`` adds the commands to ``cli.build_parser``'s
subparsers; every user error is a ``UserError`` (one line, exit code 2), printed by ``cli.main``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from cpustudy.errors import UserError
from cpustudy.cli import _add_db, positive_int  # noqa: E402  (cli imports us lazily)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def _say(text: str, err: bool = False) -> None:
    print(text, file=sys.stderr if err else sys.stdout, flush=True)


# -- commands --------------------------------------------------------------------------------------


def default_report_dir(db_path: Path, studies: list[str]) -> Path:
    """``reports/<study>/`` when the report holds one imported study (e.g. woolf2017), else
    ``reports/<database file stem>/``."""
    name = studies[0] if len(studies) == 1 and studies[0] != "cpustudy" else (db_path.stem or "report")
    return Path("reports") / name


def cmd_report(args: argparse.Namespace) -> int:
    from cpustudy import report
    from cpustudy.analysis import summary
    from cpustudy.store import Store

    opts = summary.Options(
        baseline=args.baseline,
        prices=args.prices,
        instance_family=args.instance_family,
        region=args.region,
        on_demand=args.on_demand,
        deadline=args.deadline,
        study=args.study,
        gpu_instance=args.gpu_instance,
    )
    with Store.read(args.db) as store:
        result = summary.analyze(store, opts)
        out = Path(args.out) if args.out else default_report_dir(Path(store.path), result.studies)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file: give a folder for the report")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the report folder {out} ({exc.strerror})") from None
    _say(f"{len(result.summary)} configurations from {len(result.runs)} runs; rendering charts into {out}/",
         err=True)
    formats = ("png",) if args.no_svg else ("png", "svg")
    try:
        written = report.write_report(result, out, dpi=args.dpi, formats=formats)
    except OSError as exc:
        raise UserError(f"cannot write the report into {out} ({exc.strerror or exc})") from None
    for (study, workload), b in result.baselines.items():
        if b.kind == "fallback":
            _say(f"note: {study} {workload}: fallback baseline {b.label} ({b.note})", err=True)
    for note in result.notes:
        _say(f"note: {note}", err=True)
    _say(f"wrote {out / 'index.html'}, {out / 'report.md'}, {out / 'summary.csv'} and "
         f"{len(written['charts'])} charts ({' + '.join(f.upper() for f in formats)})")
    return 0


def cmd_import_woolf2017(args: argparse.Namespace) -> int:
    from cpustudy import woolf2017
    from cpustudy.store import Store

    logs = woolf2017.read_logs(args.logs_dir)  # every file checked before the database is touched
    with Store.open(args.db) as store:
        r = woolf2017.write_logs(store, logs)
        path = store.path
    for s in r.skipped:
        _say(f"note: skipped {s}", err=True)
    _say(
        f"imported {r.added} run(s) with {r.epochs} epochs from {r.logs_dir} into {path} "
        f"(study {woolf2017.STUDY}, {len(r.workloads)} workloads)"
        + (f"; {r.present} already imported" if r.present else "")
    )
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from cpustudy import merge
    from cpustudy.store import Store

    merge.open_other(args.other).close()  # refuse a bad file before creating or touching --db
    with Store.open(args.db) as store:
        r = merge.merge(store, args.other)
        path = store.path
    if r.runs_unfinished:
        _say(f"note: skipped {r.runs_unfinished} run(s) still running in {r.other}; merge again once they "
             "finish", err=True)
    _say(
        f"merged {r.runs_added} run(s) with {r.epochs_added} epochs and {r.machines_added} new machine(s) "
        f"from {r.other} into {path}"
        + (f"; {r.runs_present} run(s) were already there" if r.runs_present else "")
    )
    return 0


# -- parser ----------------------------------------------------------------------------------------


def register(sub: Any) -> None:
    """Add ``report``, ``import`` and ``merge`` to ``cpustudy``'s subparsers."""
    p = sub.add_parser(
        "report",
        help="charts, summary.csv and an HTML/Markdown report: time and cost relative to a baseline",
        description="Turn stored results into summary.csv, charts (PNG and SVG), index.html (self-contained) "
        "and report.md. Time and cost are relative to --baseline; cost = measured time x the instance "
        "price (the 2017 study's results use the 2017 rates).",
    )
    _add_db(p)
    p.add_argument("--out", metavar="DIR",
                   help="folder to write into (default: reports/<study>/ for one imported study such as "
                   "woolf2017, else reports/<database file name>/)")
    p.add_argument("--baseline", metavar="gpu|BUILD@VCPUS",
                   help="what 1.0x is: gpu, or a CPU configuration such as tf@1 (default: the GPU run of "
                   "each workload, else the stock build at the fewest vCPUs, labelled as a fallback)")
    p.add_argument("--prices", metavar="FILE",
                   help="CSV of prices that extends the shipped catalog (same columns; a row with the same "
                   "provider, instance_type and region replaces the shipped one)")
    p.add_argument("--instance-family", metavar="PROVIDER:FAMILY",
                   help="instances that price CPU results, e.g. gcp:c3-highcpu, gcp:n2-highcpu, "
                   "gcp:t2d-standard, aws:c7i (default: gcp:n2-highcpu); the instance with as many vCPUs, "
                   "or the next larger, as the report states")
    p.add_argument("--region", help="price region within the family (default: the catalog's first)")
    p.add_argument("--gpu-instance", metavar="PROVIDER:INSTANCE_TYPE",
                   help="instance that prices GPU results, e.g. gcp:g2-standard-4 (default: the single-GPU "
                   "instance of the family's provider with the GPU the run reported)")
    p.add_argument("--on-demand", action="store_true", help="on-demand rates (default: spot/preemptible)")
    p.add_argument("--deadline", type=_positive_float, metavar="SECONDS",
                   help="find the cheapest configuration whose full training takes at most SECONDS")
    p.add_argument("--study", metavar="NAME", help="report only this study (e.g. woolf2017 or cpustudy)")
    p.add_argument("--dpi", type=positive_int, default=110, help="PNG resolution (default: 110)")
    p.add_argument("--no-svg", action="store_true", help="write PNG charts only")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("import", help="import results published elsewhere (the 2017 study's logs)",
                       description="Import published results as a study of their own.")
    isub = p.add_subparsers(dest="source", metavar="SOURCE", parser_class=type(p))
    isub.required = True
    w = isub.add_parser(
        "woolf2017",
        help="Max Woolf's 2017 per-epoch logs (gpu/, cpu-pip/cpuN/, cpu-compiled/cpuN/)",
        description="Import the per-epoch logs of 'Benchmarking TensorFlow on Cloud CPUs' (Woolf, 2017) as "
        "study woolf2017: one run per log file, one epoch row per line, in one transaction. Importing the "
        "same logs again adds nothing.",
    )
    w.add_argument("logs_dir", metavar="LOGS_DIR", help="the study's logs/ folder (or the folder holding it)")
    _add_db(w)
    w.set_defaults(func=cmd_import_woolf2017)

    p = sub.add_parser(
        "merge",
        help="merge results measured elsewhere (another cpustudy database) into this one",
        description="Add the runs, epochs and machines of OTHER that this database lacks (runs are matched "
        "by uuid, machines by fingerprint), in one transaction. Merging the same file twice adds nothing.",
    )
    p.add_argument("other", metavar="OTHER.sqlite", help="the cpustudy database to merge in (read only)")
    _add_db(p)
    p.set_defaults(func=cmd_merge)
