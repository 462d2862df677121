"""What each configuration costs (cpustudy.analysis.costs): GPU runs priced by their accelerator, one
cost basis per report, the 2017 study's own rates."""

from __future__ import annotations

import pandas as pd
import pytest
import reportdb

from cpustudy import prices as pricing
from cpustudy.analysis import summary
from cpustudy.errors import UserError
from cpustudy.report import findings
from cpustudy.store import Store

HEADER = ",".join(pricing.COLUMNS)


def test_gpu_runs_are_the_baseline_and_priced_by_their_accelerator(tmp_path):
    db = reportdb.make_local_db(tmp_path / "gpu.sqlite")
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-gpu", "cpu_model": "Host CPU", "logical_cpus": 16})
        reportdb.add_run(s, m, "mnist_mlp", "tf", 8, [1.0, 1.0], device="gpu",
                software={"tf_version": "2.21.0", "gpus": ["NVIDIA H100 80GB HBM3"]})
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options(on_demand=True))
        gpu = a.summary[(a.summary["device"] == "gpu")].iloc[0]
        assert gpu["label"] == "gpu" and gpu["instance"] == "gcp:a3-highgpu-1g" and gpu["price_kind"] == "on-demand"
        b = a.baselines[("cpustudy", "mnist_mlp")]
        assert b.kind == "gpu" and b.total_time_s == pytest.approx(20.0)
        tf2 = a.summary[a.summary["label"] == "cpu2 tf"].iloc[0]
        assert tf2["time_rel_baseline"] == pytest.approx(50.0 / 20.0)
        n2 = pricing.Catalog.load().instance("gcp:n2-highcpu-2").on_demand
        h100 = pricing.Catalog.load().instance("gcp:a3-highgpu-1g").on_demand
        assert tf2["cost_rel_baseline"] == pytest.approx(50.0 * n2 / (20.0 * h100))
        assert a.baselines[("cpustudy", "mnist_cnn")].kind == "fallback"  # no GPU run of mnist_cnn
        facts = findings.findings(a)
        assert any("is the cheapest configuration for mnist_mlp: " in f and "the GPU's cost" in f for f in facts)
        # One cost basis: an instance without a spot price is not priced on the (default) spot basis ...
        a = summary.analyze(s, summary.Options(gpu_instance="aws:g6.xlarge"))
        gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
        assert "no spot price for aws:g6.xlarge" in gpu["price_note"] and gpu["cost_usd"] != gpu["cost_usd"]
        # ... and is on-demand, like every other row, with --on-demand
        a = summary.analyze(s, summary.Options(gpu_instance="aws:g6.xlarge", on_demand=True))
        gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
        assert gpu["instance"] == "aws:g6.xlarge" and gpu["price_kind"] == "on-demand"
        assert set(a.summary["price_kind"].dropna()) == {"on-demand"}
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-gpu"})
        reportdb.add_run(s, m, "mnist_cnn", "tf", 8, [1.0], device="gpu")  # nothing says which GPU
    with Store.read(db) as s, pytest.raises(UserError, match="pass --gpu-instance"):
        summary.analyze(s, summary.Options())


def _add_run(store, machine, device, vcpus, study="cpustudy"):
    run = store.start_run(machine, {"workload": "mnist_mlp", "build": "tf", "vcpus": vcpus, "device": device,
                                    "study": study, "epochs": 2})
    store.add_epoch(run, {"epoch": 1, "elapsed_s": 9.0, "warmup": True})
    store.add_epoch(run, {"epoch": 2, "elapsed_s": 2.0})
    store.finish_run(run, "ok", {"epoch_time_s": 2.0, "timed_epochs": 1})


