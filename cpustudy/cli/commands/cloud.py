"""``cpustudy cloud plan|launch|status|fetch|down``: the study on rented VMs and GPUs through SkyPilot
managed jobs (``pip install 'cpustudy[cloud]'``). ``plan`` and ``launch --dry-run`` work without credentials
and never start SkyPilot; a plan folder launched already is reused for the same request, never planned over."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import cpustudy.cli.args as a

if TYPE_CHECKING:
    from cpustudy.cloud.jobs import SkyBackend
    from cpustudy.cloud.plan import Plan
    from cpustudy.cloud.tasks import CloudSweep


def register(sub: a.Subparsers) -> None:
    p = sub.add_parser("cloud", help="run the study on cloud spot VMs and GPUs (SkyPilot managed jobs)",
                       description="Plan one SkyPilot task per target (an instance type pinned), launch them as "
                       "managed jobs that recover from preemption, follow them, fetch and merge their results.")
    cmds = p.add_subparsers(dest="cloud_command", metavar="{plan,launch,status,fetch,down}", required=True)

    plan = cmds.add_parser("plan", help="write the tasks and estimate their cost (nothing is launched)")
    plan.add_argument("--targets", required=True, help="comma-separated CLOUD:INSTANCE_TYPE or CLOUD:GPU:1, "
                      "e.g. gcp:n2-highcpu-8,gcp:n2-highcpu-16,aws:c7i.4xlarge,gcp:H100:1")
    basis = plan.add_mutually_exclusive_group()
    basis.add_argument("--spot", dest="spot", action="store_true", default=True, help="spot VMs (default)")
    basis.add_argument("--on-demand", dest="spot", action="store_false", help="on-demand VMs")
    plan.add_argument("--out", required=True, metavar="DIR", help="the plan folder to write (tasks + plan.json)")
    plan.add_argument("--bucket", help="the bucket mounted on every VM for the snapshots, by name (default: the "
                      "bucket of the plan DIR held, else cpustudy-PLAN-<random>, a name of this plan's own: bucket "
                      "names are global)")
    plan.add_argument("--name", help="the plan's name, in job names and the bucket folder (default: DIR's name)")
    plan.add_argument("--region", help="pin a region (default: SkyPilot chooses, the catalog's first for prices)")
    a.add_sweep_request(plan, cloud=True)  # what each VM's sweep measures: the same arguments as `sweep`
    plan.add_argument("--gpu-builds", default="jax-here", help="builds on GPU VMs (default: jax-here, Keras on JAX)")
    plan.add_argument("--workdir", help="the cpustudy checkout the VMs install, as a wheel built from it when the "
                      "plan is made (default: this one)")
    plan.add_argument("--prices", metavar="FILE", help="extra price rows (same columns as the catalog)")
    a.add_db(plan)
    plan.set_defaults(func=run_plan)

    for name, text in (("launch", "launch the plan's tasks as managed jobs"),
                       ("status", "show the state of the plan's jobs"),
                       ("down", "cancel the plan's jobs that are still running")):
        c = cmds.add_parser(name, help=text)
        c.add_argument("plan", metavar="DIR", help="the plan folder `cloud plan` wrote")
        c.set_defaults(func={"launch": run_launch, "status": run_status, "down": run_down}[name])
        if name == "launch":
            c.add_argument("--dry-run", action="store_true", help="print what would be launched (each task file, "
                           "job, bucket, estimated cost) and launch nothing (SkyPilot is not started)")

    fetch = cmds.add_parser("fetch", help="bring the plan's result snapshots back and merge them into --db")
    fetch.add_argument("plan", metavar="DIR", help="the plan folder `cloud plan` wrote")
    fetch.add_argument("--from", dest="source",
                       help="the bucket: its local mount or copy, or gs://BUCKET / s3://BUCKET (default: the plan's "
                       "own bucket on its targets' clouds, gs:// for gcp, s3:// for aws)")
    a.add_db(fetch)
    fetch.set_defaults(func=run_fetch)


def workdir_of(given: str | None) -> str | None:
    if given:
        return str(Path(given).resolve())
    root = Path(__file__).resolve().parents[3]
    return str(root) if (root / "pyproject.toml").is_file() else None  # else: installed from PyPI


def run_plan(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import status
    from cpustudy.cloud import plan, tasks

    options = tasks.CloudSweep(a.sweep_request(args), gpu_builds=args.gpu_builds)
    reused = _reused(args, options)
    if reused is not None:
        print(f"plan {reused.name} in {reused.folder} was launched already for this request: reused as it is, "
              "not planned again")
        _show_plan(reused)
        return 0
    with status("building the cpustudy wheel, writing the tasks and checking them with SkyPilot"):
        p = plan.make(args.targets, options, out=args.out, spot=args.spot, bucket=args.bucket, name=args.name,
                      region=args.region, workdir=workdir_of(args.workdir), db=args.db, prices=args.prices)
    _show_plan(p)
    return 0


def _reused(args: argparse.Namespace, options: CloudSweep) -> Plan | None:
    """The plan in --out when it was launched already for this very request (its name and bucket too)."""
    from cpustudy.cloud import plan

    key = plan.request_key(args.targets, options, spot=args.spot, region=args.region)
    found = plan.launched_plan(args.out, key)
    if found is None or (args.bucket and args.bucket != found.bucket) or (args.name and args.name != found.name):
        return None  # planned (or refused, where the folder was launched for another request)
    return found


def _show_plan(p: Plan) -> None:
    from cpustudy.cli.output import print_table
    from cpustudy.cloud import plan

    rows = [{"target": t.target, "vcpus": t.vcpus, "cells": t.cells, "vm_min": round(t.vm_s / 60, 1),
             "usd_per_h": t.rate_usd_per_hour, "cost_usd": None if t.cost_usd is None else round(t.cost_usd, 4),
             "basis": "guess" if t.guessed else "earlier runs", "task": t.task, "check": t.check,
             "price_as_of": t.price_as_of} for t in p.targets]
    print_table(rows, f"cloud plan {p.name} ({'spot' if p.spot else 'on-demand'})")
    for line in p.catalogs:
        print(f"prices: {line}")
    total = p.cost_usd
    fixed = sum(t.startup_s for t in p.targets) / max(1, sum(t.cells for t in p.targets))
    print(f"estimated cost of the plan: {'unknown (a target has no price on this basis)' if total is None else f'{total:.2f} USD'}"
          f" for {sum(t.vm_s for t in p.targets) / 3600:.2f} VM-hours, including {plan.PROVISION_S / 60:.0f} min "
          f"per VM to provision and install (a guess) and {fixed:.0f} s of worker start-up per cell")
    print(f"results bucket: {p.bucket} (mounted on every VM; SkyPilot creates it at launch if it does not exist)")
    print(f"cpustudy on the VMs: {p.wheel} from the plan folder, sha256 {p.wheel_sha256} (checked on each VM "
          "before it is installed)")
    print(f"launch it with: cpustudy cloud launch {p.folder} (--dry-run: what would be launched)")


def _backend() -> SkyBackend:
    from cpustudy.cloud.jobs import SkyBackend

    return SkyBackend()


def run_launch(args: argparse.Namespace) -> int:
    from cpustudy.cloud import jobs, plan

    p = plan.load(args.plan)
    if args.dry_run:
        return _dry_run(p)
    jobs.launch(p, _backend())
    print(f"follow them with: cpustudy cloud status {p.folder}; results: cpustudy cloud fetch {p.folder} "
          f"(from its bucket {p.bucket})")
    return 0


def _dry_run(p: Plan) -> int:
    """What `cloud launch` would start, printed in full; SkyPilot is neither imported nor started."""
    from cpustudy.cloud import jobs

    rows = jobs.would_launch(p)
    print(f"cloud launch {p.folder} --dry-run: {len(rows)} managed job(s) of plan {p.name} "
          f"({'spot' if p.spot else 'on-demand'}) would be launched; nothing was launched")
    for r in rows:
        cost = "no price on this basis" if r["cost_usd"] is None else \
            f"{r['cost_usd']:.4f} USD estimated{' (partly a guess)' if r['guessed'] else ''}"
        again = " (launched from this folder before: skipped while still active)" if r["launched_before"] else ""
        print(f"  {r['job']}: {r['target']}, task {r['task']}, bucket {r['bucket']}, {cost}{again}")
    total = p.cost_usd
    print(f"estimated cost: {'unknown (a target has no price on this basis)' if total is None else f'{total:.2f} USD'}")
    print(f"results bucket: {p.bucket}, folder {p.name}/ (SkyPilot creates it at launch if it does not exist)")
    print(f"cpustudy on the VMs: {p.wheel}, sha256 {p.wheel_sha256} (checked: unchanged since the plan was made)")
    return 0


def run_status(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import print_table
    from cpustudy.cloud import jobs, plan

    from cpustudy.errors import UserError

    p = plan.load(args.plan)
    if not plan.launched(p):  # nothing to ask SkyPilot about: its API server is not started for nothing
        raise UserError(f"plan {p.name} was never launched from {p.folder}: nothing to follow; launch it with "
                        f"`cpustudy cloud launch {p.folder}`")
    print_table(jobs.status(p, _backend()), f"cloud plan {p.name}")
    return 0


def run_down(args: argparse.Namespace) -> int:
    from cpustudy.cloud import jobs, plan

    p = plan.load(args.plan)
    if not plan.launched(p):  # nothing to ask SkyPilot about: its API server is not started for nothing
        print(f"plan {p.name} was never launched from {p.folder}: nothing to stop")
        return 0
    n = jobs.down(p, _backend())
    print(f"{n} job(s) cancelled" if n else "no job of this plan is running")
    return 0


def run_fetch(args: argparse.Namespace) -> int:
    from cpustudy.cloud import jobs, plan

    from cpustudy.store import default_path

    p = plan.load(args.plan)
    db = args.db or default_path()
    if not args.source:
        print(f"from the plan's bucket: {', '.join(jobs.bucket_urls(p))}")
    r = jobs.fetch(p, args.source, db)
    print(f"merged {r['runs']} new run(s) from {r['files']} snapshot(s) into {db}")
    return 0
