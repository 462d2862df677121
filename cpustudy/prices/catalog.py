"""Instance prices: the catalog shipped with cpustudy, a user's price file, and how a result is priced.

The catalog is ``cpustudy/data/prices.csv``: one row per instance type with its on-demand and spot
(preemptible) rate in USD per hour, and, on every row, where the figure comes from (``source``) and the
date it refers to (``as_of``). Rows whose source says "as recalled" or "estimate" were not checked
against the live pricing page; the report prints each row it used, source included.

One cost basis per report (:func:`quote`, :func:`basis_sentence`): spot by default (the study's premise:
preemptible instances), on-demand with ``--on-demand``. A row without a rate on that basis is not priced
rather than priced on the other basis, so spot CPUs are never compared with on-demand GPUs. The one
exception is a study's own pricing (the 2017 study priced its K80 on-demand: it had no preemptible GPU);
such a quote says so in its note.

SkyPilot's price catalog (:mod:`cpustudy.prices.sky`), when SkyPilot has downloaded it to this
machine, comes next: its rows (per region, the zone with the lowest spot price) replace the shipped rows
with the same ``provider``, ``instance_type`` and ``region`` and add the rest; ``Catalog.sky_sources``
and ``Catalog.sky_missing`` say which of its files were read.

``--prices FILE`` then *extends* the catalog and wins over both: a row of FILE with the same
``provider``, ``instance_type`` and ``region`` as a shipped or SkyPilot row replaces it; any other row is
added. FILE has the same columns (``family``
may be left out: it is then the instance type without its size, ``c3-highcpu-8`` -> ``c3-highcpu``,
``c7i.2xlarge`` -> ``c7i``). Lines starting with ``#`` and blank lines are skipped. A malformed row, a
missing column, or a price that is not a positive number is refused with the file and line number. An
optional ``zone`` column names the zone a price was taken in.

Standard library only, so the CLI can validate a price file without pandas.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from cpustudy.errors import UserError
from cpustudy.prices import sky as sky_mod
from cpustudy.prices.model import DEFAULT_REGIONS, Price, Quote, Resources, parse_family, usd
from cpustudy.prices.shipped import read_csv, shipped_rows

# -- the catalog -------------------------------------------------------------------------------------


def _merge(rows: list[Price], more: Iterable[Price]) -> list[Price]:
    """``rows`` with each row of ``more`` replacing the row of the same key, or added after them."""
    index = {r.key: i for i, r in enumerate(rows)}
    rows = list(rows)
    for r in more:
        if r.key in index:
            rows[index[r.key]] = r
        else:
            index[r.key] = len(rows)
            rows.append(r)
    return rows


def _listed(names: list[str], more_with: str, limit: int = 20) -> str:
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} and {len(names) - limit} more ({more_with})"


class Catalog:
    """The shipped prices, SkyPilot's where it has downloaded its catalog, and a user's price file: each
    replaces the rows of the one before with the same provider, instance type and region.

    ``rows`` is read-only once the catalog is made: lookups use indexes built from it.
    """

    def __init__(self, rows: list[Price], sky_sources: list[sky_mod.SkyCatalog] | None = None,
                 sky_missing: list[str] | None = None) -> None:
        self.rows = rows
        #: The SkyPilot catalog files read (each with its path, date, rows and rejected rows).
        self.sky_sources: list[sky_mod.SkyCatalog] = list(sky_sources or [])
        #: The clouds whose SkyPilot catalog was looked for and not found.
        self.sky_missing: list[str] = list(sky_missing or [])
        self._by_key: dict[tuple[str, str, str], Price] = {}
        self._by_name: dict[tuple[str, str], list[Price]] = {}
        self._cpu_by_family: dict[tuple[str, str], list[Price]] = {}
        self._gpu_by_provider: dict[str, list[Price]] = {}
        for r in rows:
            self._by_key[r.key] = r
            self._by_name.setdefault((r.provider, r.instance_type), []).append(r)
            if r.accelerator:
                self._gpu_by_provider.setdefault(r.provider, []).append(r)
            else:
                self._cpu_by_family.setdefault((r.provider, r.family), []).append(r)

    @classmethod
    def load(cls, extra: str | Path | None = None, *, sky: bool = True, sky_root: Path | None = None) -> "Catalog":
        """The shipped rows; then, with ``sky``, SkyPilot's catalogs under ``sky_root`` (default
        :func:`cpustudy.prices.sky.catalog_root`) where present; then the price file ``extra``.
        A missing SkyPilot catalog is no error: it is named in ``sky_missing``."""
        rows = shipped_rows()
        sources: list[sky_mod.SkyCatalog] = []
        missing: list[str] = []
        if sky:
            for cloud in sky_mod.CLOUDS:
                found = sky_mod.read(cloud, sky_root)
                if found is None:
                    missing.append(cloud)
                else:
                    sources.append(found)
                    rows = _merge(rows, found.rows)
        if extra is not None:
            rows = _merge(rows, read_csv(extra))
        return cls(rows, sources, missing)

    def sky_sentence(self) -> str:
        """``prices from SkyPilot's gcp catalog (2026-11-22), aws catalog missing``; empty when SkyPilot's
        catalogs were not looked for."""
        parts = [f"SkyPilot's {s.cloud} catalog ({s.as_of})" for s in self.sky_sources]
        parts += [f"{cloud} catalog missing" for cloud in self.sky_missing]
        if not parts:
            return ""
        if not self.sky_sources:
            return f"no prices from SkyPilot: {', '.join(self.sky_missing)} catalog(s) missing"
        return "prices from " + ", ".join(parts)

    def families(self, provider: str | None = None) -> list[str]:
        return sorted(f"{p}:{f}" for p, f in self._cpu_by_family if provider is None or p == provider)

    def row(self, provider: str, instance_type: str, region: str) -> Price | None:
        """The row of exactly this provider, instance type and region."""
        return self._by_key.get((provider, instance_type, region))

    @staticmethod
    def _in_region(rows: list[Price], region: str | None) -> list[Price]:
        """The rows of ``region``; with no region, those of the provider's default region
        (:data:`DEFAULT_REGIONS`) where there are any, else of the first region listed."""
        if not rows:
            return rows
        if region is None:
            regions = list(dict.fromkeys(r.region for r in rows))
            default = DEFAULT_REGIONS.get(rows[0].provider)
            region = default if default in regions else regions[0]
        return [r for r in rows if r.region == region]

    def _family_rows(self, spec: str, region: str | None) -> list[Price]:
        provider, family = parse_family(spec)
        rows = self._cpu_by_family.get((provider, family), [])
        if not rows:
            known = self.families(provider) or self.families()
            raise UserError(
                f"no CPU instance family {spec!r} in the price catalog: choose one of "
                f"{_listed(known, 'see `cpustudy prices`')} or add rows with --prices"
            )
        chosen = self._in_region(rows, region)
        if not chosen:
            regions = list(dict.fromkeys(r.region for r in rows))
            raise UserError(
                f"instance family {spec!r} has no prices for region {region!r}: it has "
                f"{_listed([repr(r) for r in regions], 'see `cpustudy prices --family ' + family + '`')}"
            )
        return sorted(chosen, key=lambda r: r.vcpus)

    def check_family(self, spec: str, region: str | None = None) -> None:
        self._family_rows(spec, region)

    def cpu_instance(self, spec: str, vcpus: int, region: str | None = None, *, threads_per_core: int | None = None,
                     memory_gib: float | None = None, spot: bool | None = None) -> tuple[Price | None, str]:
        """The family's instance that holds what ``vcpus`` logical CPUs measured, in ``region`` (default: the
        provider's default region, else the first the catalog lists), with a note on anything that is not
        plain.

        * The same cores: ``vcpus`` of a machine with ``threads_per_core`` are converted to the family's own
          vCPUs (:func:`platforms.equivalent_vcpus`: 2 whole cores are 4 vCPUs of a hyperthreaded family);
          None: taken as the family's own vCPUs (a cloud run, an imported study).
        * The memory: with ``memory_gib`` (what the training needs, margin included), the smallest
          instance with enough memory; one whose memory the catalog lacks is taken and said unchecked.
        * The basis: with ``spot`` (True: spot, False: on-demand), a size without a rate on it is passed over for the
          next larger of the same family that has one, said so (never another family: every vCPU count of one
          machine is priced on the same CPU).
        * Else the next larger, said so; None where none is large enough."""
        from cpustudy.prices import platforms

        rows = self._family_rows(spec, region)
        family = f"{rows[0].provider}:{rows[0].family}"
        need, why = platforms.equivalent_vcpus(vcpus, threads_per_core, family)
        notes: list[str] = [why] if why else []
        passed: list[str] = []
        rated = [r for r in rows if spot is not None and quote(r, spot)]
        if spot is not None and rated:
            first = next((r.vcpus for r in rated if r.vcpus >= need), math.inf)
            passed = [r.instance_type for r in rows if need <= r.vcpus < first]
            rows = rated
            notes += [f"no {_basis(spot)} price for {', '.join(passed)} in the catalog: priced as the next larger "
                      "with one"] if passed else []
        big = [r for r in rows if r.vcpus >= need]
        if not big:
            return None, "; ".join(notes + [f"no {rows[-1].family} instance has {need} vCPUs or more "
                                            f"(largest: {rows[-1].instance_type})"])
        fits = big if memory_gib is None else [r for r in big if r.memory_gib is None or r.memory_gib >= memory_gib]
        if not fits:
            return None, "; ".join(notes + [f"no {rows[-1].family} instance with {need} vCPUs or more has the "
                                            f"{memory_gib:.1f} GiB this training needs (largest: "
                                            f"{big[-1].instance_type}, {big[-1].memory_gib:g} GiB)"])
        r = fits[0]
        if r is not big[0]:
            notes.append(f"{big[0].instance_type} has {big[0].memory_gib:g} GiB, less than the {memory_gib:.1f} GiB "
                         f"this training needs: priced as {r.instance_type} ({r.vcpus} vCPUs, {r.memory_gib:g} GiB)")
        elif r.vcpus != need and not passed:
            notes.append(f"no {need}-vCPU {r.family}: priced as the next larger, {r.instance_type} ({r.vcpus} vCPUs)")
        if memory_gib is not None and r.memory_gib is None:
            notes.append(f"{r.instance_type}'s memory is not in the price catalog: the {memory_gib:.1f} GiB this "
                         "training needs is not checked against it")
        return r, "; ".join(notes)

    def instance(self, name: str, region: str | None = None) -> Price:
        """``provider:instance_type`` in ``region`` (if it has none there, or no region is given: in the
        provider's default region, else the first the catalog lists)."""
        provider, sep, itype = name.partition(":")
        rows = self._by_name.get((provider, itype), []) if sep else []
        if not rows:
            gpus = self._gpu_by_provider.get(provider) or [r for rs in self._gpu_by_provider.values() for r in rs]
            known = sorted({r.name for r in gpus})
            raise UserError(
                f"no instance {name!r} in the price catalog: write PROVIDER:INSTANCE_TYPE, e.g. one of "
                f"{_listed(known, 'see `cpustudy prices --gpu`', 12)}, or add it with --prices"
            )
        chosen = self._in_region(rows, region) if region is not None else []
        return (chosen or self._in_region(rows, None))[0]

    def for_resources(self, r: Resources) -> Price:
        """The row that prices a VM with its accelerators: the VM's own row, or for a VM with GPUs, the
        row of that VM with that many of them (attached, ``n1-standard-4+1xT4``, or built in,
        ``a3-highgpu-1g``), whose price is the VM's plus the GPUs' (summed per zone from SkyPilot's
        separate VM and GPU rows, or as the shipped row's source says). Never the bare VM's price for a
        VM that had GPUs: a ``UserError`` names what is missing."""
        rows = [p for p in self._by_name_prefix(r.cloud, r.instance_type)
                if (p.accelerator_count or 0) == r.accelerator_count
                and (not r.accelerator or _same_accelerator(p.accelerator, r.accelerator))]
        if not rows:
            what = f"{r.instance_type} with {r.accelerator_count}x {r.accelerator}" if r.accelerator else r.instance_type
            raise UserError(f"no price for {r.cloud} {what} in the price catalog: add the row with --prices FILE "
                            "(or let SkyPilot download its catalog)")
        chosen = self._in_region(rows, r.region) if r.region is not None else []
        return (chosen or self._in_region(rows, None))[0]

    def _by_name_prefix(self, provider: str, vm: str) -> list[Price]:
        return [p for (prov, itype), rows in self._by_name.items() if prov == provider
                and (itype == vm or itype.startswith(vm + "+")) for p in rows]

    def cost(self, resources: Resources, seconds: float, *, spot: bool, own_pricing_of: str | None = None) -> Cost:
        """What ``seconds`` on ``resources`` cost on one basis: the one function the cloud plan and the
        report price a run with."""
        price = self.for_resources(resources)
        return Cost(resources, price, quote(price, spot, own_pricing_of=own_pricing_of), seconds)

    def select(self, *, provider: str | None = None, family: str | None = None, instance: str | None = None,
               region: str | None = None, all_regions: bool = False, gpu: bool = False) -> list[Price]:
        """The rows ``cpustudy prices`` lists: filtered by provider, family and instance type (each may be
        ``PROVIDER:NAME``), region (default: the row a report without ``--region`` uses, unless
        ``all_regions``) and accelerators; sorted by provider, family, size."""
        fam_provider, family = _split(family)
        inst_provider, instance = _split(instance)
        providers = {p for p in (provider, fam_provider, inst_provider) if p}
        rows = [r for r in self.rows
                if all(r.provider == p for p in providers)
                and (family is None or r.family == family)
                and (instance is None or r.instance_type == instance)
                and (region == r.region if region is not None else all_regions or r is self.instance(r.name))
                and (not gpu or r.accelerator)]
        return sorted(rows, key=lambda r: (r.provider, r.family, r.accelerator_count, r.vcpus, r.instance_type,
                                           r.region))

    def gpu_instance(self, provider: str, accelerator: str, region: str | None = None) -> Price | None:
        """The cheapest single-accelerator instance of ``provider`` whose accelerator is ``accelerator``
        (``A100`` also matches ``A100-80GB``) in ``region`` (if none there, or no region is given: in the
        provider's default region, else the first the catalog lists)."""
        acc = accelerator.upper()
        rows = [
            r for r in self._gpu_by_provider.get(provider, [])
            if r.accelerator_count == 1
            and (r.accelerator.upper() == acc or r.accelerator.upper().startswith(acc + "-"))
        ]
        if not rows:
            return None
        rows = (self._in_region(rows, region) if region is not None else []) or self._in_region(rows, None)
        return min(rows, key=lambda r: (r.on_demand if r.on_demand is not None else r.spot or 0.0))


@dataclass(frozen=True)
class Cost:
    """What a run on some resources costs for some seconds, on one basis, and the row and rate behind it."""

    resources: Resources
    price: Price
    quote: Quote | None  # None: the row has no rate on the asked basis (``unpriced_note`` says why)
    seconds: float

    @property
    def usd(self) -> float | None:
        return None if self.quote is None else usd(self.quote.usd_per_hour, self.seconds)


def _split(text: str | None) -> tuple[str | None, str | None]:
    """``gcp:n2-highcpu`` -> (``gcp``, ``n2-highcpu``); ``n2-highcpu`` -> (None, ``n2-highcpu``)."""
    if text is None:
        return None, None
    provider, sep, name = text.partition(":")
    return (provider.strip(), name.strip()) if sep else (None, text.strip())


def _same_accelerator(row: str, asked: str) -> bool:
    """``H100-80GB`` in a row is the ``H100`` a target or a run names (and ``A100`` matches ``A100-80GB``)."""
    a, b = row.upper(), asked.upper()
    return a == b or a.startswith(b + "-")


def basis_sentence(on_demand: bool) -> str:
    """The cost basis of a report, in one sentence."""
    if on_demand:
        return ("Costs: on-demand prices (--on-demand); spot prices (the study's premise: preemptible "
                "instances) by default")
    return "Costs: spot prices (the study's premise: preemptible instances); on-demand with --on-demand"


def _basis(spot: bool) -> str:
    return "spot" if spot else "on-demand"


def quote(price: Price, spot: bool, *, own_pricing_of: str | None = None) -> Quote | None:
    """The rate of ``price`` on one basis: spot when ``spot``, else on-demand; ``None`` when the row has none.

    A row without a rate on the asked basis is not priced on the other one (see :func:`unpriced_note`),
    except where ``own_pricing_of`` names the study whose own rates these are and which priced the row
    on the other basis itself (the 2017 study's K80, on-demand): then that rate is used and the note says so.
    """
    rate = price.spot if spot else price.on_demand
    if rate is not None:
        return Quote(price, rate, _basis(spot))
    if own_pricing_of is None:
        return None
    other = price.on_demand if spot else price.spot
    kind = _basis(not spot)
    return Quote(price, float(other), kind,  # type: ignore[arg-type]
                 f"{kind} by the study's own pricing: {own_pricing_of} priced {price.instance_type} {kind} "
                 f"(it had no {'spot/preemptible' if spot else 'on-demand'} rate for it)")


def unpriced_note(price: Price, spot: bool) -> str:
    """Why ``quote(price, spot)`` gave no rate, and what to do about it."""
    if spot:
        return (f"no spot price for {price.name} in the catalog: not priced on the spot basis; add one with "
                "--prices FILE or compare on-demand with --on-demand")
    return (f"no on-demand price for {price.name} in the catalog: not priced on the on-demand basis; add one "
            "with --prices FILE or compare spot prices without --on-demand")


#: Accelerator names recognised in a run's software/machine description, most specific first.
ACCELERATORS = ("H200", "H100", "A100", "A10G", "L40S", "L4", "T4", "V100", "P100", "K80")


def detect_accelerator(text: str) -> str | None:
    for name in ACCELERATORS:
        if re.search(rf"(?<![A-Za-z0-9]){name}(?![0-9A-Za-z])", text, flags=re.IGNORECASE):
            return name
    return None