def test_gpu_without_spot_price_is_not_priced_on_the_spot_basis(tmp_path, db):
    f = tmp_path / "acme.csv"
    f.write_text(
        f"{HEADER}\n"
        "acme,box-2,,2,4,,0,eu,0.10,0.03,acme sheet,2026-10-01\n"
        "acme,gpu-1,,8,32,L4,1,eu,1.20,,acme sheet (no spot offer),2026-10-01\n"
    )
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-test", "cpu_model": "Test CPU", "logical_cpus": 8})
        _add_run(s, m, "cpu", 2)
        _add_run(s, m, "gpu", 8)
    base = dict(prices=str(f), instance_family="acme:box", gpu_instance="acme:gpu-1")
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options(**base))
        cpu = a.summary[a.summary["device"] == "cpu"].iloc[0]
        gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
        assert cpu["price_kind"] == "spot" and cpu["price_usd_per_hour"] == pytest.approx(0.03)
        assert pd.isna(gpu["cost_usd"]) and pd.isna(gpu["price_usd_per_hour"])
        assert gpu["price_kind"] is None or pd.isna(gpu["price_kind"])
        assert gpu["price_note"] == (
            "no spot price for acme:gpu-1 in the catalog: not priced on the spot basis; add one with "
            "--prices FILE or compare on-demand with --on-demand")
        assert set(a.prices_used["price_kind"]) == {"spot"}  # one basis in the report
        assert any("could not be priced" in n for n in a.notes)

        a = summary.analyze(s, summary.Options(on_demand=True, **base))
        cpu = a.summary[a.summary["device"] == "cpu"].iloc[0]
        gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
        assert gpu["price_kind"] == "on-demand" and gpu["price_usd_per_hour"] == pytest.approx(1.20)
        assert gpu["cost_usd"] == pytest.approx(gpu["billed_s"] * 1.20 / 3600) and gpu["cost_usd"] > 0
        assert gpu["billed_s"] >= gpu["total_time_s"]  # a full training bills its tracing and start-up too
        assert cpu["price_kind"] == "on-demand" and cpu["price_usd_per_hour"] == pytest.approx(0.10)
        assert set(a.prices_used["price_kind"]) == {"on-demand"}


def test_the_2017_k80_keeps_the_studys_on_demand_rate_and_says_so(db):
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-2017", "cpu_model": "Test CPU", "logical_cpus": 8})
        _add_run(s, m, "cpu", 8, study="woolf2017")
        _add_run(s, m, "gpu", 8, study="woolf2017")
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    cpu = a.summary[a.summary["device"] == "cpu"].iloc[0]
    gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
    assert cpu["price_kind"] == "spot" and cpu["instance"] == "gcp-2017:n1-highcpu-8"
    assert gpu["price_kind"] == "on-demand" and gpu["price_usd_per_hour"] == pytest.approx(0.745)
    assert "on-demand by the study's own pricing" in gpu["price_note"]


def test_cloud_runs_are_priced_as_their_instance_and_never_pooled_across_machines(tmp_path):
    import reportdb

    from cpustudy.analysis import summary
    from cpustudy.store import Store

    db = tmp_path / "cloud.sqlite"

    def where(cloud, itype, zone):
        return {"cloud": cloud, "instance_type": itype, "region": zone[:-2], "zone": zone, "spot": True,
                "recoveries": 0}

    with Store.open(db) as s:
        ice = s.machine_id({"fingerprint": "ice", "cpu_model": "Intel(R) Xeon(R) Platinum 8373C CPU @ 2.60GHz",
                            "logical_cpus": 8})
        cascade = s.machine_id({"fingerprint": "cas", "cpu_model": "Intel(R) Xeon(R) CPU @ 2.80GHz",
                                "logical_cpus": 8})
        spr = s.machine_id({"fingerprint": "spr", "cpu_model": "Intel(R) Xeon(R) Platinum 8488C", "logical_cpus": 8})
        reportdb.add_run(s, ice, "mnist_mlp", "tf", 8, [2.0, 2.0], cloud=where("gcp", "n2-highcpu-8", "us-central1-a"))
        reportdb.add_run(s, cascade, "mnist_mlp", "tf", 8, [3.0, 3.0],
                         cloud=where("gcp", "n2-highcpu-8", "us-central1-b"))
        reportdb.add_run(s, spr, "mnist_mlp", "tf", 8, [1.0, 1.0], cloud=where("aws", "c7i.2xlarge", "us-east-1a"))
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options(on_demand=True))
    rows = {r.build: r for r in a.summary.itertuples()}
    # one VM type on two CPU generations, and another VM type: three configurations, not one median
    assert set(rows) == {"tf@n2-highcpu/Xeon Platinum 8373C @ 2.60GHz", "tf@n2-highcpu/Xeon @ 2.80GHz", "tf@c7i"}
    assert rows["tf@c7i"].instance == "aws:c7i.2xlarge" and "measured on aws:c7i.2xlarge" in rows["tf@c7i"].price_note
    n2 = rows["tf@n2-highcpu/Xeon Platinum 8373C @ 2.60GHz"]
    assert n2.instance == "gcp:n2-highcpu-8" and "us-central1-a" in n2.price_note
    assert n2.price_usd_per_hour == pytest.approx(pricing.Catalog.load().instance("gcp:n2-highcpu-8").on_demand)


