"""The worker and its parent: pinning, software report, failures stored as failures, real data."""

from __future__ import annotations

import json

import pytest

from cpustudy import provenance, workloads
from cpustudy.environment import machine
from cpustudy.measure.execute import execute
from cpustudy.measure.spec import RunSpec, plan, resolve_data
from cpustudy.measure.tally import stall_of
from cpustudy.store import Store


def _plan(name="mnist_mlp", **kw):
    spec = RunSpec(workload=workloads.get(name), vcpus=1, epochs=2, steps_per_epoch=10,
                          data="synthetic", **kw)
    return plan(spec)


def _store(db):
    s = Store.open(db)
    return s, s.machine_id(machine.collect(use_cpuinfo=False).as_dict())


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """One configuration (mnist_mlp, 1 vCPU, 2 capped epochs) measured twice by real workers into one
    database, which the tests below read: the first run measures the peak, the second finds it."""
    db = tmp_path_factory.mktemp("two-runs") / "runs.sqlite"
    s, mid = _store(db)
    config = _plan()
    outcomes = [execute(s, mid, config) for _ in range(2)]
    s.close()
    return db, config, outcomes


def _first_run(two_runs):
    """The first of the two runs as stored, with its epochs and its configuration (it must have gone well)."""
    db, config, outcomes = two_runs
    assert outcomes[0].status == "ok", outcomes[0].error
    with Store.read(db) as s:
        run = s.runs()[0]
        return config, run, s.epochs([run["id"]])


@pytest.mark.tensorflow
@pytest.mark.quiet  # the peak is kept only where it was measured on a quiet machine
def test_worker_pins_itself_and_reports_software(two_runs):
    config, run, _ = _first_run(two_runs)
    software = json.loads(run["software"])
    assert software["affinity"] == list(config.cpus) and len(config.cpus) == 1
    assert software["intra_threads"] == 1 and software["inter_threads"] == 1
    assert software["env"]["OMP_NUM_THREADS"] == "1"
    assert run["tf_version"] == software["tf_version"] and run["onednn"] in (0, 1)
    assert run["xla"] == 0  # Keras 3 on a CPU-only TensorFlow: XLA off by default
    # The memory the worker needed, read from outside it (TensorFlow alone takes a few hundred MB), and which
    # cpustudy measured it.
    assert run["peak_rss_bytes"] is not None and 100 * 2**20 < run["peak_rss_bytes"] < 64 * 2**30
    assert run["method_version"] == provenance.METHOD_VERSION and run["cpustudy_version"]
    assert software["tf_isa_report"] in (True, False)
    # the machine's anchor, timed after the epochs (cpustudy.worker.anchor)
    from cpustudy.analysis.anchor import anchor_of

    assert software["anchor"]["version"] == 1 and (anchor_of(run) or 0) > 0
    flags = set(machine.collect(use_cpuinfo=False).flags)
    if "avx2" in flags and software["tf_version"].startswith("2."):
        # The stock wheels are built for AVX; on an AVX2 CPU TensorFlow says it lacks AVX2.
        assert "AVX2" in software["tf_missing_isa"].split()


@pytest.mark.tensorflow
@pytest.mark.quiet  # the peak is kept only where it was measured on a quiet machine
def test_peak_is_measured_once_per_configuration_and_stored_with_runs(two_runs, run_cli):
    db, _, (first, second) = two_runs
    assert first.status == "ok", first.error
    assert second.status == "ok"
    with Store.read(db) as s:
        (peak,) = [dict(r) for r in s.conn.execute("SELECT * FROM peaks")]
        runs = s.runs()
        info = s.machine_info(runs[0]["machine_id"])
    assert peak["peak_gflops"] > 1 and peak["mem_bandwidth_gbs"] > 0.1
    assert runs[0]["peak_gflops"] == runs[1]["peak_gflops"] == peak["peak_gflops"]
    shown = json.loads(run_cli("results", "--db", db, "--format", "json").out)
    assert len(shown) == 2 and all(0 < r["pct_of_peak"] < 100 for r in shown)
    assert not json.loads(runs[1]["settings"])["measure_peak_now"]
    state = json.loads(runs[0]["machine_state"])
    assert len(state["loadavg"]) == 3
    # beside the measured peak, the instruction sets' theoretical one for the run's CPU (an estimate)
    from cpustudy.environment import isa

    expected = isa.theoretical(info, 1, "fp32")
    assert (runs[0]["isa_peak_gflops"] is None) == (expected is None)
    if expected is not None:
        assert runs[0]["isa_peak_gflops"] == pytest.approx(expected.gflops)
        assert runs[0]["isa_peak_basis"].startswith("1 core")


