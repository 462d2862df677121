"""The report and recommend on a real database whose configurations mostly trained to their target within the
warm-up epoch (reports/gnr2-horizon/: my_fashion_convnet at 2 vCPUs, tf at batch sizes 64 and 256 in float32 and
bf16; of tf+bf16+b256's 14 runs only run 9 timed an epoch after the warm-up, the other 13 and every run of the
other three reached 0.85 within it). No TensorFlow."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from cpustudy.analysis import summary
from cpustudy.store import Store

HORIZON = Path(__file__).resolve().parent.parent / "reports" / "gnr2-horizon" / "horizon.sqlite"


@pytest.fixture
def horizon(tmp_path: Path) -> Path:
    """The report's database as its first two sessions left it (the compare and 12 fresh trainings, runs 1-23): the
    fresh trainings of later sessions, added to the report since, are left out of what these tests read."""
    db = tmp_path / "horizon.sqlite"
    shutil.copy(HORIZON, db)
    with sqlite3.connect(db) as conn:
        for table, column in (("checks", "run_id"), ("epochs", "run_id"), ("runs", "id")):
            conn.execute(f"DELETE FROM {table} WHERE {column} > 23")
    conn.close()
    return db


def test_configurations_without_a_full_training_time_are_said_to_lack_it_not_a_price(horizon):
    with Store.read(horizon) as s:
        a = summary.analyze(s, summary.Options())
    untimed = a.summary[a.summary["total_time_s"].isna()]
    assert sorted(untimed["label"]) == ["cpu2 tf+b256", "cpu2 tf+b64", "cpu2 tf+bf16+b64"]
    assert untimed["price_usd_per_hour"].notna().all()  # each has a rate: it was priced
    assert not any("could not be priced" in n for n in a.notes)
    note = next(n for n in a.notes if "no full-training time" in n)
    assert note.startswith("3 configuration(s) have a price but no full-training time, so no full-training cost: "
                           "none of their runs timed an epoch after the warm-up")
    assert note.endswith("my_fashion_convnet cpu2 tf+b256, my_fashion_convnet cpu2 tf+b64, "
                         "my_fashion_convnet cpu2 tf+bf16+b64")


def test_the_fallback_baseline_says_tf_ran_only_with_settings(horizon):
    with Store.read(horizon) as s:
        a = summary.analyze(s, summary.Options())
    base = a.baselines[("cpustudy", "my_fashion_convnet")]
    assert base.label == "cpu2 tf+bf16+b256" and base.kind == "fallback"
    assert "no stock build (tf or pip) measured:" not in base.reason  # tf was measured, with settings
    assert base.reason == ("no stock build (tf or pip at its default settings) measured, only with settings "
                           "(tf+b256, tf+b64, tf+bf16+b256, tf+bf16+b64): the configuration at the fewest vCPUs with "
                           "a full-training time")


def test_recommend_without_a_target_counts_only_the_run_that_timed_a_full_epoch(run_cli, horizon):
    import json

    r = run_cli("recommend", "my_fashion_convnet", "--format", "json", "--db", horizon)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    cheapest = next(c for c in out["choices"] if c["role"] == "cheapest")
    # one run (9) timed an epoch after the warm-up: the figure is its, and says it is a single run
    assert cheapest["config"] == "2 vCPUs tf+bf16+b256" and cheapest["n_runs"] == 1 and cheapest["run_ids"] == [9]
    assert any(b.startswith("a single run") for b in cheapest["basis"])
    assert ("left out: 2 vCPUs tf+b256, 2 vCPUs tf+b64, 2 vCPUs tf+bf16+b64: no full-training time (no run of them "
            "timed an epoch after the warm-up; each reached its target within it); answer by the time to the target "
            "with --target-accuracy 0.85") in out["notes"]
    assert "from 1 run(s) of 1 configuration(s) (the runs that timed an epoch after the warm-up)" in out["notes"]
    table = run_cli("recommend", "my_fashion_convnet", "--db", horizon)
    assert "single run" in table.out and "from run(s) 9;" in table.out


def test_the_report_names_the_configurations_without_a_full_training_and_counts_timed_runs(run_cli, horizon, tmp_path):
    out = tmp_path / "rep"
    r = run_cli("report", "--db", horizon, "--out", out, "--no-svg", "--dpi", "30")
    assert r.code == 0, r.err
    page = (out / "report.md").read_text()
    assert "the baseline, is also the cheapest configuration" not in page  # the only one with a full-training cost
    assert ("Only one configuration of my_fashion_convnet has a full-training time: 2 vCPUs tf+bf16+b256; 2 vCPUs "
            "tf+b256, 2 vCPUs tf+b64, 2 vCPUs tf+bf16+b64 have no full-training time (no run of them timed an epoch "
            "after the warm-up; each reached its target within it).") in page
    # 14 runs, one timed: the spread over runs is not 0 but unknown
    assert "| cpustudy | my_fashion_convnet | cpu2 tf+bf16+b256 | 14 (1 timed) | 6 | 2.1 | n/a |" in page
    s = summary_csv(out / "summary.csv")
    assert s["cpu2 tf+bf16+b256"]["timed_runs"] == "1" and s["cpu2 tf+bf16+b256"]["n_runs"] == "14"


def summary_csv(path: Path) -> dict[str, dict[str, str]]:
    import csv

    with open(path, newline="") as f:
        return {r["label"]: r for r in csv.DictReader(f)}
