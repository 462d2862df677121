"""Trustworthy measurements: spread and stability, schema upgrade, peak, input pipelines, machine
state, the tuner, the overhead benchmark."""

from __future__ import annotations

import csv
import io
import json
import sqlite3

import pytest

from cpustudy import store, workloads
from cpustudy.environment import machine
from cpustudy.measure.execute import execute
from cpustudy.measure.spec import RunSpec, plan
from cpustudy.measure.summary import summarize
from conftest import run_config
from cpustudy.store import Store


def test_spread_and_stability_of_timed_epochs():
    config = run_config(steps_per_epoch=None, full_steps_per_epoch=10, batch_size=4)
    steady = [{"elapsed_s": 9.0, "warmup": True}] + [{"elapsed_s": t} for t in (1.0, 1.01, 0.99, 1.0)]
    s = summarize(config, steady, 1.0)
    assert s["epoch_time_cv"] < 0.05 and s["unstable"] is False
    assert s["epoch_time_iqr_s"] == pytest.approx(0.005, abs=1e-9)
    noisy = [{"elapsed_s": 9.0, "warmup": True}] + [{"elapsed_s": t} for t in (1.0, 1.3, 0.8)]
    s = summarize(config, noisy, 1.0)
    assert s["unstable"] is True and s["epoch_time_cv"] > 0.05
    capped = summarize(config.with_(steps_per_epoch=2), noisy, 1.0)
    assert capped["epoch_time_iqr_s"] == pytest.approx(s["epoch_time_iqr_s"] * 5)  # scaled to a full epoch


def test_a_version_1_database_is_upgraded_without_losing_rows(db):
    conn = sqlite3.connect(db)
    store.MIGRATIONS[0](conn)
    conn.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO runs (uuid, status, workload, build, created_at) VALUES ('u1', 'ok', 'mnist_mlp', 'tf', 'now')")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with Store.read(db) as s:  # reading sees the upgraded schema, in memory
        (run,) = s.runs()
        assert run["uuid"] == "u1" and "epoch_time_cv" in run and run["unstable"] is None
    assert db.read_bytes() == before  # ... and leaves the file as it was
    db.chmod(0o444)
    with Store.read(db) as s:  # so a read-only old file can be read
        assert [r["uuid"] for r in s.runs()] == ["u1"]
    db.chmod(0o644)
    Store.open(db).close()  # a measuring command upgrades it in place
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM tunings").fetchone()[0] == 0
    conn.close()


def _store(db):
    s = Store.open(db)
    return s, s.machine_id(machine.collect(use_cpuinfo=False).as_dict())


@pytest.mark.tensorflow
def test_peak_is_measured_once_per_configuration_and_stored_with_runs(db, empty_keras_home):
    s, mid = _store(db)
    spec = RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, epochs=2, steps_per_epoch=2,
                          data="synthetic")
    first = execute(s, mid, plan(spec))
    assert first.status == "ok", first.error
    (peak,) = [dict(r) for r in s.conn.execute("SELECT * FROM peaks")]
    assert peak["peak_gflops"] > 1 and peak["mem_bandwidth_gbs"] > 0.1
    second = execute(s, mid, plan(spec))
    assert second.status == "ok"
    assert s.conn.execute("SELECT count(*) FROM peaks").fetchone()[0] == 1
    runs = s.runs()
    assert runs[0]["peak_gflops"] == runs[1]["peak_gflops"] == peak["peak_gflops"]
    assert not json.loads(runs[1]["settings"])["measure_peak_now"]
    state = json.loads(runs[0]["machine_state"])
    assert len(state["loadavg"]) == 3


@pytest.mark.tensorflow
def test_tfdata_input_and_warmup_steps(run_cli, db, empty_keras_home):
    r = run_cli("run", "mnist_cnn", "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 3, "--input", "tfdata",
                "--warmup-steps", 2, "--db", db)
    assert r.code == 0, r.err
    (row,) = json.loads(run_cli("results", "--db", db, "--format", "json").out)
    assert row["input_pipeline"] == "tfdata" and row["warmup_steps"] == 2 and row["status"] == "ok"
    assert row["peak_gflops"] > 1 and 0 < row["pct_of_peak"] < 100


@pytest.mark.tensorflow
def test_machine_check(run_cli):
    r = run_cli("machine", "--check", "--no-probe", "--format", "json")
    info = json.loads(r.out)
    assert r.code == 0 and len(info["state"]["loadavg"]) == 3 and isinstance(info["warnings"], list)