@pytest.mark.tensorflow
def test_each_epoch_splits_its_time_into_steps_and_the_rest(two_runs):
    _, run, epochs = _first_run(two_runs)
    for e in epochs:
        assert e["steps_s"] > 0 and e["boundary_s"] >= 0 and e["cpu_s"] > 0
        assert e["steps_s"] + e["boundary_s"] == pytest.approx(e["elapsed_s"], rel=1e-6)
    (timed,) = [e for e in epochs if not e["warmup"]]
    awake = timed["boundary_s"] - stall_of(timed)  # an idle stall is kept apart (none expected with tf.data)
    assert run["epoch_boundary_s"] == pytest.approx(awake)
    assert run["epoch_time_s"] == pytest.approx(timed["steps_s"] / 10 * 469 + awake)
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
    spec = RunSpec(workload=w, vcpus=1, epochs=2, steps_per_epoch=10, data="real")
    s, mid = _store(db)
    outcome = execute(s, mid, plan(spec))
    assert outcome.status == "ok", outcome.error
    (run,) = s.runs()
    assert run["data"] == "real"
    # The capped epochs ran exactly 2 steps each although the text yields far more windows.
    assert [e["steps"] for e in s.epochs()] == [10, 10]
    prep = json.loads(run["software"])["data_prep"]
    assert prep["samples"] == 10 * 128 and prep["source"] == "real"


def test_auto_without_cache_is_synthetic(empty_keras_home):
    assert resolve_data(workloads.get("mnist_cnn"), "auto") == "synthetic"
    from cpustudy.errors import UserError

    with pytest.raises(UserError, match="mnist.npz"):
        resolve_data(workloads.get("mnist_cnn"), "real")


@pytest.mark.tensorflow
def test_tfdata_input_and_warmup_steps(run_cli, db, empty_keras_home):
    r = run_cli("run", "mnist_mlp", "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 10, "--input", "tfdata",
                "--warmup-steps", 2, "--db", db)
    assert r.code == 0, r.err
    (row,) = json.loads(run_cli("results", "--db", db, "--format", "json").out)
    assert row["input_pipeline"] == "tfdata" and row["warmup_steps"] == 2 and row["status"] == "ok"


def test_bad_settings(run_cli, db):
    r = run_cli("run", "mnist_mlp", "--vcpus", 1, "--warmup-steps", -1, "--db", db)
    assert r.code == 2 and "--warmup-steps" in r.err
    r = run_cli("tune", "mnist_mlp", "--vcpus", 1, "--batch-sizes", "32,x", "--db", db)
    assert r.code == 2 and "--batch-sizes" in r.err
    r = run_cli("tune", "mnist_mlp", "--vcpus", 1, "--rechecks", -1, "--db", db)
    assert r.code == 2 and "--rechecks must be 0 or more" in r.err
    assert not db.exists()


@pytest.mark.tensorflow
def test_a_race_stops_a_seed_short_of_its_target_and_it_is_read_as_censored(db):
    """``give_up_after``: the worker stops after that many epochs short of the target (a race's censoring);
    the run keeps its cell (the same seed) and reads back as a seed censored there, not one that never
    reached the target."""
    from cpustudy import targets
    from cpustudy.analysis import compare as combo

    s, mid = _store(db)
    config = plan(RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, epochs=4, data="learnable",
                          target="val_loss<=1e-9",  # out of reach: only the censoring stops it before 4 epochs
                          batch_size=2048))  # 30 steps an epoch (5 s at 1 vCPU of a Zen 3 VM, 8 s at 128)
    outcome = execute(s, mid, config.with_(give_up_after=2, cell_key="seed-1"))
    assert outcome.status == "ok", outcome.error
    (run,) = s.runs()
    assert run["cell_key"] == "seed-1" and run["epochs"] == 4
    epochs = s.epochs([run["id"]])
    assert len(epochs) == 2
    seed = combo.seed_result(run, epochs, targets.parse("val_loss<=1e-9"))
    assert seed is not None and not seed.reached and seed.censored_after == 2 and seed.earliest == 3
