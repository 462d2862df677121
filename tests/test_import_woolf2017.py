"""`cpustudy import woolf2017`: the 2017 study's per-epoch logs as a study of their own.

Uses the small invented logs in tests/fixtures/woolf2017/ (same layout and format as the study's).
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from cpustudy.store import Store
from cpustudy.store.importers import woolf2017

FIXTURES = Path(__file__).parent / "fixtures" / "woolf2017"
LOGS = FIXTURES / "logs"
N_FILES = 12
N_EPOCHS = 5 * 3 + 5 * 2 + 2 * 2


def counts(db: Path) -> tuple[int, int, int]:
    with Store.read(db) as s:
        return s.count("runs"), s.count("epochs"), s.count("machines")


@pytest.fixture
def logs_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "copy" / "logs"
    shutil.copytree(LOGS, dest)
    return dest


def test_import_stores_one_run_per_log_and_one_epoch_per_line(run_cli, db):
    r = run_cli("import", "woolf2017", LOGS, "--db", db)
    assert r.code == 0, r.err
    assert f"imported {N_FILES} run(s) with {N_EPOCHS} epochs" in r.out
    assert counts(db) == (N_FILES, N_EPOCHS, 2)

    with Store.read(db) as s:
        runs = {(r["workload"], r["device"], r["build"], r["vcpus"]): r for r in s.runs()}
        machines = {m["fingerprint"]: m for m in s.machines()}
        run = runs[("mnist_mlp", "cpu", "pip", 8)]
        epochs = s.epochs([run["id"]])
        gpu = runs[("mnist_mlp", "gpu", "gpu", 1)]
        textgen = runs[("text_generator_keras", "cpu", "compiled", 16)]
        textgen_epochs = s.epochs([textgen["id"]])
    assert {r["study"] for r in runs.values()} == {"woolf2017"}
    assert {r["status"] for r in runs.values()} == {"ok"}
    assert {r["data"] for r in runs.values()} == {"real"}
    assert {r["build"] for r in runs.values()} == {"pip", "compiled", "gpu"}
    assert {r["vcpus"] for r in runs.values() if r["device"] == "cpu"} == {8, 16}
    # epoch_time_s is the mean, so epoch_time_s x epochs = the study's total (sum of elapsed)
    assert run["epochs"] == 3 and run["timed_epochs"] == 3
    assert run["epoch_time_s"] == pytest.approx(21.0 / 3)
    assert [e["epoch"] for e in epochs] == [1, 2, 3]
    assert [e["elapsed_s"] for e in epochs] == [8.0, 7.0, 6.0]
    assert [e["warmup"] for e in epochs] == [0, 0, 0]
    assert epochs[0]["loss"] == pytest.approx(1.333333333) and epochs[0]["accuracy"] == pytest.approx(0.8)
    assert run["tf_version"] == "1.2" and run["projected"] == 0
    # the author's own model is imported too; it logs no accuracy
    assert textgen["epoch_time_s"] == pytest.approx(15.0)
    assert [e["accuracy"] for e in textgen_epochs] == [None, None]
    # CPU and GPU runs come from two fixed machines
    assert run["machine"] == "woolf2017-gce-skylake" and run["cpu_model"] == "GCE Skylake (2017)"
    assert gpu["machine"] == "woolf2017-gce-n1-standard-1-k80"
    assert set(machines) == {"woolf2017-gce-skylake", "woolf2017-gce-n1-standard-1-k80"}


def test_empty_accuracy_columns_are_stored_as_null(run_cli, db):
    assert run_cli("import", "woolf2017", LOGS, "--db", db).code == 0
    with Store.read(db) as s:
        run = next(r for r in s.runs() if r["workload"] == "lstm_text_generation" and r["device"] == "gpu")
        ep = s.epochs([run["id"]])
    assert [e["elapsed_s"] for e in ep] == [12.0, 13.0]
    assert [e["accuracy"] for e in ep] == [None, None]


def test_the_logs_validation_is_stored_per_epoch_and_as_the_runs_last(run_cli, db):
    """The logs' val_loss and val_acc were read and thrown away: no epoch and no run had them."""
    assert run_cli("import", "woolf2017", LOGS, "--db", db).code == 0
    with Store.read(db) as s:
        run = next(r for r in s.runs() if (r["workload"], r["build"], r["vcpus"]) == ("mnist_mlp", "pip", 8))
        epochs = s.epochs([run["id"]])
        textgen = next(r for r in s.runs() if r["workload"] == "text_generator_keras")
        textgen_epochs = s.epochs([textgen["id"]])
    assert [e["val_loss"] for e in epochs] == pytest.approx([1.2, 0.72, 0.514285714])
    assert [e["val_accuracy"] for e in epochs] == pytest.approx([0.85, 0.89, 0.93])
    assert run["val_loss"] == pytest.approx(0.514285714) and run["val_accuracy"] == pytest.approx(0.93)
    # every value the line logged, under its own names
    assert json.loads(epochs[0]["metrics"]) == pytest.approx(
        {"loss": 1.333333333, "acc": 0.8, "val_loss": 1.2, "val_acc": 0.85})
    # a log without validation stores none
    assert [e["val_accuracy"] for e in textgen_epochs] == [None] * len(textgen_epochs)
    assert textgen["val_accuracy"] is None and textgen["val_loss"] is None
    out = run_cli("results", "--db", db, "--per-epoch", "--format", "json").out
    assert sum(e["val_accuracy"] is not None for e in json.loads(out)) == 5 * 3  # five mnist_mlp logs of 3 epochs


