"""The container images for real: ``cpu-pip`` built from this checkout with podman (or Docker), run with the
database on a mounted volume, built again through ``cpustudy builds image``, and the cloud job's VM side
emulated: the plan's own task (its ``setup`` and ``run`` shell) run in containers of the image with the
bucket as a host folder, cut mid-cell, recovered on a "new VM", fetched and reported.

Where no container engine can run, every test is skipped with the reason. On a Debian machine as root,
``apt-get install -y --no-install-recommends podman runc mmdebstrap uidmap`` is all they need: when no
registry answers, the base image is made from Debian packages by ``docker/make-local-base.sh``, and podman
gets ``docker/containers.conf`` (runc, explicit ulimits) unless CONTAINERS_CONF is set already.

The image is built once per module and tagged ``cpustudy:cpu-pip-test``. Building is left to the engine's
layer cache, which compares the Dockerfile and every file of the build context: unchanged, the build takes
about a second; a change to the project's source installs it again over the cached dependencies (3 s on 2 cores,
Granite Rapids VM, 2026-11-27); a change to pyproject.toml or the Dockerfile installs TensorFlow and the rest again
(about 90 s there, the Debian base made first where none is there: 32 s).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from cpustudy.cloud import plan as plan_mod
from cpustudy.cloud import tasks
from cpustudy.environment import images
from cpustudy.store import Store

pytestmark = [pytest.mark.container, pytest.mark.tensorflow]

REPO = Path(__file__).resolve().parents[1]
TAG = "cpustudy:cpu-pip-test"
DOCKERFILE = REPO / images.IMAGES["cpu-pip"]
HOME = "/home/cpustudy"  # the image's user's home: where SkyPilot's user would have ~/
DEBIAN = "apt-get install -y --no-install-recommends podman runc mmdebstrap uidmap"


@dataclass(frozen=True)
class Engine:
    name: str  # podman or docker
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 600, check: bool = True, **kw) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([self.name, *args], capture_output=True, text=True, timeout=timeout, env=self.env,
                              **kw)
        if check and done.returncode != 0:
            pytest.fail(f"{self.name} {' '.join(args[:3])} ... exited {done.returncode}:\n{done.stdout[-3000:]}\n"
                        f"{done.stderr[-3000:]}")
        return done

    def image_id(self, ref: str) -> str | None:
        done = self.run("image", "inspect", "--format", "{{.Id}}", ref, check=False, timeout=60)
        return done.stdout.strip() if done.returncode == 0 else None


def _find_engine() -> tuple[Engine | None, str]:
    """podman where it answers (with the repository's containers.conf unless CONTAINERS_CONF is set and runc
    is there to use), else a Docker engine; None and the reason otherwise."""
    why = []
    if shutil.which("podman"):
        env = dict(os.environ)
        if "CONTAINERS_CONF" not in env and shutil.which("runc"):
            env["CONTAINERS_CONF"] = str(REPO / "docker" / "containers.conf")
        ok, message = images.docker_engine_available(timeout=30, engine="podman")
        if ok:
            return Engine("podman", env), message
        why.append(message)
    else:
        why.append(f"podman is not installed ({DEBIAN})")
    ok, message = images.docker_engine_available(timeout=30)
    if ok:
        return Engine("docker", dict(os.environ)), message
    why.append(message)
    return None, "; ".join(why)


@pytest.fixture(scope="module")
def engine() -> Engine:
    found, why = _find_engine()
    if found is None:
        pytest.skip(f"no container engine can run here: {why}")
    return found


def _base(engine: Engine) -> str:
    """The Dockerfile's FROM image: already here, pulled, or (no registry answers) made from Debian packages."""
    base = next(line.split()[1] for line in DOCKERFILE.read_text().splitlines() if line.upper().startswith("FROM "))
    full = base if "/" in base else f"docker.io/library/{base}"
    if engine.image_id(full) or engine.image_id(base):
        return full
    pulled = engine.run("pull", full, check=False, timeout=600)
    if pulled.returncode == 0:
        return full
    if engine.name != "podman":
        pytest.skip(f"cannot pull {full} ({pulled.stderr.strip().splitlines()[-1:]}) and the local base is made "
                    "with podman")
    if os.geteuid() != 0 or not shutil.which("mmdebstrap"):
        pytest.skip(f"no registry answers ({full} cannot be pulled) and docker/make-local-base.sh needs root and "
                    f"mmdebstrap ({DEBIAN})")
    made = subprocess.run(["bash", str(REPO / "docker" / "make-local-base.sh")], capture_output=True, text=True,
                          timeout=900, env=engine.env)
    assert made.returncode == 0, f"make-local-base.sh failed:\n{made.stdout[-2000:]}\n{made.stderr[-3000:]}"
    assert engine.image_id(full), made.stdout
    return full


