"""Sweeps: planning, interleaving, resume after SIGKILL, locking, failures recorded."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from cpustudy import workloads
from cpustudy.environment import machine
from cpustudy.measure import sweep
from cpustudy.measure.spec import Host
from cpustudy.errors import UserError
from cpustudy.store import Store
from cpustudy.store.lock import SweepLock

TOPO = machine.CpuTopology(cpus={0: (0, 0, 0), 1: (0, 1, 0), 2: (0, 2, 0), 3: (0, 3, 0)})


def test_parse_vcpus():
    assert sweep.parse_vcpus("auto", TOPO) == [1, 2, 4]
    assert sweep.parse_vcpus("auto", machine.CpuTopology(cpus={i: (0, i, 0) for i in range(6)})) == [1, 2, 4, 6]
    assert sweep.parse_vcpus("2, 1,2", TOPO) == [1, 2]
    assert sweep.parse_vcpus("1,all", TOPO) == [1, 4] and sweep.parse_vcpus("all", TOPO) == [4]  # one against all
    for bad in ("x", "0", "1,-2", ""):
        with pytest.raises(UserError, match="--vcpus"):
            sweep.parse_vcpus(bad, TOPO)


def test_interleaving_alternates_and_rotates_builds():
    w = [workloads.get("mnist_mlp")]
    order = [(b, v) for _, b, v, _ in sweep.interleave(w, ["a", "b"], [1, 2], repeats=2)]
    assert order == [("a", 1), ("b", 1), ("b", 2), ("a", 2), ("a", 1), ("b", 1), ("b", 2), ("a", 2)]
    builds_in_a_row = [b for b, _ in order]
    assert all(x != y for x, y in zip(builds_in_a_row[::2], builds_in_a_row[1::2]))


def test_plan_validates_before_running(empty_keras_home):
    w = [workloads.get("mnist_mlp")]
    with pytest.raises(UserError, match="--oversubscribe"):
        sweep.plan_sweep(w, ["tf"], [8], machine_fingerprint="m", topo=TOPO)
    with pytest.raises(UserError, match="unknown build"):
        sweep.plan_sweep(w, ["tf", "nope"], [1], machine_fingerprint="m", topo=TOPO)
    cells = sweep.plan_sweep(w, ["tf", "tf-eigen"], [1, 4], repeats=2, machine_fingerprint="m", topo=TOPO,
                             epochs=2, steps_per_epoch=10, data="synthetic")
    assert len(cells) == 8 and len({c.key for c in cells}) == 8
    assert {c.config.cpu_list for c in cells} == {"0", "0-3"}
    assert [c.config.env for c in cells if c.config.build == "tf-eigen"][0] == {"TF_ENABLE_ONEDNN_OPTS": "0"}
    again = sweep.plan_sweep(w, ["tf", "tf-eigen"], [1, 4], repeats=2, machine_fingerprint="m", topo=TOPO,
                             epochs=2, steps_per_epoch=10, data="synthetic")
    assert [c.key for c in cells] == [c.key for c in again]  # keys are stable: that is how it resumes
    other = sweep.plan_sweep(w, ["tf"], [1], machine_fingerprint="other-machine", topo=TOPO,
                             epochs=2, steps_per_epoch=10, data="synthetic")
    assert other[0].key not in {c.key for c in cells}
    # Every setting that changes the measurement changes the key.
    keys = {c.key for c in cells}
    for extra in ({"input_pipeline": "numpy"}, {"env": {"TF_ENABLE_ONEDNN_OPTS": "1"}}, {"warmup_steps": 5},
                  {"batch_size": 64}, {"inter_threads": 2}):
        varied = sweep.plan_sweep(w, ["tf"], [1], machine_fingerprint="m", topo=TOPO, epochs=2,
                                  steps_per_epoch=10, data="synthetic", **extra)
        assert varied[0].key not in keys, extra


SWEEP = ["sweep", "--vcpus", "1", "--builds", "tf,tf-eigen", "--workloads", "mnist_mlp",
         "--epochs", "2", "--steps-per-epoch", "10", "--data", "synthetic"]


def _ok_keys(db):
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT cell_key FROM runs WHERE status = 'ok'").fetchall()
    except sqlite3.OperationalError as exc:
        # Polled while the sweep is still creating the file (it exists, its schema's
        # transaction has not committed yet): nothing is measured so far.
        if "no such table" not in str(exc):
            raise
        rows = []
    finally:
        conn.close()
    return [r[0] for r in rows]


@pytest.mark.tensorflow
def test_sigkill_then_resume_ends_with_exactly_the_planned_runs(db, empty_keras_home):
    cmd = [sys.executable, "-m", "cpustudy", *SWEEP, "--db", str(db)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists() and len(_ok_keys(db)) >= 1:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the sweep ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its worker, mid-way
    proc.wait()
    assert len(_ok_keys(db)) == 1

    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    keys = _ok_keys(db)
    assert len(keys) == 2 and len(set(keys)) == 2  # nothing lost, nothing twice
    assert "1 already measured" in done.stderr

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "0 to measure" in again.stderr
    assert len(_ok_keys(db)) == 2
    with Store.read(db) as s:
        assert not [r for r in s.runs() if r["status"] == "running"]


@pytest.mark.tensorflow
def test_a_second_sweep_on_the_same_database_is_refused(run_cli, db, empty_keras_home):
    Store.open(db).close()
    with SweepLock(db):
        r = run_cli(*SWEEP, "--db", db)
    assert r.code == 2 and "being measured" in r.err and len(r.err.strip().splitlines()) == 1
    with Store.read(db) as s:
        assert s.count("runs") == 0


@pytest.mark.tensorflow
def test_failed_cells_are_stored_and_the_sweep_goes_on(run_cli, db, empty_keras_home):
    r = run_cli(*SWEEP, "--timeout", "1", "--db", db)
    assert r.code == 1
    assert "2 of 2 cell(s) failed" in r.err
    with Store.read(db) as s:
        runs = s.runs()
    assert [x["status"] for x in runs] == ["failed", "failed"]
    assert all("timed out" in x["error"] for x in runs)


@pytest.mark.tensorflow
def test_dry_run_measures_nothing(run_cli, db, empty_keras_home):
    r = run_cli(*SWEEP, "--dry-run", "--db", db)
    assert r.code == 0 and "2 of 2 cell(s) to measure" in r.out
    out = " ".join(r.out.split())
    # no earlier runs: the default start-up, stated as the fixed cost of each cell
    assert f"of which {2 * sweep.DEFAULT_STARTUP_S / 60:.1f} min is fixed cost: worker start-up, " \
           f"{sweep.DEFAULT_STARTUP_S:.1f} s a cell" in out
    assert not db.exists()


@pytest.mark.tensorflow
def test_dry_run_format_json_writes_the_plan_as_json(run_cli, db, empty_keras_home):
    """`sweep --dry-run --format json` printed the table, not JSON."""
    import json

    r = run_cli(*SWEEP, "--dry-run", "--format", "json", "--db", db)
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    assert plan["dry_run"] is True and plan["to_measure"] == 2
    assert [(c["build"], c["vcpus"], c["status"]) for c in plan["cells"]] == [("tf", 1, "to measure"),
                                                                               ("tf-eigen", 1, "to measure")]
    assert plan["fixed_s"] == pytest.approx(2 * sweep.DEFAULT_STARTUP_S)
    assert plan["fixed_s_per_cell"] == pytest.approx(sweep.DEFAULT_STARTUP_S)
    assert plan["estimate_s"] >= plan["fixed_s"] and "guess" in plan["estimate_basis"]
    assert not db.exists()


def test_the_sweep_time_line_keeps_the_digits_of_a_short_training():
    """A tiny sweep said 'sweep time: 28 s wall for 0 s of timed training (71.38x)' of 0.39 s."""
    from cpustudy.cli.commands.sweep import accounting_line, seconds

    a = sweep.TimeAccounting(wall_s=27.84, timed_s=0.39, warmup_s=1.54, startup_s=21.3, peak_s=0.0, other_s=4.61)
    assert accounting_line(a) == ("sweep time: 28 s wall for 0.39 s of timed training (71.38x): worker start-up 21 s, "
                        "warm-up 1.5 s, peak measurements 0 s, other 4.6 s")
    assert [seconds(x) for x in (1234.4, 10.0, 9.94, 0.0042, 0.0)] == ["1234", "10", "9.9", "0.0042", "0"]


@pytest.mark.tensorflow
def test_a_sweep_accounts_for_its_wall_time(run_cli, db, empty_keras_home):
    r = run_cli(*SWEEP, "--db", db)
    assert r.code == 0, r.err
    line = [x for x in r.err.splitlines() if x.startswith("sweep time:")]
    assert len(line) == 1 and "of timed training" in line[0] and "worker start-up" in line[0]
    with Store.read(db) as s:
        runs = s.runs()
        ids = [x["id"] for x in runs]
        a = sweep.time_accounting(s, ids, wall_s=1000.0)
        epochs = s.epochs(ids)
    assert a.timed_s == pytest.approx(sum(e["elapsed_s"] for e in epochs if not e["warmup"]))
    assert a.warmup_s >= sum(e["elapsed_s"] for e in epochs if e["warmup"]) > 0
    assert a.startup_s == pytest.approx(sum(x["startup_s"] for x in runs)) and a.startup_s > 0
    parts = a.timed_s + a.warmup_s + a.startup_s + a.peak_s + a.other_s
    assert parts == pytest.approx(1000.0) and a.overhead == pytest.approx(1000.0 / a.timed_s)


def test_an_interrupted_cell_is_not_counted_as_failed(db):
    from conftest import run_config

    from cpustudy.environment import machine
    from cpustudy.measure.sweep import Cell, summary_rows

    cell = Cell(run_config(cell_key="k1"))
    with Store.open(db) as s:
        mid = s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
        for error in ("interrupted by the user", "interrupted: the process measuring it was killed before it finished",
                      "timed out after 1 s"):
            s.finish_run(s.start_run(mid, cell.config.as_dict()), "failed", {}, error=error)
        (row,) = summary_rows(s, [cell])
    assert row["ok"] == 0 and row["failed"] == 1  # the timeout only


def test_a_calibrated_cell_sums_up_its_projected_and_full_runs_apart(db):
    """`sweep --calibrate` measures a cell capped and in full epochs: its summary has a row for each (the
    first version pooled them into one median, the opposite of what the report does)."""
    from conftest import run_config

    from cpustudy.environment import machine
    from cpustudy.measure.sweep import Cell, summary_rows

    capped = Cell(run_config(cell_key="capped", steps_per_epoch=20))
    full = Cell(run_config(cell_key="full"))
    with Store.open(db) as s:
        mid = s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
        for cell, times in ((capped, (10.0, 12.0)), (full, (20.0, 22.0))):
            for t in times:
                s.finish_run(s.start_run(mid, cell.config.as_dict()), "ok",
                             {"epoch_time_s": t, "samples_per_s": 1.0, "projected": cell is capped})
        rows = summary_rows(s, [capped, full])
    assert [(r["projected"], r["ok"], r["epoch_time_s"]) for r in rows] == [(True, 2, 11.0), (False, 2, 21.0)]


def _beyond_this_machine() -> list[int]:
    """vCPU counts this machine cannot give: the study's 8, 16, 32 and 64 on a small machine."""
    usable = Host.here().topo.logical
    return [8, 16, 32, 64] if usable < 8 else [2 * usable, 4 * usable]


