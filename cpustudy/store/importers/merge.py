"""Merge results measured elsewhere (another cpustudy database) into this one.

* Machines are matched by ``fingerprint``: a machine already here keeps its id, a new one is added, and
  the other file's machine ids are remapped.
* Runs are matched by ``uuid``: a run already here is left alone, so merging the same file twice adds
  nothing. Runs still ``running`` in the other file are skipped: in progress where a process holds the
  other file's lock (merge again once they have finished); else cut off, never to finish in that file
  (or, in a copy of a database still measuring elsewhere, finished only in a later copy). Skipping them
  keeps a later merge of the finished run possible (it is matched by uuid).
* Epochs follow their run, the intervals ``compare`` stated follow their machine (once), and so do the checks
  stored against a run (``compare --check`` and ``cpustudy backtest``:
  a statement of certainty held to account is a measurement too); a check already here (the same run, kind and
  interval) is not added twice.

Everything is one transaction: an error leaves this database as it was. The other file is opened
read-only and is never changed (it must be a cpustudy database of this schema version or older; an
older one is read through its upgraded copy in memory, its data migrations included).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import cpustudy.store.schema as schema
from cpustudy.errors import UserError
from cpustudy.store.lock import measuring_pid
from cpustudy.store.rows import EpochRow, StatementRow, column
from cpustudy.store.store import Store


@dataclass
class MergeResult:
    other: Path
    runs_added: int
    runs_present: int
    runs_unfinished: int
    epochs_added: int
    machines_added: int
    checks_added: int = 0
    #: the runs left ``running`` in the other file (skipped): (study, workload, build, vcpus, created_at)
    unfinished: tuple[tuple[str, str, str, int | None, str], ...] = ()
    #: the pid measuring into the other file (its lock held) while it was merged; None: no process holds it
    measured_by: str | None = None


def open_other(path: str | Path) -> Store:
    """The other database, read-only, after checking it is a cpustudy database."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file: give the cpustudy database to merge in")
    if path.is_dir():
        raise UserError(f"{path} is a folder: give the cpustudy database file to merge in")
    try:
        version = schema.file_version(path)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror})") from None
    except sqlite3.Error as exc:
        raise UserError(f"{path}: cannot read it as SQLite ({exc}): nothing merged") from None
    if version is None or version < 1:
        raise UserError(f"{path} is not a cpustudy database: nothing merged")
    schema.check_version(path, version, "upgrade cpustudy, then merge")
    return Store.read(path)


def merge(store: Store, other_path: str | Path) -> MergeResult:
    other_path = Path(other_path)
    if other_path.exists() and Path(store.path).exists() and other_path.resolve() == Path(store.path).resolve():
        raise UserError(f"{other_path} is the database itself: give another cpustudy database to merge in")
    with open_other(other_path) as other:
        try:
            return _merge(store, other, other_path)
        except sqlite3.Error as exc:
            raise UserError(f"merging {other_path} failed ({exc}): nothing merged") from None


def _shared_columns(store: Store, other: Store, table: str, own: str) -> list[str]:
    """The columns of ``table`` both databases have, but ``own`` (which this database assigns)."""
    theirs = set(other.columns(table))
    return [c for c in store.columns(table) if c != own and c in theirs]


def _merge(store: Store, other: Store, other_path: Path) -> MergeResult:
    m_cols = _shared_columns(store, other, "machines", "id")
    r_cols = _shared_columns(store, other, "runs", "id")
    e_cols = _shared_columns(store, other, "epochs", "run_id")
    machines = other.machines()
    runs = other.runs()  # with their machine's columns joined in; only r_cols are copied
    epochs_by_run: dict[int, list[EpochRow]] = {}
    for e in other.epochs():
        epochs_by_run.setdefault(int(e["run_id"]), []).append(e)

    checks = other.checks()
    c_cols = [c for c in _shared_columns(store, other, "checks", "id") if c not in ("run_id", "machine_id")]
    added = present = epochs_added = machines_added = checks_added = 0
    unfinished: list[tuple[str, str, str, int | None, str]] = []
    run_map: dict[int, int] = {}
    with store.transaction():
        machine_map: dict[int, int] = {}
        used = {r["machine_id"] for r in runs}
        for m in machines:
            here = store.find_machine(m["fingerprint"])
            if here is not None:
                machine_map[int(m["id"])] = here
                continue
            if m["id"] not in used:
                continue  # a machine with no runs adds nothing
            machine_map[int(m["id"])] = store.insert_machine_row({c: column(m, c) for c in m_cols})
            machines_added += 1
        for r in runs:
            if r["status"] == "running":
                unfinished.append((r.get("study") or "", r["workload"], r["build"], r["vcpus"], r["created_at"] or ""))
                continue
            if store.has_run(r["uuid"]):
                present += 1
                run_map[int(r["id"])] = store.run_id_of(r["uuid"])
                continue
            values = {c: column(r, c) for c in r_cols}
            values["machine_id"] = machine_map.get(r["machine_id"]) if r["machine_id"] is not None else None
            run_id = store.insert_run_row(values)
            run_map[int(r["id"])] = run_id
            rows = epochs_by_run.get(int(r["id"]), [])
            epochs_added += store.insert_epoch_rows(run_id, ({c: column(e, c) for c in e_cols} for e in rows))
            added += 1
        known = {(int(c["run_id"]), c.get("kind"), c.get("low_s"), c.get("high_s")) for c in store.checks()}
        for c in checks:
            ours = run_map.get(int(c["run_id"]))
            if ours is None or (ours, c.get("kind"), c.get("low_s"), c.get("high_s")) in known:
                continue
            values = {k: column(c, k) for k in c_cols}
            values["run_id"] = ours
            values["machine_id"] = machine_map.get(mid) if (mid := c.get("machine_id")) is not None else None
            store.insert_row("checks", values)
            checks_added += 1
        _merge_statements(store, other, machine_map)
    return MergeResult(other_path, added, present, len(unfinished), epochs_added, machines_added, checks_added,
                       tuple(unfinished), measuring_pid(other_path) if unfinished else None)


def _merge_statements(store: Store, other: Store, machine_map: dict[int, int]) -> None:
    """``other``'s statements not here yet (the same session, candidate and interval), every field (its rules and
    place key too) carried, its machine this database's."""
    s_cols = [c for c in _shared_columns(store, other, "statements", "id") if c != "machine_id"]
    def key(x: StatementRow) -> tuple[object, ...]:  # one comparison states a candidate once: its session and name
        return x["session"], x["candidate"], x["low_s"], x["high_s"]

    said = {key(x) for x in store.statements()}
    for x in other.statements():
        if key(x) in said:
            continue
        values = {k: column(x, k) for k in s_cols}
        values["convergence"] = json.dumps(x["convergence"], sort_keys=True, default=str)
        values["data_sessions"] = json.dumps(x["data_sessions"])
        values["rules"] = None if x.get("rules") is None else json.dumps(x["rules"], sort_keys=True)
        values["place_key"] = None if x.get("place_key") is None else json.dumps(x["place_key"], sort_keys=True)
        values["machine_id"] = machine_map.get(mid) if (mid := x.get("machine_id")) is not None else None
        store.insert_row("statements", values)
