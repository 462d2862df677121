"""The SkyPilot task of one target: the instance type pinned, spot or on-demand, job recovery, the
results bucket mounted, setup that installs cpustudy from the checkout, and the sweep to run there with
its live database on the VM's disk and a snapshot after every run on the bucket
(``sweep --snapshot-to``). Written as YAML (a small emitter: no YAML library needed) and checked with
SkyPilot's own parser (``sky.Task.from_yaml``) when SkyPilot is installed."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cpustudy.cloud.targets import Target
from cpustudy.environment.cloud import ENV_RESOURCES, ENV_SPOT, ENV_TARGET
from cpustudy.errors import UserError
from cpustudy.measure.request import SweepRequest

MOUNT = "/cpustudy-results"  # the bucket, mounted on every VM of the plan
MODELS_DIR = "/cpustudy-models"  # model files given as workloads, copied from the plan folder to every VM
LIVE_DIR = "~/cpustudy-live"  # the live database: the VM's own disk (WAL needs a real file system)
VENV = "~/cpustudy-venv"
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

    def vcpu_list(self, target: Target) -> list[int]:
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

    def for_target(self, target: Target) -> SweepRequest:
        """The request as ``target`` runs it: its builds, its device, its vCPU counts."""
        return self.request.with_(builds=self.gpu_builds if target.device == "gpu" else self.request.builds,
                                  device=target.device, vcpus=",".join(str(v) for v in self.vcpu_list(target)))

    def sweep_args(self, target: Target) -> list[str]:
        """The VM's ``sweep`` arguments: model files named where the task mounts them on the VM."""
        request = self.for_target(target)
        return request.with_(workloads=",".join(model_on_vm(w) for w in request.workloads.split(","))).argv()


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


def snapshot_path(plan: str, target: Target) -> str:
    """Where a target's job keeps its snapshot: one per target and managed task (SKYPILOT_TASK_ID is
    the same across the recoveries of one job, so a recovered job finds its own)."""
    return f"{MOUNT}/{plan}/{target.slug}-${{SKYPILOT_TASK_ID}}.sqlite"


def task_config(plan: str, target: Target, options: CloudSweep, *, spot: bool, bucket: str,
                workdir: str | None, region: str | None = None, max_restarts: int = 2,
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
    install = "pip install -q -e '.[gpu]'" if workdir else "pip install -q 'cpustudy[gpu]'"
    setup = ["set -e", f"python3 -m venv {VENV}", f"{VENV}/bin/pip install -q --upgrade pip",
             f"{VENV}/bin/{install}"]
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
        "file_mounts": {MOUNT: {"name": bucket, "mode": "MOUNT"}, **(models or {})},
        "envs": {ENV_TARGET: target.name, ENV_SPOT: "1" if spot else "0",
                 ENV_RESOURCES: json.dumps(target.resources.as_dict(), sort_keys=True)},
        "setup": "\n".join(setup) + "\n",
        "run": "\n".join(run) + "\n",
    }
    if workdir:
        config["workdir"] = workdir
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
