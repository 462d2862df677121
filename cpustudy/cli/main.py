"""``cpustudy``: the parser (every command registers itself) and ``main``, which prints every user
error once, as one line, with exit code 2."""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
import threading
from types import FrameType
from typing import Any, Iterator, NoReturn, Sequence

from cpustudy import __version__
from cpustudy.cli.args import PROG
from cpustudy.errors import Terminated, UserError

#: A value that starts as a negative quantity (``-5m``, ``-1h30m``, ``-1e3``, ``-.5``): argparse takes only plain
#: negative numbers (``-5``, ``-0.5``) for values, and the rest for unknown options ("expected one argument").
NEGATIVE = re.compile(r"-\.?\d")


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a one-line ``UserError`` naming the help to read."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see `{self.prog} --help`)")

    def _parse_optional(self, arg_string: str) -> Any:
        """argparse's, but a value such as ``--deadline -5m`` reaches the flag's type, which says what is wrong with
        it (a deadline must be positive) where argparse said "expected one argument" (no option looks like one)."""
        if NEGATIVE.match(arg_string) and not self._has_negative_number_optionals:
            return None  # a value, not an option
        return super()._parse_optional(arg_string)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """argparse's, but arguments no parser took are named against the (sub)command they were given to
        (`cpustudy backtest --help`, not `cpustudy --help`): argparse leaves them to the top parser to refuse."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self._given(parsed).error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed

    def _given(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The innermost (sub)command parser ``parsed`` was read by: this one, or a subcommand's (nested)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if chosen is not None:
                    return chosen._given(parsed) if isinstance(chosen, Parser) else chosen
        return self


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


def _terminate(signum: int, frame: FrameType | None) -> None:
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


def storage_problem(exc: BaseException, db: object) -> str | None:
    """One line for a database SQLite cannot read (a damaged page, a truncated file) or a full disk,
    naming the state and the way out; None for anything else. Nothing stored is lost either way: a
    run is committed as it goes, and a sweep resumes where it stopped."""
    import errno
    import sqlite3

    chain: list[BaseException] = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    where = str(db) if db else "the database"
    for e in chain:
        text = str(e)
        if (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "disk is full" in text:
            on = getattr(e, "filename", None) or where
            return (f"the disk is full ({e.strerror if isinstance(e, OSError) else text}): free space on the disk "
                    f"of {on}, then run the same command again (nothing stored is lost; a sweep resumes where it "
                    "stopped)")
    for e in chain:
        if isinstance(e, sqlite3.DatabaseError) and not isinstance(e, sqlite3.OperationalError):
            return (f"{where} is damaged ({e}): nothing was changed; use a backup or a `sweep --snapshot-to` "
                    f"copy, or recover what SQLite can read with `sqlite3 {where} .recover | sqlite3 NEW.sqlite`")
    return None


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args: argparse.Namespace | None = None
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
    except Exception as exc:  # a damaged database or a full disk: one line; anything else is a bug to see
        from cpustudy.store import default_path

        problem = storage_problem(exc, getattr(args, "db", None) or default_path())
        if problem is None:
            raise
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
