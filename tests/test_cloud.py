"""The study in the cloud (cpustudy.cloud): tasks SkyPilot's own parser accepts, the plan's cost from
a small catalog, launch/status/down through the backend interface (a fake here: no credentials), and
fetch + merge from a folder standing in for the bucket (or, for the plan's own bucket, a stand-in for
gsutil serving a folder). Plans are repeatable: `compare` run again finds its plan and bucket, a launched
plan is never planned over, and the VMs install the plan's own wheel, checked by its SHA-256. SkyPilot's
checks are skipped when the ``cloud`` extra is not installed; CI installs it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cpustudy.cloud import jobs, plan, tasks
from cpustudy.errors import UserError
from cpustudy.measure import sweep
from cpustudy.measure.request import SweepRequest
from cpustudy.store import Store, snapshot

PRICES = """provider,instance_type,family,vcpus,memory_gib,accelerator,accelerator_count,region,on_demand_usd_per_hour,spot_usd_per_hour,source,as_of
gcp,n2-highcpu-8,n2-highcpu,8,8,,0,us-central1,0.30,0.10,test price,2026-11-23
gcp,n2-highcpu-16,n2-highcpu,16,16,,0,us-central1,0.60,0.20,test price,2026-11-23
gcp,a3-highgpu-1g,a3-highgpu,26,234,H100-80GB,1,us-central1,11.0,3.0,test price,2026-11-23
"""
TARGETS = "gcp:n2-highcpu-8,gcp:n2-highcpu-16,gcp:H100:1"
OPTIONS = tasks.CloudSweep(SweepRequest(workloads="mnist_mlp", epochs=2, steps_per_epoch=10, vcpus=None))


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.csv"
    path.write_text(PRICES)
    return path


def _plan(tmp_path, prices, **kw):
    return plan.make(TARGETS, OPTIONS, out=tmp_path / "study", spot=True, bucket="my-results",
                     workdir=None, prices=prices, **kw)  # the wheel: built from this checkout


def test_plan_pins_each_target_and_estimates_its_cost_from_the_catalog(tmp_path, prices):
    p = _plan(tmp_path, prices, check=False)
    by = {t.target: t for t in p.targets}
    assert list(by) == ["gcp:n2-highcpu-8", "gcp:n2-highcpu-16", "gcp:a3-highgpu-1g+H100:1"]
    gpu = by["gcp:a3-highgpu-1g+H100:1"]
    assert gpu.instance_type == "a3-highgpu-1g" and gpu.device == "gpu" and gpu.vcpus == 26
    for t in p.targets:
        assert t.cells == 1 and t.guessed  # one workload, one build, one vCPU count; nothing measured before
        assert t.vm_s == pytest.approx(plan.PROVISION_S + t.train_s + t.startup_s)
        assert t.startup_s == sweep.DEFAULT_STARTUP_S
    assert by["gcp:n2-highcpu-8"].cost_usd == pytest.approx(0.10 * by["gcp:n2-highcpu-8"].vm_s / 3600)
    assert gpu.cost_usd == pytest.approx(3.0 * gpu.vm_s / 3600)
    assert p.cost_usd == pytest.approx(sum(t.cost_usd for t in p.targets))
    # 8 vCPUs guessed at 20 GFLOP/s each: twice the step time of 16
    assert by["gcp:n2-highcpu-8"].train_s == pytest.approx(2 * by["gcp:n2-highcpu-16"].train_s)
    again = plan.load(tmp_path / "study")
    assert again.targets == p.targets and again.bucket == "my-results"


def test_plan_estimate_uses_earlier_runs_when_the_database_has_them(tmp_path, prices):
    db = tmp_path / "earlier.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Xeon", "logical_cpus": 8})
        run = s.start_run(m, {"workload": "mnist_mlp", "build": "tf", "vcpus": 8})
        s.finish_run(run, "ok", {"step_time_s": 0.01, "epoch_time_s": 4.7})
        s.conn.execute("UPDATE runs SET startup_s = 4.0 WHERE id = ?", (run,))
    p = plan.make("gcp:n2-highcpu-8", OPTIONS, out=tmp_path / "p", spot=True, bucket="my-bucket", workdir=None,
                  prices=prices, db=db, check=False)
    t = p.targets[0]
    assert not t.guessed and t.startup_s == 4.0
    assert t.train_s == pytest.approx(2 * 10 * 0.01)  # epochs x capped steps x the measured step time


def test_vcpu_counts_beyond_the_vm_are_refused(tmp_path, prices):
    with pytest.raises(UserError, match="has 8 vCPUs"):
        plan.make("gcp:n2-highcpu-8", tasks.CloudSweep(SweepRequest(vcpus="4,16")), out=tmp_path / "p", spot=True,
                  bucket="my-bucket", workdir=None, prices=prices, check=False)


def test_tasks_pass_skypilots_own_schema_with_pinned_instances_spot_recovery_and_snapshot(tmp_path, prices):
    sky = pytest.importorskip("sky")
    p = _plan(tmp_path, prices)
    assert {t.check for t in p.targets} == {"SkyPilot schema ok"}
    for t in p.targets:
        task = sky.Task.from_yaml(str(tmp_path / "study" / t.task))
        (r,) = list(task.resources)
        assert r.instance_type == t.instance_type and r.use_spot is True
        assert r.job_recovery["max_restarts_on_errors"] == 2
        mount = task.storage_mounts["/cpustudy-results"]
        assert mount.name == "my-results" and mount.mode.value == "MOUNT"
        assert task.envs["CPUSTUDY_CLOUD_TARGET"] == t.target and task.envs["CPUSTUDY_CLOUD_SPOT"] == "1"
        # The VM's runs record the commit of the checkout its wheel was built from (this one).
        from cpustudy import provenance

        assert task.envs.get("CPUSTUDY_COMMIT") == provenance.commit_of(Path(provenance.__file__).parents[1])
        assert f'--snapshot-to "/cpustudy-results/study/{t.target.replace(":", "-").replace("+", "-").lower()}' \
               in task.run and "${SKYPILOT_TASK_ID}.sqlite" in task.run
        assert "--db ~/cpustudy-live/" in task.run  # the live database on the VM's own disk
        assert task.file_mounts[f"{tasks.WHEEL_DIR}/{p.wheel}"] == str((tmp_path / "study" / p.wheel).resolve())
        assert task.workdir is None  # the wheel is what travels, not the checkout as it is at launch
    gpu = sky.Task.from_yaml(str(tmp_path / "study" / p.targets[2].task))
    assert list(gpu.resources)[0].accelerators == {"H100": 1} and "--device gpu" in gpu.run


def test_a_task_skypilot_rejects_is_one_clear_error(tmp_path):
    pytest.importorskip("sky")
    bad = tmp_path / "bad.yaml"
    bad.write_text('name: "x"\nresources:\n  instance_typo: "n2-highcpu-8"\nrun: "true"\n')
    assert "did you mean 'instance_type'" in tasks.validate(bad)


class FakeBackend:
    """Stands in for SkyPilot's managed jobs: records what it was asked and reports it back."""

    def __init__(self) -> None:
        self.jobs: list[jobs.JobStatus] = []
        self.launched: list[tuple[Path, str]] = []

    def launch(self, task_file: Path, job: str) -> int:
        assert task_file.is_file()
        self.launched.append((task_file, job))
        self.jobs.append(jobs.JobStatus(job, "STARTING", 0, "us-central1", len(self.jobs) + 1))
        return len(self.jobs)

    def queue(self) -> list[jobs.JobStatus]:
        return list(self.jobs)

    def cancel(self, job: str) -> None:
        for j in self.jobs:
            if j.job == job:
                j.status = "CANCELLED"