@pytest.fixture(scope="module")
def image(engine: Engine) -> str:
    """cpustudy:cpu-pip-test built from this checkout (the engine's cache decides what is built again); its ID."""
    _base(engine)
    fmt = ["--format", "docker"] if engine.name == "podman" else []
    engine.run("build", *fmt, "-f", str(DOCKERFILE), "-t", TAG, str(REPO), timeout=1200)
    image_id = engine.image_id(TAG)
    assert image_id
    return image_id


@pytest.fixture(scope="module")
def vm_venv(engine: Engine, image: str, tmp_path_factory) -> Path:
    """One VM disk's venv (a host folder mounted at ~/cpustudy-venv) for every emulated VM of this module, as a
    VM image with TensorFlow installed would have it: made in a container of the image, with a ``.pth`` file
    that puts the image's own packages (TensorFlow and the rest of cpustudy's dependencies) on its path, as
    ``--system-site-packages`` would. Each VM's setup then runs in full over it (the venv made again, pip
    upgraded, the plan's wheel installed with its dependencies, cpustudy forced over into the venv): pip finds
    TensorFlow and installs only what is missing. Not run here: pip downloading TensorFlow into an empty venv,
    about 30 s on 2 cores (the image's build installs the same requirements from the same index)."""
    venv = _writable(tmp_path_factory.mktemp("vm-venv"))
    at = f"{HOME}/cpustudy-venv"
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    seed = f'python3 -m venv {at} && python3 -c "{purelib}" > "$({at}/bin/python -c "{purelib}")/image-packages.pth"'
    engine.run("run", "--rm", "-v", f"{venv}:{at}", "--entrypoint", "bash", TAG, "-c", seed, timeout=300)
    return venv


