"""The SkyPilot task of one target: the instance type pinned, spot or on-demand, job recovery, the
results bucket mounted, setup that installs the planner's own cpustudy, and the sweep to run there with
its live database on the VM's disk and a snapshot after every run on the bucket
(``sweep --snapshot-to``). Written as YAML (a small emitter: no YAML library needed) and checked with
SkyPilot's own parser (``sky.Task.from_yaml``) when SkyPilot is installed.

The VM installs cpustudy from a wheel built from the planner's checkout when the plan is made, shipped
with the plan (a file mount) and checked against the SHA-256 the plan recorded before it is installed:
never ``pip install cpustudy`` from the package index, a name this project does not publish (anyone could),
and never the checkout as it is at launch time (it may have changed since the plan was costed). The build
is reproducible (hatchling dates every file alike), so a wheel is built once per content of the checkout
and kept in the user cache."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cpustudy.cloud.targets import CloudTarget
from cpustudy.environment.cloud import ENV_RESOURCES, ENV_SPOT, ENV_TARGET
from cpustudy.errors import UserError
from cpustudy.measure.request import SweepRequest

MOUNT = "/cpustudy-results"  # the bucket, mounted on every VM of the plan
MODELS_DIR = "/cpustudy-models"  # model files given as workloads, copied from the plan folder to every VM
LIVE_DIR = "~/cpustudy-live"  # the live database: the VM's own disk (WAL needs a real file system)
VENV = "~/cpustudy-venv"
WHEEL_DIR = "/cpustudy-wheel"  # the plan's cpustudy wheel, copied from the plan folder to every VM
#: Builds that need nothing but the project's own install (others are set up with `cpustudy builds setup`).
PROJECT_BUILDS = ("tf", "tf-eigen", "tf-onednn", "tf-xla", "jax-here", "torch-here")
#: Extra packages a GPU VM needs for each GPU build.
GPU_PACKAGES = {"jax-here": "'jax[cuda12]'", "torch-here": "torch"}


@dataclass(frozen=True)
class CloudSweep:
    """What each target's sweep measures: the sweep request, parsed as ``sweep`` parses it (its vCPUs
    None: each CPU VM's own count), and the builds GPU targets run."""

    request: SweepRequest = field(default_factory=lambda: SweepRequest(vcpus=None))
    gpu_builds: str = "jax-here"

    def vcpu_list(self, target: CloudTarget) -> list[int]:
        """The vCPU counts swept on ``target``: a GPU VM's cells use all of its host vCPUs."""
        if self.request.vcpus is None or target.device == "gpu":
            return [target.vcpus]
        from cpustudy.measure.spec import Host
        from cpustudy.measure.sweep import parse_vcpus

        # Parsed as `sweep` parses it, against the VM's CPUs (``auto``: 1, 2, 4, ... up to its size).
        out = parse_vcpus(self.request.vcpus, Host.vm(target.vcpus).topo)
        too_many = [v for v in out if v > target.vcpus]
        if too_many:
            raise UserError(f"--vcpus {self.request.vcpus}: {target.name} has {target.vcpus} vCPUs: give counts up "
                            f"to {target.vcpus}, or leave --vcpus out for the VM's own count")
        return out

    def for_target(self, target: CloudTarget) -> SweepRequest:
        """The request as ``target`` runs it: its builds, its device, its vCPU counts."""
        return replace(self.request, builds=self.gpu_builds if target.device == "gpu" else self.request.builds,
                       device=target.device, vcpus=",".join(str(v) for v in self.vcpu_list(target)))

    def sweep_args(self, target: CloudTarget) -> list[str]:
        """The VM's ``sweep`` arguments: model files named where the task mounts them on the VM."""
        request = self.for_target(target)
        return replace(request, workloads=",".join(model_on_vm(w) for w in request.workloads.split(","))).argv()


def model_on_vm(workload: str) -> str:
    """Where a model file given as a workload is on the VM (the task mounts it there); a name as it is."""
    from cpustudy.workloads import userfile

    if workload.strip() == "all" or not userfile.looks_like_file(workload):
        return workload
    src = userfile.read_source(workload)
    return f"{MODELS_DIR}/{src.sha256[:12]}/{Path(src.path).name}"


def copy_models(options: CloudSweep, folder: Path) -> dict[str, str]:
    """The request's model files and scripts (with the files beside a script that it imports or names) copied
    into the plan folder (the plan measures them as they were when it was made): {path on the VM: the copy},
    the task's file mounts."""
    import shutil

    from cpustudy.workloads import userfile

    mounts = {}
    for w in options.request.workloads.split(","):
        on_vm = model_on_vm(w)
        if on_vm != w:
            copy = folder / "models" / Path(on_vm).parent.name / Path(on_vm).name
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(w).expanduser(), copy)
            mounts[on_vm] = str(copy.resolve())
            for rel in userfile.companions(w):  # a script's files beside it: what it imports and names
                beside = copy.parent / rel
                beside.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(w).expanduser().resolve().parent / rel, beside)
                mounts[f"{Path(on_vm).parent}/{rel}"] = str(beside.resolve())
    return mounts