def test_launch_status_and_down_through_the_backend_interface(tmp_path, prices):
    p = _plan(tmp_path, prices, check=False)
    backend = FakeBackend()
    said: list[str] = []
    assert [job for job, _ in jobs.launch(p, backend, said.append)] == [t.job for t in p.targets]
    assert jobs.launch(p, backend, said.append) == []  # already running: not launched twice
    assert sum("already running" in s for s in said) == 3
    backend.jobs[0].status, backend.jobs[0].recoveries = "RECOVERING", 1
    rows = {r["target"]: r for r in jobs.status(p, backend)}
    assert rows["gcp:n2-highcpu-8"]["status"] == "RECOVERING" and rows["gcp:n2-highcpu-8"]["recoveries"] == 1
    backend.jobs[1].status = "SUCCEEDED"
    assert jobs.down(p, backend, said.append) == 2  # the finished one is left alone
    assert {r["status"] for r in jobs.status(p, backend)} == {"CANCELLED", "SUCCEEDED"}


def _snapshot(path: Path, uuid: str, status: str = "ok") -> None:
    live = path.with_suffix(".live")
    with Store.open(live) as s:
        m = s.machine_id({"fingerprint": "vm-" + uuid, "cpu_model": "Xeon", "logical_cpus": 8})
        run = s.start_run(m, {"workload": "mnist_mlp", "build": "tf", "vcpus": 8, "uuid": uuid})
        if status != "running":
            s.finish_run(run, status, {"epoch_time_s": 1.0})
        snapshot.write(s.conn, path)
    live.unlink()


