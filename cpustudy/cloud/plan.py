"""``cpustudy cloud plan``: one SkyPilot task per target in a plan folder, each checked with
SkyPilot's parser, and the plan's cost estimated from the price catalog before anything is launched.

The estimate per target is VM time x the target's hourly rate (spot or on-demand):

* per cell, the training time and the fixed cost of a fresh worker (its start-up), estimated as
  ``sweep --dry-run`` does (:func:`cpustudy.measure.sweep.estimate_cell`): from earlier ok runs
  in ``--db``, else the workload's FLOPs at an assumed rate, a rough guess labelled as such;
* per target, provisioning the VM and installing cpustudy: ``PROVISION_S``, a guess.

A plan folder is the handle of its jobs and its bucket, so a plan is made again only where nothing was
launched from it: ``plan.json`` keeps a stable key of the request it was made for (:func:`request_key`),
a plan launched already is reused as it is for the same request and never planned over (that would orphan
its jobs and their bucket), and a plan made again in its folder keeps the folder's bucket. It also keeps
the SHA-256 of the cpustudy wheel its VMs install, checked before a launch and on every VM.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from cpustudy.prices import Catalog
from cpustudy.prices import sky as sky_catalog
from cpustudy.cloud import targets as targets_mod
from cpustudy.cloud import tasks
from cpustudy import provenance
from cpustudy.errors import UserError
from cpustudy.store.rows import RunRow

PROVISION_S = 420.0  # provisioning a VM and installing cpustudy and TensorFlow: a guess
PLAN_FILE = "plan.json"
#: The jobs launched from a plan folder, one JSON line each: `cloud status` and `cloud down` on a plan never
#: launched say so without starting SkyPilot (its API server) at all.
LAUNCH_FILE = "launched.jsonl"


@dataclass
class TargetPlan:
    target: str
    instance_type: str
    vcpus: int
    device: str
    task: str  # the task's file name in the plan folder
    job: str  # the managed job's name
    snapshot: str
    cells: int
    train_s: float
    startup_s: float
    vm_s: float
    rate_usd_per_hour: float | None
    rate_kind: str
    price_source: str
    price_as_of: str
    cost_usd: float | None
    guessed: bool
    check: str  # "SkyPilot schema ok", the problem, or "not checked: ..."


@dataclass
class Plan:
    name: str
    folder: str
    bucket: str
    spot: bool
    targets: list[TargetPlan]
    created: str
    catalogs: list[str]  # which price catalogs were read
    key: str = ""  # request_key of the request it was made for ("": made before plans had one)
    wheel: str = ""  # the cpustudy wheel its VMs install, a file in the plan folder ("": made before wheels)
    wheel_sha256: str = ""

    @property
    def cost_usd(self) -> float | None:
        costs = [t.cost_usd for t in self.targets]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)

    def save(self) -> None:
        Path(self.folder, PLAN_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n")


def record_launch(plan: Plan, job: str, job_id: int | None) -> None:
    """Note in the plan folder that ``job`` was launched (appended: a plan launched again keeps its history)."""
    line = json.dumps({"job": job, "job_id": job_id, "at": time.strftime("%Y-%m-%d %H:%M:%S %Z")})
    with open(Path(plan.folder, LAUNCH_FILE), "a", encoding="utf-8") as f:
        f.write(line + "\n")


def launched(plan: Plan) -> list[str]:
    """The jobs ever launched from this plan folder (none: the plan was never launched from here)."""
    return _launched_from(Path(plan.folder))


def _launched_from(folder: Path) -> list[str]:
    try:
        text = Path(folder, LAUNCH_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return []
    jobs = []
    for line in text.splitlines():
        try:
            jobs.append(str(json.loads(line)["job"]))
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short: the others still count
    return list(dict.fromkeys(jobs))


def load(folder: str | Path) -> Plan:
    path = Path(folder) / PLAN_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{folder} is not a plan folder (no {PLAN_FILE}): make one with `cpustudy cloud plan "
                        f"--targets ... --out {folder}`") from None
    except ValueError as exc:
        raise UserError(f"{path} is not valid JSON ({exc}): make the plan again with `cpustudy cloud plan`") from None
    try:
        data["targets"] = [TargetPlan(**t) for t in data["targets"]]
        data["folder"] = str(folder)  # where it is now: its tasks, wheel and launches are beside plan.json
        return Plan(**data)
    except (KeyError, TypeError) as exc:
        raise UserError(f"{path} is not a plan this cpustudy reads ({exc}): make the plan again with "
                        "`cpustudy cloud plan`") from None


def find(folder: str | Path) -> Plan | None:
    """The plan in ``folder``; None where there is none, or none readable (it can only be planned again)."""
    if not Path(folder, PLAN_FILE).is_file():
        return None
    try:
        return load(folder)
    except UserError:
        return None


def launched_plan(folder: str | Path, key: str) -> Plan | None:
    """The plan in ``folder`` when it was launched already for the request ``key``: reused as it is."""
    found = find(folder)
    return found if found is not None and found.key == key and launched(found) else None


def request_key(targets_text: str, options: tasks.CloudSweep, *, spot: bool, region: str | None) -> str:
    """A stable key of what a plan measures: its targets as asked, each VM's sweep (a model file by its
    content), the GPU builds, spot or on-demand, the region. Its name, bucket and estimate are not part of it:
    the same request asked again, in any order, gives the same key."""
    targets = sorted({t.strip().lower() for t in targets_text.split(",") if t.strip()})
    request = options.request
    sweep = replace(request, workloads=",".join(tasks.model_on_vm(w) for w in request.workloads.split(","))).argv()
    text = json.dumps({"targets": targets, "sweep": sweep, "gpu_builds": options.gpu_builds, "spot": spot,
                       "region": region}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_wheel(plan: Plan) -> Path:
    """The plan's wheel, unchanged since the plan was made (its SHA-256 as ``plan.json`` has it)."""
    if not plan.wheel:
        raise UserError(f"plan {plan.name} in {plan.folder} was made by an older cpustudy, whose VMs install "
                        "cpustudy from the package index: make it again with `cpustudy cloud plan` (a new folder "
                        "if it was launched)")
    path = Path(plan.folder, plan.wheel)
    if not path.is_file():
        raise UserError(f"{path} is missing: the VMs install it; make the plan again with `cpustudy cloud plan`")
    sha = tasks.sha256_of(path)
    if sha != plan.wheel_sha256:
        raise UserError(f"{path} changed after the plan was made (sha256 {sha[:12]}..., the plan's "
                        f"{plan.wheel_sha256[:12]}...): make the plan again with `cpustudy cloud plan`")
    return path


