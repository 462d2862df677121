"""SIGTERM and SIGHUP end a measuring command like Ctrl-C: the worker's process group is killed, the run
is finished as interrupted, one line is printed; a parent killed outright takes its worker with it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import psutil
import pytest


def _start(db, tmp_path, *args):
    env = {**os.environ, "KERAS_HOME": str(tmp_path / "keras-home")}
    args = args or ("mnist_mlp", "--epochs", "300", "--steps-per-epoch", "40")
    return subprocess.Popen([sys.executable, "-m", "cpustudy", "run", *args, "--vcpus", "1", "--data", "synthetic",
                             "--validation", "none", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for_training(proc, db) -> psutil.Process:
    """The worker, once it has stored an epoch (the measurement is under way)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=5) as conn:
                    if conn.execute("SELECT count(*) FROM epochs").fetchone()[0] >= 2:
                        workers = _workers(proc)
                        assert len(workers) == 1
                        return workers[0]
            except sqlite3.OperationalError:
                pass
        time.sleep(0.3)
    raise AssertionError("no epoch was stored in time")


def _workers(proc) -> list[psutil.Process]:
    """The parent's cpustudy.worker children (a short-lived probe that has exited meanwhile is skipped)."""
    out = []
    for c in psutil.Process(proc.pid).children():
        try:
            if "cpustudy.worker" in " ".join(c.cmdline()):
                out.append(c)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            pass
    return out


def _gone(p: psutil.Process, within_s: float = 10) -> bool:
    try:
        p.wait(within_s)
    except psutil.TimeoutExpired:
        return False
    return True


@pytest.mark.tensorflow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_termination_signal_stops_the_worker_and_finishes_the_run_as_interrupted(tmp_path, sig):
    db = tmp_path / "r.sqlite"
    proc = _start(db, tmp_path)
    worker = _wait_for_training(proc, db)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig
    assert err.strip().splitlines()[-1].startswith(f"cpustudy: stopped by {sig.name}")
    assert _gone(worker)
    with sqlite3.connect(db) as conn:
        status, error = conn.execute("SELECT status, error FROM runs").fetchone()
    assert status == "failed" and error.startswith(f"interrupted by {sig.name}")


@pytest.mark.tensorflow
def test_a_worker_dies_with_a_parent_killed_outright(tmp_path):
    # Full cifar10_cnn epochs take tens of seconds here: without the kernel's help the worker would go on
    # training until its next epoch's event found the pipe closed.
    db = tmp_path / "r.sqlite"
    proc = _start(db, tmp_path, "cifar10_cnn", "--epochs", "3")
    deadline = time.monotonic() + 120
    worker = None
    while worker is None and time.monotonic() < deadline:
        time.sleep(0.2)
        worker = next(iter(_workers(proc)), None)
    assert worker is not None
    while worker.cpu_times().user < 4 and time.monotonic() < deadline:  # importing TensorFlow, then training
        time.sleep(0.2)
    proc.kill()
    proc.communicate(timeout=30)
    assert _gone(worker, within_s=3)  # not left training beside the next measurement
