"""The SQLite store: round trip, durability of epochs, refusal of foreign files."""

from __future__ import annotations

import sqlite3

import pytest

from cpustudy import store
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


def test_schema_is_versioned(db):
    Store.open(db).close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == store.APPLICATION_ID
    conn.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="newer"):
        Store.read(db)


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


def _v3_database(path):
    """A database at schema version 3, written by the migrations themselves."""
    conn = sqlite3.connect(path)
    for sql in store.MIGRATIONS[:3]:
        conn.executescript(sql)
    conn.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 3")
    return conn


def test_v4_reprojects_jax_and_torch_runs_and_marks_old_runs_unvalidated(tmp_path):
    """Capped JAX/PyTorch epochs were projected from step-start times that measured only the steps'
    dispatch; the upgrade projects them again from whole epochs. TensorFlow runs stay as they were."""
    path = tmp_path / "old.sqlite"
    conn = _v3_database(path)
    cols = ("uuid, status, workload, build, keras_backend, projected, steps_per_epoch, full_steps_per_epoch, "
            "batch_size, measured_epoch_time_s, epoch_time_s, samples_per_s, settings, created_at")
    conn.execute(f"INSERT INTO runs ({cols}) VALUES ('a','ok','cifar10_cnn','jax-here','jax',1,20,1563,32,"
                 "2.0,30.0,999.0,'{\"options\": {\"augment\": true}}','x')")
    conn.execute(f"INSERT INTO runs ({cols}) VALUES ('b','ok','mnist_mlp','tf','tensorflow',1,20,469,128,"
                 "1.0,20.0,3000.0,'{}','x')")
    conn.commit()
    conn.close()
    with store.Store.open(path) as s:
        jax, tf = s.runs()
    assert jax["epoch_time_s"] == pytest.approx(2.0 * 1563 / 20)
    assert jax["samples_per_s"] == pytest.approx(20 * 32 / 2.0)
    assert jax["augment"] == "model" and jax["validation"] == "none"
    assert tf["epoch_time_s"] == 20.0 and tf["samples_per_s"] == 3000.0 and tf["augment"] is None


def test_asynchronous_steps_are_timed_until_they_drain():
    from cpustudy.worker.train import StepClock as _StepClock

    clock = _StepClock()
    clock.first, clock.last, clock.began = 10.0, 10.2, 11  # 11 steps dispatched in 0.2 s
    assert clock.steps_s(5.0) == pytest.approx(0.2 * 11 / 10)  # synchronous: n - 1 whole steps
    assert clock.steps_s(5.0, drained=13.0) == pytest.approx(3.0)  # queued: until the queue drained