def test_fetch_merges_the_snapshots_from_the_bucket_once(tmp_path, prices):
    p = _plan(tmp_path, prices, check=False)
    bucket = tmp_path / "bucket"
    (bucket / p.name).mkdir(parents=True)
    _snapshot(bucket / p.name / "gcp-n2-highcpu-8-task1.sqlite", "a")
    _snapshot(bucket / p.name / "gcp-n2-highcpu-16-task2.sqlite", "b")
    _snapshot(bucket / p.name / "gcp-a3-task3.sqlite", "c", status="running")  # a job still measuring
    db = tmp_path / "all.sqlite"
    said: list[str] = []
    assert jobs.fetch(p, str(bucket), db, said.append) == {"files": 3, "runs": 2}
    assert any("still running" in s for s in said)
    assert jobs.fetch(p, str(bucket), db, said.append) == {"files": 3, "runs": 0}  # idempotent
    with pytest.raises(UserError, match="no such folder"):
        jobs.fetch(p, str(tmp_path / "no-bucket"), tmp_path / "other.sqlite")
    assert not (tmp_path / "other.sqlite").exists()  # nothing to merge: no empty database left behind
    conn = sqlite3.connect(db)
    assert sorted(r[0] for r in conn.execute("SELECT uuid FROM runs")) == ["a", "b"]
    conn.close()
    assert sorted(x.name for x in (bucket / p.name).iterdir()) == [
        "gcp-a3-task3.sqlite", "gcp-n2-highcpu-16-task2.sqlite", "gcp-n2-highcpu-8-task1.sqlite"]  # untouched


def test_cloud_cli_plan_and_errors(run_cli, tmp_path, prices):
    r = run_cli("cloud", "plan", "--targets", TARGETS, "--out", tmp_path / "cli", "--prices", prices,
                "--workloads", "mnist_mlp", "--epochs", "2", "--steps-per-epoch", "10", "--db", tmp_path / "none.sqlite")
    assert r.code == 0, r.err
    assert "estimated cost of the plan:" in r.out and "USD" in r.out
    assert json.loads((tmp_path / "cli" / "plan.json").read_text())["spot"] is True
    bad = run_cli("cloud", "plan", "--targets", "gcp:n2-highcpu-8,,gcp:H100:1", "--out", tmp_path / "x")
    assert bad.code == 2 and len(bad.err.strip().splitlines()) == 1 and "--targets" in bad.err
    gpu2 = run_cli("cloud", "plan", "--targets", "gcp:H100:2", "--out", tmp_path / "x")
    assert gpu2.code == 2 and "one GPU" in gpu2.err
    none = run_cli("cloud", "status", tmp_path / "nowhere")
    assert none.code == 2 and "not a plan folder" in none.err


def test_status_and_down_on_a_plan_never_launched_say_so_in_one_line_without_starting_skypilot(tmp_path, prices):
    p = _plan(tmp_path, prices, check=False)
    code = ("import sys\nfrom cpustudy.cli import main\ncode = main(sys.argv[1:])\n"
            "print('skypilot imported' if 'sky' in sys.modules else 'skypilot not imported')\nsys.exit(code)")
    status = subprocess.run([sys.executable, "-c", code, "cloud", "status", p.folder], capture_output=True, text=True)
    assert status.returncode == 2
    assert status.stderr.strip() == (
        f"cpustudy: error: plan study was never launched from {p.folder}: nothing to follow; launch it with "
        f"`cpustudy cloud launch {p.folder}`")
    assert status.stdout.strip() == "skypilot not imported"  # so no API server was started either
    down = subprocess.run([sys.executable, "-c", code, "cloud", "down", p.folder], capture_output=True, text=True)
    assert down.returncode == 0 and down.stderr == ""
    assert down.stdout.splitlines() == [f"plan study was never launched from {p.folder}: nothing to stop",
                                        "skypilot not imported"]
    # once launched, the plan folder remembers it, and status and down go to the backend
    backend = FakeBackend()
    jobs.launch(p, backend, lambda line: None)
    assert plan.launched(p) == [t.job for t in p.targets]
    with open(Path(p.folder) / plan.LAUNCH_FILE, "a") as f:
        f.write('{"job": "cut sh')  # a line cut short does not hide the others
    assert plan.launched(p) == [t.job for t in p.targets]