def test_the_next_larger_vm_sentence_comes_from_typed_columns_and_only_for_family_prices(tmp_path):
    import reportdb

    from cpustudy.analysis import summary
    from cpustudy.report.findings import findings
    from cpustudy.store import Store

    db = tmp_path / "n.sqlite"
    where = {"cloud": "gcp", "instance_type": "n2-highcpu-8", "region": "us-central1", "zone": "us-central1-a",
             "spot": True, "recoveries": 0}
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        reportdb.add_run(s, m, "mnist_mlp", "tf", 1, [4.0, 4.0])  # no 1-vCPU n2-highcpu: priced as the 2-vCPU VM
        v = s.machine_id({"fingerprint": "vm", "cpu_model": "Xeon", "logical_cpus": 8})
        reportdb.add_run(s, v, "mnist_cnn", "tf", 2, [9.0, 9.0], cloud=where)  # 2 of a cloud VM's 8 vCPUs
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    rows = {r.workload: r for r in a.summary.itertuples()}
    assert (rows["mnist_mlp"].priced_by, rows["mnist_mlp"].priced_vcpus) == ("family", 2)
    assert (rows["mnist_cnn"].priced_by, rows["mnist_cnn"].priced_vcpus) == ("cloud", 8)
    said = [f for f in findings(a) if "smallest VM of its family" in f]
    assert len(said) == 1 and said[0].startswith("Cost at 1 vCPU is that of gcp:n2-highcpu-2 (2 vCPUs)")


def test_a_cloud_run_with_an_unreadable_accelerator_record_is_not_priced_as_its_bare_vm(tmp_path):
    import reportdb

    from cpustudy.analysis import summary
    from cpustudy.store import Store

    db = tmp_path / "g.sqlite"
    where = {"cloud": "gcp", "instance_type": "n1-standard-4", "accelerators": "T4:x", "region": "us-central1",
             "zone": "us-central1-b", "spot": False, "recoveries": 0}
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "vm", "cpu_model": "Xeon", "logical_cpus": 4})
        reportdb.add_run(s, m, "mnist_mlp", "jax-here", 4, [1.0, 1.0], device="gpu", cloud=where)
    with Store.read(db) as s:
        row = summary.analyze(s, summary.Options(on_demand=True)).summary.iloc[0]
    assert row["instance"] is None and "cannot be read" in row["price_note"]


def test_the_next_larger_vm_sentence_says_where_the_smaller_size_had_no_rate_on_the_basis(tmp_path):
    """A 1-vCPU run on a Zen 3 (Milan) machine: the shipped catalog has t2d-standard-1 on demand only, so on the spot
    basis the run is priced as t2d-standard-2 (its own family, never another's), and the page says why."""
    import reportdb

    from cpustudy.analysis import summary
    from cpustudy.report.findings import findings
    from cpustudy.store import Store

    db = tmp_path / "z.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "zen3", "cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD",
                          "arch": "x86_64", "logical_cpus": 2, "threads_per_core": 1,
                          "extra": {"family": 25, "model": 1}})
        reportdb.add_run(s, m, "mnist_mlp", "tf", 1, [4.0, 4.0])
        reportdb.add_run(s, m, "mnist_mlp", "tf", 2, [2.5, 2.5])
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options(prices=None))
    assert set(a.summary["instance"]) == {"gcp:t2d-standard-2"}  # 1 and 2 vCPUs alike: one family, one size
    (said,) = [f for f in findings(a) if f.startswith("Cost at 1 vCPU")]
    assert "the smallest of its family with a rate on this basis (no spot price for t2d-standard-1" in said, said
