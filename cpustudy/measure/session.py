"""A measuring session on one database: one measuring process at a time, runs left ``running`` by
a killed process marked failed, and this machine's row. Every measuring command goes through
``measuring``."""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from cpustudy.environment import cloud
from cpustudy.environment import machine as machine_mod
from cpustudy.store import Store, default_path, snapshot
from cpustudy.store.lock import SweepLock


@contextlib.contextmanager
def measuring(db: str | Path | None, machine: machine_mod.Machine | None = None,
              snapshot_to: str | Path | None = None) -> Iterator[Session]:
    """Open the database for measuring: the lock held, runs left ``running`` by a killed process
    marked failed, and this machine's row. Every measuring command goes through here.

    With ``snapshot_to`` (a file on a bucket mount), a database that does not exist yet starts from that
    snapshot (a cut job resumed on a new VM), and a snapshot is written there now and after every run
    starts and finishes."""
    path = Path(db) if db else default_path()
    restored = snapshot.restore(snapshot_to, path) if snapshot_to else False
    store = Store.open(path)
    store.session = uuid.uuid4().hex[:16]  # this call's runs: one sweep to the statistics
    try:
        with SweepLock(store.path):
            reason = ("its job was cut (a preempted VM or a killed process) before it finished; resumed from "
                      "the snapshot" if restored else "the process measuring it was killed before it finished")
            stale = store.fail_stale_running(reason)
            m = machine or machine_mod.collect()
            session = Session(store, store.machine_id(m.as_dict()), stale, restored)
            if snapshot_to:
                target = Path(snapshot_to)
                session.starts = cloud.count_start(target)
                snapshot.write(store.conn, target)
                store.on_run_change = lambda: snapshot.write(store.conn, target)
            yield session
    finally:
        store.on_run_change = None
        store.close()


@dataclass
class Session:
    store: Store
    machine_id: int
    stale: int
    restored: bool = False  # started from a snapshot
    starts: int | None = None  # how many times the job of this snapshot has started (--snapshot-to)