def _writable(path: Path) -> Path:
    """A host folder the image's user (uid 10001) can write, as a bucket or a VM disk would be."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)
    return path


def test_the_image_prints_the_machine_and_stores_a_real_measurement_on_the_mounted_volume(engine, image, tmp_path):
    data = _writable(tmp_path / "data")
    machine = engine.run("run", "--rm", "-v", f"{data}:/data", TAG, "machine", timeout=300)
    assert f"TensorFlow           {images.DEFAULT_TF_VERSION}" in machine.stdout, machine.stdout
    assert "logical CPUs" in machine.stdout
    run = engine.run("run", "--rm", "-v", f"{data}:/data", TAG, "run", "mnist_mlp", "--vcpus", "1", "--epochs", "2",
                     "--steps-per-epoch", "10", timeout=300)
    assert "run 1 ok: mnist_mlp 1 vCPU(s)" in run.stdout, run.stdout + run.stderr
    with Store.read(data / "cpustudy.sqlite") as store:
        (stored,) = store.runs()
    assert (stored["status"], stored["workload"], stored["vcpus"], stored["epochs"], stored["steps_per_epoch"]) == (
        "ok", "mnist_mlp", 1, 2, 10)
    assert stored["tf_version"] == images.DEFAULT_TF_VERSION and stored["epoch_time_s"] > 0


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cpustudy", *args], capture_output=True, text=True, timeout=900,
                          env=env, cwd=REPO)


def test_builds_image_builds_it_with_podman(engine, image):
    if engine.name != "podman":
        pytest.skip("podman is not the engine here (the Docker path is the next test)")
    done = _cli("builds", "image", "cpu-pip", "--engine", "podman", "--tag", TAG, env=engine.env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == f"podman build --format docker -f {DOCKERFILE} -t {TAG} {REPO}"
    assert engine.image_id(TAG) == image  # the same project, the same image: built from the cache


def test_builds_image_builds_it_through_the_docker_api(engine, image, tmp_path):
    """`docker build` as cpustudy runs it: against a Docker engine, or podman's Docker-compatible API."""
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no Docker client here to drive podman's Docker API (podman itself is tested above)")
    env = dict(engine.env, DOCKER_BUILDKIT="0")  # the API podman serves has no BuildKit
    service = None
    if engine.name == "podman":
        socket = tmp_path / "podman.sock"
        service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{socket}"], env=engine.env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        env["DOCKER_HOST"] = f"unix://{socket}"
        deadline = time.monotonic() + 30
        while not socket.exists() and time.monotonic() < deadline and service.poll() is None:
            time.sleep(0.1)
    try:
        done = _cli("builds", "image", "cpu-pip", "--tag", TAG, env=env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        assert done.stdout.splitlines()[0] == f"docker build -f {DOCKERFILE} -t {TAG} {REPO}"
        assert engine.image_id(TAG) == image
    finally:
        if service is not None:
            service.terminate()
            service.wait(timeout=30)


# --- the cloud job's VM side ----------------------------------------------------------------------------------


def _block(task: str, key: str) -> str:
    """A task's literal block (``setup: |`` or ``run: |``) as the shell SkyPilot runs."""
    lines = task.splitlines()
    start = lines.index(f"{key}: |")
    body = []
    for line in lines[start + 1:]:
        if line and not line.startswith("  "):
            break
        body.append(line[2:])
    return "\n".join(body).rstrip("\n") + "\n"


def _envs(task: str) -> dict[str, str]:
    lines = task.splitlines()
    envs = {}
    for line in lines[lines.index("envs:") + 1:]:
        if not line.startswith("  "):
            break
        key, _, value = line.strip().partition(": ")
        envs[key] = json.loads(value)
    return envs


def _wheel_mount(folder: Path) -> list[str]:
    """The plan's wheel where its task's file mount puts it on the VM (read-only, as SkyPilot copies it)."""
    planned = plan_mod.load(folder)
    return ["-v", f"{folder / planned.wheel}:{tasks.WHEEL_DIR}/{planned.wheel}:ro"]


def _snapshot_runs(path: Path) -> list[tuple[str, str | None]]:
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)  # never writes beside it
    try:
        return conn.execute("SELECT status, cell_key FROM runs ORDER BY id").fetchall()
    except sqlite3.DatabaseError:
        return []
    finally:
        conn.close()


