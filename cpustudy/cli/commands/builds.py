"""``cpustudy builds list|setup|image``: TensorFlow/Keras builds and their container images."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cpustudy.cli.args import add_format
from cpustudy.cli.args import Subparsers

COLUMNS = ["build", "kind", "ready", "tf", "keras", "backend", "onednn", "tf_not_compiled_for", "status"]


def register(sub: Subparsers) -> None:
    p = sub.add_parser("builds", help="TensorFlow/Keras builds: list, set up, build images")
    bsub = p.add_subparsers(dest="builds_command", metavar="ACTION", parser_class=type(p), required=True)
    q = bsub.add_parser("list", help="every build, whether it is ready here, and what TF reports of it")
    q.add_argument("--no-probe", action="store_true", help="do not start each build's TensorFlow")
    add_format(q)
    q.set_defaults(func=run_list)
    q = bsub.add_parser("setup", help="make a build's environment (venv or overlay) in the user cache")
    q.add_argument("name", help="build name (see `cpustudy builds list`)")
    q.add_argument("--wheel", metavar="PATH", help="for `source`: the wheel built with builds/build_tensorflow.sh")
    q.add_argument("--dry-run", action="store_true", help="print the commands; run nothing")
    q.set_defaults(func=run_setup)
    q = bsub.add_parser("image", help="run (or print) the docker build command for an image in docker/")
    q.add_argument("name", help="image: cpu-pip, cpu-compiled or gpu")
    q.add_argument("--march", help="cpu-compiled: the -march target, e.g. x86-64-v3, x86-64-v4, znver4, native")
    q.add_argument("--tag", help="image tag (default: cpustudy:NAME[-MARCH])")
    q.add_argument("--tf", dest="tf_version", help="TensorFlow version to build (default: the project's)")
    q.add_argument("--engine", choices=("docker", "podman"), default="docker",
                   help="docker (default: a Docker engine, or podman's Docker API through DOCKER_HOST) or "
                   "podman (podman build --format docker)")
    q.add_argument("--dry-run", action="store_true", help="print the command; run nothing")
    q.set_defaults(func=run_image)


def run_list(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import emit_rows, status
    from cpustudy.environment.describe import builds_table

    with status("checking builds") as progress:
        rows, cpu_isa = builds_table(probe=not args.no_probe, progress=progress)
    columns = COLUMNS
    if args.format != "table":
        columns = list(dict.fromkeys(COLUMNS + ["cpu_offers", "description"]))
    else:
        print(f"this CPU offers: {cpu_isa}")
    return emit_rows(args, rows, columns, "builds")


def run_setup(args: argparse.Namespace) -> int:
    from cpustudy.environment import builds

    b = builds.load(args.name)
    builds.setup(b, wheel=Path(args.wheel) if args.wheel else None, dry_run=args.dry_run,
                 log=lambda line: print(line, file=sys.stderr))
    if not args.dry_run and b.kind != "project":
        print(f"build {b.name} is ready in {b.home}")
    return 0


def run_image(args: argparse.Namespace) -> int:
    from cpustudy.environment import images

    return images.build_image(args.name, march=args.march, tag=args.tag, tf_version=args.tf_version,
                              context=None, dry_run=args.dry_run, engine=args.engine)
