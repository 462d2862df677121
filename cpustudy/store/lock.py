"""The measuring lock beside a database (``PATH.lock``, the holder's pid written in it), its one owner: ``SweepLock``
takes it (every measuring command, through ``measure.session.measuring``: one measuring process per database at a
time); ``measuring_pid`` only reads who holds it (``importers.merge``)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from cpustudy.errors import UserError


def _holder(fd: int) -> str:
    """The pid the lock's holder wrote in it, ``"another process"`` where it does not say."""
    return os.read(fd, 64).decode(errors="replace").strip() or "another process"


class SweepLock:
    """An exclusive lock beside the database: one measuring process per database at a time."""

    def __init__(self, db_path: str | Path) -> None:
        self.path = Path(str(db_path) + ".lock")
        self.fd: int | None = None

    def __enter__(self) -> "SweepLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(self.fd)
            os.close(self.fd)
            self.fd = None
            raise UserError(
                f"{self.path.name[:-5]} is being measured into by pid {holder}: wait for it to finish "
                "or use another --db (parallel measurements on one machine distort each other)"
            ) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def measuring_pid(path: str | Path) -> str | None:
    """The pid of the process holding ``path``'s measuring lock (:class:`SweepLock`), ``"another process"`` where it
    does not say; None where no process holds it (or there is no lock file). The lock file is only read: a shared
    lock taken for an instant and released, nothing written."""
    try:
        fd = os.open(Path(str(path) + ".lock"), os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(fd)
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
