from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from cpustudy import cli
from cpustudy.worker.protocol import RunConfig

# Keep TensorFlow quiet and off any GPU in the test process and in the workers it starts.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
# The tests' own cache folder (build probes, generated data, kernel readings), never the user's
# ~/.cache/cpustudy: kept between runs on this machine, so a second run reuses what the first made.
os.environ["CPUSTUDY_CACHE"] = os.path.join(tempfile.gettempdir(), f"cpustudy-tests-cache-{os.getuid()}")


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture(scope="session", autouse=True)
def no_skypilot_catalog(tmp_path_factory):
    """Every test (and the session fixtures, made before any test's own fixtures) sees an empty
    SkyPilot folder: prices come from the shipped catalog, not from whatever SkyPilot downloaded to
    this machine's ~/.sky. A test that wants a catalog writes one and points SKY_RUNTIME_DIR at it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKY_RUNTIME_DIR", str(tmp_path_factory.mktemp("sky-runtime-empty")))
        yield


@pytest.fixture
def run_cli(capsys):
    """Run ``cpustudy ARGS`` in-process; returns exit code, stdout and stderr."""

    def run(*args: str) -> Result:
        code = cli.main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "results.sqlite"


@pytest.fixture
def empty_keras_home(tmp_path: Path, monkeypatch) -> Path:
    """A Keras cache with no datasets, so ``--data auto`` means synthetic on every machine."""
    home = tmp_path / "keras-home"
    (home / "datasets").mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(home))
    return home


def run_config(**fields) -> RunConfig:
    """A RunConfig for arithmetic on a run's figures (no worker starts): mnist_mlp at 1 vCPU with
    the given fields."""
    values = dict(workload="mnist_mlp", vcpus=1, cpus=(0,), cpu_list="0", batch_size=32, epochs=4,
                  full_steps_per_epoch=100, samples_per_epoch=3200, flops_per_sample=1, data="synthetic")
    values.update(fields)
    return RunConfig(**values)


@pytest.fixture(scope="session")
def woolf_report(tmp_path_factory):
    """The invented 2017-style logs imported and reported once: (database, report folder)."""
    import reportdb

    return reportdb.woolf_report(tmp_path_factory)


@pytest.fixture(scope="session")
def local_analysis(tmp_path_factory):
    """The analysis of reportdb.make_local_db's CPU-only results, once."""
    import reportdb

    return reportdb.local_analysis(tmp_path_factory)
