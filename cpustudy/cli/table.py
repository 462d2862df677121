"""Tables for a terminal: the columns that fit its width, in the order given (most important first),
numbers and names never cut; long text (errors, notes) folds onto more lines. What does not fit is
named under the table, with how to see it (``--format csv`` where the command has it, a wider terminal or
``COLUMNS``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from rich.table import Table

#: Text that may wrap onto more lines, and the narrowest each may be folded to.
FOLDING = {"error": 30, "suspect": 24, "status": 24, "description": 24, "tf_not_compiled_for": 16,
           "machine": 16, "cpu_model": 16, "note": 24, "price_note": 24, "cpu_offers": 16, "source": 30}


def _table(rows: Sequence[dict[str, Any]], columns: Sequence[str], cell: Callable[[Any], str],
           title: str | None = None, caption: str | None = None) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, header_style="bold", caption_justify="left")
    for c in columns:
        full = max([len(c)] + [len(cell(r.get(c))) for r in rows])
        if c in FOLDING:
            table.add_column(c, overflow="fold", min_width=min(FOLDING[c], full))
        else:
            table.add_column(c, no_wrap=True, min_width=full)
    for r in rows:
        table.add_row(*(cell(r.get(c)) for c in columns))
    return table


def fit(rows: Sequence[dict[str, Any]], columns: Sequence[str], width: int,
        cell: Callable[[Any], str]) -> tuple[list[str], list[str]]:
    """The columns shown at ``width`` (in the given order; the first always) and those left out,
    as rich measures the narrowest table it can draw."""
    from rich.console import Console

    measure = Console(width=100_000).measure  # unbounded: a measurement is clamped to the console width
    rows = _widest(rows, columns, cell)
    shown: list[str] = []
    left: list[str] = []
    for c in columns:
        if shown and measure(_table(rows, [*shown, c], cell)).minimum > width:
            left.append(c)
        else:
            shown.append(c)
    return shown, left


def _widest(rows: Sequence[dict[str, Any]], columns: Sequence[str],
            cell: Callable[[Any], str]) -> Sequence[dict[str, Any]]:
    """The rows that decide how narrow the table can be: per column, the one with the longest cell and
    the one with the longest word. Measuring these is measuring all rows, and fast for thousands."""
    if len(rows) <= 2 * len(columns):
        return rows
    keep: set[int] = set()
    for c in columns:
        texts = [cell(r.get(c)) for r in rows]
        keep.add(max(range(len(rows)), key=lambda i: len(texts[i])))
        keep.add(max(range(len(rows)), key=lambda i: max(map(len, texts[i].split()), default=0)))
    return [rows[i] for i in sorted(keep)]


def render(rows: Sequence[dict[str, Any]], columns: Sequence[str], width: int, cell: Callable[[Any], str],
           title: str | None = None, *, formats: bool = True, note: str | None = None) -> Table:
    """A rich table of ``rows`` that fits ``width``. ``formats``: the command has ``--format csv|json``
    (the footer suggests it only then); ``note``: a line under the table (a legend)."""
    shown, left = fit(rows, columns, width, cell)
    lines = [note] if note else []
    if left:
        how = "--format csv or json, or a wider terminal / COLUMNS=..." if formats else "a wider terminal / COLUMNS=..."
        lines.append(f"not shown at {width} columns: {', '.join(left)} (see them with {how})")
    return _table(rows, shown, cell, title=title, caption="\n".join(lines) or None)
