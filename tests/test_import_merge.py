"""`cpustudy merge`: results measured elsewhere join this database without duplicates."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from cpustudy.errors import UserError
from cpustudy.store import Store
from cpustudy.store.importers import merge


def add_run(store, machine, workload, vcpus, times, *, uuid=None, status="ok", build="tf"):
    run = store.start_run(machine, {"workload": workload, "build": build, "vcpus": vcpus,
                                    "epochs": len(times), "uuid": uuid, "data": "synthetic"})
    for i, t in enumerate(times):
        store.add_epoch(run, {"epoch": i + 1, "elapsed_s": t, "warmup": i == 0, "loss": 0.5 / (i + 1)})
    if status != "running":
        store.finish_run(run, status, {"epoch_time_s": times[-1], "timed_epochs": len(times) - 1})
    return run


def machine(store, fp, model):
    return store.machine_id({"fingerprint": fp, "cpu_model": model, "logical_cpus": 4, "hostname": fp})


@pytest.fixture
def here(tmp_path: Path) -> Path:
    """This database: one machine (A) with one run."""
    path = tmp_path / "here.sqlite"
    with Store.open(path) as s:
        a = machine(s, "fp-a", "CPU A")
        add_run(s, a, "mnist_mlp", 1, [3.0, 2.0], uuid="run-shared")
    return path


@pytest.fixture
def other(tmp_path: Path) -> Path:
    """Measured elsewhere: a decoy machine with no runs first (so ids differ), machine A again (same
    fingerprint), machine B; the shared run, two new runs, a failed one and one still running."""
    path = tmp_path / "other.sqlite"
    with Store.open(path) as s:
        machine(s, "fp-unused", "CPU U")
        b = machine(s, "fp-b", "CPU B")
        a = machine(s, "fp-a", "CPU A")
        add_run(s, a, "mnist_mlp", 1, [3.0, 2.0], uuid="run-shared")
        add_run(s, a, "mnist_mlp", 2, [2.0, 1.5, 1.4], uuid="run-a2")
        add_run(s, b, "mnist_cnn", 4, [9.0, 8.0], uuid="run-b4")
        add_run(s, b, "mnist_cnn", 8, [5.0], uuid="run-b8-failed", status="failed")
        add_run(s, b, "mnist_cnn", 16, [5.0], uuid="run-b16-running", status="running")
    return path


def snapshot(path: Path) -> dict:
    with Store.read(path) as s:
        runs = {r["uuid"]: r for r in s.runs()}
        epochs: dict[str, list[tuple]] = {}
        for e in s.epochs():
            uuid = next(u for u, r in runs.items() if r["id"] == e["run_id"])
            epochs.setdefault(uuid, []).append((e["epoch"], e["elapsed_s"], e["warmup"], e["loss"]))
        return {"runs": runs, "epochs": epochs, "machines": {m["fingerprint"]: m for m in s.machines()}}


def test_merge_adds_new_runs_remaps_machines_and_is_idempotent(run_cli, here, other):
    theirs = snapshot(other)
    r = run_cli("merge", other, "--db", here)
    assert r.code == 0, r.err
    assert "merged 3 run(s) with 6 epochs and 1 new machine(s)" in r.out
    assert "1 run(s) were already there" in r.out
    # no process holds the other file's lock: the run left 'running' was cut off, not in progress
    assert "skipped 1 run(s) that never finished" in r.err and "mnist_cnn tf 16 vCPU(s) started" in r.err
    assert "will not finish there" in r.err and "once they finish" not in r.err
    ours = snapshot(here)
    assert set(ours["runs"]) == {"run-shared", "run-a2", "run-b4", "run-b8-failed"}
    assert set(ours["machines"]) == {"fp-a", "fp-b"}  # the unused machine is not copied
    # each run still points at the machine it ran on, under this database's ids
    for uuid in ("run-a2", "run-b4", "run-b8-failed"):
        assert ours["runs"][uuid]["machine"] == theirs["runs"][uuid]["machine"]
        assert ours["runs"][uuid]["cpu_model"] == theirs["runs"][uuid]["cpu_model"]
        assert ours["epochs"].get(uuid, []) == theirs["epochs"].get(uuid, [])
        for col in ("workload", "build", "vcpus", "status", "epoch_time_s", "settings", "created_at"):
            assert ours["runs"][uuid][col] == theirs["runs"][uuid][col]
    assert ours["runs"]["run-a2"]["machine_id"] == ours["machines"]["fp-a"]["id"]
    assert ours["runs"]["run-b4"]["machine_id"] == ours["machines"]["fp-b"]["id"]
    assert ours["epochs"]["run-shared"] == [(1, 3.0, 1, 0.5), (2, 2.0, 0, 0.25)]  # not doubled

    r = run_cli("merge", other, "--db", here)
    assert r.code == 0 and "merged 0 run(s) with 0 epochs and 0 new machine(s)" in r.out
    again = snapshot(here)
    assert {u: x["id"] for u, x in again["runs"].items()} == {u: x["id"] for u, x in ours["runs"].items()}
    assert again["epochs"] == ours["epochs"] and set(again["machines"]) == set(ours["machines"])
    assert snapshot(other)["runs"].keys() == theirs["runs"].keys()  # the other file is not changed


def test_a_run_still_running_where_a_process_holds_the_lock_is_said_in_progress(run_cli, here, other):
    """A run left 'running' was always said 'still running ... merge again once they finish', also in a file no
    process measures into (a tune cut off days before)."""
    from cpustudy.store.lock import SweepLock

    with SweepLock(other):  # a sweep measuring into it now
        r = run_cli("merge", other, "--db", here)
    assert r.code == 0, r.err
    assert f"skipped 1 run(s) still running in {other} (pid {os.getpid()} is measuring into it); merge again " \
           "once they finish" in r.err
    again = here.with_name("again.sqlite")
    r = run_cli("merge", other, "--db", again)  # the lock released
    assert r.code == 0 and "never finished" in r.err


def test_merge_into_a_new_database(run_cli, tmp_path, other):
    new = tmp_path / "new.sqlite"
    r = run_cli("merge", other, "--db", new)
    assert r.code == 0 and "merged 4 run(s)" in r.out
    assert set(snapshot(new)["machines"]) == {"fp-a", "fp-b"}


def test_non_cpustudy_files_are_refused_and_nothing_is_created(run_cli, tmp_path, here):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    plain = tmp_path / "plain.sqlite"
    conn = sqlite3.connect(plain)
    conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, uuid TEXT)")
    conn.execute("INSERT INTO runs (uuid) VALUES ('x')")
    conn.commit()
    conn.close()
    before = snapshot(here)
    for bad in (text, plain):
        r = run_cli("merge", bad, "--db", here)
        assert r.code == 2
        assert r.err.count("\n") == 1 and f"{bad} is not a cpustudy database" in r.err
    assert snapshot(here)["runs"].keys() == before["runs"].keys()
    r = run_cli("merge", tmp_path / "absent.sqlite", "--db", here)
    assert r.code == 2 and "no such file" in r.err
    new = tmp_path / "fresh.sqlite"
    r = run_cli("merge", text, "--db", new)
    assert r.code == 2 and not new.exists()  # refused before --db was created
    r = run_cli("merge", here, "--db", here)
    assert r.code == 2 and "is the database itself" in r.err


def test_a_failure_while_merging_leaves_the_database_as_it_was(here, other):
    """One transaction: an insert failing after other runs were inserted rolls all of them back."""
    before = snapshot(here)
    with Store.open(here) as store:
        # run-a2 goes in first; run-b4's first epoch (9.0 s) then fails
        store.conn.execute("CREATE TRIGGER boom BEFORE INSERT ON epochs WHEN NEW.elapsed_s = 9.0 "
                           "BEGIN SELECT RAISE(ABORT, 'simulated failure'); END")
        with pytest.raises(UserError, match="simulated failure.*nothing merged"):
            merge.merge(store, other)
    after = snapshot(here)
    assert after["runs"].keys() == before["runs"].keys()
    assert after["machines"].keys() == before["machines"].keys()
    assert after["epochs"] == before["epochs"]


def test_an_older_database_is_merged_through_its_upgrade(run_cli, tmp_path):
    """A schema-3 file's data migrations apply to what is merged (re-projected JAX runs, the in-model
    augmentation its cifar10_cnn runs had); the file itself is not changed."""
    from test_store_schema import v3_database

    old = tmp_path / "old.sqlite"
    conn = v3_database(old)
    conn.execute("INSERT INTO machines (fingerprint, created_at) VALUES ('fp-old', 'x')")
    conn.execute("""INSERT INTO runs (uuid, machine_id, status, workload, build, keras_backend, projected,
        steps_per_epoch, full_steps_per_epoch, batch_size, measured_epoch_time_s, epoch_time_s, samples_per_s,
        settings, created_at) VALUES ('u1', 1, 'ok', 'cifar10_cnn', 'jax-here', 'jax', 1, 20, 1563, 32, 2.0,
        30.0, 999.0, '{"options": {"augment": true}}', 'x')""")
    conn.commit()
    conn.close()
    before = old.read_bytes()
    here = tmp_path / "here.sqlite"
    r = run_cli("merge", old, "--db", here)
    assert r.code == 0, r.err
    with Store.read(here) as s:
        (run,) = s.runs()
    assert run["epoch_time_s"] == pytest.approx(2.0 * 1563 / 20) and run["augment"] == "model"
    assert old.read_bytes() == before


def test_checks_follow_their_runs_and_are_merged_once(run_cli, tmp_path):
    """The Granite Rapids comparison and its twelve later trainings, with the backtest's checks
    (reports/gnr2-two-sessions/): merged into an empty database, every check comes along against the same
    training; merged again, none is added twice."""
    src = Path(__file__).resolve().parent.parent / "reports" / "gnr2-two-sessions" / "gnr2-two-sessions.sqlite"
    db = tmp_path / "merged.sqlite"
    first = run_cli("merge", str(src), "--db", str(db))
    assert first.code == 0, first.err
    assert "12 check(s) of stated intervals" in first.out
    with Store.read(src) as a, Store.read(db) as b:
        def keyed(store):
            uuid = {r["id"]: r["uuid"] for r in store.runs()}
            return sorted((uuid[c["run_id"]], c["kind"], c["low_s"], c["high_s"], c["inside"]) for c in store.checks())
        assert keyed(a) == keyed(b) and len(keyed(b)) == 12
    again = run_cli("merge", str(src), "--db", str(db))
    assert again.code == 0 and "check(s)" not in again.out
    with Store.read(db) as b:
        assert len(b.checks()) == 12


def test_statements_are_merged_once_with_the_rules_they_were_stated_under(tmp_path):
    from cpustudy.rules import Rules

    src, db = tmp_path / "src.sqlite", tmp_path / "db.sqlite"
    said = {"session": "s1", "workload": "mnist_mlp", "target_accuracy": 0.5, "convergence": {"batch_size": 64},
            "place": "2 vCPUs tf on here", "candidate": "here:2", "level": 0.8,
            "place_key": {"device": "cpu", "cpu_build": "tf", "vcpus": 2, "machine": "m1"}, "low_s": 1.0, "median_s": 2.0, "high_s": 3.0,
            "rules": Rules(level=0.8).as_dict()}
    with Store.open(src) as s:
        s.add_statement(said)
        s.add_statement({**said, "session": "s0", "rules": None})  # as one stored before the rules were
    with Store.open(db) as store:
        merge.merge(store, src)
        merge.merge(store, src)
        got = store.statements()
    assert sorted((x["session"], x["level"], x["rules"]) for x in got) == [
        ("s0", 0.8, None), ("s1", 0.8, Rules(level=0.8).as_dict())]
    assert all(x["place_key"] == said["place_key"] for x in got)  # the key the backtest joins by, carried


def test_two_machines_behind_one_hypervisor_cpu_name_are_told_apart_never_pooled(run_cli, tmp_path):
    # An Emerald Rapids and a Granite Rapids VM both say "Intel(R) Xeon(R) Processor". Merged, both machines' runs
    # were labelled "@Xeon" (or nothing): a configuration measured on both would be one median over two machines.
    # The platform cpustudy reads from each machine's stored flags and CPUID now names them apart.
    import shutil

    from cpustudy.analysis.runs import load_runs

    repo = Path(__file__).resolve().parent.parent / "reports"
    db = tmp_path / "merged.sqlite"
    shutil.copy(repo / "emr2-main-job-0.2" / "cpustudy.sqlite", db)
    r = run_cli("merge", str(repo / "gnr2-later-check" / "later-check.sqlite"), "--db", str(db))
    assert r.code == 0, r.err
    with Store.read(db) as store:
        df = load_runs(store)
    by = {m: set(g["build"]) for m, g in df[df["device"] == "cpu"].groupby("machine")}
    assert set(by) == {"25ea92286743d770", "ed71aa568f0818e2"}
    assert all(b.endswith("@Xeon (Emerald Rapids)") for b in by["25ea92286743d770"]), by
    assert all(b.endswith("@Xeon (Granite Rapids)") for b in by["ed71aa568f0818e2"]), by
