"""Charts carry the findings' verdicts, and the page says which data its runs trained on."""

from __future__ import annotations

import reportdb

from cpustudy.analysis import summary
from cpustudy.report import figures
from cpustudy.store import Store


def test_the_heatmap_draws_an_inconclusive_comparison_neutral_and_says_so(run_cli, tmp_path):
    db = tmp_path / "h.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        reportdb.add_run(s, m, "mnist_mlp", "tf", 1, [4.0, 4.0])
        reportdb.add_run(s, m, "mnist_mlp", "tf-onednn", 1, [3.2, 3.2])  # 1.25x, one run each: inconclusive
        reportdb.add_run(s, m, "mnist_cnn", "tf", 1, [10.0, 10.0])
        reportdb.add_run(s, m, "mnist_cnn", "tf-onednn", 1, [4.0, 4.0])  # 2.5x: beyond the single-run margin
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    d = figures.fig_build_heatmap(a, "cpustudy").data.set_index("workload", drop=False)
    mlp, cnn = d.loc["mnist_mlp"], d.loc["mnist_cnn"]
    assert mlp["log_speedup"] == 0.0 and "inconclusive" in mlp["text"] and mlp["text"].startswith("1.25x")
    assert cnn["log_speedup"] > 1 and "inconclusive" not in cnn["text"]
    r = run_cli("report", "--db", db, "--out", tmp_path / "out", "--no-svg")
    assert r.code == 0, r.err
    page = (tmp_path / "out" / "report.md").read_text()
    assert "Data: synthetic (the real data's shapes and statistics, random labels): 4 runs." in page