def _ok_runs(db: str | Path | None) -> list[RunRow]:
    if db is None or not Path(db).is_file():
        return []
    from cpustudy.store import Store

    with Store.read(db) as store:
        return store.runs(status="ok")


@dataclass(frozen=True)
class TargetEstimate:
    """A target's cells and their expected time, each cell estimated as ``sweep --dry-run`` does."""

    cells: int
    training_s: float
    startup_s: float
    guessed: bool  # part of it is a rough guess from FLOPs (no earlier runs of a cell)

    @property
    def vm_s(self) -> float:
        """The VM's billed time: provisioning and install, each cell's worker start-up and training."""
        return PROVISION_S + self.training_s + self.startup_s


def estimate(target: targets_mod.CloudTarget, options: tasks.CloudSweep, ok_runs: list[RunRow]) -> TargetEstimate:
    """The target's sweep, planned for its VM (the same cells ``sweep --dry-run`` lists there: every
    axis of the request), each cell estimated with :func:`cpustudy.measure.sweep.estimate_cell`."""
    from cpustudy.measure.spec import Host
    from cpustudy.measure.sweep import estimate_cell, request_cells

    request = options.for_target(target)
    cells = request_cells(request, machine_fingerprint=target.name, host=Host.vm(target.vcpus),
                          vcpus=options.vcpu_list(target))
    estimates = [estimate_cell(ok_runs, c) for c in cells]
    return TargetEstimate(len(cells), sum(e.training_s for e in estimates), sum(e.startup_s for e in estimates),
                          any(not e.measured for e in estimates))


