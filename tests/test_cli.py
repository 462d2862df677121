"""The command line, in-process: the issue's end-to-end scenario, every workload, bad input."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from conftest import run_config

from cpustudy.environment import machine
from cpustudy.store import Store
from cpustudy.workloads import WORKLOADS

RUN_COLUMNS = ("run_id status workload device build vcpus threads data batch_size epochs steps_per_epoch "
               "epoch_time_s samples_per_s startup_s projected error cpu_model tf_version keras_backend "
               "created_at").split()
EPOCH_COLUMNS = "run_id workload build vcpus epoch elapsed_s steps loss warmup".split()



def test_help_does_not_import_tensorflow():
    code = (
        "import sys\n"
        "from cpustudy.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('tensorflow', 'keras', 'pandas', 'plotnine', 'numpy') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "COMMAND" in out and "run" in out and "results" in out
    assert out.strip().splitlines()[-1] == "HEAVY="


@pytest.mark.tensorflow
def test_run_then_results(run_cli, db, empty_keras_home):
    r = run_cli("run", "mnist_mlp", "--vcpus", 1, "--epochs", 3, "--steps-per-epoch", 20,
                "--data", "synthetic", "--db", db)
    assert r.code == 0, r.err
    assert r.out.startswith("run 1 ok: mnist_mlp 1 vCPU(s), synthetic data")

    r = run_cli("results", "--db", db, "--format", "csv")
    assert r.code == 0
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert len(rows) == 1
    row = rows[0]
    assert set(RUN_COLUMNS) <= set(row)
    assert row["status"] == "ok" and row["data"] == "synthetic" and row["vcpus"] == "1"
    assert row["cpu_model"] and row["tf_version"] and row["keras_backend"] == "tensorflow"
    assert row["threads"] == "1/1" and row["steps_per_epoch"] == "20" and row["projected"] == "True"
    # Projected full epoch = time inside the steps x 469 / 20 + the time outside them, once.
    per_epoch = json.loads(run_cli("results", "--db", db, "--per-epoch", "--format", "json").out)
    assert [e["epoch"] for e in per_epoch] == [1, 2, 3]
    assert set(EPOCH_COLUMNS) <= set(per_epoch[0])
    assert [e["warmup"] for e in per_epoch] == [True, False, False]
    steps_s = sum(e["steps_s"] for e in per_epoch[1:]) / 2  # the median of two
    outside = sum(e["boundary_s"] for e in per_epoch[1:]) / 2
    full = steps_s / 20 * 469 + outside
    assert float(row["epoch_time_s"]) == pytest.approx(full)
    assert float(row["epoch_boundary_s"]) == pytest.approx(outside)
    assert float(row["samples_per_s"]) == pytest.approx(469 * 128 / full)
    assert float(row["startup_s"]) > 0
    assert all(e["steps"] == 20 and e["loss"] > 0 for e in per_epoch)

    table = run_cli("results", "--db", db)
    assert table.code == 0 and "mnist_mlp" in table.out


@pytest.mark.tensorflow
@pytest.mark.parametrize("name", [w for w in WORKLOADS if w != "mnist_mlp"])  # mnist_mlp: the test above
def test_every_workload_trains(run_cli, db, name, empty_keras_home):
    r = run_cli("run", name, "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 10, "--db", db)
    assert r.code == 0, r.err
    rows = json.loads(run_cli("results", "--db", db, "--format", "json").out)
    (row,) = rows
    assert row["status"] == "ok" and row["workload"] == name and row["data"] == "synthetic"
    assert row["epoch_time_s"] > 0 and row["startup_s"] > 0
    epochs = json.loads(run_cli("results", "--db", db, "--per-epoch", "--format", "json").out)
    assert len(epochs) == 2 and all(e["steps"] == 10 for e in epochs)


def _more_cpus_than_allowed() -> str:
    return str(len(os.sched_getaffinity(0)) + 1)


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "mnist_mlpp"], "unknown workload 'mnist_mlpp'"),
        (["run", "mnist_mlp", "--vcpus", "0"], "positive"),
        (["run", "mnist_mlp", "--vcpus", "two"], "not a whole number"),
        (["run", "mnist_mlp", "--vcpus", _more_cpus_than_allowed()], "--oversubscribe"),
        (["run", "mnist_mlp", "--epochs", "0"], "positive"),
        (["run", "mnist_mlp", "--steps-per-epoch", "-3"], "positive"),
        (["run", "mnist_mlp", "--batch-size", "0"], "positive"),
        (["run", "mnist_mlp", "--data", "fake"], "invalid choice"),
        (["run", "mnist_mlp", "--data", "real"], "mnist.npz"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_exit_2(run_cli, db, args, needle, empty_keras_home):
    r = run_cli(*args, "--db", db) if args[0] == "run" else run_cli(*args)
    assert r.code == 2
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cpustudy")
    assert needle in lines[0]
    assert "Traceback" not in r.err
    assert not db.exists()  # refused before anything was created


@pytest.mark.parametrize(
    "args,helps",
    [
        (["backtest", "--format", "json"], "cpustudy backtest --help"),
        (["results", "extra"], "cpustudy results --help"),
        (["builds", "list", "--bogus"], "cpustudy builds list --help"),
        (["cloud", "plan", "--targets", "x", "--out", "y", "--bogus"], "cpustudy cloud plan --help"),
        (["--bogus"], "cpustudy --help"),
    ],
)
def test_an_unrecognized_argument_names_the_help_of_the_command_it_was_given_to(run_cli, args, helps):
    r = run_cli(*args)
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1
    assert r.err.startswith("cpustudy: error: unrecognized arguments: ") and r.err.endswith(f"(see `{helps}`)\n")


@pytest.mark.parametrize(
    "args,needle",
    [
        (["recommend", "w", "--deadline", "-5m"], "argument --deadline: '-5m': a deadline must be positive, e.g. 5m"),
        (["recommend", "w", "--deadline=-1h30m"], "argument --deadline: '-1h30m': a deadline must be positive"),
        (["compare", "w", "--deadline", "-90s"], "argument --deadline: '-90s': a deadline must be positive"),
        (["recommend", "w", "--budget", "-1"], "argument --budget: '-1' must be a positive number"),
        (["recommend", "w", "--budget", "-1e3"], "argument --budget: '-1e3' must be a positive number"),
    ],
)
def test_a_negative_deadline_or_budget_reaches_its_check(run_cli, db, args, needle):
    """A value starting with '-' and a digit is the flag's value (argparse took `-5m` for an unknown option and said
    "expected one argument")."""
    r = run_cli(*args, "--db", db)
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1 and needle in r.err
    assert not db.exists()


def test_db_in_missing_folder(run_cli, tmp_path, empty_keras_home):
    r = run_cli("run", "mnist_mlp", "--vcpus", 1, "--db", tmp_path / "missing" / "x.sqlite")
    assert r.code == 2 and "does not exist" in r.err and len(r.err.strip().splitlines()) == 1


def test_not_a_database_is_left_alone(run_cli, tmp_path, empty_keras_home):
    path = tmp_path / "notes.sqlite"
    path.write_text("my notes\n")
    for args in (["run", "mnist_mlp", "--vcpus", "1", "--epochs", "1", "--steps-per-epoch", "10"], ["results"]):
        r = run_cli(*args, "--db", path)
        assert r.code == 2 and "not a cpustudy database" in r.err
    assert path.read_text() == "my notes\n"


def test_read_on_missing_database_creates_nothing(run_cli, tmp_path):
    path = tmp_path / "none.sqlite"
    for args in (["results"], ["results", "--per-epoch"]):
        r = run_cli(*args, "--db", path)
        assert r.code == 2 and "no database" in r.err
    assert not path.exists()


def test_cpustudy_db_environment_variable(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CPUSTUDY_DB", str(tmp_path / "env.sqlite"))
    r = run_cli("results")
    assert r.code == 2 and "env.sqlite" in r.err


def test_workloads_command(run_cli):
    r = run_cli("workloads", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.out)))
    from cpustudy.workloads import VARIANTS

    assert [row["workload"] for row in rows] == list(WORKLOADS) + list(VARIANTS)
    mlp = rows[0]
    assert mlp["batch_size"] == "128" and mlp["epochs"] == "20" and mlp["samples_per_epoch"] == "60000"
    assert float(mlp["train_mflops_per_sample"]) == pytest.approx(WORKLOADS["mnist_mlp"].flops().train / 1e6, abs=1e-3)


@pytest.mark.tensorflow
def test_machine_command_without_probe(run_cli):
    r = run_cli("machine", "--no-probe", "--format", "json")
    info = json.loads(r.out)
    assert r.code == 0 and info["logical_cpus"] >= 1 and "isa" in info and "software" not in info


def test_gpu_device_without_a_gpu_is_refused(run_cli, db, empty_keras_home):
    from cpustudy.environment.machine import gpu_names

    if gpu_names():
        pytest.skip("this machine has a GPU")
    r = run_cli("run", "mnist_mlp", "--vcpus", 1, "--device", "gpu", "--db", db)
    assert r.code == 2 and "no GPU here" in r.err and not db.exists()


@pytest.mark.tensorflow
def test_machine_command_probes_tensorflow(run_cli):
    info = json.loads(run_cli("machine", "--format", "json").out)
    sw = info["software"]
    assert sw["tf_version"] and sw["keras_backend"] == "tensorflow"
    assert sw["onednn"] in (True, False) and sw["tf_isa_report"] in (True, False)
    if "avx2" in info["flags"]:
        assert "AVX2" in (sw["tf_missing_isa"] or "").split()


@pytest.mark.parametrize("flag,value", [("--vcpus", "1,,2"), ("--vcpus", "1,"), ("--workloads", "mnist_mlp,,mnist_cnn"),
                                        ("--builds", "tf,")])
def test_an_empty_item_in_a_list_is_refused_before_anything_runs(run_cli, db, flag, value):
    r = run_cli("sweep", flag, value, "--dry-run", "--db", db)
    assert r.code == 2 and "an item is empty" in r.err and flag in r.err
    assert len(r.err.strip().splitlines()) == 1 and not db.exists()


def test_a_mistyped_name_gets_the_nearest_one(run_cli, db):
    r = run_cli("run", "mnist_mpl", "--db", db)
    assert r.code == 2 and "did you mean mnist_mlp?" in r.err and not db.exists()
    r = run_cli("sweep", "--builds", "tf-onedn", "--dry-run", "--db", db)
    assert r.code == 2 and "did you mean tf-onednn?" in r.err
    r = run_cli("run", "resnet50", "--db", db)
    assert r.code == 2 and "did you mean" not in r.err and "choose one of" in r.err


def test_results_show_a_failed_runs_whole_error_and_a_warm_up_only_basis(run_cli, db):


    config = run_config().as_dict()
    with Store.open(db) as s:
        mid = s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
        s.finish_run(s.start_run(mid, config), "failed", {}, exit_code=1,
                     error="worker exited with code 1\n--- worker stderr (tail) ---\nMemoryError: out of it")
        s.finish_run(s.start_run(mid, config), "ok", {"epoch_time_s": 2.0, "samples_per_s": 1600.0, "timed_epochs": 0})
        s.finish_run(s.start_run(mid, config), "ok", {"epoch_time_s": 2.0, "samples_per_s": 1600.0, "timed_epochs": 3,
                                                      "projected": True})
    r = run_cli("results", "--errors", "--db", db)
    assert r.code == 0 and "run 1: mnist_mlp tf 1 vCPU(s)" in r.out and "MemoryError: out of it" in r.out
    assert "run 2" not in r.out
    rows = json.loads(run_cli("results", "--format", "json", "--db", db).out)
    assert [row["basis"] for row in rows] == [None, "warm-up epoch only", "projected from 3 epochs"]


def test_results_errors_marks_a_run_interrupted_from_outside(run_cli, db):
    """A run stopped by SIGTERM is stored as failed ('interrupted by SIGTERM'): `results --errors` listed it as
    any failure, while a sweep does not count it as failed."""
    config = run_config().as_dict()
    with Store.open(db) as s:
        mid = s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
        s.finish_run(s.start_run(mid, config), "failed", {}, error="interrupted by SIGTERM")
        s.finish_run(s.start_run(mid, config), "failed", {}, exit_code=137, error="worker exited with code 137")
    out = run_cli("results", "--errors", "--db", db).out.splitlines()
    assert out[0].startswith("run 1: ") and "(interrupted, not a failed measurement" in out[0]
    assert out[2].startswith("run 2: ") and "interrupted" not in out[2]
    rows = json.loads(run_cli("results", "--errors", "--format", "json", "--db", db).out)
    assert [(r["run_id"], r["interrupted"]) for r in rows] == [(1, True), (2, False)]


@pytest.mark.tensorflow
def test_machine_check(run_cli):
    r = run_cli("machine", "--check", "--no-probe", "--format", "json")
    info = json.loads(r.out)
    assert r.code == 0 and len(info["state"]["loadavg"]) == 3 and isinstance(info["warnings"], list)
