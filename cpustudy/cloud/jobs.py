"""Managed jobs of a plan: launch, status, down, and the results fetched back and merged.

Everything goes through :class:`Backend`, a small interface: :class:`SkyBackend` drives SkyPilot
managed jobs (they recover from preemption: a new VM, the same ``SKYPILOT_TASK_ID``, the sweep resumed
from its snapshot); tests pass a fake. A launch first checks the plan's cpustudy wheel against the SHA-256
the plan recorded (the VMs check it again); ``launch --dry-run`` (:func:`would_launch`) shows what would be
launched without SkyPilot. Fetching copies each target's snapshots from the bucket (by default the plan's
own, on its targets' clouds: ``gs://`` / ``s3://`` through the cloud's own CLI; or a local folder or mount)
and merges them into a database with ``cpustudy merge`` (idempotent: fetching twice adds nothing).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from cpustudy.cloud.plan import Plan, check_wheel, launched, record_launch
from cpustudy.errors import UserError


@dataclass
class JobStatus:
    job: str
    status: str  # SkyPilot's: PENDING, STARTING, RUNNING, RECOVERING, SUCCEEDED, FAILED, CANCELLED...
    recoveries: int | None = None
    region: str | None = None
    job_id: int | None = None


class Backend(Protocol):
    def launch(self, task_file: Path, job: str) -> int | None: ...
    def queue(self) -> list[JobStatus]: ...
    def cancel(self, job: str) -> None: ...


class SkyBackend:
    """SkyPilot managed jobs (the ``cloud`` extra; credentials for the clouds of the plan)."""

    def __init__(self) -> None:
        try:
            import sky
        except ModuleNotFoundError:
            raise UserError("SkyPilot is not installed: pip install 'cpustudy[cloud]', then `sky check` to "
                            "set up the clouds of the plan") from None
        self.sky = sky

    def launch(self, task_file: Path, job: str) -> int | None:
        task = self.sky.Task.from_yaml(str(task_file))
        job_ids, _ = self.sky.stream_and_get(self.sky.jobs.launch(task, name=job))
        return job_ids[0] if job_ids else None

    def queue(self) -> list[JobStatus]:
        records = self.sky.get(self.sky.jobs.queue(refresh=False))
        out = []
        for r in records:
            get = r.get if isinstance(r, dict) else (lambda k, o=r: getattr(o, k, None))
            status = get("status")
            out.append(JobStatus(job=str(get("job_name")), status=str(getattr(status, "value", status)),
                                 recoveries=get("recovery_count"), region=str(get("region") or "") or None,
                                 job_id=get("job_id")))
        return out

    def cancel(self, job: str) -> None:
        self.sky.get(self.sky.jobs.cancel(name=job))


def launch(plan: Plan, backend: Backend, say: Callable[[str], None] = print) -> list[tuple[str, int | None]]:
    """Launch every target's task as a managed job (one per target), skipping jobs already active."""
    check_wheel(plan)  # before anything is started: a VM would refuse it after it was paid for
    active = {s.job for s in backend.queue() if s.status not in FINISHED}
    out = []
    for t in plan.targets:
        if t.job in active:
            say(f"{t.job}: already running, not launched again")
            continue
        job_id = backend.launch(Path(plan.folder) / t.task, t.job)
        record_launch(plan, t.job, job_id)
        say(f"{t.job}: launched ({t.target}, {'spot' if plan.spot else 'on-demand'})")
        out.append((t.job, job_id))
    return out


def would_launch(plan: Plan) -> list[dict[str, Any]]:
    """What :func:`launch` would start, per target (its wheel checked as a launch checks it); nothing is
    started and SkyPilot is not imported. ``launched_before``: a job of that name was launched from this
    folder (a launch skips it while it is still active)."""
    check_wheel(plan)
    before = set(launched(plan))
    return [{"target": t.target, "job": t.job, "task": str(Path(plan.folder) / t.task), "bucket": plan.bucket,
             "cost_usd": t.cost_usd, "guessed": t.guessed, "launched_before": t.job in before}
            for t in plan.targets]


FINISHED = {"SUCCEEDED", "CANCELLED", "FAILED", "FAILED_SETUP", "FAILED_PRECHECKS", "FAILED_NO_RESOURCE",
            "FAILED_CONTROLLER"}


def status(plan: Plan, backend: Backend) -> list[dict[str, Any]]:
    """Each target's job as the backend reports it (the latest job of that name)."""
    latest: dict[str, JobStatus] = {}
    for s in backend.queue():
        if s.job not in latest or (s.job_id or 0) > (latest[s.job].job_id or 0):
            latest[s.job] = s
    rows = []
    for t in plan.targets:
        j = latest.get(t.job)
        rows.append({"target": t.target, "job": t.job, "status": j.status if j else "not launched",
                     "recoveries": j.recoveries if j else None, "region": j.region if j else None})
    return rows


