"""A configuration is one type: its key, its columns, and a tuning applied without losing the sweep's axes."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

from cpustudy import workloads
from cpustudy.environment import machine
from cpustudy.measure import sweep
from cpustudy.identity import Configuration
from cpustudy.measure.request import SweepRequest
from cpustudy.measure.spec import Host, RunSpec, plan
from cpustudy.store import Store

TOPO = machine.CpuTopology(cpus={0: (0, 0, 0), 1: (0, 1, 0)})
SHIPPED_DB = Path(__file__).resolve().parents[1] / "reports" / "h100-spr16" / "gpu-2026-11-23.sqlite"


def test_a_database_measured_before_the_type_keeps_its_cell_keys(tmp_path):
    db = tmp_path / "old.sqlite"
    shutil.copy(SHIPPED_DB, db)
    with Store.open(db) as s:  # upgraded to the configuration columns
        runs = [r for r in s.runs() if r["cell_key"]]
        fingerprints = {m["id"]: m["fingerprint"] for m in s.machines()}
    assert len(runs) >= 10
    for r in runs:
        c = Configuration.from_fields(json.loads(r["settings"]))
        assert c.key(fingerprints[r["machine_id"]]) == r["cell_key"]
        assert r["workload_version"] == 1 and json.loads(r["env"]) == dict(c.env)


def test_a_new_workload_version_or_precision_is_a_new_key_and_the_old_fields_are_not():
    config = plan(RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, data="synthetic"), Host(TOPO))
    c = Configuration.of(config)
    assert c.workload_version == 1 and c.build == "tf" and c.instance is None
    same = [dataclasses.replace(c, cpu_model="EPYC"), dataclasses.replace(c, instance="gcp:n2-highcpu-2")]
    assert {x.key("m") for x in same} == {c.key("m")}  # the platform is the machine's fingerprint's part
    other = [dataclasses.replace(c, workload_version=2), dataclasses.replace(c, precision_policy="mixed_bfloat16"),
             dataclasses.replace(c, batch_size=64), dataclasses.replace(c, tuning_id=3)]
    assert len({x.key("m") for x in other} | {c.key("m")}) == 5
    assert c.key("m") != c.key("other machine")
    columns = c.columns()
    assert columns["env"] == json.dumps(dict(config.env), sort_keys=True) and columns["batch_size"] == 128


def test_a_tuned_sweep_keeps_its_batch_sizes_precisions_and_target(run_cli, db, empty_keras_home):
    m = machine.collect()
    with Store.open(db) as s:
        mid = s.machine_id(m.as_dict())
        s.add_tuning(mid, {"workload": "mnist_mlp", "build": "tf", "vcpus": 1, "trials": 4,
                           "setting": {"intra_threads": 1, "inter_threads": 1, "onednn": None, "xla": None,
                                       "input_pipeline": "tfdata", "batch_size": 512}})
    native = [p for p, flags in (("mixed_bfloat16", {"avx512_bf16", "amx_bf16"}),
                                 ("mixed_float16", {"avx512_fp16", "amx_fp16"}))
              if flags & set(machine.cpu_flags() or ())]
    precisions = ["float32", *native[:1]]
    r = run_cli("sweep", "--vcpus", 1, "--workloads", "mnist_mlp", "--batch-sizes", "64,256", "--precisions",
                ",".join(precisions), "--data", "learnable", "--target-accuracy", "0.9", "--max-epochs", 3,
                "--tuned", "--dry-run", "--db", db)
    assert r.code == 0, r.err
    request = SweepRequest(workloads="mnist_mlp", vcpus="1", tuned=True, batch_sizes=(64, 256),
                           precisions=tuple(precisions), data="learnable", target_accuracy=0.9, epochs=3)
    cells = sweep.plan_from(request, str(db))
    got = sorted((c.config.batch_size, c.config.precision_policy) for c in cells.cells)
    assert got == sorted((b, p) for b in (64, 256) for p in precisions)  # the axes, not the tuner's 512
    assert len({c.key for c in cells.cells}) == len(got)
    assert all(c.config.target_accuracy == 0.9 and c.config.input_pipeline == "tfdata" and c.config.tuning_id
               for c in cells.cells)
    assert f"{len(got)} of {len(got)} cell(s) to measure" in r.out
    # Without an axis, the batch size the tuner chose is the cell's.
    (cell,) = sweep.plan_from(SweepRequest(workloads="mnist_mlp", vcpus="1", tuned=True, data="synthetic",
                                           epochs=2), str(db)).cells
    assert cell.config.batch_size == 512 and cell.config.input_pipeline == "tfdata"


def test_a_new_workload_version_is_measured_again_and_never_pooled_with_the_old(run_cli, tmp_path, monkeypatch):
    import reportdb

    from cpustudy.analysis import summary

    db = tmp_path / "v.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        reportdb.add_run(s, m, "mnist_mlp", "tf", 1, [4.0, 4.0])  # measured when the workload was version 1
        reportdb.add_run(s, m, "mnist_mlp", "tf", 2, [3.0, 3.0])
    w = workloads.get("mnist_mlp")
    v1 = plan(RunSpec(workload=w, vcpus=1, data="synthetic"), Host(TOPO))
    v2 = plan(RunSpec(workload=dataclasses.replace(w, version=2), vcpus=1, data="synthetic"), Host(TOPO))
    assert v2.workload_version == 2 and sweep.cell_key(v1, "m") != sweep.cell_key(v2, "m")  # not resumed into
    with Store.read(db) as s:
        assert len(summary.analyze(s, summary.Options()).summary) == 2
    monkeypatch.setitem(workloads.ALL, "mnist_mlp", dataclasses.replace(w, version=2))
    with Store.read(db) as s:
        r = run_cli("report", "--db", db, "--out", tmp_path / "out")
    assert r.code == 2 and "earlier version of its workload" in r.err and len(r.err.strip().splitlines()) == 1
