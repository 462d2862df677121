"""What a comparison knows of its database: read once when measuring starts, then added to run by run.

``compare``'s decision loop (:func:`cpustudy.measure.compare.decide`) builds its comparison again after every
measurement, from every stored run, their epochs, and this machine's checks. :class:`Known` reads those once; after
each measured run, :meth:`Known.learn` reads that run and its epochs back by its id (the only read per step), and
every later comparison is built from what it holds. It is read as a :class:`~cpustudy.store.Store` is
(:class:`Readable`, what the analysis readers take); every write still goes to the store, the only writer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Protocol

from cpustudy.store.rows import CheckRow, EpochRow, MachineRow, RunRow
from cpustudy.store.store import Store


class Readable(Protocol):
    """What runs can be read from: a :class:`~cpustudy.store.Store`, or what a comparison holds of one (:class:`Known`)."""

    @property
    def path(self) -> Path: ...

    def runs(self, *, run_ids: Iterable[int] | None = None, status: str | None = None,
             cell_keys: Iterable[str] | None = None) -> list[RunRow]: ...

    def epochs(self, run_ids: Iterable[int] | None = None) -> list[EpochRow]: ...

    def checks(self, machine_id: int | None = None) -> list[CheckRow]: ...

    def machines(self) -> list[MachineRow]: ...

    def count(self, table: str) -> int: ...


class Known:
    """The runs (every status), their epochs, the machines and the checks of ``store``, read once, read back as
    :class:`~cpustudy.store.Store` reads them (the same rows, in the same order, each a copy) and kept up to date run
    by run (:meth:`learn`). The checks and machines are as read: measuring writes neither (``--check``'s checks come
    after the decision, and what reads them then reads the store)."""

    def __init__(self, store: Store) -> None:
        self.store = store  # what :meth:`learn` reads back from
        self.path = store.path
        self._runs = {int(r["id"]): r for r in store.runs()}
        self._epochs: dict[int, list[EpochRow]] = {}
        for e in store.epochs():
            self._epochs.setdefault(int(e["run_id"]), []).append(e)
        self._machines = store.machines()
        self._checks = store.checks()

    def learn(self, run_id: int) -> RunRow | None:
        """Read run ``run_id`` and its epochs back from the store (one measured: its row as it now stands), in place of
        what was held of it; its row (None where the store has no such run)."""
        row = next(iter(self.store.runs(run_ids=[run_id])), None)
        self._epochs.pop(run_id, None)
        if row is None:
            self._runs.pop(run_id, None)
            return None
        self._runs[run_id] = row
        self._epochs[run_id] = self.store.epochs([run_id])
        return row.copy()

    def runs(self, *, run_ids: Iterable[int] | None = None, status: str | None = None,
             cell_keys: Iterable[str] | None = None) -> list[RunRow]:
        """As :meth:`cpustudy.store.Store.runs`: the runs of ``run_ids``, with ``status``, of ``cell_keys``, by id."""
        ids = sorted(self._runs if run_ids is None else {int(i) for i in run_ids} & self._runs.keys())
        keys = None if cell_keys is None else set(cell_keys)
        return [r.copy() for r in (self._runs[i] for i in ids) if (status is None or r.get("status") == status)
                and (keys is None or r.get("cell_key") in keys)]

    def epochs(self, run_ids: Iterable[int] | None = None) -> list[EpochRow]:
        """As :meth:`cpustudy.store.Store.epochs`: the epochs of ``run_ids`` (default: all), by run and epoch."""
        ids = sorted(self._epochs if run_ids is None else {int(i) for i in run_ids} & self._epochs.keys())
        return [e.copy() for i in ids for e in self._epochs[i]]

    def checks(self, machine_id: int | None = None) -> list[CheckRow]:
        """As :meth:`cpustudy.store.Store.checks`, as they were read."""
        return [c.copy() for c in self._checks if machine_id is None or c.get("machine_id") == machine_id]

    def machines(self) -> list[MachineRow]:
        """As :meth:`cpustudy.store.Store.machines`, as they were read."""
        return [m.copy() for m in self._machines]

    def count(self, table: str) -> int:
        """As :meth:`cpustudy.store.Store.count`."""
        sizes = {"runs": len(self._runs), "epochs": sum(map(len, self._epochs.values())), "machines": len(self._machines)}
        if table not in sizes:
            raise ValueError(table)
        return sizes[table]
