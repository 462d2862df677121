"""``cpustudy machine``: this machine's CPU, instruction sets, topology, state and TensorFlow build."""

from __future__ import annotations

import argparse
import json
import sys

from cpustudy.cli.args import add_format
from cpustudy.cli.args import Subparsers


def register(sub: Subparsers) -> None:
    p = sub.add_parser("machine", help="this machine: CPU, instruction sets, topology, TF build")
    p.add_argument("--no-probe", action="store_true", help="do not start TensorFlow to read its build")
    p.add_argument("--check", action="store_true",
                   help="also check whether the machine is quiet: load, busy processes, governor, SMT, turbo")
    add_format(p, ("table", "json"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import console, status
    from cpustudy.environment.describe import describe_machine

    with status("reading the machine") as progress:
        info, lines = describe_machine(check=args.check, probe=not args.no_probe, progress=progress)
    if args.format == "json":
        sys.stdout.write(json.dumps(info, indent=2, default=str) + "\n")
        return 0
    out = console()
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        out.print(f"{k:<{width}}  {v}")
    return 0
