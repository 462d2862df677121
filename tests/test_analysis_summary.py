"""The summary (cpustudy.analysis.summary): one row per configuration, its time, cost and both relative
to the baseline, computed from the 2017 study's fixture logs and checked against hand-computed values
and the study's own formulas; the Pareto front and the cheapest configuration."""

from __future__ import annotations

import csv
import glob
from pathlib import Path

import pytest
import reportdb

from cpustudy.analysis import summary


def test_woolf_report_matches_hand_computed_values(woolf_report):
    _, out = woolf_report
    s = reportdb.read_summary(out / "summary.csv")
    pip8 = s[("woolf2017", "mnist_mlp", "cpu8pip")]
    assert float(pip8["total_time_s"]) == pytest.approx(21.0)
    assert float(pip8["epoch_time_s"]) == pytest.approx(7.0)
    assert int(pip8["epochs"]) == 3 and int(pip8["n_runs"]) == 1
    assert float(pip8["time_rel_baseline"]) == pytest.approx(3.0)
    assert float(pip8["cost_usd"]) == pytest.approx(21.0 * reportdb.CPU8 / 3600)
    assert float(pip8["cost_rel_baseline"]) == pytest.approx(21.0 * reportdb.CPU8 / (7.0 * reportdb.GPU))
    assert float(pip8["cost_per_epoch_usd"]) == pytest.approx(7.0 * reportdb.CPU8 / 3600)
    assert pip8["price_kind"] == "spot" and pip8["instance"] == "gcp-2017:n1-highcpu-8"
    assert pip8["baseline"] == "gpu" and pip8["baseline_kind"] == "gpu" and pip8["projected"] == "False"
    cmp16 = s[("woolf2017", "mnist_mlp", "cpu16cmp")]
    assert float(cmp16["time_rel_baseline"]) == pytest.approx(10.0 / 7.0)
    assert float(cmp16["cost_rel_baseline"]) == pytest.approx(10.0 * 2 * reportdb.CPU8 / (7.0 * reportdb.GPU))
    assert float(cmp16["speedup_vs_fewest_vcpus"]) == pytest.approx(14.0 / 10.0)
    assert float(cmp16["parallel_efficiency"]) == pytest.approx(14.0 / 10.0 / 2)
    assert float(cmp16["build_speedup_vs_stock"]) == pytest.approx(14.0 / 10.0)
    gpu = s[("woolf2017", "mnist_mlp", "gpu")]
    assert float(gpu["time_rel_baseline"]) == 1.0 and float(gpu["cost_rel_baseline"]) == 1.0
    assert float(gpu["price_usd_per_hour"]) == pytest.approx(reportdb.GPU) and gpu["price_kind"] == "on-demand"
    assert float(s[("woolf2017", "text_generator_keras", "cpu8cmp")]["time_rel_baseline"]) == pytest.approx(2.5)
    assert float(s[("woolf2017", "lstm_text_generation", "cpu8pip")]["time_rel_baseline"]) == pytest.approx(3.0)
    assert len(s) == 12
    header = next(csv.reader(open(out / "summary.csv")))
    for col in ("workload", "device", "vcpus", "build", "epochs", "total_time_s", "epoch_time_s", "cost_usd",
                "time_rel_baseline", "cost_rel_baseline", "projected", "epoch_time_iqr_s", "n_runs"):
        assert col in header


def test_woolf_fixture_bars_follow_the_studys_formulas(woolf_report):
    """Every CPU bar from the raw CSVs with the study's formulas (sum of elapsed; rates 8/16 vCPUs =
    1x/2x the preemptible n1-highcpu-8 rate; GPU 0.745 USD/h), independently of cpustudy's code."""
    _, out = woolf_report
    s = reportdb.read_summary(out / "summary.csv")

    def total(path):
        with open(path, newline="") as f:
            return sum(float(r["elapsed"]) for r in csv.DictReader(f))

    checked = 0
    for gpu_log in glob.glob(str(reportdb.FIXTURES / "gpu" / "*_tensorflow.csv")):
        workload = Path(gpu_log).name[: -len("_tensorflow.csv")]
        for folder, short in (("cpu-pip", "pip"), ("cpu-compiled", "cmp")):
            for v in (8, 16):
                log = reportdb.FIXTURES / folder / f"cpu{v}" / f"{workload}_tensorflow.csv"
                if not log.exists():
                    continue
                t = total(log) / total(gpu_log)
                c = total(log) * reportdb.CPU8 * (v // 8) / (total(gpu_log) * reportdb.GPU)
                row = s[("woolf2017", workload, f"cpu{v}{short}")]
                assert abs(float(row["time_rel_baseline"]) - t) < 1e-9
                assert abs(float(row["cost_rel_baseline"]) - c) < 1e-9
                checked += 1
    assert checked == 9


def test_pareto_front_and_cheapest():
    import pandas as pd

    df = pd.DataFrame({
        "total_time_s": [10, 20, 30, 15, 40],
        "cost_usd": [5.0, 2.0, 1.0, 6.0, 3.0],
    })
    assert list(summary.pareto_front(df)) == [True, True, True, False, False]
    assert summary.cheapest(df) == 2
    assert summary.cheapest(df, deadline=25) == 1
    assert summary.cheapest(df, deadline=5) is None