def test_cloud_help_imports_neither_skypilot_nor_tensorflow():
    code = ("import sys\nfrom cpustudy.cli import main\ntry:\n    main(['cloud', 'plan', '--help'])\n"
            "except SystemExit:\n    pass\nprint(sorted(m for m in ('sky', 'tensorflow', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_plan_prices_from_skypilots_catalog_when_it_is_there(run_cli, tmp_path, monkeypatch):
    # A tiny catalog in SkyPilot's v8 format where SkyPilot looks for it (SKY_RUNTIME_DIR/.sky/...).
    monkeypatch.setenv("SKY_RUNTIME_DIR", str(tmp_path / "rt"))
    gcp = tmp_path / "rt" / ".sky" / "catalogs" / "v8" / "gcp" / "vms.csv"
    gcp.parent.mkdir(parents=True)
    gcp.write_text("InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,"
                   "Price,SpotPrice\n"
                   "n2-highcpu-8,8.0,8.0,,,,us-central1,us-central1-a,0.28684,0.0811\n"
                   "a3-highgpu-1g,26.0,234.0,,,,us-central1,us-central1-a,1.18251,0.36117\n"
                   ",,,H100,1,\"{'Gpus': []}\",us-central1,us-central1-a,4.20076,2.9926\n")
    p = plan.make("gcp:n2-highcpu-8,gcp:H100:1", OPTIONS, out=tmp_path / "p", spot=True, bucket="my-bucket",
                  workdir=None, check=False)
    cpu, gpu = p.targets
    assert cpu.rate_usd_per_hour == pytest.approx(0.0811) and "SkyPilot catalog" in cpu.price_source
    assert gpu.instance_type == "a3-highgpu-1g" and gpu.rate_usd_per_hour == pytest.approx(0.36117 + 2.9926)
    assert any(c.startswith("SkyPilot's gcp catalog") for c in p.catalogs)
    gcp.unlink()  # without it: the shipped rows, and the plan says which catalog is missing
    p = plan.make("gcp:n2-highcpu-8", OPTIONS, out=tmp_path / "q", spot=True, bucket="my-bucket", workdir=None, check=False)
    assert p.targets[0].rate_usd_per_hour == pytest.approx(0.09379)
    assert any("no SkyPilot gcp catalog" in c for c in p.catalogs)
    r = run_cli("cloud", "plan", "--targets", "gcp:c3d-highcpu-8", "--out", tmp_path / "r")
    assert r.code == 2 and "SkyPilot gcp catalog is missing" in r.err and len(r.err.strip().splitlines()) == 1


def test_a_cloud_plan_takes_the_sweeps_own_request_and_estimates_its_cells(run_cli, tmp_path, prices):
    args = ("--workloads", "mnist_mlp", "--epochs", "2", "--steps-per-epoch", "10", "--batch-sizes", "64,256",
            "--precisions", "float32,mixed_bfloat16", "--data", "learnable", "--vcpus", "4,8")
    r = run_cli("cloud", "plan", "--targets", "gcp:n2-highcpu-8,gcp:H100:1", "--out", tmp_path / "p",
                "--prices", prices, *args)
    assert r.code == 0, r.err
    p = plan.load(tmp_path / "p")
    cpu, gpu = p.targets
    assert cpu.cells == 2 * 2 * 2 and gpu.cells == 2 * 2  # batch sizes x precisions (x vCPU counts on the CPU VM)
    # the VM runs exactly the request: its sweep arguments parse back to the same grid as `sweep --dry-run`
    from cpustudy.cli.args import sweep_request
    from cpustudy.cli.main import build_parser

    task = (tmp_path / "p" / cpu.task).read_text()
    line = next(x for x in task.splitlines() if "cpustudy sweep" in x)
    argv = line.split("cpustudy sweep", 1)[1].split(" --db ")[0].split()
    request = sweep_request(build_parser().parse_args(["sweep", *argv]))
    assert request.batch_sizes == (64, 256) and request.precisions == ("float32", "mixed_bfloat16")
    assert request.data == "learnable" and request.vcpus == "4,8" and request.device == "cpu"
    gpu_task = (tmp_path / "p" / gpu.task).read_text()
    assert "--device gpu" in gpu_task and "--vcpus 26" in gpu_task and "--builds jax-here" in gpu_task
    for bad in (("--builds", "tf-onedn"), ("--precisions", "")):
        r = run_cli("cloud", "plan", "--targets", "gcp:n2-highcpu-8", "--out", tmp_path / "q", "--prices", prices,
                    *bad)
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1, (bad, r.err)
        assert not (tmp_path / "q").exists()  # refused before anything was written


def _task_envs(path: Path) -> dict[str, str]:
    """The envs block of a task file as written (JSON-quoted strings)."""
    lines = path.read_text().splitlines()
    start = lines.index("envs:")
    envs = {}
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        key, _, value = line.strip().partition(": ")
        envs[key] = json.loads(value)
    return envs


@pytest.mark.parametrize("stored", ["as the job carried it", "stored before the job carried it"])
def test_a_gpu_targets_run_is_priced_as_the_plan_priced_it_vm_and_gpu(run_cli, tmp_path, stored):
    import reportdb

    from cpustudy.analysis import summary
    from cpustudy.environment import cloud

    # the shipped prices only (the tests never read this machine's SkyPilot catalog)
    r = run_cli("cloud", "plan", "--targets", "gcp:T4:1", "--on-demand", "--out", tmp_path / "p",
                "--workloads", "mnist_mlp", "--epochs", "2", "--steps-per-epoch", "10")
    assert r.code == 0, r.err
    (t,) = plan.load(tmp_path / "p").targets
    assert t.instance_type == "n1-standard-4" and t.rate_usd_per_hour == pytest.approx(0.54)  # VM 0.19 + T4 0.35
    envs = _task_envs(tmp_path / "p" / t.task)
    if stored != "as the job carried it":
        envs.pop(cloud.ENV_RESOURCES)
    envs["SKYPILOT_CLUSTER_INFO"] = json.dumps({"cloud": "gcp", "region": "us-central1", "zone": "us-central1-b"})
    where = cloud.context(envs, starts=1)
    db = tmp_path / "r.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "vm", "cpu_model": "Intel(R) Xeon(R) CPU @ 2.20GHz", "logical_cpus": 4})
        reportdb.add_run(s, m, "mnist_mlp", "jax-here", 4, [1.0, 1.0], device="gpu", cloud=where)
    with Store.read(db) as s:
        row = summary.analyze(s, summary.Options(on_demand=True)).summary.iloc[0]
    assert row["instance"] == "gcp:n1-standard-4+1xT4" and "measured on gcp:n1-standard-4+T4:1" in row["price_note"]
    assert row["price_usd_per_hour"] == t.rate_usd_per_hour  # the plan's rate: the VM and its GPU


def test_prices_import_nothing_above_them():
    code = ("import sys, cpustudy.prices\nprint(sorted(m for m in sys.modules if m.startswith(('cpustudy.analysis', "
            "'cpustudy.report', 'cpustudy.cloud', 'cpustudy.measure')) or m == 'pandas'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_fetch_leaves_out_a_damaged_snapshot_and_merges_the_others(tmp_path, prices):
    p = _plan(tmp_path, prices, check=False)
    folder = tmp_path / "bucket" / p.name
    folder.mkdir(parents=True)
    _snapshot(folder / "gcp-n2-highcpu-8-task1.sqlite", "a")
    bad = folder / "gcp-n2-highcpu-16-task2.sqlite"
    _snapshot(bad, "b")
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])  # cut mid-copy
    said: list[str] = []
    assert jobs.fetch(p, str(tmp_path / "bucket"), tmp_path / "all.sqlite", said.append) == {"files": 1, "runs": 1}
    assert any(s.startswith("gcp-n2-highcpu-16-task2.sqlite: left out: damaged") for s in said)
    (folder / "gcp-n2-highcpu-8-task1.sqlite").unlink()
    with pytest.raises(UserError, match="none of the 1 snapshot"):
        jobs.fetch(p, str(tmp_path / "bucket"), tmp_path / "none.sqlite", said.append)
    assert not (tmp_path / "none.sqlite").exists()  # no empty database left behind


