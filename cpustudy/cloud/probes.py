"""The cloud candidates of ``cpustudy compare`` as a plan of probe jobs: the same capped epochs on each instance
type, costed before anything is written and held to ``--probe-budget``; nothing is launched. Planned from
above the comparison (the CLI calls it before measuring), so that measuring never reaches up into the cloud.

A comparison is run again until its cloud probes are fetched, so planning them is repeatable: the plan keeps
the key of the comparison's cloud request (all its cloud candidates and the probe's sweep, however many of them
still lack runs), and the same request finds its own plan folder and bucket again. A plan launched already is
reused as it is (planning it again would orphan its jobs); one never launched is planned again in its folder
(the candidates that still lack runs only), its bucket kept. A different request never plans over launched
probes: it gets a folder of its own beside them, named by its key, and says so."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from cpustudy.errors import UserError
from cpustudy.measure.compare import PROBE_EPOCHS, Candidate, Planned, speed_samples

if TYPE_CHECKING:
    from cpustudy.cloud.plan import Plan
    from cpustudy.cloud.tasks import CloudSweep


def plan_probes(p: Planned, say: Callable[[str], None]) -> tuple[str | None, float | None]:
    """The cloud candidates' probe plan (written only when its estimate is within ``--probe-budget``, or a plan
    of this request launched already), or (None, None) when every cloud candidate already has the speed runs
    it needs."""
    from cpustudy.cloud import plan as plan_mod
    from cpustudy.store import Store, default_path

    req = p.request
    cloud = [c for c in p.candidates if c.kind == "cloud"]
    if not cloud:
        return None, None
    db = Path(req.db) if req.db else default_path()
    ref = p.reference
    need = cloud
    if db.is_file():
        with Store.read(db) as store:
            stored = store.runs(status="ok")
            need = [c for c in cloud if len(speed_samples(store, c, ref, p.fingerprint, stored)) < req.repeats]
    if not need:
        return None, None
    key = plan_mod.request_key(_targets(cloud), _options(p, cloud), spot=req.spot, region=None)
    folder = _folder(Path(req.probe_plan or "cpustudy-probes"), key, say)
    reused = plan_mod.launched_plan(folder, key)
    if reused is not None:
        say(f"compare: the cloud probes of this request were launched already from {folder} (bucket "
            f"{reused.bucket}): reused, not planned again; fetch their runs with `cpustudy cloud fetch {folder}`")
        return str(folder), reused.cost_usd
    earlier = plan_mod.find(folder)
    targets, options = _targets(need), _options(p, need)
    quotes = plan_mod.quote(targets, options, spot=req.spot, db=db if db.is_file() else None, prices=req.prices)
    total = _within_budget(quotes, req.probe_budget_usd, req.spot)
    plan = plan_mod.make(targets, options, out=folder, spot=req.spot, bucket=None, name=_plan_name(folder.name),
                         db=db if db.is_file() else None, prices=req.prices, workdir=req.workdir, key=key)
    guessed = any(g for _, _, g in quotes)
    say(f"compare: cloud probes {_how(earlier, key, folder)} for {targets}: "
        f"{plan.cost_usd if plan.cost_usd is not None else total:.3g} USD estimated"
        f"{' (partly a guess from FLOPs)' if guessed else ''}, bucket {plan.bucket}; nothing launched")
    return str(folder), total


def _targets(candidates: Sequence[Candidate]) -> str:
    """The cloud candidates' targets as ``--candidates`` named them (a name shown with its build is not parsed
    back), each once."""
    return ",".join(dict.fromkeys(c.asked or c.name for c in candidates))


def _options(p: Planned, candidates: Sequence[Candidate]) -> CloudSweep:
    """The probes' sweep on each of ``candidates``' VMs: the comparison's capped epochs (``p.cap``) in a fresh
    worker, the CPU candidates' builds."""
    from cpustudy.cloud import tasks
    from cpustudy.measure.request import SweepRequest

    req = p.request
    ref = p.reference
    cpu_builds = ",".join(dict.fromkeys(c.build for c in candidates if c.device == "cpu")) or p.builds[0]
    request = SweepRequest(workloads=req.workload, builds=cpu_builds, vcpus=None, repeats=req.repeats,
                           epochs=PROBE_EPOCHS, steps_per_epoch=p.cap,
                           batch_sizes=(req.batch_size,) if req.batch_size else (),
                           precisions=(req.precision,), data=req.data, validation="study",
                           augment=ref.options.get("augment") if ref.options else None, timeout=req.timeout)
    return tasks.CloudSweep(request, gpu_builds=req.gpu_builds)


def _within_budget(quotes: list[tuple[str, float | None, bool]], budget: float | None, spot: bool) -> float:
    """The probes' estimated total, refused above ``--probe-budget`` before anything is written."""
    unknown = [n for n, usd, _ in quotes if usd is None]
    total = sum(usd for _, usd, _ in quotes if usd is not None)
    if budget is not None:
        if unknown:
            raise UserError(f"--probe-budget: {', '.join(unknown)} has no {'spot' if spot else 'on-demand'} "
                            "rate in the catalog, so its probe cannot be held to a budget: drop it or add its price")
        if total > budget:
            cheapest = min(usd for _, usd, _ in quotes if usd is not None)
            raise UserError(f"--probe-budget {budget:g} USD: the cloud probes are estimated at "
                            f"{total:.3g} USD (the cheapest alone {cheapest:.3g} USD, mostly the VM's start-up): "
                            "raise the budget or drop candidates; nothing was written or launched")
    return total


def _folder(base: Path, key: str, say: Callable[[str], None]) -> Path:
    """Where this request's probe plan goes: ``base``, unless it holds probes launched for another request
    (never planned over); then a folder beside it named by the key, the same each time this request comes."""
    from cpustudy.cloud import plan as plan_mod

    earlier = plan_mod.find(base)
    if earlier is None or earlier.key == key or not plan_mod.launched(earlier):
        return base
    other = base.with_name(f"{_plan_name(base.name)[:31].rstrip('-')}-{key[:8]}")
    say(f"compare: {base} holds cloud probes launched for another request (left as they are): this request's "
        f"probes are planned in {other}")
    return other


def _how(earlier: Plan | None, key: str, folder: Path) -> str:
    """How the plan came to be in ``folder``: new there, planned again for the same request, or for another."""
    if earlier is None:
        return f"planned in {folder}"
    if earlier.key == key:
        return f"planned again in {folder} (the same request, not launched yet: its folder and bucket kept)"
    return f"planned anew in {folder} for a changed request (the plan there was never launched; its bucket kept)"


def _plan_name(text: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40]
    return name or "compare-probes"
