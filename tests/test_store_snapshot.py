"""Snapshots for jobs that can be cut (cpustudy.store.snapshot, ``sweep --snapshot-to``): a consistent
copy written atomically after every run starts and finishes, and a job that lost its VM resumed from it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from cpustudy.errors import UserError
from cpustudy.store import Store, snapshot


def _runs(path):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT status, cell_key, error FROM runs ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def test_snapshot_is_a_consistent_copy_in_rollback_journal_mode_written_atomically(tmp_path):
    live = tmp_path / "live.sqlite"
    snap_dir = tmp_path / "bucket"
    snap_dir.mkdir()
    snap = snap_dir / "job.sqlite"
    with Store.open(live) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        s.on_run_change = lambda: snapshot.write(s.conn, snap)
        run = s.start_run(m, {"workload": "mnist_mlp", "build": "tf", "vcpus": 1})
        assert [r[0] for r in _runs(snap)] == ["running"]  # the started run is already in the copy
        s.finish_run(run, "ok", {"epoch_time_s": 1.0})
        assert [r[0] for r in _runs(snap)] == ["ok"]
    conn = sqlite3.connect(snap)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # no -wal/-shm on a bucket
    conn.close()
    assert sorted(p.name for p in snap_dir.iterdir()) == ["job.sqlite"]  # no temporary file left


def test_restore_starts_a_new_database_from_the_snapshot_and_never_overwrites_one(tmp_path):
    snap = tmp_path / "snap.sqlite"
    with Store.open(tmp_path / "a.sqlite") as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        s.finish_run(s.start_run(m, {"workload": "mnist_mlp"}), "ok", {})
        snapshot.write(s.conn, snap)
    new = tmp_path / "new.sqlite"
    assert snapshot.restore(snap, new) is True and [r[0] for r in _runs(new)] == ["ok"]
    assert snapshot.restore(snap, new) is False  # it exists now: left as it is
    assert snapshot.restore(tmp_path / "missing.sqlite", tmp_path / "other.sqlite") is False
    (tmp_path / "junk.sqlite").write_text("not a database")
    with pytest.raises(UserError, match="cannot restore"):
        snapshot.restore(tmp_path / "junk.sqlite", tmp_path / "third.sqlite")
    assert not (tmp_path / "third.sqlite").exists()


def test_snapshot_to_a_missing_folder_is_one_clear_error(tmp_path):
    with Store.open(tmp_path / "a.sqlite") as s:
        with pytest.raises(UserError, match="cannot write the snapshot"):
            snapshot.write(s.conn, tmp_path / "no-such-bucket" / "job.sqlite")


SWEEP = ["sweep", "--vcpus", "1", "--builds", "tf", "--workloads", "mnist_mlp", "--repeats", "3",
         "--epochs", "2", "--steps-per-epoch", "10", "--data", "synthetic"]


@pytest.mark.tensorflow
def test_a_job_killed_mid_cell_and_resumed_on_a_new_vm_from_its_snapshot_ends_with_the_planned_runs(
        tmp_path, empty_keras_home):
    vm = tmp_path / "vm-disk"
    vm.mkdir()
    bucket = tmp_path / "bucket"
    bucket.mkdir()
    live, snap = vm / "live.sqlite", bucket / "job.sqlite"
    cmd = [sys.executable, "-m", "cpustudy", *SWEEP, "--db", str(live), "--snapshot-to", str(snap)]
    # As SkyPilot and the task `cloud plan` writes would set them on the VM.
    # COLUMNS: rich wraps a line wider than the terminal, inside a long temporary path too
    env = {**os.environ, "COLUMNS": "1000", "SKYPILOT_TASK_ID": "sky-managed-2026-11-23_cpustudy_1-0",
           "SKYPILOT_CLUSTER_INFO": json.dumps({"cloud": "GCP", "region": "us-central1", "zone": "us-central1-a",
                                                "cluster_name": "c1"}),
           "CPUSTUDY_CLOUD_TARGET": "gcp:n2-highcpu-8", "CPUSTUDY_CLOUD_SPOT": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env=env)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        statuses = [r[0] for r in _runs(snap)] if snap.exists() else []
        if statuses.count("ok") >= 1 and statuses[-1] == "running":  # one done, the next one cut
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the sweep ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its worker: the VM is gone
    proc.wait()
    live.unlink()  # a recovered job runs on a new VM: only the bucket survived
    for extra in vm.iterdir():
        extra.unlink()

    env["SKYPILOT_CLUSTER_INFO"] = env["SKYPILOT_CLUSTER_INFO"].replace("us-central1-a", "us-central1-b")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert f"resumed from the snapshot {snap}" in done.stderr
    runs = _runs(live)
    ok = [r for r in runs if r[0] == "ok"]
    assert len(ok) == 3 and len({r[1] for r in ok}) == 3  # exactly the planned runs, none twice
    cut = [r for r in runs if r[0] == "failed"]
    assert len(cut) == 1 and cut[0][2].startswith("interrupted: its job was cut")
    assert _runs(snap) == runs  # the snapshot caught up with the end
    with Store.read(live) as s:
        where = [json.loads(r["settings"])["cloud"] for r in s.runs(status="ok")]
    assert [w["recoveries"] for w in where] == [0, 1, 1]  # the first before the cut, two after it
    assert [w["zone"] for w in where] == ["us-central1-a", "us-central1-b", "us-central1-b"]
    assert {(w["cloud"], w["instance_type"], w["spot"]) for w in where} == {("gcp", "n2-highcpu-8", True)}


def test_cloud_context_from_skypilots_variables():
    from cpustudy.environment import cloud

    assert cloud.context({}) is None  # not in a cloud job: nothing recorded
    env = {"SKYPILOT_CLUSTER_INFO": '{"cloud": "GCP", "region": "us-central1", "zone": "us-central1-c"}',
           "CPUSTUDY_CLOUD_TARGET": "gcp:a3-highgpu-1g+H100:1", "CPUSTUDY_CLOUD_SPOT": "0",
           "SKYPILOT_TASK_ID": "t-1"}
    c = cloud.context(env, starts=3)
    assert c is not None
    assert (c["cloud"], c["zone"], c["instance_type"], c["accelerators"], c["spot"], c["recoveries"]) == (
        "gcp", "us-central1-c", "a3-highgpu-1g", "H100:1", False, 2)
