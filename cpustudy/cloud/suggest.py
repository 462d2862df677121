"""The way that does measure a grid this machine cannot: the ``cpustudy cloud plan`` of the same sweep on
VMs of this CPU's cloud family, one per vCPU count, with its estimated cost. Called by ``sweep``'s command
line when the sweep refuses vCPU counts beyond this machine (``measure.sweep.BeyondThisMachine``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from cpustudy.errors import UserError
from cpustudy.measure.request import SweepRequest
from cpustudy.names import and_list

if TYPE_CHECKING:
    from cpustudy.prices.catalog import Catalog

#: The plan folder the suggested ``cloud plan`` writes (its name is the plan's: lowercase, digits, dashes).
CLOUD_PLAN_OUT = "sweep-cloud"


def cloud_family(info: Mapping[str, Any], sizes: Sequence[int],
                 catalog: Catalog) -> tuple[str, dict[int, str], bool]:
    """The cloud family whose VMs run ``info``'s CPU (``prices.platforms``), as a report prices this machine's
    runs, and its instance of each of ``sizes`` that the catalog prices: (family, {vCPUs: instance}, whether the
    family is the default because none is known to run this CPU or none of those is priced). Among several,
    the one with the most of the sizes, then the cheapest spot: the sweep's cells on one platform, as here."""
    from cpustudy import prices
    from cpustudy.prices import platforms

    def sizes_of(family: str) -> tuple[dict[int, str], float] | None:
        try:
            rows = [catalog.cpu_instance(family, v)[0] for v in sizes]
        except UserError:  # a family the price catalog does not have
            return None
        exact = [(v, p) for v, p in zip(sizes, rows) if p is not None and p.vcpus == v]
        rates = [q.usd_per_hour if (q := prices.quote(p, spot=True)) else float("inf") for _, p in exact]
        return {v: p.name for v, p in exact}, sum(rates)

    known = [(f, found) for f in platforms.families_for(info) if (found := sizes_of(f)) is not None]
    if known:
        family, (instances, _) = min(known, key=lambda k: (-len(k[1][0]), k[1][1]))
        return family, instances, False
    found = sizes_of(prices.DEFAULT_FAMILY)
    return prices.DEFAULT_FAMILY, found[0] if found else {}, True


def cloud_way(request: SweepRequest, vcpus: Sequence[int], info: Mapping[str, Any], db: str | None) -> str:
    """One line: the ``cpustudy cloud plan`` command that measures the same grid on VMs of this CPU's cloud
    family (:func:`cloud_family`), one VM of each size sweeping its own vCPUs, and what it would cost spot
    (``cloud.plan.quote``: estimated as ``cloud plan`` does, nothing written). A size the family has no VM of
    is left out, said so; where the estimate cannot be made, the line says why."""
    import shlex

    from cpustudy.prices import Catalog

    if request.device != "cpu":  # a GPU VM is a target of its own, whatever its host's vCPUs
        return ("or measure it on a cloud GPU VM: `cpustudy cloud plan --targets CLOUD:GPU:1` (e.g. gcp:H100:1) "
                "estimates and writes the plan")
    try:
        catalog = Catalog.load()
        family, instances, default = cloud_family(info, vcpus, catalog)
    except UserError as exc:  # an unreadable price catalog: the refusal above still stands
        return f"(no cloud plan suggested: {exc})"
    whose = (f"the default family {family} (no cloud family is known to run this CPU, or none is priced)"
             if default else f"{family}, the cloud family of this CPU")
    if not instances:
        return (f"no VM of {whose} has {and_list(vcpus)} vCPUs in the price catalog (`cpustudy prices --family "
                f"{family}` lists its sizes)")
    targets = ",".join(instances.values())
    argv = ["--targets", targets, "--out", CLOUD_PLAN_OUT, *request.cloud_plan_argv(),
            *(["--db", db] if db else [])]
    command = f"cpustudy cloud plan {shlex.join(argv)}"
    missing = [v for v in vcpus if v not in instances]
    left_out = f"; no {and_list(missing)}-vCPU VM of {family}: left out" if missing else ""
    return f"or measure it on VMs of {whose}, one per size: {command} ({estimate_text(targets, request, db)}{left_out})"


def estimate_text(targets: str, request: SweepRequest, db: str | None) -> str:
    """``est. $0.42 spot`` for the cloud plan of ``request`` on ``targets`` (:func:`cpustudy.cloud.plan.quote`),
    or why there is no estimate."""
    from cpustudy.cloud import plan as cloud_plan
    from cpustudy.cloud.tasks import CloudSweep

    sweep = CloudSweep(replace(request, vcpus=None, device="cpu", oversubscribe=False, tuned=False))
    try:
        quoted = cloud_plan.quote(targets, sweep, spot=True, db=db)
    except UserError as exc:
        return f"est. unavailable: {exc}"
    unpriced = [name for name, usd, _ in quoted if usd is None]
    if unpriced:
        return f"est. unavailable: no spot price for {', '.join(unpriced)} in the catalog"
    usd = sum(u for _, u, _ in quoted if u is not None)
    guess = ", partly a guess from FLOPs" if any(g for _, _, g in quoted) else ""
    return f"est. ${usd:.2f} spot{guess}" if usd >= 0.01 else f"est. ${usd:.4f} spot{guess}"