@dataclass(frozen=True)
class Wheel:
    """The planner's own cpustudy as a wheel in the plan folder, and its SHA-256: what every VM installs."""

    path: Path
    sha256: str
    commit: str | None = None  # the checkout's commit it was built from: the VM's runs record it (CPUSTUDY_COMMIT)

    @property
    def on_vm(self) -> str:
        """Where the task mounts it on the VM (pip needs the wheel's own file name)."""
        return f"{WHEEL_DIR}/{self.path.name}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _is_checkout(root: Path) -> bool:
    import tomllib

    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        return False
    return project.get("name") == "cpustudy" and (root / "cpustudy" / "__init__.py").is_file()


def checkout(workdir: str | None) -> Path:
    """The cpustudy checkout the VMs' wheel is built from: ``workdir``, else the one this cpustudy runs from."""
    if workdir:
        root = Path(workdir).expanduser().resolve()
        if not _is_checkout(root):
            raise UserError(f"--workdir {workdir}: not a cpustudy checkout (no pyproject.toml of cpustudy there): "
                            "give the root folder of a clone of cpustudy")
        return root
    root = Path(__file__).resolve().parents[2]
    if not _is_checkout(root):
        raise UserError("cpustudy runs from an installed package, not a checkout, so there is nothing to build the "
                        "VMs' wheel from: give --workdir with the root of a clone of cpustudy")
    return root


def source_digest(root: Path) -> str:
    """The content of what a wheel of ``root`` is built from (the package, the builds it carries, the project's
    metadata): a wheel cached under it is a build of exactly this source."""
    names = ["pyproject.toml", "README.md", ".gitignore", *(p.name for p in root.glob("LICEN[CS]E*"))]
    files = [root / n for n in names if (root / n).is_file()]
    for top in ("cpustudy", "builds"):
        files += sorted(p for p in (root / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()


def build_wheel(root: Path) -> Path:
    """A wheel of the checkout at ``root`` (``pip wheel``), from the user cache when this source was built before."""
    from cpustudy.cache import cache_dir

    cached = cache_dir() / "wheels" / source_digest(root)[:24]
    found = sorted(cached.glob("cpustudy-*.whl"))
    if found:
        return found[0]
    import tempfile

    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=cached.parent))
    try:
        _pip_wheel(root, tmp)
        try:
            os.replace(tmp, cached)  # whole, or not at all: a wheel half-written is never found
        except OSError:  # built meanwhile by another planner: theirs is the same build
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    found = sorted(cached.glob("cpustudy-*.whl"))
    if not found:
        raise UserError(f"pip built no cpustudy wheel from {root}: make the plan again from a clean checkout")
    return found[0]


def _pip_wheel(root: Path, out: Path) -> None:
    """``pip wheel`` of the checkout: with the build backend installed here (offline), else in pip's isolated
    build environment (the backend from the package index)."""
    import importlib.util
    import tomllib

    system = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("build-system", {})
    backend = str(system.get("build-backend") or "setuptools.build_meta").split(".", 1)[0].split(":", 1)[0]
    here = importlib.util.find_spec(backend) is not None
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check", "-w", str(out),
           *(["--no-build-isolation"] if here else []), str(root)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1].strip()
        raise UserError(f"cannot build cpustudy's wheel from {root} ({tail}): install its build backend here "
                        f"(pip install {backend}), which builds it offline, or let pip reach the package index")


def ship_wheel(built: Path, folder: Path, commit: str | None = None) -> Wheel:
    """The wheel copied into the plan folder (any other cpustudy wheel there removed) with its SHA-256 and the
    commit of the checkout it was built from."""
    for old in folder.glob("cpustudy-*.whl"):
        if old.name != built.name:
            old.unlink()
    path = folder / built.name
    shutil.copyfile(built, path)
    return Wheel(path, sha256_of(path), commit)


def install_lines(wheel: Wheel) -> list[str]:
    """The VM's install of exactly the plan's wheel: its SHA-256 checked first (a wheel changed since the plan
    was made stops the setup), installed with its dependencies, then over any cpustudy of the same version
    already in the venv (pip would keep that one)."""
    path = shlex.quote(wheel.on_vm)
    return [f"echo {shlex.quote(f'{wheel.sha256}  {wheel.on_vm}')} | sha256sum -c --quiet - || "
            f"{{ echo {shlex.quote(f'{wheel.on_vm} is not the wheel the plan was made with: make the plan again')} "
            ">&2; exit 1; }",
            f"{VENV}/bin/pip install -q {shlex.quote(wheel.on_vm + '[gpu]')}",
            f"{VENV}/bin/pip install -q --no-deps --force-reinstall {path}"]


