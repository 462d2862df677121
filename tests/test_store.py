"""The SQLite store: round trip, durability of epochs, refusal of foreign files."""

from __future__ import annotations

import sqlite3

import pytest

from cpustudy.environment import machine
from cpustudy.errors import UserError
from cpustudy.store import Store

CONFIG = {
    "workload": "mnist_mlp",
    "build": "tf",
    "vcpus": 1,
    "cpu_list": "0",
    "batch_size": 128,
    "epochs": 2,
    "steps_per_epoch": 5,
    "full_steps_per_epoch": 469,
    "data": "synthetic",
}


def test_round_trip(db):
    m = machine.collect(use_cpuinfo=False).as_dict()
    with Store.open(db) as s:
        mid = s.machine_id(m)
        assert s.machine_id(m) == mid  # same machine, same row
        rid = s.start_run(mid, CONFIG)
        s.set_software(rid, {"tf_version": "2.x", "keras_backend": "tensorflow", "onednn": False})
        s.add_epoch(rid, {"epoch": 1, "elapsed_s": 1.5, "steps": 5, "loss": 2.0, "warmup": True})
        s.add_epoch(rid, {"epoch": 2, "elapsed_s": 0.5, "steps": 5, "loss": 1.0, "accuracy": 0.5})
        s.finish_run(rid, "ok", {"epoch_time_s": 46.9, "projected": True, "timed_epochs": 1})
    with Store.read(db) as s:
        (run,) = s.runs()
        assert run["status"] == "ok" and run["workload"] == "mnist_mlp"
        assert run["epoch_time_s"] == pytest.approx(46.9) and run["projected"] == 1
        assert run["cpu_model"] == m["cpu_model"] and run["tf_version"] == "2.x"
        assert run["onednn"] == 0
        epochs = s.epochs()
        assert [e["warmup"] for e in epochs] == [1, 0]
        assert [e["elapsed_s"] for e in epochs] == [1.5, 0.5]


def test_machines_are_looked_up_by_fingerprint_and_id(db):
    m = machine.collect(use_cpuinfo=False).as_dict()
    with Store.open(db) as s:
        assert s.find_machine(m["fingerprint"]) is None
        mid = s.machine_id(m)
        assert s.find_machine(m["fingerprint"]) == mid and s.find_machine("elsewhere") is None
        assert s.machine_fingerprint(mid) == m["fingerprint"]
        with pytest.raises(KeyError):
            s.machine_fingerprint(mid + 1)


def test_epochs_are_durable_before_the_run_finishes(db):
    s = Store.open(db)
    rid = s.start_run(s.machine_id(machine.collect(use_cpuinfo=False).as_dict()), CONFIG)
    s.add_epoch(rid, {"epoch": 1, "elapsed_s": 1.0, "warmup": True})
    # A second connection (another process, or after a crash) sees the committed epoch.
    other = sqlite3.connect(db)
    assert other.execute("SELECT count(*) FROM epochs").fetchone()[0] == 1
    assert other.execute("SELECT status FROM runs").fetchone()[0] == "running"
    other.close()
    s.close()


def test_foreign_sqlite_file_is_refused_and_untouched(tmp_path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    for opener in (Store.open, Store.read):
        with pytest.raises(UserError, match="not a cpustudy database"):
            opener(path)
    assert path.read_bytes() == before


def test_text_file_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(UserError, match="not a cpustudy database"):
        Store.open(path)
    assert path.read_text() == "hello\n"


def test_read_never_creates(tmp_path):
    path = tmp_path / "missing.sqlite"
    with pytest.raises(UserError, match="no database"):
        Store.read(path)
    assert not path.exists()


def test_reading_a_database_being_created_sees_no_runs(tmp_path):
    # sqlite creates the file before it writes anything: a reader can meet it empty.
    path = tmp_path / "new.sqlite"
    path.touch()
    with Store.read(path) as s:
        assert s.count("runs") == 0 and s.runs() == []
    assert path.stat().st_size == 0  # reading never writes


def test_missing_folder_is_refused(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        Store.open(tmp_path / "nope" / "x.sqlite")


def test_rows_from_elsewhere_are_inserted_as_given_and_a_transaction_holds_many_writes(db):
    """The importers' writes: rows as given (only the table's columns), all in the caller's transaction."""
    with Store.open(db) as s:
        mid = s.insert_machine_row({"fingerprint": "fp-x", "cpu_model": "X", "created_at": "2017"})
        run = {"uuid": "u-x", "machine_id": mid, "study": "s", "status": "ok", "workload": "w", "build": "b",
               "epoch_time_s": 2.0, "created_at": "2017", "finished_at": "2017"}
        rid = s.insert_run_row(run)
        assert s.insert_epoch_rows(rid, [{"epoch": 1, "elapsed_s": 2.0}, {"epoch": 2, "elapsed_s": 2.0}]) == 2
        assert s.has_run("u-x") and not s.has_run("u-y")
        with pytest.raises(ValueError, match="not columns of runs: nope"):
            s.insert_run_row({**run, "uuid": "u-y", "nope": 1})
        with pytest.raises(sqlite3.IntegrityError):
            with s.transaction():
                s.insert_run_row({**run, "uuid": "u-y"})
                s.insert_epoch_rows(s.insert_run_row({**run, "uuid": "u-z"}), [{"epoch": 1, "elapsed_s": 1.0}])
                s.insert_run_row(run)  # the same uuid again: everything in this transaction is undone
        assert not s.conn.in_transaction
    with Store.read(db) as s:
        (stored,) = s.runs()
        assert {k: stored[k] for k in run} == run and stored["machine"] == "fp-x"
        assert [(e["epoch"], e["elapsed_s"]) for e in s.epochs()] == [(1, 2.0), (2, 2.0)]
        assert s.count("machines") == 1


def test_reading_leaves_no_wal_or_shm_files_behind(db, run_cli):
    with Store.open(db) as s:
        s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
    before = sorted(p.name for p in db.parent.iterdir())
    assert run_cli("results", "--db", db).code == 0
    with Store.read(db) as s:
        assert s.runs() == []
    assert sorted(p.name for p in db.parent.iterdir()) == before == [db.name]


@pytest.fixture
def unwritable_db(db):
    """A cpustudy database that cannot be written: immutable (chattr +i) as root, else read-only."""
    import os
    import subprocess

    with Store.open(db) as s:
        s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
            pytest.skip("root without chattr +i here: no way to make a file unwritable for this test")
        yield db
        subprocess.run(["chattr", "-i", str(db)], check=True)
    else:
        db.chmod(0o444)
        db.parent.chmod(0o555)
        yield db
        db.parent.chmod(0o755)
        db.chmod(0o644)


def test_an_unwritable_database_is_refused_in_one_line_and_still_read(unwritable_db, run_cli):
    db = unwritable_db
    size = db.stat().st_size
    for args in (("run", "mnist_mlp", "--epochs", "1", "--steps-per-epoch", "10"),
                 ("sweep", "--vcpus", "1", "--workloads", "mnist_mlp", "--epochs", "1", "--steps-per-epoch", "10")):
        r = run_cli(*args, "--db", db)
        assert r.code == 2 and "cannot be written" in r.err and "--db COPY" in r.err
        assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err
    assert run_cli("results", "--db", db).code == 0
    assert db.stat().st_size == size and sorted(p.name for p in db.parent.iterdir()) == [db.name]
