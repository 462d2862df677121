"""Beyond the study: batch size and precision as axes of a sweep, learnable data, and the time to a
target accuracy (issue: batch size, precision, time and cost to accuracy)."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np
import pytest

from cpustudy import workloads
from cpustudy.environment import machine
from cpustudy.errors import UserError
from cpustudy.measure import spec, sweep
from cpustudy.workloads.datasets import plant

TOPO = machine.CpuTopology(cpus={0: (0, 0, 0), 1: (0, 1, 0)})


def test_a_precision_the_cpu_cannot_run_natively_is_refused():
    spec.check_precision("mixed_bfloat16", "cpu", ["avx2", "avx512_bf16"])  # Zen 4, Cooper Lake: native
    spec.check_precision("mixed_bfloat16", "cpu", ["amx_bf16"])  # Sapphire Rapids
    with pytest.raises(UserError, match="no AVX512_BF16 or AMX_BF16"):
        spec.check_precision("mixed_bfloat16", "cpu", ["avx2", "fma"])  # Zen 3: it would be emulated
    with pytest.raises(UserError, match="AVX512_FP16"):
        spec.check_precision("mixed_float16", "cpu", ["avx512_bf16"])
    spec.check_precision("mixed_float16", "gpu", [])  # capability unknown here: the worker checks the GPU it got
    with pytest.raises(UserError, match="compute capability 8") as refused:  # a T4: refused once, in the parent
        spec.check_precision("mixed_bfloat16", "gpu", [], gpu_capability=7.5)
    assert len(str(refused.value).splitlines()) == 1
    spec.check_precision("float32", "cpu", None)  # flags unreadable: float32 needs none
    with pytest.raises(UserError, match="would be emulated"):
        spec.check_precision("mixed_bfloat16", "cpu", None)  # nothing shows it is native: refused, no traceback
    with pytest.raises(UserError, match="use one of"):
        spec.check_precision("bfloat16", "cpu", ["avx512_bf16"])


def test_a_host_given_its_cpu_flags_is_checked_against_them_not_against_this_cpu():
    """A simulated measurer's CPU (tests/simloop.py) is planned for as it is described, whatever this CPU is."""
    run = spec.RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, data="synthetic",
                       precision_policy="mixed_bfloat16")
    config = spec.plan(run, host=spec.Host(TOPO, cpu_flags=frozenset({"avx2", "amx_bf16"})))
    assert config.precision_policy == "mixed_bfloat16"
    with pytest.raises(UserError, match="no AVX512_BF16 or AMX_BF16"):
        spec.plan(run, host=spec.Host(TOPO, cpu_flags=frozenset({"avx2", "fma"})))


def test_learnable_data_follows_one_planted_rule_in_the_same_formats():
    for name in ("mnist_mlp", "cifar10_cnn", "imdb_fasttext", "lstm_text_generation"):
        w = workloads.get(name)
        d = w.synthetic(512, seed=3)
        x, y = plant(d.x, d.y)
        assert x.shape == d.x.shape and x.dtype == d.x.dtype and y.shape == d.y.shape and y.dtype == d.y.dtype
        x2, y2 = plant(d.x, d.y)
        assert np.array_equal(x, x2) and np.array_equal(y, y2)  # a fixed rule, not the run's seed
        classes = (y.argmax(axis=1) if y.ndim == 2 else y).astype(int)
        assert len(set(classes.tolist())) > 1  # not one label for everything
    # images: the class is where the input was raised; the label is recoverable from x alone
    d = workloads.get("mnist_mlp").synthetic(2000, seed=5)
    x, y = plant(d.x, d.y)
    rng = np.random.default_rng(2017)
    sets = np.stack([rng.choice(784, size=15, replace=False) for _ in range(10)])
    guess = np.argmax(np.stack([x[:, s].sum(axis=1) for s in sets], axis=1), axis=1)
    assert (guess == y.argmax(axis=1)).mean() > 0.9