def test_more_vcpus_than_this_machine_is_refused_with_the_fix_and_the_cloud_plan(run_cli, db, empty_keras_home):
    """The study's own `sweep --vcpus 8,16,32,64` on a small machine: two lines (the refusal with the fix here,
    then the `cloud plan` of the same grid with its estimate), exit 2, no traceback, nothing stored; the
    suggested command parses as `cloud plan` and plans VMs of exactly those sizes."""
    import shlex

    from cpustudy.cli.main import build_parser

    usable, sizes = Host.here().topo.logical, _beyond_this_machine()
    argv = ["sweep", "--vcpus", ",".join(map(str, sizes)), "--workloads", "mnist_mlp", "--builds", "tf,tf-eigen",
            "--epochs", "2", "--steps-per-epoch", "10", "--data", "synthetic", "--db", db]
    r = run_cli(*argv)
    assert r.code == 2 and "Traceback" not in r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 2, r.err
    assert lines[0].startswith("cpustudy: error: ")
    assert f"use --vcpus {usable} or fewer, or --oversubscribe" in lines[0]
    assert "cpustudy cloud plan --targets " in lines[1] and "est. " in lines[1]
    assert not db.exists()  # nothing stored: the database was not even created

    command = shlex.split(lines[1].split(": ", 1)[1].rsplit(" (", 1)[0])
    assert command[:3] == ["cpustudy", "cloud", "plan"]
    args = build_parser().parse_args(command[1:])
    assert args.workloads == "mnist_mlp" and args.builds == "tf,tf-eigen" and args.epochs == 2
    assert args.vcpus is None and str(args.db) == str(db)  # each VM sweeps its own size
    from cpustudy.cloud import targets as cloud_targets
    from cpustudy.prices import Catalog

    planned = [t.vcpus for t in cloud_targets.parse(args.targets, Catalog.load())]
    assert planned and set(planned) <= set(sizes)
    assert len(planned) == len(sizes) or "left out" in lines[1]


