"""Faults end in one line and exit 2, naming the state and the way out, with nothing stored lost: a
damaged or truncated database, a full disk, and the mistakes only a paid VM would otherwise reject."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import reportdb


def _damaged(tmp_path: Path, how: str) -> Path:
    db = reportdb.make_local_db(tmp_path / f"{how}.sqlite")
    data = bytearray(db.read_bytes())
    page = 4096
    if how == "page":
        for start in range(2 * page, len(data), page):  # every page after the schema's: garbage
            data[start:start + page] = b"\xa5" * page
    else:
        data = data[: len(data) // 2 + 100]
    db.write_bytes(bytes(data))
    return db


@pytest.mark.parametrize("how", ["page", "truncated"])
def test_a_damaged_database_is_one_line_and_left_as_it_is(run_cli, tmp_path, how):
    db = _damaged(tmp_path, how)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    for argv in (("results",), ("report", "--out", tmp_path / "out"), ("recommend", "mnist_mlp")):
        r = run_cli(*argv, "--db", db)
        assert r.code == 2, (argv, r.err)
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and "damaged" in lines[0] and ".recover" in lines[0], (argv, r.err)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def _on_a_full_disk(tmp_path: Path, command: str) -> subprocess.CompletedProcess:
    """``command`` run in a mount namespace of its own with a 64 KiB tmpfs at ``tmp_path/full``, filled."""
    if not shutil.which("unshare") or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a small tmpfs")
    disk = tmp_path / "full"
    disk.mkdir()
    script = (f"mount -t tmpfs -o size=64k tmpfs {disk} || exit 99; "
              f"dd if=/dev/zero of={disk}/filler bs=1k count=200 2>/dev/null; {command}")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    if r.returncode == 99:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    return r


def test_a_full_disk_is_one_line(tmp_path):
    cpustudy = f"{sys.executable} -m cpustudy"
    r = _on_a_full_disk(tmp_path, f"{cpustudy} cloud plan --targets gcp:n2-highcpu-8 --workloads mnist_mlp "
                                  f"--out {tmp_path}/full/plan --db {tmp_path}/none.sqlite")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "the disk is full" in lines[0] and "Traceback" not in r.stderr


def test_a_database_on_a_full_disk_is_not_called_a_stranger(tmp_path):
    db = reportdb.make_local_db(tmp_path / "ok.sqlite")
    r = _on_a_full_disk(tmp_path, f"cp {db} {tmp_path}/full/ok.sqlite 2>/dev/null; "
                                  f"{sys.executable} -m cpustudy results --db {db}")
    assert r.returncode == 0, r.stderr  # a healthy database is read whatever the disk beside it holds
    assert "not a cpustudy database" not in r.stderr


def test_what_only_a_paid_vm_would_reject_is_refused_before_anything_is_written(run_cli, tmp_path):
    base = ("cloud", "plan", "--targets", "gcp:n2-highcpu-8", "--workloads", "mnist_mlp")
    for bad, says in ((("--bucket", "gs://x"), "not its URL"), (("--bucket", "Bad_Bucket!"), "bucket name"),
                      (("--region", "mars-1"), "--region mars-1"), (("--name", "my plan/x"), "plan name"),
                      (("--builds", "tf-onedn"), "tf-onedn")):
        out = tmp_path / "plan"
        r = run_cli(*base, "--out", out, *bad)
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and says in r.err, (bad, r.err)
        assert not out.exists(), bad
    r = run_cli(*base, "--out", tmp_path / "ok")
    assert r.code == 0, r.err
    import json

    bucket = json.loads((tmp_path / "ok" / "plan.json").read_text())["bucket"]
    assert bucket.startswith("cpustudy-ok-") and len(bucket) > len("cpustudy-ok-")  # the plan's own


@pytest.mark.parametrize("argv,says", [
    (("run", "mnist_mlp", "--seed", "-1", "--data", "synthetic"), "--seed -1"),
    (("recommend", "mnist_mlp", "--deadline", "0"), "positive duration"),
    (("recommend", "mnist_mlp", "--target-accuracy", "2"), "accuracy"),
    (("report", "--dpi", "100000"), "30 to 600"),
    (("sweep", "--vcpus", "1", "--workloads", "mnist_mlp", "--repeats", "1000000", "--dry-run"), "narrow the grid"),
])
def test_smaller_mistakes_are_one_line(run_cli, tmp_path, argv, says, empty_keras_home):
    r = run_cli(*argv, "--db", tmp_path / "x.sqlite")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and says in r.err, r.err
    assert not (tmp_path / "x.sqlite").exists()


def test_report_takes_a_deadline_as_a_duration(run_cli, tmp_path):
    db = reportdb.make_local_db(tmp_path / "l.sqlite")
    r = run_cli("report", "--db", db, "--out", tmp_path / "out", "--deadline", "10m", "--no-svg")
    assert r.code == 0, r.err
    assert "Deadline: 600 s" in (tmp_path / "out" / "report.md").read_text()
