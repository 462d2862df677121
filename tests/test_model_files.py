"""A user's model file as a workload: the contract checked (without TensorFlow in the parent, then under it),
its FLOPs counted by TensorFlow's cost analysis, run, swept beside a built-in workload, reported,
recommended, never pooled once edited; and time to accuracy on real Fashion-MNIST."""

from __future__ import annotations

import json
import sys
import sqlite3
from pathlib import Path

import pytest

from cpustudy.errors import process_ended
from cpustudy.analysis.holdup import busy_reason
from cpustudy.workloads import WORKLOADS, userfile

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fashion_mnist_cnn.py"
DEBIAN_FASHION = Path("/usr/share/datasets/fashion-mnist")

# A small model on planted synthetic data: label 1 where the first rows of the image are bright.
TINY = '''
import numpy as np

NAME = "tiny_user"
BATCH_SIZE = 16
EPOCHS = 2
DATA = "synthetic"
FILTERS = {filters}


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(320, 8, 8, 1)).astype("float32")
    y = (x[:, :4].mean(axis=(1, 2, 3)) > 0).astype("int32")
    return (x[:256], y[:256]), (x[256:], y[256:])


def build_model():
    import keras

    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(FILTERS, 3, activation="relu"),
                              keras.layers.Flatten(), keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
'''


def tiny(path: Path, filters: int = 4) -> Path:
    path.write_text(TINY.format(filters=filters))
    return path


def runs(db: Path) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM runs ORDER BY id")]
    finally:
        conn.close()


# -- checked in the parent, without TensorFlow ------------------------------------------------------------

BAD_SOURCES = {
    "syntax": ("def build_model(:\n    pass\n", ":1: syntax error"),
    "no_build": ("def load_data():\n    return None\n", "defines no build_model()"),
    "builtin_name": ("NAME = 'mnist_mlp'\ndef build_model(): pass\ndef load_data(): pass\n", "cpustudy's own workloads"),
    "bad_batch": ("BATCH_SIZE = 0\ndef build_model(): pass\ndef load_data(): pass\n", ":1: BATCH_SIZE must be a positive"),
    "bad_epochs": ("EPOCHS = int('3')\ndef build_model(): pass\ndef load_data(): pass\n", ":1: EPOCHS must be a literal"),
}


@pytest.mark.parametrize("case", sorted(BAD_SOURCES))
def test_a_bad_model_file_is_one_line_and_exit_2_before_anything_is_stored(run_cli, tmp_path, case):
    source, expected = BAD_SOURCES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(source)
    db = tmp_path / "r.sqlite"
    r = run_cli("run", path, "--db", db)
    assert r.code == 2
    assert r.err.count("\n") == 1 and str(path) in r.err and expected in r.err, r.err
    assert "Traceback" not in r.err and not db.exists()


def test_a_missing_model_file_is_named(run_cli, tmp_path):
    r = run_cli("sweep", "--workloads", f"{tmp_path}/nope.py,mnist_mlp", "--db", tmp_path / "r.sqlite")
    assert r.code == 2 and "nope.py: no such model file" in r.err and r.err.count("\n") == 1


def test_the_example_passes_the_parents_check_and_reads_its_constants():
    src = userfile.read_source(str(EXAMPLE))
    assert (src.name, src.batch_size, src.epochs, src.data) == ("fashion_mnist_cnn", 128, 10, "real")
    assert len(src.sha256) == 64


def test_a_model_files_hash_joins_the_identity_and_the_study_keys_stay():
    from cpustudy.identity import Configuration

    base = Configuration(workload="m", vcpus=1, batch_size=32, epochs=2, data="real")
    assert "model_hash" not in base.identity()  # every earlier database keeps its cell keys
    a = Configuration(workload="m", vcpus=1, batch_size=32, epochs=2, data="real", model_hash="a" * 64)
    b = Configuration(workload="m", vcpus=1, batch_size=32, epochs=2, data="real", model_hash="b" * 64)
    assert len({base.key("x"), a.key("x"), b.key("x")}) == 3


# -- checked under TensorFlow ------------------------------------------------------------------------------

def _bad_file(path: Path, case: str) -> tuple[Path, str]:
    text = TINY.format(filters=2)
    if case == "not_compiled":
        text = text.replace('    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", '
                            'metrics=["accuracy"])\n', "")
        expected = "not compiled"
    elif case == "three_parts":
        text = text.replace("return (x[:256], y[:256]), (x[256:], y[256:])",
                            "return (x[:256], y[:256]), (x[256:], y[256:]), None")
        expected = "load_data() must return ((x_train, y_train), (x_test, y_test)), got a tuple of 3"
    elif case == "lengths":
        text = text.replace("(x[256:], y[256:])", "(x[256:], y[250:])")
        expected = "x_test has 64 samples but y_test has 70"
    else:
        text = text.replace("    import keras\n", "    raise ValueError('no GPU here')\n")
        line = text.splitlines().index("    raise ValueError('no GPU here')") + 1
        expected = f"{path}:{line}: build_model() failed: ValueError: no GPU here"
    path.write_text(text)
    return path, expected


