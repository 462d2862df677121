"""The cloud candidates of ``cpustudy compare`` as a plan of probe jobs: the same capped epochs on each instance
type, costed before anything is written and held to ``--probe-budget``; nothing is launched. Planned from
above the comparison (the CLI calls it before measuring), so that measuring never reaches up into the cloud."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from cpustudy.errors import UserError
from cpustudy.measure.compare import PROBE_EPOCHS, Planned, speed_samples


def plan_probes(p: Planned, say: Callable[[str], None]) -> tuple[str | None, float | None]:
    """The cloud candidates' probe plan (written only when its estimate is within ``--probe-budget``), or
    (None, None) when every cloud candidate already has the speed runs it needs."""
    from cpustudy.cloud import plan as plan_mod
    from cpustudy.cloud import tasks
    from cpustudy.measure.request import SweepRequest
    from cpustudy.store import Store, default_path

    req = p.request
    cloud = [c for c in p.candidates if c.kind == "cloud"]
    if not cloud:
        return None, None
    db = Path(req.db) if req.db else default_path()
    ref = p.convergence[0].config
    need = cloud
    if db.is_file():
        with Store.read(db) as store:
            stored = store.runs(status="ok")
            need = [c for c in cloud if len(speed_samples(store, c, ref, p.fingerprint, stored)) < req.repeats]
    if not need:
        return None, None
    targets = ",".join(dict.fromkeys(c.name.split(" ")[0] for c in need))
    cpu_builds = ",".join(dict.fromkeys(c.build for c in need if c.device == "cpu")) or p.builds[0]
    steps = p.cap  # the local probes' capped epochs
    request = SweepRequest(workloads=req.workload, builds=cpu_builds, vcpus=None, repeats=req.repeats,
                           epochs=PROBE_EPOCHS, steps_per_epoch=steps,
                           batch_sizes=(req.batch_size,) if req.batch_size else (),
                           precisions=(req.precision,), data=req.data, validation="study",
                           augment=ref.options.get("augment") if ref.options else None, timeout=req.timeout)
    options = tasks.CloudSweep(request, gpu_builds=req.gpu_builds)
    quotes = plan_mod.quote(targets, options, spot=req.spot, db=db if db.is_file() else None, prices=req.prices)
    unknown = [n for n, usd, _ in quotes if usd is None]
    total = sum(usd for _, usd, _ in quotes if usd is not None)
    if req.probe_budget_usd is not None:
        if unknown:
            raise UserError(f"--probe-budget: {', '.join(unknown)} has no {'spot' if req.spot else 'on-demand'} "
                            "rate in the catalog, so its probe cannot be held to a budget: drop it or add its price")
        if total > req.probe_budget_usd:
            cheapest = min(usd for _, usd, _ in quotes if usd is not None)
            raise UserError(f"--probe-budget {req.probe_budget_usd:g} USD: the cloud probes are estimated at "
                            f"{total:.3g} USD (the cheapest alone {cheapest:.3g} USD, mostly the VM's start-up): "
                            "raise the budget or drop candidates; nothing was written or launched")
    folder = Path(req.probe_plan or "cpustudy-probes")  # written only now, within the budget
    plan = plan_mod.make(targets, options, out=folder, spot=req.spot, bucket=None, name=_plan_name(folder.name),
                         db=db if db.is_file() else None, prices=req.prices, workdir=req.workdir)
    guessed = any(g for _, _, g in quotes)
    say(f"compare: cloud probes planned in {folder} for {targets}: {plan.cost_usd if plan.cost_usd is not None else total:.3g} "
        f"USD estimated{' (partly a guess from FLOPs)' if guessed else ''}; nothing launched")
    return str(folder), total


def _plan_name(text: str) -> str:
    import re

    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40]
    return name or "compare-probes"
