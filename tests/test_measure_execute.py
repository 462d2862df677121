"""The worker and its parent: pinning, software report, failures stored as failures, real data."""

from __future__ import annotations

import json

import pytest

from cpustudy import workloads
from cpustudy.environment import machine
from cpustudy.measure.execute import execute
from cpustudy.measure.spec import RunSpec, plan, resolve_data
from cpustudy.measure.summary import summarize
from conftest import run_config
from cpustudy.store import Store


def _plan(name="mnist_mlp", **kw):
    spec = RunSpec(workload=workloads.get(name), vcpus=1, epochs=2, steps_per_epoch=2,
                          data="synthetic", **kw)
    return plan(spec)


def _store(db):
    s = Store.open(db)
    return s, s.machine_id(machine.collect(use_cpuinfo=False).as_dict())


@pytest.mark.tensorflow
def test_worker_pins_itself_and_reports_software(db):
    s, mid = _store(db)
    config = _plan()
    outcome = execute(s, mid, config)
    assert outcome.status == "ok", outcome.error
    (run,) = s.runs()
    software = json.loads(run["software"])
    assert software["affinity"] == list(config.cpus) and len(config.cpus) == 1
    assert software["intra_threads"] == 1 and software["inter_threads"] == 1
    assert software["env"]["OMP_NUM_THREADS"] == "1"
    assert run["tf_version"] == software["tf_version"] and run["onednn"] in (0, 1)
    assert run["xla"] == 0  # Keras 3 on a CPU-only TensorFlow: XLA off by default
    assert software["tf_isa_report"] in (True, False)
    flags = set(machine.collect(use_cpuinfo=False).flags)
    if "avx2" in flags and software["tf_version"].startswith("2."):
        # The stock wheels are built for AVX; on an AVX2 CPU TensorFlow says it lacks AVX2.
        assert "AVX2" in software["tf_missing_isa"].split()


@pytest.mark.tensorflow
def test_each_epoch_splits_its_time_into_steps_and_the_rest(db):
    s, mid = _store(db)
    spec = RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, epochs=2, steps_per_epoch=4,
                          data="synthetic")
    outcome = execute(s, mid, plan(spec))
    assert outcome.status == "ok", outcome.error
    for e in s.epochs():
        assert e["steps_s"] > 0 and e["boundary_s"] >= 0 and e["cpu_s"] > 0
        assert e["steps_s"] + e["boundary_s"] == pytest.approx(e["elapsed_s"], rel=1e-6)
    (run,) = s.runs()
    (timed,) = [e for e in s.epochs() if not e["warmup"]]
    assert run["epoch_boundary_s"] == pytest.approx(timed["boundary_s"])
    assert run["epoch_time_s"] == pytest.approx(timed["steps_s"] / 4 * 469 + timed["boundary_s"])
    assert 0 < run["cpu_utilization"] < 4  # process CPU seconds per wall second per vCPU


@pytest.mark.tensorflow
def test_a_crashing_worker_is_stored_as_failed(db):
    s, mid = _store(db)
    config = _plan().with_(workload="no_such_workload")  # the worker fails after importing TensorFlow
    outcome = execute(s, mid, config)
    assert outcome.status == "failed" and outcome.exit_code == 1
    (run,) = s.runs()
    assert run["status"] == "failed" and "KeyError" in run["error"]
    assert "worker stderr" in run["error"]  # the tail of what it printed


@pytest.mark.tensorflow
def test_a_timeout_is_stored_as_failed(db):
    s, mid = _store(db)
    outcome = execute(s, mid, _plan(), timeout_s=0.5)
    assert outcome.status == "failed" and "timed out" in outcome.error
    assert s.runs()[0]["status"] == "failed"


