"""Consistent copies of a live database for jobs that can be cut at any moment (spot VMs).

SQLite in WAL mode must not live on a bucket mount (FUSE and network file systems break its locking
and shared memory), so a cloud sweep keeps its live database on the VM's own disk and, after every run
starts and finishes, writes a snapshot to the bucket: SQLite's backup API (a consistent copy even while
the database is open), switched to a rollback journal, then renamed over the previous snapshot, so a
reader (or the next VM) sees either the old snapshot or the new one, never half of one. A recovered job
whose VM is new starts from the snapshot (:func:`restore`).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from cpustudy.errors import UserError


def write(conn: sqlite3.Connection, dest: str | Path) -> None:
    """Copy the database behind ``conn`` to ``dest`` atomically (a temporary file, then a rename)."""
    dest = Path(dest)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    try:
        target = sqlite3.connect(tmp)
        try:
            conn.backup(target)
            target.execute("PRAGMA journal_mode = DELETE")  # no -wal/-shm beside it on the bucket
            target.commit()
        finally:
            target.close()
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except (OSError, sqlite3.Error) as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write the snapshot {dest} ({exc}): check that its folder exists and is "
                        "writable (a bucket mount?)") from None


def restore(snapshot: str | Path, db: str | Path) -> bool:
    """Start ``db`` from ``snapshot`` when ``db`` does not exist yet and the snapshot does (a job
    recovered on a new VM); True if it did. An existing ``db`` is never overwritten."""
    snapshot, db = Path(snapshot), Path(db)
    if db.exists() or not snapshot.is_file():
        return False
    try:
        source = sqlite3.connect(f"file:{snapshot}?mode=ro", uri=True)
        try:
            target = sqlite3.connect(db)
            try:
                source.backup(target)
            finally:
                target.close()
        finally:
            source.close()
    except sqlite3.Error as exc:
        db.unlink(missing_ok=True)
        raise UserError(f"cannot restore {db} from the snapshot {snapshot} ({exc}): is it a cpustudy "
                        "database? Move it aside to start afresh") from None
    return True