# --- repeatable plans, the plan's own bucket and wheel ---------------------------------------------------------


def _compare(tmp_path: Path, **changes):
    """What `compare` plans before measuring (its library functions, as the command calls them): a local
    candidate and one cloud candidate on learnable data, its probes planned in tmp_path/probes."""
    from cpustudy.cloud import targets as cloud_targets
    from cpustudy.measure.compare import CompareRequest, plan_compare

    request = CompareRequest(workload="mnist_mlp", target=0.5, candidates="here:1,gcp:n2-highcpu-2", seeds=1,
                             max_epochs=3, convergence_at="here:1", repeats=1, data="learnable",
                             probe_plan=str(tmp_path / "probes"), probe_budget_usd=5, db=str(tmp_path / "c.sqlite"))
    return plan_compare(dataclasses.replace(request, **changes), clouds=cloud_targets)


def _probe(tmp_path: Path, said: list[str], **changes) -> str | None:
    from cpustudy.cloud.probes import plan_probes

    folder, _ = plan_probes(_compare(tmp_path, **changes), said.append)
    return folder


def test_a_cloud_candidate_over_two_builds_is_probed_once_as_named(tmp_path):
    """With two CPU builds a cloud candidate is shown once per build (``gcp:n2-highcpu-2 tf-eigen``); its probe
    plan asks for the target as ``--candidates`` named it, once, its sweep running both builds."""
    said: list[str] = []
    folder = _probe(tmp_path, said, builds="tf,tf-eigen")
    assert folder is not None and "for gcp:n2-highcpu-2:" in said[-1]
    (target,) = plan.load(folder).targets
    assert target.target == "gcp:n2-highcpu-2"