@pytest.mark.tensorflow
@pytest.mark.parametrize("case", ["not_compiled", "three_parts", "lengths", "raises"])
def test_what_only_running_the_file_finds_is_one_line_naming_it(tmp_path, case, monkeypatch):
    from cpustudy.worker.usermodel import ModelFileError, check

    # What an earlier test in the same process can leave behind: SkyPilot's print_exception_no_traceback()
    # sets sys.tracebacklimit to 0 and does not set it back when the code inside it raises (the cloud tests'
    # bad task files do). The line is found all the same.
    monkeypatch.setattr(sys, "tracebacklimit", 0, raising=False)
    path, expected = _bad_file(tmp_path / f"{case}.py", case)
    with pytest.raises(ModelFileError) as exc:
        check(str(path), 16)
    line = exc.value.line
    where = f"{path}:{line}: " if line else f"{path}: "
    assert expected in where + str(exc.value)
    if case == "raises":
        assert line is not None


@pytest.mark.tensorflow
def test_a_file_that_breaks_the_contract_under_tensorflow_exits_2_in_the_parent(run_cli, tmp_path):
    path, _ = _bad_file(tmp_path / "uncompiled.py", "not_compiled")
    db = tmp_path / "r.sqlite"
    r = run_cli("run", path, "--vcpus", 1, "--db", db)
    assert r.code == 2 and r.err.count("\n") == 1 and "not compiled" in r.err and str(path) in r.err
    assert not db.exists()


#: What TensorFlow and absl print on stderr as they load: never why a check failed.
TF_LOG = ("WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
          "I0000 00:00:1795921029.171289   24444 cudart_stub.cc:31] Could not find cuda drivers on your machine, "
          "GPU will not be used.\n"
          "2026-11-29 02:50:58.123456: W tensorflow/core/util/port.cc:113] oneDNN custom operations are on.\n")


def test_how_a_process_ended_is_said_one_way_not_with_tensorflows_last_log_line():
    """A check killed with exit 137 was reported as 'failed (exit 137): I0000 ... Could not find cuda drivers'.
    ``errors.process_ended`` says it for every child process (a model file's check, a build's import check and
    setup, a worker): a signal, the 128 + a signal's number a shell reports, or the exit code, then the last
    line of the output that is not a TensorFlow log line."""
    assert process_ended(-9, TF_LOG) == "killed by SIGKILL (often out of memory)"
    assert process_ended(137, TF_LOG) == "killed by SIGKILL (exit 137, often out of memory)"
    assert process_ended(-15) == "killed by SIGTERM"
    assert process_ended(134, TF_LOG) == "killed by SIGABRT (exit 134)"
    assert process_ended(-4, "Fatal Python error: Illegal instruction\n") \
        == "killed by SIGILL: Fatal Python error: Illegal instruction"
    assert process_ended(-200) == "killed by signal 200"
    assert process_ended(1, TF_LOG + "Traceback (most recent call last):\nValueError:  bad   shape\n" + TF_LOG) \
        == "exited with code 1: ValueError: bad shape"
    assert process_ended(3, TF_LOG) == "exited with code 3"
    assert process_ended(255, "\n  \n") == "exited with code 255"  # 128 + 127: no signal of that number


@pytest.mark.tensorflow
def test_a_model_file_killed_during_its_check_is_said_killed(run_cli, tmp_path):
    path = tmp_path / "oom.py"
    path.write_text("import numpy as np\n\n\ndef load_data():\n    x = np.random.rand(256, 8).astype('float32')\n"
                    "    y = np.random.randint(0, 2, 256)\n    return (x, y), (x[:64], y[:64])\n\n\n"
                    "def build_model():\n    import os\n    os._exit(137)\n")
    db = tmp_path / "r.sqlite"
    r = run_cli("sweep", "--workloads", f"{path},mnist_mlp", "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 10,
                "--db", db)
    assert r.code == 2 and r.err.count("\n") == 1 and not db.exists()
    assert r.err.strip().endswith(f"{path}: checking it under TensorFlow failed: killed by SIGKILL "
                                  "(exit 137, often out of memory)")


