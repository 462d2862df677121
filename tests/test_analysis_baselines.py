"""Baselines (cpustudy.analysis.baselines): the default, a requested one, and the labelled fallbacks."""

from __future__ import annotations

import pytest
import reportdb

from cpustudy import prices as pricing
from cpustudy.analysis import summary
from cpustudy.store import Store


def test_local_cpu_only_report_uses_a_labelled_fallback_baseline(run_cli, tmp_path, monkeypatch):
    db = reportdb.make_local_db(tmp_path / "local.sqlite")
    monkeypatch.chdir(tmp_path)
    r = run_cli("report", "--db", db, "--dpi", "30")  # PNG and SVG
    assert r.code == 0, r.err
    out = tmp_path / "reports" / "local"  # the database's name: not an imported study
    assert ("fallback baseline: no GPU run of mnist_mlp and mnist_cnn: each is compared with cpu1 tf, the "
            "stock build at the fewest vCPUs.") in r.err
    s = reportdb.read_summary(out / "summary.csv")
    base = s[("cpustudy", "mnist_mlp", "cpu1 tf")]
    assert base["baseline"] == "cpu1 tf" and base["baseline_kind"] == "fallback"
    assert "no GPU run" in base["baseline_note"]
    assert float(base["total_time_s"]) == pytest.approx(4.0 * 20)  # epoch time x the default 20 epochs
    tf2 = s[("cpustudy", "mnist_mlp", "cpu2 tf")]
    assert int(tf2["n_runs"]) == 3  # the failed run is not counted
    assert float(tf2["epoch_time_s"]) == pytest.approx(2.5)
    assert float(tf2["epoch_time_iqr_s"]) == pytest.approx(0.5)
    assert float(tf2["time_rel_baseline"]) == pytest.approx(50.0 / 80.0)
    spot = pricing.Catalog.load().instance("gcp:n2-highcpu-2").spot
    assert float(tf2["billed_s"]) == pytest.approx(50.0)  # no start-up or tracing stored: its epochs, billed
    assert float(tf2["cost_usd"]) == pytest.approx(float(tf2["billed_s"]) * spot / 3600)
    assert float(tf2["cost_per_million_samples_usd"]) == pytest.approx(spot / 3600 * 1e6 / (60000 / 2.5))
    assert "next larger" in base["price_note"]  # no 1-vCPU n2-highcpu: priced as n2-highcpu-2
    assert float(base["cost_rel_baseline"]) == 1.0
    assert float(s[("cpustudy", "mnist_mlp", "cpu2 tf-eigen")]["build_speedup_vs_stock"]) == pytest.approx(50 / 40)
    cnn = s[("cpustudy", "mnist_cnn", "cpu1 tf")]
    assert cnn["projected"] == "True" and float(cnn["total_time_s"]) == pytest.approx(120.0)
    page = (out / "index.html").read_text()
    # said once for both workloads, as a note (not in red, as if it were an error)
    assert page.count("<strong>Baseline.</strong>") == 1 and 'class="fallback"' not in page
    assert "no GPU run of mnist_mlp and mnist_cnn: each is compared with cpu1 tf" in page and "projected" in page
    assert (out / "cpustudy-mnist_mlp-time.svg").read_text().lstrip().startswith("<?xml")
    assert (out / "cpustudy-build-heatmap.png").is_file()


def test_requested_baseline_and_its_fallback(tmp_path):
    db = reportdb.make_local_db(tmp_path / "local.sqlite")
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options(baseline="tf@2"))
    tf1 = a.summary[(a.summary["workload"] == "mnist_mlp") & (a.summary["label"] == "cpu1 tf")].iloc[0]
    assert tf1["time_rel_baseline"] == pytest.approx(80.0 / 50.0) and tf1["baseline_kind"] == "requested"
    cnn = a.baselines[("cpustudy", "mnist_cnn")]
    assert cnn.kind == "fallback" and "tf@2 not measured" in cnn.note and cnn.label == "cpu1 tf"


def test_a_stock_build_that_timed_no_epoch_after_its_warm_up_is_said_to_lack_a_full_training_time(tmp_path):
    """tf at 1 vCPU reached its target within the warm-up epoch in each run (no full-training time); tf-eigen at 2
    trained whole epochs: the fallback is tf-eigen, and it says why not tf, which was measured."""
    db = tmp_path / "warmup.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-local", "cpu_model": "Test CPU @ 2.0GHz", "logical_cpus": 2})
        for rep in range(2):
            run = s.start_run(m, {"workload": "mnist_mlp", "build": "tf", "vcpus": 1, "device": "cpu",
                                  "study": "cpustudy", "epochs": 20, "data": "real", "repeat": rep,
                                  "target_accuracy": 0.9})
            s.add_epoch(run, {"epoch": 1, "elapsed_s": 5.0, "warmup": True, "val_accuracy": 0.95})
            s.finish_run(run, "ok", {"epoch_time_s": 5.0, "timed_epochs": 0, "target_accuracy": 0.9,
                                     "target_reached": True, "epochs_to_target": 1, "time_to_target_s": 5.0})
        reportdb.add_run(s, m, "mnist_mlp", "tf-eigen", 2, [2.0, 2.1])
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    base = a.baselines[("cpustudy", "mnist_mlp")]
    assert base.label == "cpu2 tf-eigen" and base.kind == "fallback"
    assert base.reason == ("the stock build (tf) has no full-training time (no run of it timed an epoch after the "
                           "warm-up): the configuration at the fewest vCPUs with a full-training time")
    assert any(n.startswith("1 configuration(s) have a price but no full-training time") and n.endswith("cpu1 tf")
               for n in a.notes)