@pytest.mark.tensorflow
def test_tune_stores_trials_and_the_best_setting(run_cli, db, empty_keras_home):
    r = run_cli("tune", "mnist_mlp", "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 2, "--confirm", 1,
                "--db", db)
    assert r.code == 0, r.err
    assert r.out.startswith("mnist_mlp tf 1 vCPU(s): ")
    assert "(gain 1.00x)" in r.out or "x the default (range" in r.out  # kept the default, or a confirmed gain
    with Store.read(db) as s:
        runs = s.runs()
        assert runs and all(x["study"] == "tune" for x in runs)
        (tuning,) = [dict(t) for t in s.conn.execute("SELECT * FROM tunings")]
    # 1 vCPU: input pipeline, oneDNN and XLA each have one alternative to the default (the value the
    # default resolved to is not tried again); no thread counts to try.
    assert tuning["workload"] == "mnist_mlp" and tuning["trials"] >= 4
    assert len(runs) == tuning["trials"]
    default_run = runs[0]
    assert json.loads(default_run["settings"])["tune"]["tag"] == "default"
    tried = [json.loads(x["settings"])["tune"]["setting"] for x in runs[1:]]
    for dim in ("onednn", "xla"):
        resolved = bool(default_run[dim])
        assert {t[dim] for t in tried} >= {not resolved} and resolved not in {t[dim] for t in tried}
    tags = [json.loads(x["settings"])["tune"]["tag"] for x in runs]
    rechecked = [t for t in tags if t.startswith("recheck ") and t != "recheck best"]
    assert tags.count("recheck best") == len(rechecked)  # a close candidate is re-run beside the best
    assert tuning["default_time_s"] > 0 and tuning["best_time_s"] <= tuning["default_time_s"] * 1.5
    setting = json.loads(tuning["setting"])
    assert setting["input_pipeline"] in ("numpy", "tfdata") and setting["intra_threads"] == 1
    # A sweep can now use the tuned setting; without a tuning it refuses.
    plan = run_cli("sweep", "--vcpus", 1, "--workloads", "mnist_mlp", "--epochs", 2, "--steps-per-epoch", 2,
                   "--tuned", "--dry-run", "--db", db)
    assert plan.code == 0 and "1 of 1 cell(s) to measure" in plan.out
    refused = run_cli("sweep", "--vcpus", 1, "--workloads", "mnist_cnn", "--tuned", "--dry-run", "--db", db)
    assert refused.code == 2 and "no tuning stored" in refused.err


@pytest.mark.tensorflow
def test_bench_overhead(run_cli, db, empty_keras_home):
    r = run_cli("bench", "overhead", "--workloads", "mnist_mlp", "--vcpus", 1, "--epochs", 3,
                "--steps-per-epoch", 20, "--rounds", 2, "--format", "csv", "--db", db)
    assert r.code == 0, r.err
    (row,) = list(csv.DictReader(io.StringIO(r.out)))
    assert float(row["cpustudy_epoch_s"]) > 0 and float(row["plain_keras_epoch_s"]) > 0
    ratio, low, high = float(row["ratio"]), float(row["ci95_low"]), float(row["ci95_high"])
    assert float(row["ratio_min"]) <= low <= ratio <= high <= float(row["ratio_max"])
    with Store.read(db) as s:  # cpustudy's side of each round is stored, as its own study
        assert [x["study"] for x in s.runs()] == ["bench-overhead"] * 2


def test_bootstrap_interval_of_the_median():
    from cpustudy.measure.overhead import bootstrap_interval

    assert bootstrap_interval([1.0]) == (1.0, 1.0)
    values = [0.9, 1.0, 1.0, 1.01, 1.02, 1.1, 1.3]
    low, high = bootstrap_interval(values)
    assert 0.9 <= low <= 1.01 <= high <= 1.3 and low < high
    assert bootstrap_interval(values) == (low, high)  # deterministic
    assert bootstrap_interval(values, level=0.5)[1] - bootstrap_interval(values, level=0.5)[0] <= high - low


def test_bad_settings(run_cli, db):
    r = run_cli("run", "mnist_mlp", "--vcpus", 1, "--warmup-steps", -1, "--db", db)
    assert r.code == 2 and "--warmup-steps" in r.err
    r = run_cli("tune", "mnist_mlp", "--vcpus", 1, "--batch-sizes", "32,x", "--db", db)
    assert r.code == 2 and "--batch-sizes" in r.err
    r = run_cli("tune", "mnist_mlp", "--vcpus", 1, "--rechecks", -1, "--db", db)
    assert r.code == 2 and "--rechecks must be 0 or more" in r.err
    assert not db.exists()


def test_a_tie_in_the_confirmation_pairs_keeps_the_default():
    from cpustudy.measure import tune

    assert tune.confirmed([1.05, 1.10, 0.99])
    assert not tune.confirmed([1.00, 1.02, 0.92])  # median 1.00: a tie, not a gain
    assert not tune.confirmed([1.02, 1.02, 1.02])  # under the search's 3 % margin
    assert not tune.confirmed([])


def test_tuner_leaves_alone_what_a_build_pins():
    from cpustudy.environment import builds
    from cpustudy.measure import tune

    assert tune.pinned_dimensions(builds.load("tf-eigen")) == ("onednn",)
    assert tune.pinned_dimensions(builds.load("tf-xla")) == ("xla",)
    assert tune.pinned_dimensions(builds.load("tf")) == ()


def test_bench_needs_two_epochs(run_cli, db):
    r = run_cli("bench", "overhead", "--epochs", 1, "--db", db)
    assert r.code == 2 and "--epochs must be 2 or more" in r.err and not db.exists()


@pytest.mark.tensorflow
def test_tuner_does_not_keep_a_switch_the_framework_did_not_apply(run_cli, db, empty_keras_home):
    # cifar10_cnn's augmentation layers (--augment model) cannot be compiled by XLA: Keras turns
    # jit_compile off, so "XLA on" is the same program as the default and must never be reported as
    # the tuned setting.
    r = run_cli("tune", "cifar10_cnn", "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 2, "--confirm", 1,
                "--rechecks", 0, "--augment", "model", "--db", db)
    assert r.code == 0, r.err
    assert "xla True was not applied by the framework" in r.err
    with Store.read(db) as s:
        runs = s.runs()
        (tuning,) = [dict(t) for t in s.conn.execute("SELECT * FROM tunings")]
    asked = [x for x in runs if json.loads(x["settings"])["tune"]["setting"]["xla"]]
    assert asked and all(x["xla"] == 0 for x in asked)
    assert json.loads(tuning["setting"])["xla"] is None