@pytest.mark.tensorflow
def test_flops_come_from_tensorflows_cost_analysis_of_the_training_step(tmp_path):
    """A file building mnist_cnn's model: TensorFlow's count of the forward pass is the study's analytic
    count plus the softmax; of the training step, the analytic count and what TensorFlow's conventions add
    (a convolution's gradients counted over its input's size, dropout, the first layer's input gradient):
    11 % at full size."""
    from cpustudy.worker.usermodel import check

    params = dict(WORKLOADS["mnist_cnn"].params)
    path = tmp_path / "cnn.py"
    path.write_text(f'''
import numpy as np
from cpustudy.workloads import WORKLOADS

def load_data():
    x = np.zeros((40, 28, 28, 1), "float32")
    y = np.eye(10, dtype="float32")[np.arange(40) % 10]
    return (x[:32], y[:32]), (x[32:], y[32:])

def build_model():
    import keras
    return WORKLOADS["mnist_cnn"].build(keras, {params!r})
''')
    info = check(str(path), 4)
    analytic = WORKLOADS["mnist_cnn"].flops(params)
    softmax = 5 * params["classes"]  # TensorFlow counts 5 FLOPs an element for Softmax
    assert info["flops_forward"] == analytic.forward + softmax
    assert analytic.train < info["flops_train"] < 1.15 * analytic.train
    import keras

    assert info["parameters"] == WORKLOADS["mnist_cnn"].build(keras, params).count_params()
    assert info["input_shapes"] == [[None, 28, 28, 1]] and info["layers"] == 8 and info["accuracy_metric"]


@pytest.mark.tensorflow
def test_a_model_file_sweeps_beside_mnist_mlp_reports_its_gflops_and_an_edit_is_a_new_model(
        run_cli, tmp_path, empty_keras_home):
    path = tiny(tmp_path / "tiny.py")
    db = tmp_path / "r.sqlite"
    r = run_cli("sweep", "--workloads", f"{path},mnist_mlp", "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 10,
                "--data", "synthetic", "--db", db)
    assert r.code == 0, r.err
    stored = {x["workload"]: x for x in runs(db)}
    assert set(stored) == {"tiny_user", "mnist_mlp"} and all(x["status"] == "ok" for x in stored.values())
    mine = stored["tiny_user"]
    assert mine["model_file"] == str(path) and mine["data"] == "synthetic"
    assert mine["flops_source"] == "tensorflow cost analysis" and mine["flops_per_sample"] > 0
    assert json.loads(mine["model_summary"])["input_shapes"] == [[None, 8, 8, 1]]
    assert stored["mnist_mlp"]["model_hash"] is None and stored["mnist_mlp"]["flops_source"] == "analytic"

    # The same file edited: measured again as a new configuration, never pooled with the old runs.
    tiny(path, filters=6)
    r = run_cli("sweep", "--workloads", f"{path},mnist_mlp", "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 10,
                "--data", "synthetic", "--db", db)
    assert r.code == 0, r.err
    after = [x for x in runs(db) if x["workload"] == "tiny_user"]
    assert len(after) == 2 and after[0]["model_hash"] != after[1]["model_hash"]
    assert after[0]["cell_key"] != after[1]["cell_key"]
    assert len(runs(db)) == 3  # mnist_mlp's cell was resumed, not measured again
    out = tmp_path / "report"
    assert run_cli("report", "--db", db, "--out", out).code == 0
    md = (out / "report.md").read_text()
    assert "1 run(s) of an earlier version of their workload were left out" in md
    section = md.split("## Your models and scripts")[1].split("\n## ")[0]
    row = next(line for line in section.splitlines() if line.startswith("| tiny_user"))
    assert float(row.split("|")[11]) > 0  # its GFLOP/s
    assert after[1]["model_hash"][:12] in row and after[0]["model_hash"][:12] not in section


def _tiny_fashion(path: Path) -> Path:
    """The example's data (Debian's files copied into Keras' cache) with a smaller, faster CNN."""
    path.write_text(f'''
import importlib.util

_spec = importlib.util.spec_from_file_location("fashion_example", {str(EXAMPLE)!r})
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)

NAME = "fashion_tiny"
BATCH_SIZE = 128
load_data = _example.load_data


def build_model():
    import keras
    from keras import layers

    model = keras.Sequential([
        keras.Input((28, 28, 1)),
        layers.Conv2D(16, 3, strides=2, activation="relu"),
        layers.Conv2D(32, 3, strides=2, activation="relu"),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model
''')
    return path


@pytest.mark.tensorflow
@pytest.mark.skipif(not (DEBIAN_FASHION / "train-images-idx3-ubyte.gz").exists(),
                    reason="real Fashion-MNIST needs Debian's dataset-fashion-mnist package (not installed)")
