"""``cpustudy``: the parser (every command registers itself) and ``main``, which prints every user
error once, as one line, with exit code 2."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import Any, Iterator, NoReturn, Sequence

from cpustudy import __version__
from cpustudy.cli.args import PROG
from cpustudy.errors import Terminated, UserError


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


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def _stopped_like_ctrl_c() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Terminated` (a ``KeyboardInterrupt``) while a command runs, so
    they end it as Ctrl-C does; the previous handlers come back afterwards. Only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _terminate) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def main(argv: Sequence[str] | None = None) -> int:
    with _stopped_like_ctrl_c():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
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
    except Terminated as exc:
        print(f"{PROG}: stopped by {exc.name} (what was measured so far is stored; a run in progress is marked "
              "interrupted, and the same command measures it again)", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted (what was measured so far is stored)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