def test_target_accuracy_is_refused_on_synthetic_data_and_with_capped_epochs(empty_keras_home):
    w = workloads.get("mnist_mlp")
    with pytest.raises(UserError, match="labels are random"):
        spec.plan(spec.RunSpec(workload=w, vcpus=1, data="synthetic", target_accuracy=0.9), spec.Host(TOPO))
    with pytest.raises(UserError, match="no cached mnist data"):
        spec.plan(spec.RunSpec(workload=w, vcpus=1, data="auto", target_accuracy=0.9), spec.Host(TOPO))
    with pytest.raises(UserError, match="drop --steps-per-epoch"):
        spec.plan(spec.RunSpec(workload=w, vcpus=1, data="learnable", target_accuracy=0.9, steps_per_epoch=10), spec.Host(TOPO))
    with pytest.raises(UserError, match="between 0 and 1"):
        spec.plan(spec.RunSpec(workload=w, vcpus=1, data="learnable", target_accuracy=90), spec.Host(TOPO))
    c = spec.plan(spec.RunSpec(workload=w, vcpus=1, data="learnable", target_accuracy=0.9, epochs=10), spec.Host(TOPO))
    assert c.target_accuracy == 0.9 and c.epochs == 10 and c.data == "learnable"


def test_batch_sizes_and_precisions_are_axes_of_a_sweep_and_old_cell_keys_stay(empty_keras_home):
    w = [workloads.get("mnist_mlp")]
    # Planned for a VM (its CPU flags are checked by the sweep that runs there), so that bfloat16 is planned
    # whatever this machine's CPU offers.
    cells = sweep.plan_sweep(w, ["tf"], [1], machine_fingerprint="m", host=spec.Host.vm(1), epochs=2,
                             steps_per_epoch=10, data="synthetic", batch_sizes=[32, 128],
                             precisions=["float32", "mixed_bfloat16"])
    settings = [(c.config.batch_size, c.config.precision_policy) for c in cells]
    assert sorted(settings) == [(32, "float32"), (32, "mixed_bfloat16"), (128, "float32"), (128, "mixed_bfloat16")]
    assert len({c.key for c in cells}) == 4
    assert all(a != b for a, b in zip(settings, settings[1:]))  # consecutive cells differ in setting
    # A float32 cell keeps the key it had before precisions existed: earlier databases still resume.
    c = [c for c in cells if c.config.precision_policy == "float32" and c.config.batch_size == 32][0]
    values = c.config.as_dict()
    first_key_fields = (  # the cell key's fields before precisions existed, as they were hashed then
        "workload", "device", "build", "vcpus", "repeat", "epochs", "steps_per_epoch", "batch_size",
        "data", "seed", "intra_threads", "inter_threads", "jit_compile", "options", "params",
        "input_pipeline", "env", "warmup_steps", "tuning_id", "validation")
    old = {k: values.get(k) for k in first_key_fields}
    old["machine"] = "m"
    assert c.key == hashlib.sha256(json.dumps(old, sort_keys=True, default=str).encode()).hexdigest()[:20]


@pytest.mark.tensorflow
def test_run_stops_at_the_target_and_stores_epochs_and_time_to_it(run_cli, db, empty_keras_home):
    r = run_cli("run", "mnist_mlp", "--vcpus", "1", "--data", "learnable", "--target-accuracy", "0.9",
                "--max-epochs", "4", "--db", db)
    assert r.code == 0, r.err
    conn = sqlite3.connect(db)
    reached, epochs_to, time_to, data, run_id = conn.execute(
        "SELECT target_reached, epochs_to_target, time_to_target_s, data, id FROM runs").fetchone()
    epochs = conn.execute("SELECT epoch, elapsed_s, val_accuracy FROM epochs WHERE run_id = ? ORDER BY epoch",
                          (run_id,)).fetchall()
    conn.close()
    assert data == "learnable" and reached == 1
    assert len(epochs) == epochs_to <= 4  # it stopped at the epoch that reached the target
    assert epochs[-1][2] >= 0.9 and all(e[2] < 0.9 for e in epochs[:-1])
    assert time_to == pytest.approx(sum(e[1] for e in epochs))
    assert f"reached validation accuracy 0.9 after {epochs_to} epoch(s)" in " ".join(r.out.split())
    refused = run_cli("run", "mnist_mlp", "--data", "synthetic", "--target-accuracy", "0.9", "--db", db.parent / "x.sqlite")
    assert refused.code == 2 and "labels are random" in refused.err and len(refused.err.strip().splitlines()) == 1
    assert not (db.parent / "x.sqlite").exists()