def test_the_cloud_job_cut_mid_cell_and_recovered_on_a_new_vm_ends_with_the_planned_runs_priced_as_planned(
        engine, image, tmp_path, run_cli, vm_venv):
    """The plan's own task, run as SkyPilot runs it on a VM (its setup, then its run, with SKYPILOT_TASK_ID,
    SKYPILOT_CLUSTER_INFO, the task's envs, the plan's cpustudy wheel and the bucket mounted), in a container
    of the image. The container is stopped mid-cell (SIGTERM, then SIGKILL: a preemption) and a new one started (the
    recovery: the same task id, another zone; a new disk, so a new live database). Both VMs' setups run in full
    over a venv that holds TensorFlow already (``vm_venv``)."""
    bucket = _writable(tmp_path / "bucket")
    venv = vm_venv
    r = run_cli("cloud", "plan", "--targets", "gcp:n2-highcpu-2", "--out", tmp_path / "plans" / "emul",
                "--bucket", "cpustudy-emul-test", "--workloads", "mnist_mlp", "--vcpus", "1,2", "--epochs", "2",
                "--steps-per-epoch", "10", "--data", "synthetic", "--workdir", REPO, "--db", tmp_path / "none.sqlite")
    assert r.code == 0, r.err
    planned = plan_mod.load(tmp_path / "plans" / "emul")
    (target,) = planned.targets
    assert target.cells == 2
    task = (tmp_path / "plans" / "emul" / target.task).read_text()
    scripts = _writable(tmp_path / "scripts")
    (scripts / "setup.sh").write_text(_block(task, "setup"))
    (scripts / "run.sh").write_text(_block(task, "run"))
    task_id = f"sky-managed-2026-11-24-00-00-00-000000_{target.job}_1-0"
    snap = bucket / planned.name / target.snapshot.rsplit("/", 1)[1].replace("${SKYPILOT_TASK_ID}", task_id)

    def vm(name: str, zone: str, detach: bool) -> list[str]:
        info = {"cloud": "gcp", "region": "us-central1", "zone": zone, "cluster_name": f"emul-{zone}"}
        env = {**_envs(task), "SKYPILOT_TASK_ID": task_id, "SKYPILOT_CLUSTER_INFO": json.dumps(info)}
        args = ["run", "--name", name, "-w", HOME, *_wheel_mount(tmp_path / "plans" / "emul"),
                "-v", f"{venv}:{HOME}/cpustudy-venv",
                "-v", f"{bucket}:{tasks.MOUNT}", "-v", f"{scripts}:/skypilot:ro", "--entrypoint", "bash"]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        return [*args, *(["-d"] if detach else ["--rm"]), TAG, "-c", "bash /skypilot/setup.sh && exec bash /skypilot/run.sh"]

    first, recovered = (f"cpustudy-test-vm-{uuid.uuid4().hex[:8]}-{n}" for n in (1, 2))
    engine.run(*vm(first, "us-central1-a", detach=True), timeout=120)
    try:
        deadline = time.monotonic() + 420  # setup, then a worker starting TensorFlow for each cell
        statuses: list[str] = []
        while time.monotonic() < deadline:
            statuses = [s for s, _ in _snapshot_runs(snap)]
            if statuses.count("ok") >= 1 and statuses[-1] == "running":  # one cell done, the next one cut
                break
            state = engine.run("inspect", "--format", "{{.State.Running}}", first, timeout=60).stdout.strip()
            if state != "true":
                logs = engine.run("logs", first, check=False, timeout=60)
                pytest.fail(f"the first VM ended before it could be cut (snapshot: {statuses}):\n"
                            f"{logs.stdout[-3000:]}\n{logs.stderr[-3000:]}")
            time.sleep(0.5)  # a cell takes 10 s or more (a worker starts TensorFlow)
        assert statuses[-1:] == ["running"], f"no cell to cut in time (snapshot: {statuses})"
        engine.run("stop", "-t", "3", first, timeout=120)  # SIGTERM, then SIGKILL: the VM is gone
    finally:
        engine.run("rm", "-f", first, check=False, timeout=120)
    assert [s for s, _ in _snapshot_runs(snap)] == ["ok", "running"]
    # the plan's wheel went into the venv (ahead of the image's packages on its path), not left to the image's
    assert len(list(venv.glob("lib/python3*/site-packages/cpustudy-*.dist-info"))) == 1

    try:
        second = engine.run(*vm(recovered, "us-central1-b", detach=False), timeout=600)
    finally:
        engine.run("rm", "-f", recovered, check=False, timeout=120)
    assert "resumed from the snapshot" in " ".join(second.stderr.split()), second.stderr[-3000:]

    db = tmp_path / "fetched.sqlite"
    r = run_cli("cloud", "fetch", tmp_path / "plans" / "emul", "--from", bucket, "--db", db)
    assert r.code == 0, r.err
    with Store.read(db) as store:
        runs = store.runs()
    ok = [x for x in runs if x["status"] == "ok"]
    assert len(ok) == target.cells and len({x["cell_key"] for x in ok}) == target.cells  # the planned runs, once
    (cut,) = [x for x in runs if x["status"] == "failed"]
    assert cut["error"].startswith("interrupted: its job was cut")
    where = [json.loads(x["settings"])["cloud"] for x in ok]
    assert [(w["zone"], w["recoveries"]) for w in where] == [("us-central1-a", 0), ("us-central1-b", 1)]
    assert {(w["instance_type"], w["spot"], w["task_id"]) for w in where} == {("n2-highcpu-2", True, task_id)}

    out = tmp_path / "report"
    r = run_cli("report", "--db", db, "--out", out, "--no-svg")
    assert r.code == 0, r.err
    import pandas as pd

    summary = pd.read_csv(out / "summary.csv").sort_values("vcpus")
    assert list(summary["vcpus"]) == [1, 2] and set(summary["n_runs"]) == {1}
    # each run priced as the plan priced the target: the whole VM at its spot rate, whichever vCPUs a cell used
    assert list(summary["price_usd_per_hour"]) == pytest.approx([target.rate_usd_per_hour] * target.cells)
    assert set(summary["instance"]) == {"gcp:n2-highcpu-2"} and set(summary["price_kind"]) == {"spot"}
    assert list(summary["price_note"]) == ["measured on gcp:n2-highcpu-2 in us-central1-a",
                                           "measured on gcp:n2-highcpu-2 in us-central1-b"]