def test_oversubscribe_is_what_allows_more_vcpus_than_this_machine(run_cli, db, empty_keras_home):
    r = run_cli("sweep", "--vcpus", _beyond_this_machine()[0], "--oversubscribe", "--workloads", "mnist_mlp",
                "--epochs", "1", "--steps-per-epoch", "10", "--data", "synthetic", "--dry-run", "--db", db)
    assert r.code == 0 and "1 of 1 cell(s) to measure" in r.out, r.err


def test_the_cloud_family_is_the_one_that_runs_this_cpu_else_the_default():
    from cpustudy.cloud.suggest import cloud_family
    from cpustudy.prices import DEFAULT_FAMILY, Catalog

    catalog = Catalog.load(sky=False)
    emerald_rapids = {"cpu_vendor": "GenuineIntel", "cpu_model": "Intel(R) Xeon(R) Processor", "arch": "x86_64",
                      "extra": {"family": 6, "model": 207}}  # gcp:n4-highcpu and gcp:c4-highcpu run it
    family, instances, default = cloud_family(emerald_rapids, [1, 8, 64], catalog)
    # n4-highcpu has a 64-vCPU VM, c4-highcpu does not (96 next): the family with the most of the sizes
    assert (family, instances, default) == ("gcp:n4-highcpu", {8: "gcp:n4-highcpu-8", 64: "gcp:n4-highcpu-64"}, False)
    family, instances, default = cloud_family({"cpu_model": "a CPU no cloud names"}, [8], catalog)
    assert family == DEFAULT_FAMILY and default and instances == {8: f"{DEFAULT_FAMILY}-8"}


