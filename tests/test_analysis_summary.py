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

    from cpustudy.report import figures, findings

    df = pd.DataFrame({
        "total_time_s": [10, 20, 30, 15, 40],
        "cost_usd": [5.0, 2.0, 1.0, 6.0, 3.0],
    })
    assert list(figures.pareto_front(df)) == [True, True, True, False, False]
    assert findings.cheapest(df) == 2
    assert findings.cheapest(df, deadline=25) == 1
    assert findings.cheapest(df, deadline=5) is None


def _warmup_only_run(s, m, vcpus, seconds, samples_per_s, repeat):
    """A run of one epoch (the warm-up, graph tracing included) that reached its target in it: kept for the target,
    with no timed epoch after the warm-up."""
    run = s.start_run(m, {"workload": "mnist_mlp", "build": "tf", "vcpus": vcpus, "device": "cpu",
                          "study": "cpustudy", "epochs": 1, "data": "synthetic", "repeat": repeat,
                          "target_accuracy": 0.9})
    s.add_epoch(run, {"epoch": 1, "elapsed_s": seconds, "warmup": True, "val_accuracy": 0.95,
                      "samples_per_s": samples_per_s})
    s.finish_run(run, "ok", {"epoch_time_s": seconds, "measured_epoch_time_s": seconds, "samples_per_s": samples_per_s,
                             "timed_epochs": 0, "target_accuracy": 0.9, "target_reached": True,
                             "epochs_to_target": 1, "time_to_target_s": seconds})


def test_samples_per_s_rests_on_the_runs_that_timed_an_epoch_after_the_warm_up(tmp_path):
    """tf at 1 vCPU: one run of three epochs (two timed, 2 s each: 30000 samples/s) and one of the warm-up alone (10 s
    with the graph's tracing: 6000 samples/s); its samples/s is the timed run's, not a median of both. tf at 2
    vCPUs ran only warm-up epochs: its samples/s is theirs, and the row says so."""
    from cpustudy.store import Store

    db = tmp_path / "warmup.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-local", "cpu_model": "Test CPU @ 2.0GHz", "logical_cpus": 2})
        reportdb.add_run(s, m, "mnist_mlp", "tf", 1, [2.0, 2.0], data="synthetic", target_accuracy=0.9)
        _warmup_only_run(s, m, 1, 10.0, 6000.0, repeat=1)
        _warmup_only_run(s, m, 2, 8.0, 7500.0, repeat=0)
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    by = {r["label"]: r for r in a.summary.to_dict("records")}
    assert by["cpu1 tf"]["n_runs"] == 2 and by["cpu1 tf"]["timed_runs"] == 1
    assert by["cpu1 tf"]["samples_per_s"] == pytest.approx(30000.0)
    assert by["cpu1 tf"]["samples_per_s_basis"] == "timed epochs"
    assert by["cpu2 tf"]["samples_per_s"] == pytest.approx(7500.0)
    assert by["cpu2 tf"]["samples_per_s_basis"] == "warm-up epoch only (graph tracing included)"
    assert "samples_per_s_basis" in summary.SUMMARY_COLUMNS
    assert any("samples/s of the warm-up epoch alone" in n and n.endswith("mnist_mlp cpu2 tf") for n in a.notes)
