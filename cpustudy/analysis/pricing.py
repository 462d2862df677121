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

SkyPilot's price catalog (:mod:`cpustudy.analysis.skycatalog`), when SkyPilot has downloaded it to this
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

import csv
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from cpustudy.errors import UserError

if TYPE_CHECKING:
    from cpustudy.analysis.skycatalog import SkyCatalog

COLUMNS = (
    "provider",
    "instance_type",
    "family",
    "vcpus",
    "memory_gib",
    "accelerator",
    "accelerator_count",
    "region",
    "on_demand_usd_per_hour",
    "spot_usd_per_hour",
    "source",
    "as_of",
)
REQUIRED = tuple(c for c in COLUMNS if c != "family")

#: How cpustudy's own CPU results are priced when ``--instance-family`` is not given.
DEFAULT_FAMILY = "gcp:n2-highcpu"
#: The region a provider's prices are taken from when no ``--region`` is given (and the catalog has it;
#: otherwise the first region the catalog lists).
DEFAULT_REGIONS = {"gcp": "us-central1", "aws": "us-east-1"}

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


@dataclass(frozen=True)
class Price:
    """One instance type and its hourly rates."""

    provider: str
    instance_type: str
    family: str
    vcpus: int
    memory_gib: float | None
    accelerator: str
    accelerator_count: int
    region: str
    on_demand: float | None
    spot: float | None
    source: str
    as_of: str
    origin: str = "catalog"  # "catalog" (shipped), "skypilot", or the price file it came from
    zone: str = ""  # the zone the spot price was taken in, where the source names one

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.provider, self.instance_type, self.region)

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.instance_type}"


@dataclass(frozen=True)
class Quote:
    """The rate used for one configuration, and why."""

    price: Price
    usd_per_hour: float
    kind: str  # "spot" | "on-demand"
    note: str = ""

    @property
    def usd_per_second(self) -> float:
        return self.usd_per_hour / 3600.0


def family_of(instance_type: str) -> str:
    """``c3-highcpu-8`` -> ``c3-highcpu``; ``a2-highgpu-1g`` -> ``a2-highgpu``; ``c7i.2xlarge`` -> ``c7i``;
    otherwise the name itself."""
    if "." in instance_type:
        return instance_type.split(".", 1)[0]
    m = re.match(r"^(.*?)-\d+g?$", instance_type)
    return m.group(1) if m else instance_type


def parse_family(text: str) -> tuple[str, str]:
    """``gcp:c3-highcpu`` -> (``gcp``, ``c3-highcpu``)."""
    provider, sep, family = text.partition(":")
    if not sep or not provider.strip() or not family.strip():
        raise UserError(
            f"--instance-family {text!r} is not PROVIDER:FAMILY: write it like gcp:c3-highcpu or aws:c7i"
        )
    return provider.strip(), family.strip()


# -- reading -----------------------------------------------------------------------------------------


