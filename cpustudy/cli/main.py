"""``cpustudy``: the parser (every command registers itself) and ``main``, which prints every user
error once, as one line, with exit code 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn, Sequence

from cpustudy import __version__
from cpustudy.cli.args import PROG
from cpustudy.errors import UserError


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a one-line ``UserError`` naming the help to read."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> Parser:
    from cpustudy.cli.commands import COMMANDS

    parser = Parser(
        prog=PROG,
        description="Measure which CPU configuration (vCPUs, TensorFlow/Keras build) trains a "
        "deep-learning workload fastest and cheapest, and how it compares with a GPU.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
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
