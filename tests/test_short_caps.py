"""A capped epoch too short to project a full one from is refused, and such runs stored earlier are
never pooled with the others."""

from __future__ import annotations

import reportdb

from cpustudy.analysis import summary
from cpustudy.store import Store
from cpustudy.workloads import get
from cpustudy.workloads.base import MIN_PROJECTED_STEPS


def test_a_cap_too_short_to_project_is_refused(run_cli, tmp_path, empty_keras_home):
    for argv in (("run", "mnist_mlp"), ("sweep", "--vcpus", "1", "--workloads", "mnist_mlp", "--dry-run")):
        r = run_cli(*argv, "--steps-per-epoch", "2", "--data", "synthetic", "--db", tmp_path / "x.sqlite")
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "too few steps" in r.err, r.err
    assert not (tmp_path / "x.sqlite").exists()


def test_validation_of_a_capped_epoch_is_never_fewer_batches_than_a_projection_needs():
    w = get("mnist_mlp")  # 10,000 test images, 469 training steps of 128
    assert w.validation_steps(128, 10) == MIN_PROJECTED_STEPS  # the proportional share would be 3 batches
    assert w.validation_steps(128, 200) == 34 and w.validation_steps(128) == 79  # 200/469 of 10,000 images


def test_runs_projected_from_too_few_steps_are_left_out_of_the_report(tmp_path):
    db = tmp_path / "old.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        reportdb.add_run(s, m, "mnist_mlp", "tf", 1, [5.3, 5.3], projected=True, steps_per_epoch=20)
        reportdb.add_run(s, m, "mnist_mlp", "tf", 1, [44.6, 44.6], projected=True, steps_per_epoch=1, repeat=1)
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    (row,) = a.summary.itertuples()
    assert row.n_runs == 1 and row.epoch_time_s == 5.3  # the 1-step run did not move the baseline to 25 s
    assert any("fewer than 10 steps per epoch were left out" in n for n in a.notes)
