"""Merge results measured elsewhere (another cpustudy database) into this one.

* Machines are matched by ``fingerprint``: a machine already here keeps its id, a new one is added, and
  the other file's machine ids are remapped.
* Runs are matched by ``uuid``: a run already here is left alone, so merging the same file twice adds
  nothing. Runs still ``running`` in the other file are skipped (they may be in progress there; merge
  again once they have finished).
* Epochs follow their run.

Everything is one transaction: an error leaves this database as it was. The other file is opened
read-only and is never changed (it must be a cpustudy database of this schema version or older).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cpustudy.errors import UserError
from cpustudy.store import APPLICATION_ID, SCHEMA_VERSION, Store, row_id


@dataclass
class MergeResult:
    other: Path
    runs_added: int
    runs_present: int
    runs_unfinished: int
    epochs_added: int
    machines_added: int


def open_other(path: str | Path) -> sqlite3.Connection:
    """The other database, read-only, after checking it is a cpustudy database."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file: give the cpustudy database to merge in")
    if path.is_dir():
        raise UserError(f"{path} is a folder: give the cpustudy database file to merge in")
    not_ours = f"{path} is not a cpustudy database: nothing merged"
    try:
        with open(path, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise UserError(not_ours)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
        conn.row_factory = sqlite3.Row
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error as exc:
        raise UserError(f"{path}: cannot read it as SQLite ({exc}): nothing merged") from None
    if app_id != APPLICATION_ID:
        conn.close()
        raise UserError(not_ours)
    if version > SCHEMA_VERSION:
        conn.close()
        raise UserError(
            f"{path} has schema version {version}, newer than this cpustudy knows ({SCHEMA_VERSION}): "
            "upgrade cpustudy, then merge"
        )
    if version < 1:
        conn.close()
        raise UserError(not_ours)
    if version < SCHEMA_VERSION:
        # An older file: merge an upgraded copy (its data migrations included), never the file itself.
        conn.close()
        conn = Store.read(path).conn
        conn.row_factory = sqlite3.Row
    return conn


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def merge(store: Store, other_path: str | Path) -> MergeResult:
    other_path = Path(other_path)
    if other_path.exists() and Path(store.path).exists() and other_path.resolve() == Path(store.path).resolve():
        raise UserError(f"{other_path} is the database itself: give another cpustudy database to merge in")
    other = open_other(other_path)
    try:
        return _merge(store, other, other_path)
    except sqlite3.Error as exc:
        raise UserError(f"merging {other_path} failed ({exc}): nothing merged") from None
    finally:
        other.close()


def _merge(store: Store, other: sqlite3.Connection, other_path: Path) -> MergeResult:
    conn = store.conn
    m_cols = [c for c in _columns(conn, "machines") if c != "id" and c in _columns(other, "machines")]
    r_cols = [c for c in _columns(conn, "runs") if c != "id" and c in _columns(other, "runs")]
    e_cols = [c for c in _columns(conn, "epochs") if c != "run_id" and c in _columns(other, "epochs")]
    machines = [dict(r) for r in other.execute("SELECT * FROM machines ORDER BY id")]
    runs = [dict(r) for r in other.execute("SELECT * FROM runs ORDER BY id")]
    epochs_by_run: dict[int, list[dict[str, Any]]] = {}
    for e in other.execute("SELECT * FROM epochs ORDER BY run_id, epoch"):
        epochs_by_run.setdefault(int(e["run_id"]), []).append(dict(e))

    added = present = unfinished = epochs_added = machines_added = 0
    with store.transaction():
        machine_map: dict[int, int] = {}
        used = {r["machine_id"] for r in runs}
        for m in machines:
            row = conn.execute("SELECT id FROM machines WHERE fingerprint = ?", (m["fingerprint"],)).fetchone()
            if row:
                machine_map[int(m["id"])] = int(row[0])
                continue
            if m["id"] not in used:
                continue  # a machine with no runs adds nothing
            cur = conn.execute(
                f"INSERT INTO machines ({', '.join(m_cols)}) VALUES ({', '.join('?' * len(m_cols))})",
                tuple(m[c] for c in m_cols),
            )
            machine_map[int(m["id"])] = row_id(cur)
            machines_added += 1
        for r in runs:
            if r["status"] == "running":
                unfinished += 1
                continue
            if conn.execute("SELECT 1 FROM runs WHERE uuid = ?", (r["uuid"],)).fetchone():
                present += 1
                continue
            values = dict(r)
            values["machine_id"] = machine_map.get(r["machine_id"]) if r["machine_id"] is not None else None
            cur = conn.execute(
                f"INSERT INTO runs ({', '.join(r_cols)}) VALUES ({', '.join('?' * len(r_cols))})",
                tuple(values[c] for c in r_cols),
            )
            run_id = row_id(cur)
            rows = epochs_by_run.get(int(r["id"]), [])
            conn.executemany(
                f"INSERT INTO epochs (run_id, {', '.join(e_cols)}) VALUES (?, {', '.join('?' * len(e_cols))})",
                [(run_id, *(e[c] for c in e_cols)) for e in rows],
            )
            added += 1
            epochs_added += len(rows)
    return MergeResult(other_path, added, present, unfinished, epochs_added, machines_added)