def snapshot_path(plan: str, target: CloudTarget) -> str:
    """Where a target's job keeps its snapshot: one per target and managed task (SKYPILOT_TASK_ID is
    the same across the recoveries of one job, so a recovered job finds its own)."""
    return f"{MOUNT}/{plan}/{target.slug}-${{SKYPILOT_TASK_ID}}.sqlite"


def task_config(plan: str, target: CloudTarget, options: CloudSweep, *, spot: bool, bucket: str, wheel: Wheel,
                region: str | None = None, max_restarts: int = 2,
                models: dict[str, str] | None = None) -> dict[str, Any]:
    """The task as SkyPilot's YAML schema has it."""
    resources: dict[str, Any] = {"cloud": target.cloud, "instance_type": target.instance_type, "use_spot": spot,
                                 "job_recovery": {"strategy": "FAILOVER", "max_restarts_on_errors": max_restarts},
                                 "disk_size": 100}
    if region:
        resources["region"] = region
    if target.accelerator:
        resources["accelerators"] = f"{target.accelerator}:{target.accelerator_count}"
    builds = options.for_target(target).builds.split(",")
    install = install_lines(wheel)
    setup = ["set -e", install[0], f"python3 -m venv {VENV}", f"{VENV}/bin/pip install -q --upgrade pip",
             *install[1:]]
    setup += [f"{VENV}/bin/pip install -q {GPU_PACKAGES[b]}" for b in builds if target.device == "gpu"
              and b in GPU_PACKAGES]
    setup += [f"{VENV}/bin/cpustudy builds setup {shlex.quote(b)}" for b in builds if b not in PROJECT_BUILDS]
    live = f"{LIVE_DIR}/{target.slug}.sqlite"
    sweep = " ".join([f"{VENV}/bin/cpustudy", "sweep", *(shlex.quote(a) for a in options.sweep_args(target)),
                      "--db", live, "--snapshot-to", f'"{snapshot_path(plan, target)}"'])
    run = ["set -e", f"mkdir -p {LIVE_DIR} {MOUNT}/{plan}",
           "# exit 1 = some cells failed and are stored as failed: the job is done, not to be restarted",
           f"{sweep} || test $? -eq 1"]
    config: dict[str, Any] = {
        "name": f"cpustudy-{plan}-{target.slug}",
        "resources": resources,
        "file_mounts": {MOUNT: {"name": bucket, "mode": "MOUNT"}, wheel.on_vm: str(wheel.path.resolve()),
                        **(models or {})},
        "envs": {ENV_TARGET: target.name, ENV_SPOT: "1" if spot else "0",
                 ENV_RESOURCES: json.dumps(target.resources.as_dict(), sort_keys=True),
                 **({"CPUSTUDY_COMMIT": wheel.commit} if wheel.commit else {})},
        "setup": "\n".join(setup) + "\n",
        "run": "\n".join(run) + "\n",
    }
    return config


def to_yaml(value: Any, indent: int = 0) -> str:
    """YAML for the dicts of strings, numbers, booleans and nested dicts a task is made of; strings with
    newlines as literal blocks, every other string quoted (JSON quoting is valid YAML)."""
    import json

    pad = "  " * indent
    lines = []
    for key, v in value.items():
        if isinstance(v, dict):
            lines.append(f"{pad}{key}:")
            lines.append(to_yaml(v, indent + 1))
        elif isinstance(v, str) and "\n" in v:
            lines.append(f"{pad}{key}: |")
            lines += [f"{pad}  {line}" if line else "" for line in v.rstrip("\n").split("\n")]
        elif isinstance(v, bool):
            lines.append(f"{pad}{key}: {'true' if v else 'false'}")
        elif isinstance(v, (int, float)):
            lines.append(f"{pad}{key}: {v}")
        elif isinstance(v, str):
            lines.append(f"{pad}{key}: {json.dumps(v)}")
        else:
            raise TypeError(f"cannot write {type(v).__name__} as task YAML")
    return "\n".join(lines)


def validate(path: Path) -> str | None:
    """Check a written task with SkyPilot's own parser (``sky.Task.from_yaml``, its schema and task name
    rules); the problem in one line, or None. Raises ``ModuleNotFoundError`` without SkyPilot."""
    import sys

    import sky  # the cloud extra

    limit = getattr(sys, "tracebacklimit", None)
    try:
        task = sky.Task.from_yaml(str(path))
        task.validate_name()
    except (ValueError, TypeError) as exc:  # InvalidSkyPilotConfigError is a ValueError
        return " ".join(str(exc).split())
    finally:  # SkyPilot sets sys.tracebacklimit to 0 around a raising check and leaves it so
        if limit is None:
            if hasattr(sys, "tracebacklimit"):
                del sys.tracebacklimit
        else:
            sys.tracebacklimit = limit
    return None
