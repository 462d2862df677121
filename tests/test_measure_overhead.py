"""cpustudy's epoch time against a plain Keras fit: the benchmark and its interval."""

from __future__ import annotations

import csv
import io
import json

import pytest

from cpustudy.store import Store


@pytest.mark.tensorflow
def test_bench_overhead(run_cli, db, empty_keras_home):
    r = run_cli("bench", "overhead", "--workloads", "mnist_mlp", "--vcpus", 1, "--epochs", 3,
                "--steps-per-epoch", 20, "--rounds", 2, "--format", "csv", "--db", db)
    assert r.code == 0, r.err
    (row,) = list(csv.DictReader(io.StringIO(r.out)))
    assert float(row["cpustudy_epoch_s"]) > 0 and float(row["plain_keras_epoch_s"]) > 0
    ratio, low, high = float(row["ratio"]), float(row["ci95_low"]), float(row["ci95_high"])
    assert float(row["ratio_min"]) <= low <= ratio <= high <= float(row["ratio_max"])
    assert row["input"] == "tfdata" and row["plain_fed"] == "tfdata"  # by default: the same pipeline on both sides
    with Store.read(db) as s:  # cpustudy's side of each round is stored, as its own study
        assert [x["study"] for x in s.runs()] == ["bench-overhead"] * 2
    # Against what a user's script does: the same arrays into fit, whatever cpustudy's pipeline.
    r = run_cli("bench", "overhead", "--workloads", "mnist_mlp", "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 20,
                "--rounds", 1, "--plain", "arrays", "--format", "json", "--db", db)
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    assert row["input"] == "tfdata" and row["plain_fed"] == "arrays" and row["ratio"] > 0


def test_bootstrap_interval_of_the_median():
    from cpustudy.measure.overhead import bootstrap_interval

    assert bootstrap_interval([1.0]) == (1.0, 1.0)
    values = [0.9, 1.0, 1.0, 1.01, 1.02, 1.1, 1.3]
    low, high = bootstrap_interval(values)
    assert 0.9 <= low <= 1.01 <= high <= 1.3 and low < high
    assert bootstrap_interval(values) == (low, high)  # deterministic
    assert bootstrap_interval(values, level=0.5)[1] - bootstrap_interval(values, level=0.5)[0] <= high - low


def test_bench_needs_two_epochs(run_cli, db):
    r = run_cli("bench", "overhead", "--epochs", 1, "--db", db)
    assert r.code == 2 and "--epochs must be 2 or more" in r.err and not db.exists()