def test_summarize_projects_capped_epochs():
    config = run_config(steps_per_epoch=10, full_steps_per_epoch=100, batch_size=32)
    epochs = [
        {"elapsed_s": 5.0, "warmup": True, "samples": 320},
        {"elapsed_s": 1.0, "samples": 320},
        {"elapsed_s": 3.0, "samples": 320},
        {"elapsed_s": 2.0, "samples": 320},
    ]
    s = summarize(config, epochs, 4.0)
    assert s["measured_epoch_time_s"] == 2.0 and s["timed_epochs"] == 3
    assert s["step_time_s"] == pytest.approx(0.2) and s["epoch_time_s"] == pytest.approx(20.0)
    assert s["projected"] and s["samples_per_s"] == pytest.approx(160.0)
    full = summarize(config.with_(steps_per_epoch=None), epochs, 4.0)
    assert not full["projected"] and full["epoch_time_s"] == 2.0


def test_time_outside_the_steps_is_added_once_per_projected_epoch_not_scaled():
    # 10 steps of 0.1 s plus a 2.5 s stall at the epoch's end (TensorFlow tearing down the data
    # iterator): a full epoch of 100 steps takes 10 s + 2.5 s, not (1 s + 2.5 s) x 10.
    config = run_config(steps_per_epoch=10, full_steps_per_epoch=100, batch_size=32, vcpus=1)
    epochs = [{"elapsed_s": 6.0, "warmup": True, "steps_s": 3.0, "boundary_s": 3.0, "cpu_s": 3.0}]
    epochs += [{"elapsed_s": 1.0 + b, "steps_s": 1.0, "boundary_s": b, "cpu_s": 1.0, "samples": 320}
               for b in (2.5, 0.0, 2.5)]
    s = summarize(config, epochs, 4.0)
    assert s["projected"] and s["epoch_time_s"] == pytest.approx(12.5)
    assert s["step_time_s"] == pytest.approx(0.1) and s["epoch_boundary_s"] == pytest.approx(2.5)
    assert s["measured_epoch_time_s"] == pytest.approx(3.5)
    assert s["samples_per_s"] == pytest.approx(3200 / 12.5)  # a full epoch's samples over its time
    assert s["cpu_utilization"] == pytest.approx(1.0 / 3.5)  # the process slept through the stall
    assert s["epoch_time_iqr_s"] == pytest.approx(1.25)  # spread of 10, 12.5, 12.5 (projected epochs)
    # Epochs stored without the split (older runs) are projected as a whole, as before.
    old = summarize(config, [{k: v for k, v in e.items() if k == "elapsed_s"} for e in epochs[1:]], 4.0)
    assert old["epoch_time_s"] == pytest.approx(35.0) and old["epoch_boundary_s"] is None


def test_a_cap_of_a_full_epoch_or_more_is_not_a_projection():
    cfg = plan(RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, steps_per_epoch=10_000,
                                     data="synthetic"))
    assert cfg.steps_per_epoch is None and cfg.full_steps_per_epoch == 469


@pytest.mark.tensorflow
def test_real_data_through_the_keras_loader(db, tmp_path, monkeypatch):
    """Real Nietzsche text placed in the Keras cache goes through the example's real loading code."""
    home = tmp_path / "keras"
    (home / "datasets").mkdir(parents=True)
    text = ("Supposing that Truth is a woman--what then? Is there not ground for suspecting "
            "that all philosophers, in so far as they have been dogmatists, have failed. ") * 40
    (home / "datasets" / "nietzsche.txt").write_text(text)
    monkeypatch.setenv("KERAS_HOME", str(home))
    w = workloads.get("lstm_text_generation")
    assert resolve_data(w, "auto") == "real"
    spec = RunSpec(workload=w, vcpus=1, epochs=2, steps_per_epoch=2, data="real")
    s, mid = _store(db)
    outcome = execute(s, mid, plan(spec))
    assert outcome.status == "ok", outcome.error
    (run,) = s.runs()
    assert run["data"] == "real"
    # The capped epochs ran exactly 2 steps each although the text yields far more windows.
    assert [e["steps"] for e in s.epochs()] == [2, 2]
    prep = json.loads(run["software"])["data_prep"]
    assert prep["samples"] == 2 * 128 and prep["source"] == "real"


def test_auto_without_cache_is_synthetic(empty_keras_home):
    assert resolve_data(workloads.get("mnist_cnn"), "auto") == "synthetic"
    from cpustudy.errors import UserError

    with pytest.raises(UserError, match="mnist.npz"):
        resolve_data(workloads.get("mnist_cnn"), "real")