def test_a_sweep_going_on_in_a_later_period_re_times_its_first_measured_cell_once(db, empty_keras_home, monkeypatch):
    """A sweep extended after an hour or more (1 vCPU measured earlier, 2 vCPUs now): one more run of the first
    measured cell leads, a repeat beyond the plan's, so the report has a configuration in both periods to read
    contrasts across them against; none within the hour, none with nothing measured before or nothing left to do,
    and the next period's reference takes the next repeat."""
    from cpustudy.environment import machine
    from cpustudy.store import store as store_mod

    w = [workloads.get("mnist_mlp")]
    args = dict(machine_fingerprint="m", topo=TOPO, epochs=1, steps_per_epoch=10, data="synthetic")
    earlier = sweep.plan_sweep(w, ["tf", "tf-eigen"], [1], **args)
    cells = sweep.plan_sweep(w, ["tf", "tf-eigen"], [1, 2], **args)
    with Store.open(db) as s:
        mid = s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
        assert sweep.reference_cell(s, cells, sweep.pending(s, cells), "m") is None  # nothing measured before
        for c in earlier:
            s.finish_run(s.start_run(mid, c.config.as_dict()), "ok", {"epoch_time_s": 1.0, "samples_per_s": 1.0})
        todo = sweep.pending(s, cells)
        assert len(todo) == 2 and sweep.reference_cell(s, cells, todo, "m") is None  # the same period
        monkeypatch.setattr(store_mod, "CLOCK_OFFSET_S", 2 * 3600.0)
        ref = sweep.reference_cell(s, cells, todo, "m")
        assert ref is not None and ref.key not in {c.key for c in cells}
        assert (ref.config.build, ref.config.vcpus, ref.config.repeat) == ("tf", 1, 1)
        assert sweep.reference_cell(s, cells, [], "m") is None  # nothing left to measure
        s.finish_run(s.start_run(mid, ref.config.as_dict()), "ok", {"epoch_time_s": 1.1, "samples_per_s": 1.0})
        assert sweep.reference_cell(s, cells, todo, "m") is None  # timed in this period now
        monkeypatch.setattr(store_mod, "CLOCK_OFFSET_S", 4 * 3600.0)
        again = sweep.reference_cell(s, cells, todo, "m")
        assert again is not None and again.config.repeat == 2


