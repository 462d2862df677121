"""Typed access to a DataFrame's rows for code that reads them one by one.

pandas-stubs types a record's keys as ``Hashable`` and a row's values as any scalar; the analysis's
frames always have string column names, so these give ``dict[str, object]`` records and rows (:class:`Row`)
whose cells are ``object``: the code checks or converts each where it reads it (:func:`number` reads one as a
number); :func:`run_records` reads a frame of stored runs (``load_runs``) as the runs it was made of.
"""

from __future__ import annotations

import math
from typing import Iterator, Protocol, SupportsFloat, SupportsIndex, SupportsInt, cast

import pandas as pd

from cpustudy.store.rows import RunRow


class Row(Protocol):
    """One row of :func:`rows` (``df.itertuples()``): a named tuple, its cells read by column name (``Index`` first
    unless ``index=False``), each an ``object`` its reader checks."""

    def __getattr__(self, name: str, /) -> object: ...

    def _asdict(self) -> dict[str, object]: ...


def records(df: pd.DataFrame) -> list[dict[str, object]]:
    """``df.to_dict("records")`` with string keys."""
    return cast(list[dict[str, object]], df.to_dict("records"))


def run_records(df: pd.DataFrame) -> list[RunRow]:
    """The records of a frame made of ``Store.runs()`` rows (with the columns the analysis added, read by
    ``.get``): each a run's row, a missing number read as NaN (the code checks with ``pd.isna``)."""
    return cast(list[RunRow], df.to_dict("records"))


def rows(df: pd.DataFrame, index: bool = True) -> Iterator[Row]:
    """``df.itertuples()``: one named tuple per row (:class:`Row`)."""
    return cast(Iterator[Row], df.itertuples(index=index))


def number(v: object) -> float:
    """A cell as a float (what ``float()`` makes of it); NaN where it holds none (None, NA, a list, a text that is
    no number)."""
    if not isinstance(v, (SupportsFloat, SupportsIndex, str, bytes, bytearray)):
        return math.nan  # what float() refuses with a TypeError
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def ids(v: object) -> tuple[int, ...]:
    """A cell of run ids (a summary row's ``run_ids``: a tuple of ints) as ints; none where it holds no sequence."""
    return tuple(int(i) for i in v if isinstance(i, SupportsInt)) if isinstance(v, (list, tuple)) else ()
