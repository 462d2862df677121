"""Study-faithful epochs (validation every epoch, timed apart) and where cifar10_cnn's augmentation runs.

Workers train real, tiny Keras models; the augmentation functions are checked against a direct
reference of Keras 2.0's ImageDataGenerator shift (nearest-neighbour, edges repeated) and flip.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cpustudy import workloads
from cpustudy.cli.commands import results
from cpustudy.environment import machine
from cpustudy.measure.execute import execute
from cpustudy.measure.spec import RunSpec, plan
from cpustudy.store import Store
from cpustudy.workloads import cifar10_cnn


def _store(db):
    s = Store.open(db)
    return s, s.machine_id(machine.collect(use_cpuinfo=False).as_dict())


def _reference(img: np.ndarray, dy: int, dx: int, flip: bool) -> np.ndarray:
    h, w = img.shape[:2]
    out = np.empty_like(img)
    for i in range(h):
        for j in range(w):
            out[i, j] = img[min(max(i - dy, 0), h - 1), min(max(j - dx, 0), w - 1)]
    return out[:, ::-1] if flip else out


def _explained(before: np.ndarray, after: np.ndarray) -> set[tuple[int, int, bool]]:
    """The (dy, dx, flip) of ImageDataGenerator's range (+-10 % of 32 px, rounded) that give ``after``."""
    return {(dy, dx, f) for dy in range(-3, 4) for dx in range(-3, 4) for f in (False, True)
            if np.array_equal(_reference(before, dy, dx, f), after)}


@pytest.mark.tensorflow
def test_host_augmentation_is_imagedatagenerators_shift_and_flip():
    rng = np.random.default_rng(0)
    x = rng.random((64, 32, 32, 3), dtype=np.float32)
    y = cifar10_cnn.augment_batch(x, np.random.default_rng(1))
    assert y.shape == x.shape and y.dtype == x.dtype
    seen = set()
    for before, after in zip(x, y):
        found = _explained(before, after)
        assert found, "an augmented image is no shift/flip in ImageDataGenerator's range"
        seen |= found
    assert any(f for _, _, f in seen) and any(not f for _, _, f in seen)  # both flipped and not
    assert len({(dy, dx) for dy, dx, _ in seen}) > 10  # shifts vary per image


@pytest.mark.parametrize("value, where", [("host", "host"), ("model", "model"), ("none", "none"),
                                          (True, "model"), (False, "none")])
def test_augment_modes_and_old_stored_values(value, where):
    assert cifar10_cnn.augment_where(value) == where


@pytest.mark.tensorflow
def test_tf_data_augmentation_matches_the_numpy_one():
    tf = pytest.importorskip("tensorflow")
    x = np.random.default_rng(2).random((16, 32, 32, 3), dtype=np.float32)
    y = cifar10_cnn.augment_batch_tf(tf.constant(x)).numpy()
    for before, after in zip(x, y):
        assert _explained(before, after)


@pytest.mark.tensorflow
def test_validation_per_epoch_is_stored_and_timed_apart(db):
    s, mid = _store(db)
    spec = RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, epochs=2, steps_per_epoch=10,
                          data="synthetic")
    config = plan(spec)
    assert config.validation == "study" and config.validation_steps == 10  # the share (2 batches) raised to the projection minimum
    assert config.full_validation_steps == 79  # MNIST's 10,000 test images in batches of 128
    outcome = execute(s, mid, config)
    assert outcome.status == "ok", outcome.error
    epochs = results.epoch_rows(s)
    assert {"validation_s", "val_loss", "val_accuracy"} <= set(results.EPOCH_COLUMNS)
    for e in epochs:
        assert e["validation_s"] > 0 and e["val_loss"] is not None and 0 <= e["val_accuracy"] <= 1
        # training time excludes validation: the epoch's training part is what elapsed_s holds
        assert e["elapsed_s"] > 0
    (run,) = s.runs()
    assert run["validation"] == "study"
    timed = [e for e in epochs if not e["warmup"]]
    # projected to the whole test set: the time inside its 10 batches scaled to 79, the rest added once
    (stored,) = [e for e in s.epochs() if not e["warmup"]]  # the store's row has the split
    inside = stored["validation_steps_s"]
    assert run["validation_time_s"] == pytest.approx(inside * 79 / 10 + timed[0]["validation_s"] - inside, rel=1e-6)

    spec = RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, epochs=2, steps_per_epoch=10,
                          data="synthetic", validation="none")
    outcome = execute(s, mid, plan(spec))
    assert outcome.status == "ok", outcome.error
    rows = [e for e in results.epoch_rows(s) if e["run_id"] == outcome.run_id]
    assert rows and all(e["validation_s"] is None and e["val_accuracy"] is None for e in rows)
    assert s.runs(run_ids=[outcome.run_id])[0]["validation_time_s"] is None