def test_reimport_fills_in_the_validation_an_earlier_import_left_out(run_cli, db):
    assert run_cli("import", "woolf2017", LOGS, "--db", db).code == 0
    with Store.open(db) as s, s.transaction() as conn:  # as an earlier cpustudy stored them
        conn.execute("UPDATE epochs SET val_loss = NULL, val_accuracy = NULL, metrics = NULL")
        conn.execute("UPDATE runs SET val_loss = NULL, val_accuracy = NULL")
    r = run_cli("import", "woolf2017", LOGS, "--db", db)
    assert r.code == 0 and "imported 0 run(s)" in r.out
    assert "5 of them given the validation loss and accuracy" in r.out
    assert counts(db) == (N_FILES, N_EPOCHS, 2)
    with Store.read(db) as s:
        run = next(r for r in s.runs() if (r["workload"], r["build"], r["vcpus"]) == ("mnist_mlp", "pip", 8))
        assert [e["val_accuracy"] for e in s.epochs([run["id"]])] == pytest.approx([0.85, 0.89, 0.93])
    assert run["val_accuracy"] == pytest.approx(0.93)
    r = run_cli("import", "woolf2017", LOGS, "--db", db)  # once filled, nothing more to say
    assert r.code == 0 and "given the validation" not in r.out


def test_reimport_adds_nothing_even_from_another_copy(run_cli, db, logs_copy):
    assert run_cli("import", "woolf2017", LOGS, "--db", db).code == 0
    with Store.read(db) as s:
        uuids = sorted(r["uuid"] for r in s.runs())
    r = run_cli("import", "woolf2017", LOGS, "--db", db)
    assert r.code == 0 and "imported 0 run(s)" in r.out and f"{N_FILES} already imported" in r.out
    # the uuids depend on the path relative to logs/, not on where the copy lives
    r = run_cli("import", "woolf2017", logs_copy.parent, "--db", db)  # the folder holding logs/ works too
    assert r.code == 0 and "imported 0 run(s)" in r.out
    assert counts(db) == (N_FILES, N_EPOCHS, 2)
    with Store.read(db) as s:
        assert sorted(r["uuid"] for r in s.runs()) == uuids


def test_missing_folder_is_one_line_error_and_creates_no_database(run_cli, db, tmp_path):
    missing = tmp_path / "nowhere"
    r = run_cli("import", "woolf2017", missing, "--db", db)
    assert r.code == 2
    assert r.err.count("\n") == 1 and str(missing) in r.err and "no such folder" in r.err
    assert not db.exists()


def test_folder_without_study_layout_is_refused(run_cli, db, tmp_path):
    (tmp_path / "empty").mkdir()
    r = run_cli("import", "woolf2017", tmp_path / "empty", "--db", db)
    assert r.code == 2 and "does not look like the study's logs folder" in r.err


