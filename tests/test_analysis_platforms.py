"""Runs told apart by platform (a cloud instance family, or a CPU model in a merged database) keep their
stock baseline and their build speedups: decisions read the configuration's fields, not its name."""

from __future__ import annotations

import csv
import math

import reportdb

from cpustudy.store import Store


def _where(itype: str) -> dict:
    return {"cloud": "gcp", "instance_type": itype, "region": "us-central1", "zone": "us-central1-a", "spot": True,
            "recoveries": 0}


def _summary(out) -> dict[str, dict[str, str]]:
    with open(out / "summary.csv", newline="") as f:
        return {r["label"]: r for r in csv.DictReader(f) if r["workload"] == "mnist_mlp"}


def test_builds_measured_in_a_cloud_job_keep_their_stock_baseline_and_speedups(run_cli, tmp_path):
    db, out = tmp_path / "cloud.sqlite", tmp_path / "report"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "n2", "cpu_model": "Intel(R) Xeon(R) CPU @ 2.80GHz", "logical_cpus": 8})
        for vcpus, tf, onednn in ((1, 8.0, 6.0), (2, 4.0, 5.0)):
            reportdb.add_run(s, m, "mnist_mlp", "tf", vcpus, [tf, tf], cloud=_where("n2-highcpu-8"))
            reportdb.add_run(s, m, "mnist_mlp", "tf-onednn", vcpus, [onednn, onednn], cloud=_where("n2-highcpu-8"))
    r = run_cli("report", "--db", db, "--out", out)
    assert r.code == 0, r.err
    rows = _summary(out)
    base = rows["cpu1 tf@n2-highcpu"]
    assert base["baseline"] == "cpu1 tf@n2-highcpu" and "the stock build at the fewest vCPUs" in base["baseline_note"]
    assert float(rows["cpu1 tf-onednn@n2-highcpu"]["build_speedup_vs_stock"]) == 8.0 / 6.0
    assert float(rows["cpu2 tf-onednn@n2-highcpu"]["build_speedup_vs_stock"]) == 4.0 / 5.0
    assert (out / "cpustudy-build-heatmap.png").is_file()
    page = (out / "report.md").read_text()
    assert "no stock build" not in page and "tf-onednn@n2-highcpu against tf@n2-highcpu" in page


def test_runs_merged_from_two_cpu_models_are_compared_with_their_own_stock_build(run_cli, tmp_path):
    db, out = tmp_path / "merged.sqlite", tmp_path / "report"
    with Store.open(db) as s:
        epyc = s.machine_id({"fingerprint": "a", "cpu_model": "AMD EPYC 9B14", "logical_cpus": 2})
        xeon = s.machine_id({"fingerprint": "b", "cpu_model": "Intel(R) Xeon(R) Platinum 8481C", "logical_cpus": 2})
        for machine, tf, onednn in ((epyc, 4.0, 2.0), (xeon, 3.0, 6.0)):
            reportdb.add_run(s, machine, "mnist_mlp", "tf", 2, [tf, tf])
            reportdb.add_run(s, machine, "mnist_mlp", "tf-onednn", 2, [onednn, onednn])
    r = run_cli("report", "--db", db, "--out", out, "--baseline", "tf@2")
    assert r.code == 0, r.err
    rows = _summary(out)
    assert float(rows["cpu2 tf-onednn@EPYC 9B14"]["build_speedup_vs_stock"]) == 2.0
    assert float(rows["cpu2 tf-onednn@Xeon Platinum 8481C"]["build_speedup_vs_stock"]) == 0.5
    assert all(float(rows[f"cpu2 tf@{p}"]["build_speedup_vs_stock"]) == 1.0 for p in ("EPYC 9B14", "Xeon Platinum 8481C"))
    # --baseline tf@2 names the recipe's stock run (the first platform), not a build string parsed back
    assert {r["baseline_kind"] for r in rows.values()} == {"requested"}
    assert not math.isnan(float(rows["cpu2 tf@EPYC 9B14"]["time_rel_baseline"]))
