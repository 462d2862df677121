"""A measuring session on one database: one measuring process at a time, runs left ``running`` by
a killed process marked failed, and this machine's row. Every measuring command goes through
``measuring``."""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from cpustudy.environment import machine as machine_mod
from cpustudy.errors import UserError
from cpustudy.store import Store


class SweepLock:
    """An exclusive lock beside the database: one measuring process per database at a time."""

    def __init__(self, db_path: Path) -> None:
        self.path = Path(str(db_path) + ".lock")
        self.fd: int | None = None

    def __enter__(self) -> "SweepLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 64).decode(errors="replace").strip() or "another process"
            os.close(self.fd)
            self.fd = None
            raise UserError(
                f"{self.path.name[:-5]} is being measured into by pid {holder}: wait for it to finish "
                "or use another --db (parallel measurements on one machine distort each other)"
            ) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


@contextlib.contextmanager
def measuring(db: str | Path | None, machine: machine_mod.Machine | None = None) -> Iterator[Session]:
    """Open the database for measuring: the lock held, runs left ``running`` by a killed process
    marked failed, and this machine's row. Every measuring command goes through here."""
    store = Store.open(db)
    try:
        with SweepLock(store.path):
            stale = store.fail_stale_running()
            m = machine or machine_mod.collect()
            yield Session(store, store.machine_id(m.as_dict()), stale)
    finally:
        store.close()


@dataclass
class Session:
    store: Store
    machine_id: int
    stale: int
