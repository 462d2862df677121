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
