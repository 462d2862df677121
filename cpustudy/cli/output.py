"""Printing: rich consoles, tables in table/csv/json, and progress bars for long work."""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

    from cpustudy.measure.execute import RunOutcome
    from cpustudy.measure.sweep import Cell

T = TypeVar("T")


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    out = Console(stderr=stderr, highlight=False)
    if not out.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        out = Console(stderr=stderr, highlight=False, width=220)  # pipes and files: wide, unless COLUMNS says
    return out


@contextlib.contextmanager
def status(first: str, *, plain: str | None = None) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr for work of a few seconds; yields a function that says what it does now.

    Where stderr is not a terminal (a log, CI) a spinner shows nothing; with ``plain`` (the command's name)
    the work is said there in plain lines instead (:class:`PlainProgress`)."""
    err = console(stderr=True)
    if plain is not None and not err.is_terminal:
        with PlainProgress(plain, first) as progress:
            yield progress.update
        return
    with err.status(first) as spinner:
        yield lambda text: spinner.update(text)


class PlainProgress:
    """Progress as plain lines on stderr, for a log: ``report: [3 s] rendering fig into out/``. Nothing is said
    for work done within ``quiet_s`` (a refused input stays one line); then what it does now, each new stage
    as it comes, at most one line every ``every_s`` (a stage shorter than that is passed over for the next)."""

    def __init__(self, name: str, first: str, *, quiet_s: float = 2.0, every_s: float = 1.0,
                 write: Callable[[str], None] | None = None) -> None:
        import threading
        import time

        self.name, self.text, self.quiet_s, self.every_s = name, first, quiet_s, every_s
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.clock = time.monotonic
        self.start = self.clock()
        self.said: str | None = None
        self.said_at = -float("inf")
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> "PlainProgress":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def update(self, text: str) -> None:
        with self.lock:
            self.text = text
        self.tick()

    def tick(self) -> None:
        """Say the current stage if it is new, the quiet start is over and the last line is old enough."""
        with self.lock:
            now = self.clock()
            if self.text == self.said or now - self.start < self.quiet_s or now - self.said_at < self.every_s:
                return
            self.said, self.said_at = self.text, now
            self.write(f"{self.name}: [{now - self.start:.0f} s] {self.text}")

    def _watch(self) -> None:
        while not self.stop.wait(0.2):
            self.tick()


def say(text: str, err: bool = False) -> None:
    print(text, file=sys.stderr if err else sys.stdout, flush=True)


def emit_rows(args: argparse.Namespace, rows: Sequence[dict[str, Any]], columns: list[str], title: str,
              note: str | None = None) -> int:
    """``rows`` as ``--format`` asks (a command with ``--format``); ``note``: a line under the table."""
    fmt = getattr(args, "format", "table")
    if fmt == "csv":
        sys.stdout.write(to_csv(rows, columns))
    elif fmt == "json":
        sys.stdout.write(to_json(rows, columns))
    else:
        print_table(rows, title, columns, formats=hasattr(args, "format"), note=note)
    return 0


def print_table(rows: Sequence[dict[str, Any]], title: str, columns: Sequence[str] | None = None, *,
                formats: bool = False, note: str | None = None) -> None:
    """``rows`` as a table of the columns that fit the terminal (or ``COLUMNS``), most important first.
    ``formats``: the command has ``--format csv|json`` (commands that print through ``emit_rows``)."""
    from cpustudy.cli.table import render

    out = console()
    out.print(render(rows, list(columns or (rows[0] if rows else [])), out.width, cell, title=title,
                     formats=formats, note=note))


def epoch_line(event: dict[str, Any], total: int) -> str:
    acc = event.get("accuracy")
    return (f"  epoch {event['epoch']}/{total}: {event['elapsed_s']:.3f} s, "
            f"{event['samples_per_s']:,.0f} samples/s, loss {event['loss']:.4f}"
            + (f", acc {acc:.4f}" if acc is not None else "")
            + (f"; validation {event['validation_s']:.3f} s" if event.get("validation_s") is not None else "")
            + (f", val_acc {event['val_accuracy']:.4f}" if event.get("val_accuracy") is not None else "")
            + (f"; GPU busy {event['gpu_util']:.0f} %" if event.get("gpu_util") is not None else "")
            + (" (warm-up)" if event.get("warmup") else ""))


def with_epoch_progress(measure: Callable[[Callable[[str, Any], None]], T], total: int, out: Console) -> T:
    """Run ``measure(listener)`` under a progress bar of ``total`` epochs, printing each epoch."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from cpustudy.worker import protocol

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} epochs"),
                  TimeElapsedColumn(), console=out, transient=True) as progress:
        task = progress.add_task("starting worker", total=total)

        def listener(kind: str, event: Any) -> None:
            if kind == protocol.SOFTWARE:
                progress.update(task, description="preparing data")
            elif kind == protocol.TRAIN_START:
                progress.update(task, description="training")
            elif kind == protocol.EPOCH:
                progress.advance(task)
                progress.console.print(epoch_line(event, total))

        return measure(listener)


def with_cell_progress(run: Callable[..., T], n: int, out: Console) -> T:
    """Run ``run(on_start=..., on_done=...)`` over ``n`` sweep cells under a progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.progress import TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=out) as bar:
        task = bar.add_task("sweep", total=n)

        def on_start(i: int, cell: Cell) -> None:
            bar.update(task, description=cell.label)

        def on_done(i: int, cell: Cell, outcome: RunOutcome) -> None:
            bar.advance(task)
            if outcome.status == "ok":
                s = outcome.summary
                bar.console.print(f"  ok     {cell.label}: epoch {s['epoch_time_s']:.2f} s"
                                  + (" (projected)" if s.get("projected") else "")
                                  + f", {s['samples_per_s']:,.0f} samples/s")
            else:
                bar.console.print(f"  FAILED {cell.label}: {outcome.error}")

        return run(on_start=on_start, on_done=on_done)


def print_errors(args: argparse.Namespace, failed: Sequence[dict[str, Any]]) -> int:
    """Failed runs, each with its whole error text (csv/json: as rows)."""
    if getattr(args, "format", "table") != "table":
        return emit_rows(args, failed, list(failed[0]) if failed else ["run_id", "error"], "failed runs")
    if not failed:
        print("no failed runs")
    for f in failed:
        print(f"run {f['run_id']}: {f['workload']} {f['build']} {f['vcpus']} vCPU(s) on {f['device']}, {f['created_at']}"
              + (" (interrupted, not a failed measurement: a sweep does not count it as failed and measures it "
                 "again)" if f.get("interrupted") else ""))
        print("  " + f["error"].replace("\n", "\n  "))
    return 0


def cell(value: object) -> str:
    """A value as a table or CSV shows it: empty for None, yes/no, 4 significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def to_csv(rows: Iterable[Mapping[str, object]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
    return buf.getvalue()


def to_json(rows: Iterable[Mapping[str, object]], columns: Sequence[str]) -> str:
    return json.dumps([{k: row.get(k) for k in columns} for row in rows], indent=2, default=str) + "\n"
