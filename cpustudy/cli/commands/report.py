"""``cpustudy report``: summary.csv, charts and an HTML/Markdown page from the stored runs."""

from __future__ import annotations

import argparse
from pathlib import Path

import cpustudy.cli.args as a


def register(sub: a.Subparsers) -> None:
    p = sub.add_parser(
        "report",
        help="charts, summary.csv and an HTML/Markdown report: time and cost relative to a baseline",
        description="Turn stored results into summary.csv, charts (PNG and SVG), index.html (self-contained) "
        "and report.md. Time and cost are relative to --baseline; cost = measured time x the instance "
        "price (the 2017 study's results use the 2017 rates).",
    )
    a.add_db(p)
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
                   help="instances that price CPU results measured on machines of your own, e.g. gcp:c3-highcpu, "
                   "gcp:n2-highcpu, gcp:t2d-standard, aws:c7i; the instance with as many vCPUs, or the next "
                   "larger, as the report states (default: the cheapest priced cloud family that runs the CPU the "
                   "runs were measured on, see `cpustudy machine`; where none is known or priced, gcp:n2-highcpu; "
                   "runs measured on a cloud VM are priced as that VM)")
    p.add_argument("--region", help="price region within the family (default: us-central1 on gcp, us-east-1 on "
                   "aws, else the catalog's first)")
    p.add_argument("--gpu-instance", metavar="PROVIDER:INSTANCE_TYPE",
                   help="instance that prices GPU results, e.g. gcp:g2-standard-4 (default: the single-GPU "
                   "instance with the GPU the run reported, of --instance-family's provider, else of gcp)")
    p.add_argument("--on-demand", action="store_true", help="on-demand rates (default: spot/preemptible)")
    p.add_argument("--deadline", type=a.duration, metavar="DURATION",
                   help="find the cheapest configuration whose full training bills at most DURATION (start-up, "
                   "epochs, validation; e.g. 90s, 10m, 1h30m, or seconds)")
    p.add_argument("--study", metavar="NAME", help="report only this study (e.g. woolf2017 or cpustudy)")
    p.add_argument("--dpi", type=a.dpi, default=110, help="PNG resolution, 30 to 600 (default: 110)")
    p.add_argument("--no-svg", action="store_true", help="write PNG charts only")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.analysis.summary import Options
    from cpustudy.cli.output import say, status
    from cpustudy.report.build import build_report

    opts = Options(baseline=args.baseline, prices=args.prices, instance_family=args.instance_family,
                   region=args.region, on_demand=args.on_demand, deadline=args.deadline, study=args.study,
                   gpu_instance=args.gpu_instance)
    formats = ("png",) if args.no_svg else ("png", "svg")
    with status("reading the runs", plain="report") as progress:  # a log or CI gets plain lines
        built = build_report(args.db, opts, Path(args.out) if args.out else None, dpi=args.dpi, formats=formats,
                             progress=progress)
    for note in built.notes:
        say(f"note: {note}", err=True)
    say(f"wrote {built.out / 'index.html'}, {built.out / 'report.md'}, {built.out / 'summary.csv'} and "
        f"{built.charts} charts ({' + '.join(f.upper() for f in formats)})")
    return 0
