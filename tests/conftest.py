from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from cpustudy import cli

# Keep TensorFlow quiet and off any GPU in the test process and in the workers it starts.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")


@dataclass
class Result:
    code: int
    out: str
    err: str


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
