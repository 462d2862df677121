"""A local run priced as the CPU it ran on: the cloud families whose documented CPU platform is the machine's
(:mod:`cpustudy.prices.platforms`, sourced and dated), the cheapest of them that the catalog prices."""

from __future__ import annotations

from typing import Any, Mapping

from cpustudy.errors import UserError
from cpustudy.prices import platforms
from cpustudy.prices.catalog import Catalog, quote
from cpustudy.prices.model import DEFAULT_FAMILY, Price


def own_family(catalog: Catalog, info: Mapping[str, Any], vcpus: int, region: str | None,
               spot: bool, memory_gib: float | None = None) -> tuple[Price | None, str]:
    """A local run priced as the CPU it ran on: the cloud families whose documented CPU platform is the
    machine's (``prices.platforms``), the cheapest of them on the report's basis that holds the same cores
    (``Catalog.cpu_instance`` with the machine's threads per core) and ``memory_gib`` (or the next larger);
    where none matches, or none is priced, the default family, said so in the note."""
    platform = platforms.platform_of(info)
    cpu = str(info.get("cpu_model") or "this CPU")
    tpc = info.get("threads_per_core") if isinstance(info.get("threads_per_core"), int) else None

    def sized(family: str) -> tuple[Price | None, str]:
        return catalog.cpu_instance(family, vcpus, region, threads_per_core=tpc, memory_gib=memory_gib, spot=spot)

    if platform is None:
        price, note = sized(DEFAULT_FAMILY)
        return price, "; ".join(n for n in (f"{cpu}: no cloud family known to run this CPU, priced as the default "
                                            f"{DEFAULT_FAMILY}", note) if n)
    best: tuple[float, Price, str] | None = None
    unpriced, too_small = [], []
    for family in platform.families:
        try:
            price, note = sized(family)
        except UserError:  # a family the catalog does not price
            unpriced.append(family)
            continue
        if price is None:
            too_small.append(note)
        q = quote(price, spot=spot) if price is not None else None
        if price is not None and q is not None and (best is None or q.usd_per_hour < best[0]):
            best = (q.usd_per_hour, price, note)
    runs_in = (f"{platform.name} ({platform.sure}; by {platform.how}) runs in {', '.join(platform.families)} by the providers' "
               f"documentation (`cpustudy machine` names the sources, read {platform.as_of})")
    if best is None:
        price, note = sized(DEFAULT_FAMILY)
        why = "none of them holds it: " + "; ".join(too_small) if too_small else "none of them in the price catalog"
        return price, "; ".join(n for n in (f"{runs_in}, {why}: priced as the default {DEFAULT_FAMILY}", note) if n)
    missing = f" ({', '.join(unpriced)} not in the price catalog)" if unpriced else ""
    return best[1], "; ".join(n for n in (f"priced as its own CPU: {runs_in}; the cheapest of them priced: "
                                          f"{best[1].provider}:{best[1].family}{missing}", best[2]) if n)


def machine_of(run: Mapping[str, Any]) -> dict[str, Any]:
    """What a stored run's machine record says of its CPU (model, vendor, architecture, flags, CPUID family and
    model): its ``machine_info`` JSON, with the run's own columns where that lacks them."""
    import json

    info: dict[str, Any] = {}
    raw = run.get("machine_info")
    if isinstance(raw, str):
        try:
            info = dict(json.loads(raw))
        except (ValueError, TypeError):
            info = {}
    for k in ("cpu_model", "cpu_vendor", "arch"):
        if not info.get(k) and isinstance(run.get(k), str):
            info[k] = run[k]
    return info