def down(plan: Plan, backend: Backend, say: Callable[[str], None] = print) -> int:
    """Cancel the plan's jobs that are still active (managed jobs tear their VMs down themselves)."""
    n = 0
    for row in status(plan, backend):
        if row["status"] not in FINISHED and row["status"] != "not launched":
            backend.cancel(str(row["job"]))
            say(f"{row['job']}: cancelled")
            n += 1
    return n


#: How each cloud's bucket is named as a URL (SkyPilot creates the plan's bucket on each task's cloud).
SCHEMES = {"gcp": "gs", "aws": "s3"}


def bucket_urls(plan: Plan) -> list[str]:
    """The plan's own bucket on each of its targets' clouds, as ``cloud fetch`` reads it without ``--from``."""
    clouds = list(dict.fromkeys(t.target.split(":", 1)[0] for t in plan.targets))
    other = [c for c in clouds if c not in SCHEMES]
    if other:
        raise UserError(f"plan {plan.name}'s bucket {plan.bucket} on {', '.join(other)} cannot be read by name here: "
                        "mount it (or copy it) and give its folder with --from")
    return [f"{SCHEMES[c]}://{plan.bucket}" for c in clouds]


def fetch(plan: Plan, source: str | None, db: str | Path, say: Callable[[str], None] = print) -> dict[str, int]:
    """Copy the plan's snapshots from ``source`` (the bucket: a folder, or gs:// / s3:// URL; None: the plan's
    own bucket, :func:`bucket_urls`) and merge each into ``db``. Returns {"files": n, "runs": runs added}."""
    sources = [source] if source else bucket_urls(plan)
    with tempfile.TemporaryDirectory(prefix="cpustudy-fetch-") as tmp:
        files: list[Path] = []
        for i, s in enumerate(sources):
            try:
                folder = _bring(s.rstrip("/") + f"/{plan.name}", Path(tmp) / f"from-{i}")
            except UserError as exc:
                if len(sources) == 1:
                    raise
                say(f"{s}: {exc}")  # the plan's bucket on another of its clouds may hold the rest
                continue
            files += sorted(p for p in folder.glob("*.sqlite") if not p.name.startswith("."))
        if not files:
            where = " or ".join(f"{s.rstrip('/')}/{plan.name}" for s in sources)
            asked = f" Is --from the plan's bucket ({plan.bucket})?" if source else ""
            raise UserError(f"no snapshots under {where}: have the jobs started (`cpustudy cloud status "
                            f"{plan.folder}`)?{asked}")
        return _merge_all(files, Path(tmp), db, say)


def _readable(path: Path) -> str | None:
    """Why a snapshot cannot be merged (not a cpustudy database, damaged), or None."""
    import sqlite3

    from cpustudy.store import schema

    try:
        if schema.file_version(path) is None:
            return "not a cpustudy database"
        conn = schema.connect_reading(path)
        try:
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            conn.close()
    except (OSError, sqlite3.Error) as exc:
        return f"damaged ({exc})"
    return None if check == "ok" else f"damaged ({check})"


def _merge_all(files: list[Path], tmp: Path, db: str | Path, say: Callable[[str], None]) -> dict[str, int]:
    """Merge each snapshot (copied first: never merged from the bucket in place) into ``db``, opened
    only now that there is something to merge. A snapshot that cannot be read is named and left out;
    the others are merged (a later fetch brings a newer copy)."""
    from cpustudy.store import Store
    from cpustudy.store.importers.merge import merge

    good = []
    for f in files:
        local = tmp / f"copy-{f.name}"
        shutil.copyfile(f, local)  # never merge from the bucket in place
        why = _readable(local)
        if why:
            say(f"{f.name}: left out: {why} (the job's next snapshot replaces it; fetch again later)")
        else:
            good.append((f, local))
    if not good:
        raise UserError(f"none of the {len(files)} snapshot(s) could be read (see above): nothing was merged "
                        "and the database was not touched")
    with Store.open(db) as store:
        added = 0
        for f, local in good:
            result = merge(store, local)
            added += result.runs_added
            unfinished = f", {result.runs_unfinished} still running (fetch again later)" if result.runs_unfinished else ""
            say(f"{f.name}: {result.runs_added} new run(s){unfinished}")
    return {"files": len(good), "runs": added}


def _bring(source: str, dest: Path) -> Path:
    """The snapshots' folder: ``source`` itself, or a bucket's folder copied into ``dest``."""
    if source.startswith(("gs://", "s3://")):
        tool = ["gsutil", "-m", "cp", "-r"] if source.startswith("gs://") else ["aws", "s3", "cp", "--recursive"]
        if shutil.which(tool[0]) is None:
            raise UserError(f"{tool[0]} is not installed: install the cloud's CLI, or mount the bucket and pass "
                            "its folder to --from")
        dest.mkdir(parents=True)
        done = subprocess.run([*tool, source.rstrip("/") + ("/*" if tool[0] == "gsutil" else ""), str(dest)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise UserError(f"cannot copy {source}: {tail}")
        return dest
    folder = Path(source)
    if not folder.is_dir():
        raise UserError(f"--from {folder}: no such folder (give the bucket's mount or a gs:// or s3:// URL)")
    return folder