_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")
_PLAN_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


def check_names(plan_name: str, bucket: str | None, region: str | None, catalog: Catalog, clouds: set[str]) -> None:
    """What only a paid VM would reject, refused here in one line before anything is written: a bucket
    given as a URL or a name no cloud accepts, a plan name that cannot name a job or a folder, a
    region the targets' clouds have no price in."""
    if not _PLAN_NAME.match(plan_name):
        raise UserError(f"plan name {plan_name!r}: give --name of lowercase letters, digits and dashes (at most 40), "
                        "e.g. spot-2026; it names the jobs and the bucket folder")
    if bucket is not None and "://" in bucket:
        raise UserError(f"--bucket {bucket}: give the bucket's name, not its URL (--bucket {bucket.split('://', 1)[1]})")
    if bucket is not None and not _BUCKET.match(bucket):
        raise UserError(f"--bucket {bucket!r}: a bucket name is 3-63 lowercase letters, digits, dots, dashes or "
                        "underscores, starting and ending with a letter or digit")
    if region is not None:
        known = sorted({r.region for r in catalog.rows if r.provider in clouds})
        if region not in known:
            raise UserError(f"--region {region}: {', '.join(sorted(clouds))} has no price in it in the catalog: "
                            f"choose one of {', '.join(known[:12])}{' ...' if len(known) > 12 else ''}")


def default_bucket(plan_name: str) -> str:
    """A bucket name of this plan's own: bucket names are global, and a fixed default would likely be
    someone else's."""
    import secrets

    return f"cpustudy-{plan_name}-{secrets.token_hex(4)}"[:63]


def quote(targets_text: str, options: tasks.CloudSweep, *, spot: bool, region: str | None = None,
          db: str | Path | None = None, prices: str | Path | None = None) -> list[tuple[str, float | None, bool]]:
    """What each target's sweep would cost, as :func:`make` estimates it, with nothing written: per
    target its name, the estimate in USD (None: no rate on that basis) and whether part is a guess."""
    catalog = Catalog.load(prices)
    chosen = targets_mod.parse(targets_text, catalog, region)
    ok_runs = _ok_runs(db)
    out = []
    for t in chosen:
        e = estimate(t, options, ok_runs)
        cost = catalog.cost(t.resources, e.vm_s, spot=spot)
        out.append((t.name, cost.usd, e.guessed))
    return out


def _refuse_launched(folder: Path) -> None:
    """A plan launched already is never planned over: its jobs would be orphaned, their bucket forgotten."""
    if _launched_from(folder):
        raise UserError(f"{folder} holds a plan launched already (its {LAUNCH_FILE}): planning it again would "
                        f"orphan its jobs; give another plan folder (or `cpustudy cloud down {folder}` and remove it)")


def _checked(path: Path) -> str:
    """A task file read by SkyPilot's own parser: ``SkyPilot schema ok``, or why it was not checked; refused in one
    line where SkyPilot rejects it."""
    try:
        problem = tasks.validate(path)
    except ModuleNotFoundError:
        return "not checked: SkyPilot is not installed (pip install 'cpustudy[cloud]')"
    if problem:
        raise UserError(f"{path}: SkyPilot rejects the task: {problem}")
    return "SkyPilot schema ok"