def test_a_compare_cloud_probe_runs_on_the_vm_and_joins_the_comparison(engine, image, tmp_path, run_cli, vm_venv,
                                                                      alone):
    """`compare` plans a cloud candidate's speed probe (nothing launched); the probe task runs as SkyPilot runs
    it on a VM, in a container of the image (setup, then run, the bucket a host folder); `cloud fetch` brings
    its runs back, and the same comparison then times and prices the cloud candidate from them. The local seed is
    measured with the machine alone (``alone``); the container shares it (its own process namespace sees no other
    process as busy, as a VM's would not)."""
    bucket = _writable(tmp_path / "bucket")
    venv = vm_venv
    db, probes = tmp_path / "compare.sqlite", tmp_path / "probes"
    # n4-highcpu-2: 2 vCPUs like this machine, and 4 GiB (n2-highcpu-2's 2 GiB hold less than the training needs)
    args = ["compare", "mnist_mlp", "--target-accuracy", "0.5", "--candidates", "here:1,gcp:n4-highcpu-2",
            "--seeds", "1", "--max-epochs", "3", "--convergence-at", "here:1", "--repeats", "1",
            "--data", "learnable", "--probe-plan", probes, "--probe-budget", "5", "--workdir", REPO,
            "--max-trainings", "0", "--format", "json", "--db", db]  # the probe joining, not the decision
    with alone():
        r = run_cli(*args)
    assert r.code == 0, r.err
    first = {c["candidate"]: c for c in json.loads(r.out)["candidates"]}
    assert first["gcp:n4-highcpu-2"]["speed_runs"] == 0 and first["here:1"]["speed_runs"] >= 1
    planned = plan_mod.load(probes)
    (target,) = planned.targets
    assert target.cells == 1 and target.target == "gcp:n4-highcpu-2"
    task = (probes / target.task).read_text()
    assert "--steps-per-epoch 100" in task and "--epochs 2" in task  # the probe: capped epochs only
    scripts = _writable(tmp_path / "scripts")
    (scripts / "setup.sh").write_text(_block(task, "setup"))
    (scripts / "run.sh").write_text(_block(task, "run"))
    task_id = f"sky-managed-2026-11-25-00-00-00-000000_{target.job}_1-0"
    info = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "cluster_name": "emul-probe"}
    env = {**_envs(task), "SKYPILOT_TASK_ID": task_id, "SKYPILOT_CLUSTER_INFO": json.dumps(info)}
    name = f"cpustudy-test-probe-{uuid.uuid4().hex[:8]}"
    cmd = ["run", "--name", name, "-w", HOME, *_wheel_mount(probes),
           "-v", f"{venv}:{HOME}/cpustudy-venv", "-v", f"{bucket}:{tasks.MOUNT}", "-v", f"{scripts}:/skypilot:ro",
           "--entrypoint", "bash"]
    for key, value in env.items():
        cmd += ["-e", f"{key}={value}"]
    try:
        engine.run(*cmd, "--rm", TAG, "-c", "bash /skypilot/setup.sh && exec bash /skypilot/run.sh", timeout=900)
    finally:
        engine.run("rm", "-f", name, check=False, timeout=120)

    r = run_cli("cloud", "fetch", probes, "--from", bucket, "--db", db)
    assert r.code == 0, r.err
    r = run_cli(*args)
    assert r.code == 0, r.err
    again = json.loads(r.out)
    after = {c["candidate"]: c for c in again["candidates"]}
    cloud = after["gcp:n4-highcpu-2"]
    assert cloud["speed_runs"] == 1 and cloud["time_to_target_s"] > 0 and cloud["cost_usd"] > 0
    assert cloud["usd_per_hour"] == pytest.approx(target.rate_usd_per_hour)
    # One seed tells nothing of how the epochs vary: no interval, and the note says what would give one.
    assert cloud["time_low_s"] is None and cloud["time_high_s"] is None and "one seed" in cloud["interval_note"]
    assert sum(c["p_cheapest"] for c in after.values()) == pytest.approx(1.0)
    assert again["probe_plan"] is None  # nothing left to probe: no plan written again
    with Store.read(db) as store:
        (probe,) = [x for x in store.runs() if x["instance"] == "gcp:n4-highcpu-2"]
    assert probe["status"] == "ok" and probe["projected"] == 1 and probe["steps_per_epoch"] == 100
