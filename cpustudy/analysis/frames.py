"""Typed access to a DataFrame's rows for code that reads them one by one.

pandas-stubs types a record's keys as ``Hashable`` and a row's values as any scalar; the analysis's
frames always have string column names, so these give ``dict[str, object]`` records and rows (:class:`Row`)
whose cells are ``object``: the code checks or converts each where it reads it (:func:`number` reads one as a
number); :func:`run_records` reads a frame of stored runs (``load_runs``) as the runs it was made of.
"""

from __future__ import annotations

import math
from typing import Iterator, Protocol, SupportsFloat, SupportsIndex, SupportsInt, cast

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionDtype
from pandas.api.types import is_bool, is_float, is_integer

from cpustudy.store.rows import RunRow


class Row(Protocol):
    """One row of :func:`rows` (``df.itertuples()``): a named tuple, its cells read by column name (``Index`` first
    unless ``index=False``), each an ``object`` its reader checks."""

    def __getattr__(self, name: str, /) -> object: ...

    def _asdict(self) -> dict[str, object]: ...


def _native(value: object) -> object:
    """A cell as ``to_dict`` gives it from a column of objects or an extension type (pandas' ``maybe_box_native``):
    numpy numbers as Python's, datetimes as ``Timestamp``/``Timedelta``, ``pd.NA`` as None."""
    if is_float(value):
        return float(cast(SupportsFloat, value))
    if is_integer(value):
        return int(cast(SupportsInt, value))
    if is_bool(value):
        return bool(value)
    if isinstance(value, np.datetime64):
        return pd.Timestamp(value)
    if isinstance(value, np.timedelta64):
        return pd.Timedelta(value)
    return None if value is pd.NA else value


def records(df: pd.DataFrame) -> list[dict[str, object]]:
    """``df.to_dict("records")`` with string keys, cell for cell and type for type, a column at a time: pandas 3 takes
    each column as ``df.iloc[:, k]``, 5-15 ms for a frame of runs (119 columns) however few its rows, and the analysis
    reads such frames thousands of times in a rehearsal."""
    columns = df.columns.tolist()
    cells = []
    for _, column in df.items():
        values = list(column)  # numpy numbers as Python's, as to_dict's rows have them
        if column.dtype == object or isinstance(column.dtype, ExtensionDtype):
            values = [_native(v) for v in values]
        cells.append(values)
    if not cells:
        return [{} for _ in range(len(df))]
    return cast(list[dict[str, object]], [dict(zip(columns, row)) for row in zip(*cells)])


def run_records(df: pd.DataFrame) -> list[RunRow]:
    """The records of a frame made of ``Store.runs()`` rows (with the columns the analysis added, read by
    ``.get``): each a run's row, a missing number read as NaN (the code checks with ``pd.isna``)."""
    return cast(list[RunRow], records(df))


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
