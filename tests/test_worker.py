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
    from cpustudy.worker.train import StepClock

    clock = StepClock()
    clock.first, clock.last, clock.began = 10.0, 10.2, 11  # 11 steps dispatched in 0.2 s
    assert clock.steps_s(5.0) == pytest.approx(0.2 * 11 / 10)  # synchronous: n - 1 whole steps
    assert clock.steps_s(5.0, drained=13.0) == pytest.approx(3.0)  # queued: until the queue drained