def test_import_needs_a_source(run_cli):
    r = run_cli("import")
    assert r.code == 2 and "SOURCE" in r.err and r.err.startswith("cpustudy: error:")


@pytest.mark.parametrize(
    "content,line,message",
    [
        ("epoch,elapsed,loss\n0,1.0,0.5\n1,abc,0.4\n", 3, "elapsed 'abc' is not a number"),
        ("epoch,elapsed,loss\n0,1.0,0.5\n2,1.0,0.4\n", 3, "epoch 2 where epoch 1 was expected"),
        ("epoch,elapsed,loss\n0,1.0,0.5\n1,1.0\n", 3, "2 fields where the header has 3"),
        ("epoch,elapsed,loss\n0,-1.0,0.5\n", 2, "must be greater than zero"),
        ("epoch,elapsed,loss\n0,1.0,lots\n", 2, "loss 'lots' is not a number"),
        ("time,loss\n0,1.0\n", 1, "does not start with epoch,elapsed"),
        ("epoch,elapsed,loss\n", 2, "no epochs after the header"),
        ("", 1, "empty file"),
    ],
)
def test_malformed_log_is_refused_with_path_and_line(run_cli, db, logs_copy, content, line, message):
    assert run_cli("import", "woolf2017", LOGS, "--db", db, ).code == 0  # something already stored
    before = counts(db)
    bad = logs_copy / "cpu-compiled" / "cpu16" / "mnist_mlp_tensorflow.csv"
    bad.write_text(content)
    # a new file that would be imported if the malformed one did not stop everything
    extra = logs_copy / "cpu-pip" / "cpu32"
    extra.mkdir()
    shutil.copy(LOGS / "cpu-pip" / "cpu16" / "mnist_mlp_tensorflow.csv", extra / "mnist_mlp_tensorflow.csv")
    r = run_cli("import", "woolf2017", logs_copy, "--db", db)
    assert r.code == 2
    assert r.err.count("\n") == 1, r.err
    assert f"{bad}:{line}:" in r.err and message in r.err
    assert counts(db) == before  # nothing half-imported


def test_a_failure_while_writing_rolls_back_every_run(db, monkeypatch):
    """The writes are one transaction: an error after some runs were inserted leaves nothing."""
    calls = {"n": 0}
    real = Store.insert_run_row

    def failing(store, row):
        calls["n"] += 1
        if calls["n"] == 5:
            raise sqlite3.OperationalError("disk I/O error (simulated)")
        return real(store, row)

    monkeypatch.setattr(Store, "insert_run_row", failing)
    logs = woolf2017.read_logs(LOGS)
    with Store.open(db) as s:
        with pytest.raises(sqlite3.OperationalError):
            woolf2017.write_logs(s, logs)
    assert calls["n"] == 5
    assert counts(db) == (0, 0, 0)


def test_other_files_are_skipped_and_said_so(run_cli, db, logs_copy):
    (logs_copy / "gpu" / "notes.csv").write_text("a,b\n1,2\n")
    (logs_copy / "gpu" / "README.txt").write_text("not a log\n")
    r = run_cli("import", "woolf2017", logs_copy, "--db", db)
    assert r.code == 0
    assert "skipped gpu/notes.csv" in r.err
    assert counts(db)[0] == N_FILES


def test_totals_are_sums_of_elapsed(db):
    with Store.open(db) as s:
        result = woolf2017.write_logs(s, woolf2017.read_logs(LOGS))
        assert result.added == N_FILES
        totals = {
            (r["workload"], r["build"], r["vcpus"]): r["epoch_time_s"] * r["epochs"] for r in s.runs()
        }
    assert math.isclose(totals[("mnist_mlp", "gpu", 1)], 7.0)
    assert math.isclose(totals[("mnist_mlp", "compiled", 16)], 10.0)
    assert math.isclose(totals[("text_generator_keras", "compiled", 8)], 50.0)
    assert math.isclose(totals[("lstm_text_generation", "pip", 8)], 75.0)