def test_text_generation_has_no_validation_as_in_the_example():
    config = plan(RunSpec(workload=workloads.get("lstm_text_generation"), vcpus=1, epochs=2,
                                        steps_per_epoch=10, data="synthetic"))
    assert config.validation_steps == 0


@pytest.mark.tensorflow
@pytest.mark.parametrize("augment, pipeline, where", [
    ("host", "auto", "on the host: tf.data map"), ("host", "numpy", "on the host: NumPy"),
    ("model", "auto", "in the model")])
def test_cifar_records_where_augmentation_ran(db, augment, pipeline, where):
    s, mid = _store(db)
    spec = RunSpec(workload=workloads.get("cifar10_cnn"), vcpus=1, epochs=2, steps_per_epoch=10,
                   data="synthetic", options={"augment": augment}, validation="none", input_pipeline=pipeline)
    outcome = execute(s, mid, plan(spec))
    assert outcome.status == "ok", outcome.error
    run = s.runs(run_ids=[outcome.run_id])[0]
    assert run["augment"] == augment
    prep = json.loads(run["software"])["data_prep"]
    assert prep["augment_where"].startswith(where)
    python_pipeline = where.endswith("NumPy")
    assert prep["host_threads"] == (2 if python_pipeline else 0)  # on the CPUs: the study's two threads
    assert ("(2 threads)" in prep["augment_where"]) == python_pipeline


def test_on_a_gpu_the_host_pipeline_takes_every_pinned_core_but_the_training_loops():
    from conftest import run_config

    from cpustudy.worker.data import HOST_PIPELINE_THREADS, host_pipeline_threads

    assert host_pipeline_threads(run_config(device="gpu", vcpus=16)) == 15
    assert host_pipeline_threads(run_config(device="gpu", vcpus=2)) == HOST_PIPELINE_THREADS == 2
    assert host_pipeline_threads(run_config(device="cpu", vcpus=16)) == 2  # the CPUs train: the study's pipeline


def test_bad_augment_value_is_a_user_error():
    from cpustudy.errors import UserError

    with pytest.raises(UserError, match="--augment sideways: use one of host, model, none"):
        plan(RunSpec(workload=workloads.get("cifar10_cnn"), vcpus=1, data="synthetic",
                                   options={"augment": "sideways"}))


def test_peak_is_measured_on_the_training_device_with_its_precision():
    pytest.importorskip("tensorflow")
    from cpustudy.worker import peak as worker

    peak = worker.measure_peak("tensorflow", "cpu", n=256, budget_s=0.05)
    assert peak["device"] == "cpu" and peak["precision"] == "fp32" and peak["gflops"] > 0
    assert peak["matmul_n"] == 256


def test_then_and_now_adds_validation_where_measured_and_says_which_basis():
    import pandas as pd

    from cpustudy.report import figures

    rows = [
        {"study": "woolf2017", "workload": "mnist_mlp", "device": "gpu", "label": "gpu", "total_time_s": 65.0,
         "total_with_validation_s": float("nan"), "cost_usd": 0.01, "projected": False, "suspect": ""},
        {"study": "cpustudy", "workload": "mnist_mlp", "device": "cpu", "label": "cpu2 tf", "total_time_s": 40.0,
         "total_with_validation_s": 46.0, "cost_usd": 0.01, "projected": True, "suspect": ""},
        {"study": "cpustudy", "workload": "mnist_mlp", "device": "gpu", "label": "gpu", "total_time_s": 10.0,
         "total_with_validation_s": float("nan"), "cost_usd": 0.02, "projected": False, "suspect": ""},
        {"study": "cpustudy", "workload": "mnist_mlp", "device": "gpu", "label": "gpu torch", "total_time_s": 1.0,
         "total_with_validation_s": 1.2, "cost_usd": 0.02, "projected": False, "suspect": "GPU busy only 9 %"},
    ]
    df = figures.then_and_now(pd.DataFrame(rows)).set_index("series")
    assert df.loc["now best CPU", "total_time_s"] == 46.0 and df.loc["now best CPU", "basis"] == "training + validation"
    assert df.loc["now GPU", "label"] == "gpu"  # the suspect GPU is left out
    assert df.loc["now GPU", "basis"] == "training only" and df.loc["now GPU", "total_time_s"] == 10.0
    assert df.loc["2017 GPU", "basis"].startswith("training + validation")