def test_a_cells_estimate_reads_earlier_runs_per_sample_and_of_its_precision():
    """A cell at batch 256 estimated from a run at batch 64: four times the samples a step, so four times its step
    time (it was the step time as measured, 4x too short); a bf16 cell from the bf16 run where there is one."""
    runs = [{"workload": "mnist_cnn", "build": "tf", "device": "cpu", "vcpus": 2, "batch_size": 64, "step_time_s": 0.01,
             "startup_s": 5.0, "precision_policy": "float32"},
            {"workload": "mnist_cnn", "build": "tf", "device": "cpu", "vcpus": 2, "batch_size": 64, "step_time_s": 0.004,
             "startup_s": 5.0, "precision_policy": "mixed_bfloat16"}]
    from conftest import run_config

    def estimate(**fields):
        kw = dict(workload="mnist_cnn", build="tf", device="cpu", vcpus=2, epochs=1, full_steps_per_epoch=100)
        return sweep.estimate_cell(runs, sweep.Cell(run_config(**kw, **fields)))

    fp32 = estimate(batch_size=256)
    assert fp32.measured and fp32.training_s == pytest.approx(100 * 0.04) and fp32.startup_s == 5.0
    bf16 = estimate(batch_size=64, precision_policy="mixed_bfloat16")
    assert bf16.training_s == pytest.approx(100 * 0.004)
    fp16 = estimate(batch_size=64, precision_policy="mixed_float16")  # none ran it: every run
    assert fp16.measured and fp16.training_s == pytest.approx(100 * 0.007)


def test_a_sweeps_time_to_target_is_billed_as_compare_bills_it(db):
    """The sweep's printed time to the target is what compare, the report and the backtest bill for the same run
    (start-up, the first epoch's tracing, every epoch to the target), not its training epochs alone."""
    from conftest import run_config

    from cpustudy.analysis.billed import to_target_s
    from cpustudy.environment import machine
    from cpustudy.measure.sweep import Cell, summary_rows

    cell = Cell(run_config(cell_key="t", target_accuracy=0.5))
    with Store.open(db) as s:
        mid = s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
        run = s.start_run(mid, cell.config.as_dict())
        s.add_epoch(run, {"epoch": 1, "elapsed_s": 2.5, "warmup": True})
        s.add_epoch(run, {"epoch": 2, "elapsed_s": 2.0})
        s.finish_run(run, "ok", {"epoch_time_s": 2.0, "measured_epoch_time_s": 2.0, "samples_per_s": 1.0,
                                 "startup_s": 3.0, "target_reached": True, "epochs_to_target": 2,
                                 "time_to_target_s": 4.5})
        (row,) = summary_rows(s, [cell])
        stored = s.runs()[0]
        billed = to_target_s(stored, s.epochs([stored["id"]]))
    assert row["to_target_s"] == pytest.approx(billed) == pytest.approx(2 * 2.0 + 0.5 + 3.0)