@pytest.mark.tensorflow
def test_mixed_bfloat16_runs_where_the_cpu_has_it_and_is_refused_where_not(run_cli, db, empty_keras_home):
    r = run_cli("run", "mnist_mlp", "--vcpus", "1", "--precision", "mixed_bfloat16", "--epochs", "2",
                "--steps-per-epoch", "10", "--data", "synthetic", "--db", db)
    flags = {f.lower() for f in machine.cpu_flags()}
    if not flags & {"avx512_bf16", "amx_bf16"}:
        assert r.code == 2 and "would be emulated" in r.err
        return
    assert r.code == 0, r.err
    conn = sqlite3.connect(db)
    policy, software = conn.execute("SELECT precision_policy, software FROM runs").fetchone()
    conn.close()
    assert policy == "mixed_bfloat16"
    assert json.loads(software)["model"]["precision_policy"] == "mixed_bfloat16"  # what Keras really used


def test_report_draws_throughput_against_batch_and_cost_to_target_and_judges_at_equal_accuracy(tmp_path):
    from cpustudy.analysis import summary
    from cpustudy.report import beyond, findings
    from cpustudy.store import Store

    db = tmp_path / "beyond.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "z4", "cpu_model": "AMD EPYC 9B14", "logical_cpus": 2})
        # (batch, precision, samples/s, epochs to 0.95, seconds to it): bf16 trains faster per epoch
        # but needs more epochs at batch 128, so judged at equal accuracy it is not the cheaper one.
        for batch, policy, rate, epochs, seconds in ((128, "float32", 15000, 5, 20.0), (128, "mixed_bfloat16", 20000, 8, 40.0),
                                                     (512, "float32", 28000, 5, 11.0)):
            run = s.start_run(m, {"workload": "mnist_mlp", "build": "tf", "vcpus": 2, "batch_size": batch,
                                  "precision_policy": policy, "target_accuracy": 0.95, "data": "learnable",
                                  "epochs": 8})
            s.add_epoch(run, {"epoch": 1, "elapsed_s": 4.0, "warmup": True})
            s.add_epoch(run, {"epoch": 2, "elapsed_s": 60000 / rate})
            s.finish_run(run, "ok", {"epoch_time_s": 60000 / rate, "samples_per_s": rate, "timed_epochs": 1,
                                     "target_reached": True, "epochs_to_target": epochs, "time_to_target_s": seconds})
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    assert set(a.summary["build"]) == {"tf", "tf+bf16", "tf+b512"}  # separate settings, never one median
    assert set(a.summary["workload"]) == {"mnist_mlp (learnable data)"}
    tb = beyond.fig_throughput_batch(a, "cpustudy")
    assert tb is not None and set(tb.data["series"]) == {"2 vCPU tf"}  # the one series at two batch sizes
    assert sorted(tb.data["batch_size"]) == [128.0, 512.0]
    ct = beyond.fig_cost_to_target(a, "cpustudy")
    assert ct is not None and "0.95" in ct.labels.title and len(ct.data) == 3
    facts = [f for f in findings.findings(a) if "to reach validation accuracy 0.95" in f]
    assert len(facts) == 1 and "2 vCPUs tf+b512 is the cheapest to reach" in facts[0]
    # billed from each run's parts (analysis.billed): 5 epochs of 4 s at b128 against 5 of 60000/28000 s at b512
    # plus its first epoch's tracing (the 4 s warm-up less one epoch); not the fixtures' stored times to target
    b512 = 5 * 60000 / 28000 + (4.0 - 60000 / 28000)
    assert f"needs 5 epoch(s) and {5 * 4.0 / b512:.2f}× the cost" in facts[0] and not facts[0].startswith("Inconclusive")


def test_a_precision_the_gpu_cannot_run_natively_is_named_with_its_capability():
    from cpustudy.worker.frameworks import gpu_precision_problem

    assert gpu_precision_problem("mixed_bfloat16", 9.0) is None  # H100
    assert gpu_precision_problem("mixed_bfloat16", 8.0) is None  # A100
    problem = gpu_precision_problem("mixed_bfloat16", 7.5)  # T4: no bfloat16 tensor cores
    assert problem is not None and "compute capability 8 or more" in problem and "mixed_float16" in problem
    assert "compute capability 7" in (gpu_precision_problem("mixed_float16", 6.0) or "")  # P100
    assert gpu_precision_problem("float32", 3.7) is None and gpu_precision_problem("mixed_bfloat16", None) is None