def test_time_and_cost_to_accuracy_on_real_fashion_mnist(run_cli, tmp_path, empty_keras_home):
    path = _tiny_fashion(tmp_path / "fashion_tiny.py")
    db = tmp_path / "r.sqlite"
    r = run_cli("run", path, "--vcpus", 2, "--target-accuracy", 0.85, "--max-epochs", 10, "--db", db)
    assert r.code == 0, r.err
    assert "MFLOP per training sample (tensorflow cost analysis)" in r.err
    assert (empty_keras_home / "datasets" / "fashion-mnist" / "train-images-idx3-ubyte.gz").exists()
    (run,) = runs(db)
    assert run["data"] == "real" and run["target_reached"] == 1 and 1 <= run["epochs_to_target"] <= 10
    assert run["time_to_target_s"] > 0 and json.loads(run["model_summary"])["samples"] == 60_000
    r = run_cli("recommend", "fashion_tiny", "--target-accuracy", 0.85, "--db", db)
    assert "judged by the time and cost of one training to validation accuracy 0.85" in r.out  # compare's way
    if busy_reason(run["machine_state"]):  # a run on a busy machine is no speed sample: nothing to choose, and why
        assert r.code == 1 and "cheapest: none" in r.out
        assert "every run of fashion_tiny (1) started on a busy machine (other processes used" in r.out
        return
    assert r.code == 0, r.err
    cheapest = next(line for line in r.out.splitlines() if line.startswith("cheapest:"))
    assert f"from run(s) {run['id']}" in cheapest and "USD/h" in cheapest


@pytest.mark.tensorflow
def test_a_cloud_plan_carries_the_model_file_to_the_vm(run_cli, tmp_path):
    path = tiny(tmp_path / "tiny.py")
    out = tmp_path / "plan"
    r = run_cli("cloud", "plan", "--targets", "gcp:n2-highcpu-8", "--workloads", f"{path},mnist_mlp", "--epochs", 2,
                "--bucket", "my-results", "--out", out)
    assert r.code == 0, r.err
    sha = userfile.read_source(str(path)).sha256
    on_vm = f"/cpustudy-models/{sha[:12]}/tiny.py"
    copy = out / "models" / sha[:12] / "tiny.py"
    assert copy.read_bytes() == path.read_bytes()  # the plan measures the file as it was when planned
    task = next(out.glob("*.yaml")).read_text()
    assert f'{on_vm}: "{copy.resolve()}"' in task
    sweep = next(line for line in task.splitlines() if "cpustudy sweep" in line)
    assert f"--workloads {on_vm},mnist_mlp" in sweep and str(path) not in sweep


@pytest.mark.tensorflow
@pytest.mark.parametrize("build", ["jax-here", "torch-here"])
def test_flops_are_not_counted_where_keras_has_no_tensorflow_graph_and_it_says_so(tmp_path, build):
    from cpustudy.environment import builds
    from cpustudy.measure.spec import flops_and_model

    w = userfile.load(str(tiny(tmp_path / "tiny.py")))
    on_tf = flops_and_model(w, builds.load("tf"), {})
    assert on_tf["flops_per_sample"] == w.flops().train > 0 and on_tf["flops_source"] == "tensorflow cost analysis"
    other = flops_and_model(w, builds.load(build), {})
    assert other["flops_per_sample"] is None and other["flops_source"].startswith("not counted")
    assert build.split("-")[0] in other["flops_source"] and other["model_hash"] == w.model.sha256


@pytest.mark.tensorflow
def test_a_file_edited_after_planning_fails_in_the_worker_not_silently(tmp_path):
    from cpustudy.measure.spec import RunSpec, plan
    from cpustudy.worker.usermodel import workload_for

    path = tiny(tmp_path / "tiny.py")
    config = plan(RunSpec(workload=userfile.load(str(path)), vcpus=1, epochs=2))
    assert workload_for(config).validation_samples == 64 and config.samples_per_epoch == 256
    tiny(path, filters=5)
    with pytest.raises(RuntimeError, match="changed after the run was planned"):
        workload_for(config)


@pytest.mark.tensorflow
def test_a_target_accuracy_on_a_files_random_labels_is_refused_naming_the_file(run_cli, tmp_path):
    path = tiny(tmp_path / "tiny.py")
    r = run_cli("run", path, "--target-accuracy", 0.9, "--db", tmp_path / "r.sqlite")
    assert r.code == 2 and r.err.count("\n") == 1 and f'{path} says DATA = "synthetic"' in r.err
    path.write_text(TINY.format(filters=4).replace('DATA = "synthetic"', 'DATA = "learnable"'))
    assert userfile.read_source(str(path)).data == "learnable"
