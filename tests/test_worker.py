"""The worker: importing it pulls in nothing of the parent's side (measure, store, analysis, report,
cli) nor any framework, since it runs under any build's interpreter; the RunConfig it reads; its
step clock."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PARENT_SIDE = ("cpustudy.measure", "cpustudy.store", "cpustudy.analysis", "cpustudy.report", "cpustudy.cli")
THIRD_PARTY = ("tensorflow", "keras", "numpy", "pandas", "plotnine", "rich", "psutil")


def _modules_after(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_importing_the_worker_loads_nothing_of_the_parent_side_and_no_framework():
    loaded = _modules_after("import cpustudy.worker.__main__, cpustudy.worker.train, cpustudy.worker.protocol")
    assert "cpustudy.worker.train" in loaded  # the check saw the worker's modules
    parent = [m for m in loaded if m.startswith(PARENT_SIDE)]
    heavy = [m for m in loaded if m.split(".")[0] in THIRD_PARTY]
    assert parent == [] and heavy == [], (parent, heavy)


def test_the_parent_side_does_load_the_store_so_the_check_above_can_fail():
    loaded = _modules_after("import cpustudy.measure.execute")
    assert "cpustudy.store" in loaded


def test_a_run_config_survives_the_json_round_trip():
    from cpustudy.worker.protocol import RunConfig

    config = RunConfig(workload="cifar10_cnn", vcpus=2, cpus=(0, 1), cpu_list="0-1", batch_size=32, epochs=3,
                       full_steps_per_epoch=1563, samples_per_epoch=50_000, flops_per_sample=10,
                       data="synthetic", env={"TF_ENABLE_ONEDNN_OPTS": "1"}, options={"augment": "host"},
                       steps_per_epoch=20, tune={"tag": "default", "setting": {"intra_threads": 2}})
    back = RunConfig.from_json(config.to_json())
    assert back == config and back.cpus == (0, 1) and back.steps_run == 20
    assert config.as_dict()["cpus"] == [0, 1]  # stored settings hold plain JSON


def test_an_unknown_field_is_refused_not_dropped():
    from cpustudy.worker.protocol import RunConfig

    with pytest.raises(ValueError, match="no_such_setting"):
        RunConfig.from_dict({"workload": "mnist_mlp", "no_such_setting": 1})


def test_asynchronous_steps_are_timed_until_they_drain():
    from cpustudy.worker.epochs import StepClock

    clock = StepClock()
    clock.first, clock.last, clock.began = 10.0, 10.2, 11  # 11 steps dispatched in 0.2 s
    assert clock.steps_s(5.0) == pytest.approx(0.2 * 11 / 10)  # synchronous: n - 1 whole steps
    assert clock.steps_s(5.0, drained=13.0) == pytest.approx(3.0)  # queued: until the queue drained


def test_an_epoch_splits_into_time_inside_its_steps_outside_them_and_validation():
    from cpustudy.worker.epochs import StepClock, epoch_split

    steps = StepClock()
    steps.first, steps.last, steps.began = 1.0, 3.0, 5  # 5 training steps started over 2 s
    val = StepClock()
    val.start, val.first, val.last, val.began, val.end = 6.0, 6.1, 6.5, 5, 7.0
    split = epoch_split(0.5, 8.0, steps, val, drains=False)
    assert split.validation_s == pytest.approx(1.0)
    assert split.elapsed_s == pytest.approx(6.5)  # 7.5 s from begin to end, validation excluded
    assert split.steps_s == pytest.approx(2.0 * 5 / 4)  # n - 1 whole steps between first and last start
    assert split.boundary_s == pytest.approx(6.5 - 2.5)
    assert split.validation_steps_s == pytest.approx(0.4 * 5 / 4)
    drained = epoch_split(0.5, 8.0, steps, val, drains=True)
    assert drained.steps_s == pytest.approx(5.0)  # from the first start to the training's end (validation's start)
    assert drained.validation_steps_s == pytest.approx(0.9)  # from the first start to validation's end
    alone = epoch_split(0.5, 8.0, steps, None, drains=True)
    assert alone.elapsed_s == pytest.approx(7.5) and alone.steps_s == pytest.approx(7.0)  # until the epoch's end
    assert alone.validation_s is None and alone.validation_steps_s is None


def test_the_epoch_timer_sends_each_epoch_timed_from_its_hooks(monkeypatch):
    from types import SimpleNamespace

    from cpustudy.targets import Target
    from cpustudy.worker import epochs as train, protocol

    clock = SimpleNamespace(t=0.0, cpu=0.0)
    monkeypatch.setattr(train, "time", SimpleNamespace(perf_counter=lambda: clock.t, process_time=lambda: clock.cpu,
                                                       time=lambda: 1e9))
    sent: list[tuple[str, dict]] = []
    timer = train.EpochTimer(lambda kind, **fields: sent.append((kind, fields)), keras=None, sampler=None,
                             drains=False, torch_gpu=False, steps=3, samples_per_epoch=96,
                             target=Target("val_accuracy", ">=", 0.8))
    timer.model = SimpleNamespace(stop_training=False)  # set by Keras where the timer is a callback

    def at(t: float, hook: str, *args: object) -> None:
        clock.t = t
        getattr(timer, hook)(*args)

    clock.cpu = 1.0
    at(10.0, "on_epoch_begin", 0)
    for i, t in enumerate((10.5, 11.0, 11.5)):
        at(t, "on_train_batch_begin", i)
    at(12.0, "on_test_begin")
    for i, t in enumerate((12.1, 12.2, 12.3)):
        at(t, "on_test_batch_begin", i)
    at(12.5, "on_test_end")
    clock.cpu = 3.0
    at(13.0, "on_epoch_end", 0, {"loss": 2.0, "accuracy": 0.5, "val_loss": 1.0, "val_accuracy": 0.85})
    assert [kind for kind, _ in sent] == [protocol.TRAIN_START, protocol.EPOCH]
    epoch = sent[1][1]
    assert epoch["epoch"] == 1 and epoch["warmup"] is True and epoch["steps"] == 3 and epoch["samples"] == 96
    assert epoch["elapsed_s"] == pytest.approx(2.5) and epoch["validation_s"] == pytest.approx(0.5)
    assert epoch["steps_s"] == pytest.approx(1.5) and epoch["boundary_s"] == pytest.approx(1.0)
    assert epoch["validation_steps"] == 3 and epoch["validation_steps_s"] == pytest.approx(0.3)
    assert epoch["cpu_s"] == pytest.approx(2.0) and epoch["samples_per_s"] == pytest.approx(96 / 2.5)
    assert epoch["loss"] == 2.0 and epoch["val_accuracy"] == 0.85 and epoch["gpu_util"] is None
    assert timer.model.stop_training  # 0.85 reached the target 0.8

    at(20.0, "on_epoch_begin", 1)  # an epoch without validation: no second TRAIN_START
    for i, t in enumerate((20.2, 20.4, 20.6)):
        at(t, "on_train_batch_begin", i)
    at(21.0, "on_epoch_end", 1, {"loss": 1.5})
    assert [kind for kind, _ in sent] == [protocol.TRAIN_START, protocol.EPOCH, protocol.EPOCH]
    second = sent[2][1]
    assert second["warmup"] is False and second["elapsed_s"] == pytest.approx(1.0)
    assert second["validation_s"] is None and second["validation_steps"] is None and second["accuracy"] is None
    assert second["steps_s"] == pytest.approx(0.6) and second["boundary_s"] == pytest.approx(0.4)


@pytest.mark.parametrize("target, logs, stops, value", [
    # --target-accuracy on a model whose accuracy metric is named sparse_categorical_accuracy
    ("val_accuracy>=0.8", {"loss": 1.0, "sparse_categorical_accuracy": 0.7, "val_sparse_categorical_accuracy": 0.81},
     True, 0.81),
    ("val_loss<=0.3", {"loss": 0.5, "val_loss": 0.31}, False, 0.31),
    ("val_loss<=0.3", {"loss": 0.5, "val_loss": 0.29}, True, 0.29),
    ("val_auc=0.8", {"loss": 0.5, "val_loss": 0.29}, False, None),  # a metric the model does not log: never reached
])
def test_the_epoch_timer_stops_at_a_target_on_any_metric_and_sends_every_metric(target, logs, stops, value):
    from types import SimpleNamespace

    from cpustudy import targets
    from cpustudy.worker import epochs, protocol

    sent: list[tuple[str, dict]] = []
    timer = epochs.EpochTimer(lambda kind, **fields: sent.append((kind, fields)), keras=None, sampler=None,
                              drains=False, torch_gpu=False, steps=3, samples_per_epoch=96,
                              target=targets.parse(target))
    timer.model = SimpleNamespace(stop_training=False)
    timer.on_epoch_begin(0)
    timer.on_epoch_end(0, logs)
    epoch = next(f for kind, f in sent if kind == protocol.EPOCH)
    assert timer.model.stop_training is stops
    assert epoch["target_value"] == value
    assert epoch["metrics"] == {k: float(v) for k, v in logs.items()}
    if "sparse_categorical_accuracy" in logs:
        assert epoch["accuracy"] == 0.7 and epoch["val_accuracy"] == 0.81


@pytest.mark.parametrize("keras3", [True, False])
def test_draining_queued_steps_reads_the_step_counter_back_on_keras_3_and_on_tf_keras_2(keras3):
    """A GPU run drains the queue by reading the optimizer's step counter: through keras.ops on Keras 3, and
    on tf.keras 2.x (no keras.ops, as on the tf-keras2 build with a GPU) through the variable itself."""
    from types import SimpleNamespace

    from cpustudy.worker import epochs

    reads: list[str] = []

    class Counter:  # a TensorFlow variable's read-back
        def numpy(self):
            reads.append("variable")
            return 7

    keras = SimpleNamespace(ops=SimpleNamespace(convert_to_numpy=lambda v: reads.append("keras.ops"))) if keras3 \
        else SimpleNamespace()  # tf.keras 2.x: no ops
    timer = epochs.EpochTimer(lambda kind, **fields: None, keras=keras, sampler=None, drains=True, torch_gpu=False,
                              steps=3, samples_per_epoch=96)
    timer.model = SimpleNamespace(optimizer=SimpleNamespace(iterations=Counter()), stop_training=False)
    timer.on_epoch_begin(0)
    timer.on_test_begin()
    assert reads == (["keras.ops"] if keras3 else ["variable"])
