"""Idle stalls between epochs kept out of the figures, the stall-free input path by default, and
projections checked against full epochs (``sweep --calibrate`` and the report's table)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import sqlite3

import pandas as pd
import pytest

from cpustudy.analysis import projection
from cpustudy.analysis.runs import add_configuration
from cpustudy.cli.args import sweep_request
from cpustudy.cli.commands.sweep import stored_check
from cpustudy.errors import UserError
from cpustudy.measure import spec
from cpustudy.measure.request import SweepRequest
from cpustudy.environment.state import CONTENDED_WAIT_SHARE
from cpustudy.measure.tally import STALL_MIN_S, summarize
from cpustudy.store import Store
from cpustudy.worker.epochs import EpochSplit, StepClock, idle_outside_steps
from cpustudy.workloads import ALL
from conftest import run_config

MLP = ALL["mnist_mlp"]


def clock(first: float, last: float, used_first: float, used_last: float, began: int) -> StepClock:
    c = StepClock()
    c.first, c.last, c.used_first, c.used_last, c.began = first, last, used_first, used_last, began
    return c


def test_idle_time_outside_the_steps_is_what_no_cpu_time_or_wait_for_a_cpu_covers():
    # 11 steps, 1 s apart, busy throughout (CPU time = wall time); 4 s outside the steps, of which the
    # process used 0.5 s: 3.5 s asleep.
    steps = clock(0.0, 10.0, 0.0, 10.0, 11)
    split = EpochSplit(elapsed_s=15.0, steps_s=11.0, boundary_s=4.0, validation_s=None, validation_steps_s=None)
    assert idle_outside_steps(split, 11.5, steps, None) == pytest.approx(3.5)
    # The same boundary spent busy (or waiting for a CPU other processes held) is no stall.
    assert idle_outside_steps(split, 15.0, steps, None) == pytest.approx(0.0)
    # Validation's own CPU time is not counted as the boundary's.
    val = StepClock()
    val.used_start, val.used_end, val.end = 100.0, 102.0, 1.0
    assert idle_outside_steps(split, 13.5, steps, val) == pytest.approx(3.5)
    # Too few steps to tell inside from outside: unknown, not zero.
    assert idle_outside_steps(split, 11.5, clock(0.0, 1.0, 0.0, 1.0, 2), None) is None


def test_other_threads_waiting_for_a_cpu_outside_the_steps_is_no_stall():
    # 11 steps; the other threads waited 1 s before the first step, 2 s over the steps (0.2 s a step)
    # and 2.7 s from the last step's start to the epoch's end, the last step's own 0.2 s included.
    steps = StepClock(expected=11)
    steps.began, steps.others_first, steps.others_last = 11, 1.0, 3.0
    assert steps.others_outside(0.0, 5.7) == pytest.approx(1.0 + 2.5)
    split = EpochSplit(elapsed_s=15.0, steps_s=11.0, boundary_s=4.0, validation_s=None, validation_steps_s=None)
    busy = clock(0.0, 10.0, 0.0, 10.0, 11)
    assert idle_outside_steps(split, 11.5, busy, None, 3.5) == pytest.approx(0.0)  # 0.5 s CPU + 3.5 s waiting
    assert idle_outside_steps(split, 11.5, busy, None, 1.0) == pytest.approx(2.5)
    # A loop that ended before its expected last step is not corrected (nothing read there).
    assert StepClock(expected=11).others_outside(0.0, 9.0) == 0.0


def test_other_threads_wait_for_a_cpu_is_read_from_the_kernel():
    # Three threads doing NumPy work (the GIL released) on one CPU while the main thread sleeps: each
    # waits for the CPU most of the time, and the reading of the other threads' run-queue delay shows it.
    if not os.path.exists(f"/proc/self/task/{threading.get_native_id()}/schedstat"):
        pytest.skip("this kernel reports no per-thread schedstat")
    code = (
        "import os, threading, time\n"
        "os.sched_setaffinity(0, [min(os.sched_getaffinity(0))])\n"
        "import numpy as np\n"
        "from cpustudy.worker.epochs import others_waiting\n"
        "a = np.random.rand(400, 400); stop = time.monotonic() + 1.0\n"
        "def work():\n"
        "    while time.monotonic() < stop: a @ a\n"
        "before = others_waiting()\n"
        "ts = [threading.Thread(target=work) for _ in range(3)]\n"
        "[t.start() for t in ts]; time.sleep(0.6); during = others_waiting(); [t.join() for t in ts]\n"
        "print(during - before)\n")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) > 0.1  # of about 0.6 s x 2 waiting threads


def test_the_threads_wait_for_a_cpu_inside_the_steps_is_kept_as_a_share_of_their_time():
    # 11 steps; every thread's run-queue delay read at the first and the last step's start: 2.0 s over
    # 10 whole steps, 2.2 s over the 11.
    steps = StepClock(expected=11)
    steps.began, steps.wait_first, steps.wait_last = 11, 1.0, 3.0
    assert steps.steps_wait_s() == pytest.approx(2.2)
    assert StepClock(expected=11).steps_wait_s() is None  # the last step was never read
    config = run_config(steps_per_epoch=None, batch_size=32, vcpus=1)
    epochs = [{"elapsed_s": 12.0, "warmup": True, "steps_s": 11.0, "boundary_s": 1.0, "wait_s": 5.0}]
    epochs += [{"elapsed_s": 12.0, "steps_s": 11.0, "boundary_s": 1.0, "wait_s": w} for w in (0.11, 4.4, 0.22)]
    s = summarize(config, epochs, 1.0)
    assert s["wait_share"] == pytest.approx(0.02)  # the timed epochs' median, the warm-up left out
    assert s["wait_share"] < CONTENDED_WAIT_SHARE
    assert summarize(config, [{k: v for k, v in e.items() if k != "wait_s"} for e in epochs], 1.0)["wait_share"] is None


def test_threads_competing_for_one_cpu_inside_the_steps_are_read_from_the_kernel():
    # A loop of steps on one CPU while two NumPy threads (the GIL released) compete for it: the steps'
    # wait share is large; with nothing competing it is small.
    if not os.path.exists(f"/proc/self/task/{threading.get_native_id()}/schedstat"):
        pytest.skip("this kernel reports no per-thread schedstat")
    code = (
        "import os, sys, threading, time\n"
        "os.sched_setaffinity(0, [min(os.sched_getaffinity(0))])\n"
        "import numpy as np\n"
        "from cpustudy.worker.epochs import StepClock\n"
        "a = np.random.rand(300, 300); stop = time.monotonic() + 1.5\n"
        "def work():\n"
        "    while time.monotonic() < stop: a @ a\n"
        "def steps(n):\n"
        "    c = StepClock(expected=n); t0 = time.perf_counter()\n"
        "    for _ in range(n):\n"
        "        c.tick(); s = time.perf_counter()\n"
        "        while time.perf_counter() - s < 0.02: a[:50, :50] @ a[:50, :50]\n"
        "    return c.steps_wait_s() / (time.perf_counter() - t0)\n"
        "quiet = steps(20)\n"
        "ts = [threading.Thread(target=work) for _ in range(2)]; [t.start() for t in ts]\n"
        "busy = steps(20); [t.join() for t in ts]\n"
        "print(quiet, busy)\n")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    quiet, busy = map(float, out.stdout.split())
    assert busy > 0.5 and busy > quiet  # two threads against the steps': each runs about a third of the time


def test_a_stall_is_stored_apart_and_never_enters_the_run_figures():
    config = run_config(steps_per_epoch=10, full_steps_per_epoch=100, batch_size=32, vcpus=1)
    epoch = {"steps_s": 1.0, "cpu_s": 1.0, "samples": 320}
    epochs = [{"elapsed_s": 6.0, "warmup": True, "steps_s": 3.0, "boundary_s": 3.0, "cpu_s": 3.0, "idle_s": 0.0}]
    epochs += [{**epoch, "elapsed_s": 1.2 + idle, "boundary_s": 0.2 + idle, "idle_s": idle} for idle in (0.0, 39.0, 2.0)]
    s = summarize(config, epochs, 4.0)
    # Projected as if no epoch had stalled: 100 steps of 0.1 s plus the 0.2 s each epoch spends awake outside them.
    assert s["epoch_time_s"] == pytest.approx(10.2)
    assert s["stall_s"] == pytest.approx(2.0) and s["stall_max_s"] == pytest.approx(39.0)
    assert s["epoch_time_cv"] == pytest.approx(0.0, abs=1e-9) and s["unstable"] is False
    full = summarize(config.with_(steps_per_epoch=None), epochs, 4.0)
    assert full["epoch_time_s"] == pytest.approx(1.2) and full["stall_max_s"] == pytest.approx(39.0)
    # Below STALL_MIN_S idle time is not a stall, left in place; runs stored without idle_s have no stall.
    tiny = summarize(config, [{**e, "idle_s": STALL_MIN_S / 2} for e in epochs[:2]], 4.0)
    assert tiny["stall_s"] == 0 and tiny["measured_epoch_time_s"] == pytest.approx(1.2)
    old = summarize(config, [{k: v for k, v in e.items() if k != "idle_s"} for e in epochs], 4.0)
    assert old["stall_s"] is None and old["measured_epoch_time_s"] == pytest.approx(3.2)


def test_the_input_pipeline_defaults_to_one_tf_data_iterator_on_tensorflow_and_numpy_elsewhere(empty_keras_home):
    tf_run = spec.plan(spec.RunSpec(workload=MLP, vcpus=1, build="tf", epochs=2, steps_per_epoch=10,
                                    data="synthetic"))
    assert tf_run.input_pipeline == "tfdata" and tf_run.input_default == "tfdata"
    jax_run = spec.plan(spec.RunSpec(workload=MLP, vcpus=1, build="jax-here", epochs=2, steps_per_epoch=10,
                                     data="synthetic"), host=spec.Host.vm(1))
    assert jax_run.input_pipeline == "numpy" and jax_run.input_default == "numpy"
    study = spec.plan(spec.RunSpec(workload=MLP, vcpus=1, build="tf", epochs=2, steps_per_epoch=10,
                                   data="synthetic", input_pipeline="numpy"))
    assert study.input_pipeline == "numpy"
    with pytest.raises(UserError, match="--input tfdata needs a TensorFlow build"):
        spec.plan(spec.RunSpec(workload=MLP, vcpus=1, build="jax-here", epochs=2, steps_per_epoch=10,
                               data="synthetic", input_pipeline="tfdata"), host=spec.Host.vm(1))


def _runs(rows: list[dict]) -> pd.DataFrame:
    base = {"study": "cpustudy", "workload": "mnist_cnn", "device": "cpu", "vcpus": 1, "build": "tf",
            "machine_id": 1, "status": "ok", "batch_size": 128, "intra_threads": 1, "inter_threads": 1,
            "settings": '{"input_default": "tfdata"}', "input_pipeline": "tfdata"}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_runs_of_the_old_numpy_default_are_never_pooled_with_the_new_default():
    df = _runs([{"input_pipeline": "numpy", "settings": "{}"},  # stored before the default changed
                {}, {"input_pipeline": "numpy"}])  # the new default, and the study's path asked for
    add_configuration(df)
    assert list(df["build"]) == ["tf+numpy", "tf", "tf+numpy"]
    assert list(df["stock"]) == [False, True, False]
    alone = _runs([{"input_pipeline": "numpy", "settings": "{}"}])  # an old database keeps its names
    add_configuration(alone)
    assert list(alone["build"]) == ["tf"] and bool(alone["stock"][0])


def test_a_projection_is_checked_against_full_epochs_of_the_same_configuration():
    df = _runs([{"projected": 1, "steps_per_epoch": 20, "epoch_time_s": t} for t in (50.0, 52.0, 51.0)]
               + [{"projected": 0, "steps_per_epoch": None, "epoch_time_s": t, "stall_s": 0.0} for t in (49.0, 50.0)]
               + [{"workload": "cifar10_cnn", "projected": 1, "steps_per_epoch": 20, "epoch_time_s": 60.0},
                  {"workload": "cifar10_cnn", "projected": 0, "steps_per_epoch": None, "epoch_time_s": 80.0},
                  {"workload": "mnist_mlp", "projected": 1, "steps_per_epoch": 20, "epoch_time_s": 5.0}])
    check = projection.projection_check(df).set_index("workload")
    assert list(check.index) == ["mnist_cnn", "cifar10_cnn"]  # mnist_mlp has no full run: nothing to check
    assert check.loc["mnist_cnn", "ratio"] == pytest.approx(51.0 / 49.5) and bool(check.loc["mnist_cnn", "agrees"])
    assert check.loc["mnist_cnn", "n_projected"] == 3 and check.loc["mnist_cnn", "n_full"] == 2
    assert check.loc["cifar10_cnn", "ratio"] == pytest.approx(0.75) and not bool(check.loc["cifar10_cnn", "agrees"])
    # The figures rest on the full epochs where there are any: the projections are checked, not pooled.
    assert list(projection.superseded(df)) == [True] * 3 + [False] * 2 + [True, False, False]
    # ... a full run of another batch size, precision, validation or machine is no twin: nothing is superseded
    for other in ({"batch_size": 256}, {"precision_policy": "mixed_bfloat16"}, {"validation": "study"},
                  {"machine": "b"}):
        pair = _runs([{"projected": 1, "steps_per_epoch": 20, "epoch_time_s": 50.0, "machine": "a"},
                      {"projected": 0, "epoch_time_s": 49.0, "machine": "a", **other}])
        assert not projection.superseded(pair).any(), other
    # Interleaved repeats pair up: how far one pair is off shows beside the medians' ratio.
    paired = _runs([{"projected": 1, "steps_per_epoch": 20, "epoch_time_s": t, "repeat": r}
                    for r, t in ((0, 96.0), (1, 105.0), (2, 100.0))]
                   + [{"projected": 0, "epoch_time_s": t, "repeat": r} for r, t in ((0, 100.0), (1, 93.75))])
    (row,) = projection.projection_check(paired).to_dict("records")
    assert row["pairs"] == 2 and row["pair_low"] == pytest.approx(0.96) and row["pair_high"] == pytest.approx(1.12)
    assert row["ratio"] == pytest.approx(100.0 / 96.875) and bool(row["agrees"])
    assert row["verdict"] == "agrees" and check.loc["cifar10_cnn", "verdict"].startswith("inconclusive: fewer than 2")
    stalled = _runs([{"stall_s": 2.0, "stall_max_s": 39.1, "input_pipeline": "numpy"}, {"stall_max_s": 0.0}])
    assert "1 run(s) had idle stalls between epochs" in str(projection.stall_note(stalled))
    assert "up to 39.1 s; input: numpy" in str(projection.stall_note(stalled))
    assert "per-epoch tf.data iterator" in str(projection.stall_note(stalled))
    busy = '{"busy_processes": [{"name": "pip", "cpu_percent": 103.0}]}'
    crowded = _runs([{"stall_s": 1.5, "stall_max_s": 5.0, "machine_state": busy}])
    said = str(projection.stall_note(crowded))
    assert "1 of them started on a busy machine" in said and "iterator" not in said
    assert projection.stall_note(_runs([{"stall_max_s": None}])) is None


def _request(**args) -> SweepRequest:
    defaults = dict(workloads="mnist_mlp,mnist_cnn", builds="tf,tf-eigen", vcpus="1,2", repeats=2, batch_size=None,
                    batch_sizes=None, precision="float32", precisions=None, epochs=2, max_epochs=None,
                    steps_per_epoch=10, data="synthetic", seed=0, input="auto", warmup_steps=0, augment=None,
                    validation="none", target_accuracy=None, timeout=None, calibrate=True)
    return sweep_request(argparse.Namespace(**{**defaults, **args}))


def test_calibrate_adds_one_full_epoch_cell_per_workload_and_repeat_beside_its_projection(empty_keras_home):
    request = _request()
    from cpustudy.measure.sweep import request_cells

    cells = request_cells(request, machine_fingerprint="m", host=spec.Host.vm(2), vcpus=[1, 2])
    full = [i for i, c in enumerate(cells) if c.config.steps_per_epoch is None]
    assert len(cells) == 2 * 2 * 2 * 2 + 4 and len(full) == 4  # one per workload and repeat
    for i in full:
        twin, c = cells[i - 1].config, cells[i].config
        assert (twin.workload, twin.build, twin.vcpus, twin.repeat) == (c.workload, "tf", 1, c.repeat)
        assert twin.steps_per_epoch == 10 and c.epochs == twin.epochs
    assert len({c.key for c in cells}) == len(cells)
    assert "--calibrate" in request.argv()
    with pytest.raises(UserError, match="--calibrate checks projected epochs against full ones"):
        _request(steps_per_epoch=None)


@pytest.mark.tensorflow
def test_a_real_run_records_idle_time_per_epoch_and_its_input_pipeline(run_cli, db, empty_keras_home):
    # Validating after every epoch (the default): Keras 3's evaluate drops its iterator each time, which
    # with tf.data's autotuning on left mnist_cnn's 20-step epochs 2.1-2.25 s idle each (Zen 4 VM).
    r = run_cli("run", "mnist_cnn", "--vcpus", "1", "--epochs", "3", "--steps-per-epoch", "20", "--data", "synthetic",
                "--db", db)
    assert r.code == 0, r.err
    conn = sqlite3.connect(db)
    pipeline, stall, wait_share = conn.execute("SELECT input_pipeline, stall_s, wait_share FROM runs").fetchone()
    idle = [row[0] for row in conn.execute("SELECT idle_s FROM epochs ORDER BY epoch")]
    wait = [row[0] for row in conn.execute("SELECT wait_s FROM epochs ORDER BY epoch")]
    conn.close()
    assert pipeline == "tfdata"
    assert len(idle) == 3 and all(i is not None and 0 <= i < STALL_MIN_S for i in idle), idle
    assert all(w is not None and w >= 0 for w in wait) and wait_share is not None and 0 <= wait_share < 1
    assert stall == 0


@pytest.mark.tensorflow
def test_the_validation_pipeline_has_nothing_to_wait_on_when_keras_drops_its_iterator():
    import numpy as np

    from cpustudy.worker.data import tf_dataset

    x, y = np.zeros((64, 4), "float32"), np.zeros(64, "int64")
    assert tf_dataset(x, y, 16, 0).options().autotune.enabled is not False  # training: tf.data's default
    val = tf_dataset(x, y, 16, 0, shuffle=False, autotune=False)
    assert val.options().autotune.enabled is False
    assert [b[0].shape[0] for b in val.take(5)] == [16] * 5  # still batched and repeating


def test_two_builds_resolving_to_the_same_switches_are_said_to_be_the_same_not_compared():
    from cpustudy.analysis.holdup import verdict
    from cpustudy.analysis.runs import resolved_program

    run = {"study": "cpustudy", "device": "cpu", "tf_version": "2.21.0", "keras_version": "3.15.1",
           "keras_backend": "tensorflow", "onednn": 1, "xla": 0, "settings": '{"python": "/p", "env": {}}'}
    onednn = {**run, "settings": '{"python": "/p", "env": {"TF_ENABLE_ONEDNN_OPTS": "1"}}'}
    eigen = {**run, "onednn": 0, "settings": '{"python": "/p", "env": {"TF_ENABLE_ONEDNN_OPTS": "0"}}'}
    assert resolved_program(run) == resolved_program(onednn) != resolved_program(eigen)
    assert resolved_program({**run, "onednn": None}) == ""  # not recorded: never called the same
    row = {"study": "cpustudy", "n_runs": 3, "time_min": 1.0, "total_time_s": 1.1, "time_max": 1.2}
    far = {**row, "time_min": 5.0, "total_time_s": 5.5, "time_max": 6.0}
    same = verdict({**row, "recipe": "tf-onednn", "resolved": resolved_program(onednn)},
                   {**far, "recipe": "tf", "resolved": resolved_program(run)})
    assert same.same and "resolve to the same switches" in str(same)
    differ = verdict({**row, "recipe": "tf-eigen", "resolved": resolved_program(eigen)},
                     {**far, "recipe": "tf", "resolved": resolved_program(run)})
    assert not differ and not differ.same  # different programs, repeats apart: it holds up
    more_vcpus = verdict({**row, "recipe": "tf", "resolved": resolved_program(run)},
                         {**far, "recipe": "tf", "resolved": resolved_program(run)})
    assert not more_vcpus  # the same build at another vCPU count is a comparison


def test_a_peak_from_a_busy_machine_or_below_the_runs_own_rate_is_neither_used_nor_kept():
    from cpustudy.measure import peaks

    quiet = {"busy_processes": [{"name": "sshd", "cpu_percent": 3.0}]}
    busy = {"busy_processes": [{"name": "podman", "cpu_percent": 95.0}, {"name": "pip", "cpu_percent": 40.0}]}
    config = run_config(flops_per_sample=1e6, machine_state=quiet)
    summary = {"samples_per_s": 50_000.0}  # 50 GFLOP/s achieved
    assert peaks.doubt(config, {"gflops": 331.0}, summary) == ""
    assert "below the 50.0 GFLOP/s the run itself achieved" in peaks.doubt(config, {"gflops": 40.0}, summary)
    said = peaks.doubt(config.with_(machine_state=busy), {"gflops": 331.0}, summary)
    assert said.startswith("measured while other processes used 135 % of a CPU (podman 95 %, pip 40 %)")


def test_an_older_default_run_is_told_apart_in_its_series_too_whatever_its_other_settings():
    df = _runs([{"input_pipeline": "numpy", "settings": "{}", "batch_size": 64},
                {"batch_size": 64}])
    add_configuration(df)
    assert list(df["build"]) == ["tf+numpy+b64", "tf+b64"]
    assert list(df["series"]) == ["tf+numpy", "tf"]


def test_a_projection_off_by_more_than_its_processes_vary_differs_and_one_within_their_noise_is_inconclusive():
    assert projection.projection_verdict(1.04, []) == "agrees"
    assert projection.projection_verdict(1.10, [1.07, 1.12, 1.09]) == "differs"  # every pair misses the same way
    assert projection.projection_verdict(0.90, [0.93, 0.88]) == "differs"
    # Stop 26's cifar10_cnn on the Zen 3 VM: medians 1.060, pairs 0.964-1.060: within the processes' noise.
    said = projection.projection_verdict(1.060, [0.964, 1.060, 1.02])
    assert said.startswith("inconclusive") and "0.964-1.060" in said
    assert projection.projection_verdict(None, [1.0]).startswith("inconclusive")


def test_a_run_is_contended_only_against_what_its_configuration_normally_waits():
    # A quiet machine: run 2 waited and ran slower than its configuration's other runs.
    df = _runs([{"id": 1, "wait_share": 0.02, "epoch_time_s": 10.0}, {"id": 2, "wait_share": 0.37, "epoch_time_s": 15.0},
                {"id": 3, "wait_share": 0.03, "epoch_time_s": 10.2}, {"id": 4, "wait_share": None, "epoch_time_s": 9}])
    said = str(projection.contention_note(df))
    assert said.startswith("1 run(s) were contended") and "37-37 %" in said and "runs 2)" in said
    assert projection.contention_note(df[df["id"] != 2]) is None
    assert projection.contention_note(_runs([{"id": 1}])) is None  # older runs: not recorded
    # mnist_mlp at 1 vCPU on a quiet Zen 4 VM: its own threads outnumber its vCPU, so it waits 22-76 % at its usual
    # speed (issue 30): nothing is said of its normal runs.
    normal = _runs([{"id": i, "workload": "mnist_mlp", "wait_share": w, "epoch_time_s": t}
                    for i, (w, t) in enumerate([(0.22, 2.0), (0.76, 2.05), (0.41, 1.95), (0.55, 2.1)], 1)])
    assert projection.contention_note(normal) is None
    # a lone run has nothing to be judged against: not called contended, however long it waited
    assert projection.contention_note(_runs([{"id": 1, "wait_share": 0.9, "epoch_time_s": 5.0}])) is None
    # waiting more without being slower is not contention either
    same_speed = _runs([{"id": 1, "wait_share": 0.02, "epoch_time_s": 10.0}, {"id": 2, "wait_share": 0.4,
                                                                             "epoch_time_s": 10.3}])
    assert projection.contention_note(same_speed) is None


def test_the_check_sweep_calibrate_prints_reads_a_stored_calibration():
    """`sweep --calibrate` prints this after its runs: here the Zen 4 calibration kept in reports/."""
    from pathlib import Path

    db = Path(__file__).resolve().parents[1] / "reports" / "zen4-calibration" / "cpustudy.sqlite"
    rows = {(r["workload"], r["vcpus"]): r for r in stored_check(db)}
    assert set(rows) == {(w, v) for w in ("mnist_cnn", "cifar10_cnn", "imdb_bidirectional_lstm") for v in (1, 2)}
    for r in rows.values():
        assert r["steps (capped)"] == 100 and r["pairs"].endswith("(3 pairs)")
        assert abs(r["projected/full"] - r["projected_s"] / r["full_s"]) < 1e-9
        assert (r["verdict"] == "agrees") == (abs(r["projected/full"] - 1) <= projection.TOLERANCE)
    # The Done-when cells agree; the BiLSTM at all of the machine's vCPUs does not all miss the same way.
    assert all(rows[w, 1]["verdict"] == "agrees" for w in ("mnist_cnn", "cifar10_cnn"))
    assert rows["imdb_bidirectional_lstm", 2]["verdict"].startswith("inconclusive: the paired repeats")
    # At 1 vCPU the runs kept their usual speed while their threads waited 2-10 % of their steps: not
    # contended. The BiLSTM at 2 vCPUs, whose threads outnumber them, waited 22-29 %: named so.
    with Store.read(db) as s:
        runs = s.runs(status="ok")
    one = [r["wait_share"] for r in runs if r["vcpus"] == 1]
    assert len(one) == 18 and max(one) > 0.05 and max(one) < CONTENDED_WAIT_SHARE
    lstm2 = [r["wait_share"] for r in runs if r["vcpus"] == 2 and r["workload"] == "imdb_bidirectional_lstm"]
    assert len(lstm2) == 6 and min(lstm2) >= CONTENDED_WAIT_SHARE


def test_a_calibration_whose_runs_all_failed_has_nothing_to_check(tmp_path):
    """After a `sweep --calibrate` whose every run failed, the check is empty: the sweep's own failure
    message is what the user reads, not a second error from reading no runs."""
    from cpustudy.environment import machine

    db = tmp_path / "failed.sqlite"
    with Store.open(db) as s:
        mid = s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
        s.finish_run(s.start_run(mid, run_config(cell_key="k").as_dict()), "failed", {}, error="worker exited with code 1")
    assert stored_check(db) == []


def test_a_runs_contention_note_is_judged_against_its_configurations_other_runs():
    from cpustudy.cli.commands.run import outcome_notes
    from cpustudy.measure.execute import RunOutcome

    outcome = RunOutcome(1, "ok", {"wait_share": 0.45, "epoch_time_s": 3.0}, None, 0)
    said = " ".join(outcome_notes(outcome, peers=[(0.05, 2.0), (0.06, 2.1)]))
    assert "contended" in said and "45 %" in said
    assert not any("contended" in n for n in outcome_notes(outcome, peers=[(0.40, 2.9), (0.5, 3.1)]))
    assert not any("contended" in n for n in outcome_notes(outcome))  # no other run: not judged


def test_a_runs_peers_are_the_stored_runs_of_its_configuration_on_this_machine(tmp_path):
    """`cpustudy run` judges a run's wait against the other repeats of its configuration, read from the store
    (their stored settings: the columns keep options and environment as JSON text, which never compared equal)."""
    from cpustudy.cli.commands.run import peers
    from cpustudy.identity import Configuration
    from cpustudy.store import Store
    from cpustudy.worker.protocol import RunConfig

    base = RunConfig(workload="mnist_cnn", vcpus=1, cpus=(0,), cpu_list="0", batch_size=128, epochs=3,
                     full_steps_per_epoch=469, samples_per_epoch=60000, flops_per_sample=None, data="synthetic",
                     options={"augment": "none"}, env={"OMP_NUM_THREADS": "1"})
    with Store.open(tmp_path / "p.sqlite") as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        other = s.machine_id({"fingerprint": "fp2", "cpu_model": "Test CPU", "logical_cpus": 2})
        ids = {}
        for name, config, machine, wait in (("me", base, m, 0.4), ("repeat", base.with_(repeat=1), m, 0.05),
                                            ("seed", base.with_(seed=3), m, 0.06), ("2 vCPUs", base.with_(vcpus=2), m, 0.1),
                                            ("elsewhere", base.with_(repeat=2), other, 0.07)):
            ids[name] = s.start_run(machine, config.as_dict(), Configuration.of(config).columns())
            s.finish_run(ids[name], "ok", {"wait_share": wait, "epoch_time_s": 10.0})
        found = peers(s, m, base, ids["me"])
    assert sorted(found) == [(0.05, 10.0), (0.06, 10.0)]  # the other repeat and seed here; not 2 vCPUs, not elsewhere


def test_the_projections_own_error_is_read_from_runs_measured_both_ways_else_the_default():
    """``sweep --calibrate`` on a Zen 3 VM (reports/zen3-calibration-2/): mnist_cnn and cifar10_cnn projected and in
    full epochs; the Granite Rapids check (reports/gnr2-two-sessions/) projected one configuration only."""
    from pathlib import Path

    from cpustudy.analysis.runs import load_runs

    reports = Path(__file__).resolve().parent.parent / "reports"
    with Store.read(reports / "zen3-calibration-2" / "cpustudy.sqlite") as store:
        measured = projection.projection_error(load_runs(store))
    assert measured.n >= projection.MIN_PAIRS and 0 < measured.sd < 0.15 and "measured projected" in measured.source
    with Store.read(reports / "gnr2-two-sessions" / "gnr2-two-sessions.sqlite") as store:
        default = projection.projection_error(load_runs(store))
    assert default.sd == projection.TOLERANCE and "default" in default.source