def _number(path: str, line: int, column: str, text: str, *, integer: bool = False,
            optional: bool = False, positive: bool = True) -> float | int | None:
    text = text.strip()
    if not text:
        if optional:
            return None
        raise UserError(f"{path}:{line}: {column} is empty: give a number")
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "whole number" if integer else "number"
        raise UserError(f"{path}:{line}: {column} {text!r} is not a {kind}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"{path}:{line}: {column} {text!r} is not a finite number")
    if value < 0:
        raise UserError(f"{path}:{line}: {column} {text!r} is negative")
    if positive and value == 0:
        raise UserError(f"{path}:{line}: {column} {text!r} must be greater than zero")
    return value


def read_csv(path: str | Path, origin: str | None = None) -> list[Price]:
    """The rows of one price file, each checked; a problem is a ``UserError`` naming file and line."""
    path = Path(path)
    label = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UserError(f"{label}: no such price file") from None
    except IsADirectoryError:
        raise UserError(f"{label} is a folder, not a price file (CSV)") from None
    except UnicodeDecodeError:
        raise UserError(f"{label}: not a UTF-8 text file: give a CSV price file") from None
    except OSError as exc:
        raise UserError(f"{label}: cannot read it ({exc.strerror})") from None
    return parse_csv(text.splitlines(), label, origin or label)


def parse_csv(lines: Iterable[str], label: str, origin: str) -> list[Price]:
    reader = csv.reader(lines)
    header: list[str] | None = None
    rows: list[Price] = []
    seen: dict[tuple[str, str, str], int] = {}
    try:
        for fields in reader:
            line = reader.line_num
            if not fields or all(not f.strip() for f in fields) or fields[0].lstrip().startswith("#"):
                continue
            if header is None:
                header = [f.strip() for f in fields]
                missing = [c for c in REQUIRED if c not in header]
                if missing:
                    raise UserError(
                        f"{label}:{line}: price file header lacks column(s) {', '.join(missing)}: the "
                        f"columns are {','.join(COLUMNS)}"
                    )
                dupes = sorted({c for c in header if header.count(c) > 1})
                if dupes:
                    raise UserError(f"{label}:{line}: column(s) {', '.join(dupes)} appear twice in the header")
                continue
            if len(fields) != len(header):
                raise UserError(
                    f"{label}:{line}: {len(fields)} fields where the header has {len(header)}: "
                    "quote fields that contain commas"
                )
            row = dict(zip(header, fields))
            price = _row(row, label, line, origin)
            if price.key in seen:
                raise UserError(
                    f"{label}:{line}: {price.provider} {price.instance_type} in {price.region or 'no region'} "
                    f"is already on line {seen[price.key]}"
                )
            seen[price.key] = line
            rows.append(price)
    except csv.Error as exc:
        raise UserError(f"{label}:{reader.line_num}: not valid CSV ({exc})") from None
    if header is None:
        raise UserError(f"{label}: empty price file: it needs a header line ({','.join(COLUMNS)}) and rows")
    return rows


def _row(row: dict[str, str], label: str, line: int, origin: str) -> Price:
    provider = row["provider"].strip()
    instance_type = row["instance_type"].strip()
    for column, value in (("provider", provider), ("instance_type", instance_type)):
        if not value:
            raise UserError(f"{label}:{line}: {column} is empty")
        if not _NAME_RE.match(value):
            raise UserError(f"{label}:{line}: {column} {value!r} has characters a name cannot have")
    family = (row.get("family") or "").strip() or family_of(instance_type)
    vcpus = int(_number(label, line, "vcpus", row["vcpus"], integer=True))  # type: ignore[arg-type]
    memory = _number(label, line, "memory_gib", row["memory_gib"], optional=True, positive=False)
    accelerator = row["accelerator"].strip()
    count = _number(label, line, "accelerator_count", row["accelerator_count"], integer=True,
                    optional=True, positive=False)
    count = int(count or 0)
    if accelerator and count == 0:
        count = 1
    if count and not accelerator:
        raise UserError(f"{label}:{line}: accelerator_count is {count} but accelerator is empty")
    on_demand = _number(label, line, "on_demand_usd_per_hour", row["on_demand_usd_per_hour"], optional=True)
    spot = _number(label, line, "spot_usd_per_hour", row["spot_usd_per_hour"], optional=True)
    if on_demand is None and spot is None:
        raise UserError(
            f"{label}:{line}: no price: give on_demand_usd_per_hour, spot_usd_per_hour or both"
        )
    source = row["source"].strip()
    as_of = row["as_of"].strip()
    if not source:
        raise UserError(f"{label}:{line}: source is empty: name where the price comes from")
    if not as_of:
        raise UserError(f"{label}:{line}: as_of is empty: give the date the price refers to")
    return Price(
        provider=provider,
        instance_type=instance_type,
        family=family,
        vcpus=vcpus,
        memory_gib=None if memory is None else float(memory),
        accelerator=accelerator,
        accelerator_count=count,
        region=row["region"].strip(),
        on_demand=None if on_demand is None else float(on_demand),
        spot=None if spot is None else float(spot),
        source=source,
        as_of=as_of,
        origin=origin,
        zone=(row.get("zone") or "").strip(),
    )


def shipped_rows() -> list[Price]:
    text = resources.files("cpustudy").joinpath("data/prices.csv").read_text(encoding="utf-8")
    return parse_csv(text.splitlines(), "cpustudy/data/prices.csv", "catalog")


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

    def __init__(self, rows: list[Price], sky_sources: list[SkyCatalog] | None = None,
                 sky_missing: list[str] | None = None) -> None:
        self.rows = rows
        #: The SkyPilot catalog files read (each with its path, date, rows and rejected rows).
        self.sky_sources: list[SkyCatalog] = list(sky_sources or [])
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
        :func:`cpustudy.analysis.skycatalog.catalog_root`) where present; then the price file ``extra``.
        A missing SkyPilot catalog is no error: it is named in ``sky_missing``."""
        rows = shipped_rows()
        sources: list[SkyCatalog] = []
        missing: list[str] = []
        if sky:
            from cpustudy.analysis import skycatalog

            for cloud in skycatalog.CLOUDS:
                found = skycatalog.read(cloud, sky_root)
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

    def cpu_instance(self, spec: str, vcpus: int, region: str | None = None) -> tuple[Price | None, str]:
        """The family's instance with ``vcpus`` vCPUs, or the next larger (said so in the note), in
        ``region`` (default: the provider's default region, else the first the catalog lists)."""
        rows = self._family_rows(spec, region)
        for r in rows:
            if r.vcpus >= vcpus:
                note = "" if r.vcpus == vcpus else (
                    f"no {vcpus}-vCPU {r.family}: priced as the next larger, {r.instance_type} ({r.vcpus} vCPUs)"
                )
                return r, note
        return None, f"no {r.family} instance has {vcpus} vCPUs or more (largest: {rows[-1].instance_type})"

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
