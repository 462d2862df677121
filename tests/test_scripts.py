"""A user's training script measured as it is: real TensorFlow, tiny scripts written the ways people feed fit.

Each script would run with ``python`` unchanged (one of them is run both ways here); cpustudy runs it in its
worker, measures its first ``fit`` and stops it there.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cpustudy.cli.main import main
from cpustudy.store import Store

pytestmark = pytest.mark.tensorflow  # every test here runs a script under TensorFlow

HEAD = """
import numpy as np
import keras
rng = np.random.default_rng(0)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x[:, 0] + x[:, 1] > 0).astype("int32")  # a rule a small model learns in an epoch or two
print("prepared", len(x), "samples")
"""

MODEL = """
model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer=keras.optimizers.Adam(0.02), loss="sparse_categorical_crossentropy",
              metrics=["sparse_categorical_accuracy"])
"""

AFTER = """
open(os.environ["AFTER_FIT"], "w").write("ran")  # code after the first fit: not run under cpustudy
"""

SCRIPTS = {
    # arrays, validation_split, two callbacks, a custom layer
    "arrays": HEAD + """
class Scale(keras.layers.Layer):
    def call(self, inputs):
        return inputs * 2.0
model = keras.Sequential([keras.Input(shape=(8,)), Scale(), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=32, epochs=5, validation_split=0.25, verbose=0,
          callbacks=[keras.callbacks.ReduceLROnPlateau(patience=1), keras.callbacks.TerminateOnNaN()])
""",
    "tf.data": HEAD + MODEL + """
import os
import tensorflow as tf
train = tf.data.Dataset.from_tensor_slices((x[:384], y[:384])).shuffle(384, seed=1).batch(32).prefetch(2)
val = tf.data.Dataset.from_tensor_slices((x[384:], y[384:])).batch(32)
model.fit(train, validation_data=val, epochs=4, verbose=2)
""" + AFTER,
    "PyDataset": HEAD + MODEL + """
class Batches(keras.utils.PyDataset):
    def __len__(self):
        return 12
    def __getitem__(self, i):
        return x[i * 32:(i + 1) * 32], y[i * 32:(i + 1) * 32]
model.fit(Batches(), validation_data=(x[384:], y[384:]), epochs=3, verbose=0)
""",
    "generator": HEAD + MODEL + """
def batches():
    while True:
        for i in range(12):
            yield x[i * 32:(i + 1) * 32], y[i * 32:(i + 1) * 32]
model.fit(batches(), steps_per_epoch=12, validation_data=(x[384:], y[384:]), epochs=3, verbose=0)
""",
}


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A test's folder. The cache stays the suite's (conftest.py): a script's check under TensorFlow is cached
    by its content, so the scripts used by several tests here are checked once, as a user's second run of a
    script finds its check (the first test of each script runs it)."""
    monkeypatch.setenv("AFTER_FIT", str(tmp_path / "after_fit"))
    return tmp_path


@pytest.mark.parametrize("kind", list(SCRIPTS))
def test_a_script_fed_any_way_is_measured_as_it_is(env, kind):
    script = write(env, f"train_{kind.replace('.', '_')}.py", SCRIPTS[kind])
    db = str(env / "s.sqlite")
    assert main(["run", script, "--vcpus", "1", "--epochs", "2", "--db", db]) == 0
    with Store.read(db) as s:
        (run,) = s.runs()
        epochs = s.epochs([run["id"]])
    summary = json.loads(run["model_summary"])
    assert run["status"] == "ok" and run["input_pipeline"] == "script" and run["data"] == "real"
    assert summary["script"] is True and summary["fit"]["input"] == kind
    assert summary["samples"] == 384 and summary["validation_samples"] == 128 and run["batch_size"] == 32
    assert len(epochs) == 2 and all(e["steps"] == 12 for e in epochs)  # the run's --epochs, the script's steps
    assert all(e["val_loss"] is not None and json.loads(e["metrics"])["val_loss"] == e["val_loss"] for e in epochs)
    assert run["flops_per_sample"] and run["flops_source"] == "tensorflow cost analysis"
    assert "prepared 512 samples" in run["output_tail"]  # the script's own output, kept
    data = json.loads(run["software"])["data_prep"]
    assert data["input"] == kind and data["samples"] == 384
    if kind == "arrays":
        assert summary["fit"]["callbacks"] == ["ReduceLROnPlateau", "TerminateOnNaN"]
        assert "Scale" in summary["layer_types"]
        assert "learning_rate" in json.loads(epochs[0]["metrics"])  # ReduceLROnPlateau ran in fit's logs
    if kind == "tf.data":
        assert not (env / "after_fit").exists()  # stopped after its first fit


def test_a_capped_script_epoch_takes_the_caps_share_of_its_split_and_is_projected(env):
    script = write(env, "train_arrays.py", SCRIPTS["arrays"])
    db = str(env / "s.sqlite")
    assert main(["run", script, "--vcpus", "1", "--epochs", "2", "--steps-per-epoch", "10", "--batch-size", "16",
                 "--db", db]) == 0
    with Store.read(db) as s:
        (run,) = s.runs()
        epochs = s.epochs([run["id"]])
    assert run["batch_size"] == 16 and run["steps_per_epoch"] == 10 and run["full_steps_per_epoch"] == 24
    assert run["projected"] == 1 and all(e["steps"] == 10 for e in epochs)
    assert all(e["validation_steps"] == 8 for e in epochs)  # the split's 128 samples, 16 a batch: all of them


def test_a_script_stops_at_its_target_on_a_metric_not_called_accuracy_and_runs_with_python(env):
    script = write(env, "train_tfdata.py", SCRIPTS["tf.data"])
    db = str(env / "s.sqlite")
    assert main(["run", script, "--vcpus", "1", "--target-accuracy", "0.8", "--max-epochs", "4", "--db", db]) == 0
    with Store.read(db) as s:
        (run,) = s.runs()
        epochs = s.epochs([run["id"]])
    assert run["target_reached"] == 1 and run["epochs_to_target"] == len(epochs) < 4
    assert epochs[-1]["val_accuracy"] >= 0.8 and epochs[-1]["target_value"] == epochs[-1]["val_accuracy"]
    assert json.loads(epochs[-1]["metrics"])["val_sparse_categorical_accuracy"] == epochs[-1]["val_accuracy"]
    proc = subprocess.run([sys.executable, script], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert proc.returncode == 0 and "Epoch 4/4" in proc.stdout  # unchanged, it trains its own 4 epochs
    assert (env / "after_fit").read_text() == "ran"


BAD = {
    "syntax": ("model.fit(x, y\n", "syntax error"),
    "no_fit": ("import keras\nprint('hello')\n", "calls no .fit"),
    "before_fit": (HEAD + "z = x[:, 99]\n" + MODEL + "model.fit(x, y)\n", "train_before_fit.py:8: running the script failed: IndexError"),
    "download": (HEAD + "keras.utils.get_file('d.npz', 'https://cpustudy.invalid/d.npz')\n" + MODEL + "model.fit(x, y)\n",
                 "there is no network here: the data is not here"),
    "never_called": (HEAD + MODEL + "if len(x) < 10:\n    model.fit(x, y)\n", "without calling model.fit()"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_script_is_one_line_exit_2_naming_file_and_line_and_nothing_stored(env, capsys, name):
    text, says = BAD[name]
    script = write(env, f"train_{name}.py", text)
    db = env / "s.sqlite"
    assert main(["run", script, "--vcpus", "1", "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not db.exists()


@pytest.mark.parametrize("kind, argv, says", [
    ("tf.data", ["--batch-size", "64"], "already batched by 32"),
    ("generator", ["--steps-per-epoch", "10"], "cannot cap"),
    ("tf.data", ["--target", "val_auc=0.8"], "logs no val_auc (it logs val_loss, val_sparse_categorical_accuracy)"),
    ("tf.data", ["--warmup-steps", "5"], "leave --warmup-steps out"),
])
def test_a_setting_a_scripts_fit_cannot_take_is_refused_before_measuring(env, capsys, kind, argv, says):
    script = write(env, f"train_{kind.replace('.', '_')}.py", SCRIPTS[kind])
    db = env / "s.sqlite"
    assert main(["run", script, "--vcpus", "1", *argv, "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1
    assert not db.exists()


def test_scripts_sweep_beside_the_study_appear_in_the_report_and_compare_with_their_files(env, run_cli,
                                                                                         monkeypatch, alone):
    """A script that imports a module beside it and reads a file it names sweeps beside mnist_mlp, shows in the
    report with its input and callbacks, and is compared to a target: the local seeds measured, the cloud
    candidate's probe planned with the script and both of its files. The compare measures with the machine alone
    (``alone``: a run on a busy machine is left out of its figures); the sweep and the report share it."""
    (env / "helpers.py").write_text("def scale(v):\n    return v * float(open(RULE).read())\nRULE = None\n")
    (env / "rule.txt").write_text("1.0\n")
    monkeypatch.chdir(env)  # run from its folder, as `python train_companions.py` would be
    script = write(env, "train_companions.py", "import helpers\nhelpers.RULE = 'rule.txt'\n" + SCRIPTS["tf.data"]
                   .replace('print("prepared"', 'x = helpers.scale(x)\nprint("prepared"'))
    db = env / "s.sqlite"
    r = run_cli("sweep", "--workloads", f"{script},mnist_mlp", "--vcpus", "1", "--epochs", "2", "--steps-per-epoch",
                "10", "--data", "synthetic", "--db", db)  # a run measured on a busy machine still shows, flagged
    assert r.code == 0, r.err
    with Store.read(db) as s:
        runs = s.runs()
    assert sorted(x["workload"] for x in runs) == ["mnist_mlp", "train_companions"]
    assert all(x["status"] == "ok" for x in runs)
    out = env / "report"
    assert run_cli("report", "--db", db, "--out", out).code == 0
    section = (out / "report.md").read_text().split("## Your models and scripts")[1].split("\n## ")[0]
    row = next(line for line in section.splitlines() if line.startswith("| train_companions"))
    assert "script " in row and "| tf.data |" in row

    plan = env / "probes"
    with alone():
        r = run_cli("compare", script, "--target-accuracy", "0.8", "--candidates", "here:1,gcp:n2-highcpu-2",
                    "--seeds", "2", "--max-epochs", "4", "--convergence-at", "here:1", "--repeats", "2",
                    "--probe-plan", plan, "--probe-budget", "5", "--max-trainings", "0", "--format", "json",
                    "--db", db)
    assert r.code == 0, r.err
    here = json.loads(r.out)["candidates"][0]
    assert here["candidate"] == "here:1" and here["reached"] == 1.0 and here["time_to_target_s"] > 0
    copied = {p.name for p in (plan / "models").rglob("*") if p.is_file()}
    assert copied == {"train_companions.py", "helpers.py", "rule.txt"}


def test_the_runs_seed_wins_over_the_scripts_own_and_the_call_is_recorded(env):
    """A keras.io-style script that seeds everything itself: under two cpustudy seeds it trains two different
    trainings (its own seed calls are ignored and recorded), not one training twice."""
    script = write(env, "seeded.py", """
import random
import numpy as np
import keras
keras.utils.set_random_seed(1337)
np.random.seed(7)
random.seed(7)
x = np.random.normal(size=(256, 8)).astype("float32")  # the global generator: cpustudy's seed now
y = (x[:, 0] > 0).astype("int32")
model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(8, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=32, epochs=2, verbose=0)
""")
    db = str(env / "s.sqlite")
    for seed in ("1", "2"):
        assert main(["run", script, "--vcpus", "1", "--epochs", "2", "--seed", seed, "--db", db]) == 0
    with Store.read(db) as s:
        runs = s.runs()
        losses = [[e["loss"] for e in s.epochs([r["id"]])] for r in runs]
    assert len(runs) == 2 and losses[0] != losses[1]  # two seeds, two trainings
    overridden = json.loads(runs[0]["software"])["data_prep"]["seed_overridden"]
    assert any("set_random_seed(1337) at seeded.py:" in c for c in overridden)
    assert any(c.startswith("numpy.random.seed(7)") for c in overridden) and any("random.seed(7)" in c for c in overridden)