def _gsutil_serving(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A stand-in for gsutil first on PATH: ``gsutil -m cp -r gs://BUCKET/FOLDER/* DEST`` copies from a local
    folder standing in for Cloud Storage (no account here), and every call is noted in a log."""
    storage, bin_dir, log = tmp_path / "gcs", tmp_path / "bin", tmp_path / "gsutil.log"
    storage.mkdir()
    bin_dir.mkdir()
    gsutil = bin_dir / "gsutil"
    gsutil.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nsrc="${{4#gs://}}"\nexec cp -r "{storage}"/$src "$5"\n')
    gsutil.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return storage, log


def test_compare_launch_compare_fetch_compare_keeps_one_plan_folder_and_one_bucket(run_cli, tmp_path, monkeypatch):
    said: list[str] = []
    folder = _probe(tmp_path, said)  # compare: plans the cloud candidate's probe
    assert folder == str(tmp_path / "probes") and said[-1].startswith(f"compare: cloud probes planned in {folder}")
    first = plan.load(folder)
    assert _probe(tmp_path, said) == folder  # compare again, nothing launched yet: the same plan made again
    assert "the same request, not launched yet: its folder and bucket kept" in said[-1]
    assert plan.load(folder).bucket == first.bucket and plan.load(folder).key == first.key

    backend = FakeBackend()
    assert [job for job, _ in jobs.launch(plan.load(folder), backend, said.append)] == [first.targets[0].job]
    launched = (Path(folder) / plan.LAUNCH_FILE).read_text()
    as_launched = (Path(folder) / plan.PLAN_FILE).read_text()

    assert _probe(tmp_path, said) == folder  # compare again: the launched plan reused, not planned again
    assert said[-1] == (f"compare: the cloud probes of this request were launched already from {folder} (bucket "
                        f"{first.bucket}): reused, not planned again; fetch their runs with "
                        f"`cpustudy cloud fetch {folder}`")
    assert (Path(folder) / plan.PLAN_FILE).read_text() == as_launched

    storage, log = _gsutil_serving(tmp_path, monkeypatch)  # the bucket the job wrote its snapshot to
    (storage / first.bucket / first.name).mkdir(parents=True)
    _snapshot(storage / first.bucket / first.name / "gcp-n2-highcpu-2-task1.sqlite", "from-the-vm")
    r = run_cli("cloud", "fetch", folder, "--db", tmp_path / "c.sqlite")  # no --from: the plan's own bucket
    assert r.code == 0, r.err
    assert f"from the plan's bucket: gs://{first.bucket}" in r.out and "merged 1 new run(s)" in r.out
    assert log.read_text().split()[:4] == ["-m", "cp", "-r", f"gs://{first.bucket}/{first.name}/*"]

    assert _probe(tmp_path, said) == folder  # compare once more: still the one plan
    assert "reused, not planned again" in said[-1]
    assert sorted(p.parent for p in tmp_path.rglob(plan.PLAN_FILE)) == [Path(folder)]  # one plan folder
    assert (Path(folder) / plan.PLAN_FILE).read_text() == as_launched  # one bucket, the tasks as launched
    assert (Path(folder) / plan.LAUNCH_FILE).read_text() == launched  # nothing launched again
    assert len(backend.launched) == 1


def test_a_different_request_gets_a_new_plan_and_says_so_never_over_launched_probes(tmp_path):
    said: list[str] = []
    folder = Path(_probe(tmp_path, said))
    first = plan.load(folder)
    assert _probe(tmp_path, said, spot=False) == str(folder)  # not launched: planned anew in its folder
    assert "for a changed request (the plan there was never launched; its bucket kept)" in said[-1]
    anew = plan.load(folder)
    assert anew.key != first.key and anew.bucket == first.bucket and anew.spot is False

    jobs.launch(anew, FakeBackend(), said.append)
    as_launched = (folder / plan.PLAN_FILE).read_text()
    other = Path(_probe(tmp_path, said))  # spot again: a request other than the launched one
    assert other == folder.with_name(f"probes-{plan.load(other).key[:8]}")
    assert said[-2] == (f"compare: {folder} holds cloud probes launched for another request (left as they are): "
                        f"this request's probes are planned in {other}")
    assert said[-1].startswith(f"compare: cloud probes planned in {other}")
    assert plan.load(other).bucket != anew.bucket and plan.load(other).name == other.name
    assert plan.load(other).targets[0].job != anew.targets[0].job  # its own jobs
    assert (folder / plan.PLAN_FILE).read_text() == as_launched  # the launched plan left as it was
    assert _probe(tmp_path, said) == str(other)  # the same other request again: its own folder again
    assert "the same request, not launched yet" in said[-1]
    with pytest.raises(UserError, match="launched already"):  # and nothing plans over a launched folder
        plan.make("gcp:n2-highcpu-2", OPTIONS, out=folder, spot=True, bucket=None, check=False)


def test_the_request_key_is_stable_and_covers_what_the_vms_measure():
    key = plan.request_key("gcp:n2-highcpu-8,gcp:H100:1", OPTIONS, spot=True, region=None)
    assert plan.request_key(" gcp:H100:1, gcp:n2-highcpu-8", OPTIONS, spot=True, region=None) == key
    other = tasks.CloudSweep(dataclasses.replace(OPTIONS.request, epochs=3))
    assert len({key, plan.request_key("gcp:n2-highcpu-8,gcp:H100:1", OPTIONS, spot=False, region=None),
                plan.request_key("gcp:n2-highcpu-8", OPTIONS, spot=True, region=None),
                plan.request_key("gcp:n2-highcpu-8,gcp:H100:1", other, spot=True, region=None)}) == 4


def test_cloud_plan_reuses_a_launched_plan_for_the_same_request_and_refuses_to_plan_over_it(run_cli, tmp_path,
                                                                                             prices):
    args = ["cloud", "plan", "--targets", "gcp:n2-highcpu-8", "--out", tmp_path / "p", "--prices", prices,
            "--workloads", "mnist_mlp", "--epochs", "2", "--steps-per-epoch", "10", "--db", tmp_path / "none.sqlite"]
    assert run_cli(*args).code == 0
    bucket = plan.load(tmp_path / "p").bucket
    r = run_cli(*args)  # planned again, never launched: the folder keeps its bucket
    assert r.code == 0 and plan.load(tmp_path / "p").bucket == bucket and f"results bucket: {bucket}" in r.out
    jobs.launch(plan.load(tmp_path / "p"), FakeBackend(), lambda line: None)
    as_launched = (tmp_path / "p" / plan.PLAN_FILE).read_text()
    r = run_cli(*args)
    assert r.code == 0 and r.out.startswith(f"plan p in {tmp_path / 'p'} was launched already for this request: "
                                            "reused as it is, not planned again")
    r = run_cli(*args, "--on-demand")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "holds a plan launched already" in r.err and "give another plan folder" in r.err
    assert (tmp_path / "p" / plan.PLAN_FILE).read_text() == as_launched


def _block(task: str, key: str) -> str:
    """A task's literal block (``setup: |``) as the shell SkyPilot runs."""
    lines = task.splitlines()
    body = []
    for line in lines[lines.index(f"{key}: |") + 1:]:
        if line and not line.startswith("  "):
            break
        body.append(line[2:])
    return "\n".join(body) + "\n"


def test_the_vms_install_the_plans_own_wheel_and_its_hash_check_stops_a_tampered_one(tmp_path, prices):
    p = _plan(tmp_path, prices, check=False)
    wheel = Path(p.folder) / p.wheel
    assert p.wheel_sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    with zipfile.ZipFile(wheel) as z:  # the planner's own cpustudy, as it is now
        assert z.read("cpustudy/cloud/tasks.py") == Path(tasks.__file__).read_bytes()
    setup = _block((Path(p.folder) / p.targets[0].task).read_text(), "setup")
    assert "cpustudy[gpu]" not in setup.replace(f"{p.wheel}[gpu]", "")  # never the name on the package index
    on_vm = f"{tasks.WHEEL_DIR}/{p.wheel}"
    check = setup.splitlines()[1]
    assert "sha256sum -c" in check and p.wheel_sha256 in check and on_vm in check
    assert setup.index(check) < setup.index(f"pip install -q '{on_vm}[gpu]'")  # checked before anything installs
    here = check.replace(on_vm, str(wheel))  # the VM's own line, run against the plan folder's file
    ok = subprocess.run(["bash", "-c", f"set -e\n{here}\necho checked"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip() == "checked", ok.stderr

    wheel.write_bytes(wheel.read_bytes() + b"\0")  # changed after the plan was made
    bad = subprocess.run(["bash", "-c", f"set -e\n{here}\necho checked"], capture_output=True, text=True)
    assert bad.returncode == 1 and "checked" not in bad.stdout
    assert f"{wheel} is not the wheel the plan was made with: make the plan again" in bad.stderr
    backend = FakeBackend()
    with pytest.raises(UserError, match="changed after the plan was made"):
        jobs.launch(p, backend)  # refused here too, before a VM is paid for
    assert backend.launched == [] and plan.launched(p) == []


def test_a_plan_with_no_checkout_to_build_its_wheel_from_is_refused_in_one_line(run_cli, tmp_path, prices):
    args = ["cloud", "plan", "--targets", "gcp:n2-highcpu-8", "--out", tmp_path / "p", "--prices", prices]
    r = run_cli(*args, "--workdir", tmp_path)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert f"--workdir {tmp_path}: not a cpustudy checkout" in r.err and not (tmp_path / "p").exists()
    # cpustudy installed from its wheel (unpacked first on PYTHONPATH), no --workdir: never the index's name
    site = tmp_path / "site"
    with zipfile.ZipFile(tasks.build_wheel(tasks.checkout(None))) as z:
        z.extractall(site)
    done = subprocess.run([sys.executable, "-m", "cpustudy", *map(str, args)], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "cpustudy: error: cpustudy runs from an installed package, not a checkout, so there is nothing to build "
        "the VMs' wheel from: give --workdir with the root of a clone of cpustudy"]
    assert not (tmp_path / "p").exists()


def test_launch_dry_run_prints_each_task_job_bucket_and_cost_and_launches_nothing(tmp_path, prices):
    p = _plan(tmp_path, prices, check=False)
    code = ("import sys\nfrom cpustudy.cli import main\ncode = main(sys.argv[1:])\n"
            "print('skypilot imported' if 'sky' in sys.modules else 'skypilot not imported')\nsys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, "cloud", "launch", p.folder, "--dry-run"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == (f"cloud launch {p.folder} --dry-run: 3 managed job(s) of plan study (spot) would be launched; "
                      "nothing was launched")
    for t in p.targets:
        assert (f"  {t.job}: {t.target}, task {Path(p.folder) / t.task}, bucket my-results, "
                f"{t.cost_usd:.4f} USD estimated (partly a guess)") in out
    assert f"estimated cost: {p.cost_usd:.2f} USD" in out
    assert out[-1] == "skypilot not imported"  # nothing started: no SkyPilot, no API server
    assert not (Path(p.folder) / plan.LAUNCH_FILE).exists() and plan.launched(p) == []
    (Path(p.folder) / p.wheel).write_bytes(b"not the wheel")
    done = subprocess.run([sys.executable, "-m", "cpustudy", "cloud", "launch", p.folder, "--dry-run"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "changed after the plan was made" in done.stderr


def test_fetch_from_the_plans_own_bucket_says_where_it_looked_when_it_is_empty(run_cli, tmp_path, prices,
                                                                               monkeypatch):
    p = _plan(tmp_path, prices, check=False)
    assert jobs.bucket_urls(p) == ["gs://my-results"]  # every target on gcp: one bucket, on Cloud Storage
    storage, log = _gsutil_serving(tmp_path, monkeypatch)
    (storage / "my-results").mkdir()
    r = run_cli("cloud", "fetch", p.folder, "--db", tmp_path / "all.sqlite")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "cannot copy gs://my-results/study" in r.err and not (tmp_path / "all.sqlite").exists()
    (storage / "my-results" / "study").mkdir()
    _snapshot(storage / "my-results" / "study" / "gcp-n2-highcpu-8-task1.sqlite", "a")
    bucket = tmp_path / "mounted"  # --from still overrides the plan's bucket
    (bucket / "study").mkdir(parents=True)
    _snapshot(bucket / "study" / "gcp-n2-highcpu-16-task2.sqlite", "b")
    calls = log.read_text()
    r = run_cli("cloud", "fetch", p.folder, "--from", bucket, "--db", tmp_path / "all.sqlite")
    assert r.code == 0 and "merged 1 new run(s)" in r.out and log.read_text() == calls  # gsutil not asked
    r = run_cli("cloud", "fetch", p.folder, "--db", tmp_path / "all.sqlite")
    assert r.code == 0 and "merged 1 new run(s)" in r.out