def make(targets_text: str, options: tasks.CloudSweep, *, out: str | Path, spot: bool, bucket: str | None,
         name: str | None = None, region: str | None = None, workdir: str | None = None,
         db: str | Path | None = None, prices: str | Path | None = None, check: bool = True,
         key: str | None = None) -> Plan:
    """Write the plan folder (one task YAML per target, the cpustudy wheel and ``plan.json``) and return the
    plan. ``workdir``: the checkout the wheel is built from (default: this one); ``key``: the request's
    (default: :func:`request_key` of these targets and options). A folder that held a plan keeps its bucket
    unless ``bucket`` is given."""
    catalog = Catalog.load(prices)
    chosen = targets_mod.parse(targets_text, catalog, region)
    clouds = {t.cloud for t in chosen}
    folder = Path(out)
    plan_name = name or folder.name
    check_names(plan_name, bucket, region, catalog, clouds)
    _refuse_launched(folder)
    earlier = find(folder)
    bucket = bucket or (earlier.bucket if earlier else None) or default_bucket(plan_name)  # valid for any valid name
    sky_sources = [s for s in catalog.sky_sources if s.cloud in clouds]
    missing = [c for c in catalog.sky_missing if c in clouds]
    # Every target's cells are planned (names, builds, vCPUs, settings checked) before anything is written.
    ok_runs = _ok_runs(db)
    estimates = [estimate(t, options, ok_runs) for t in chosen]
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--out {folder} is a file: give a folder for the plan")
    root = tasks.checkout(workdir)
    built = tasks.build_wheel(root)  # before anything is written: it may be refused
    folder.mkdir(parents=True, exist_ok=True)
    # The VMs install this file, its SHA-256 checked there; their runs record the commit it was built from.
    wheel = tasks.ship_wheel(built, folder, provenance.commit_of(root))
    models = tasks.copy_models(options, folder)  # model files travel with the plan, as they are now
    rows = []
    for t, e in zip(chosen, estimates):
        config = tasks.task_config(plan_name, t, options, spot=spot, bucket=bucket, wheel=wheel, region=region,
                                   models=models)
        task_file = f"{t.slug}.yaml"
        path = folder / task_file
        path.write_text(f"# cpustudy cloud plan {plan_name}: {t.name}, {'spot' if spot else 'on-demand'}\n"
                        + tasks.to_yaml(config) + "\n")
        price = catalog.cost(t.resources, e.vm_s, spot=spot)
        q = price.quote
        rows.append(TargetPlan(
            target=t.name, instance_type=t.instance_type, vcpus=t.vcpus, device=t.device, task=task_file,
            job=str(config["name"]), snapshot=tasks.snapshot_path(plan_name, t), cells=e.cells, train_s=e.training_s,
            startup_s=e.startup_s, vm_s=e.vm_s, rate_usd_per_hour=q.usd_per_hour if q else None,
            rate_kind="spot" if spot else "on-demand", price_source=t.price.source, price_as_of=t.price.as_of,
            cost_usd=price.usd, guessed=e.guessed, check=_checked(path) if check else "not checked"))
    if earlier is not None:  # the tasks of targets no longer planned: nothing launches them now
        for gone in {t.task for t in earlier.targets} - {r.task for r in rows}:
            if Path(gone).name == gone:
                (folder / gone).unlink(missing_ok=True)
    catalogs = [f"SkyPilot's {s.describe()}" for s in sky_sources]
    catalogs += [f"no SkyPilot {c} catalog at {sky_catalog.shown(sky_catalog.catalog_path(c))}: the shipped "
                 f"{c} rows were used (any online `sky` command, e.g. `sky show-gpus`, downloads it)" for c in missing]
    plan = Plan(plan_name, str(folder), bucket, spot, rows, time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                catalogs or ["shipped catalog (cpustudy/data/prices.csv)"],
                key=key or request_key(targets_text, options, spot=spot, region=region), wheel=wheel.path.name,
                wheel_sha256=wheel.sha256)
    plan.save()
    return plan
