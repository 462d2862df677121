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

``--prices FILE`` *extends* the catalog: a row of FILE with the same ``provider``, ``instance_type`` and
``region`` as a shipped row replaces it; any other row is added. FILE has the same columns (``family``
may be left out: it is then the instance type without its size, ``c3-highcpu-8`` -> ``c3-highcpu``,
``c7i.2xlarge`` -> ``c7i``). Lines starting with ``#`` and blank lines are skipped. A malformed row, a
missing column, or a price that is not a positive number is refused with the file and line number.

Standard library only, so the CLI can validate a price file without pandas.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterable

from cpustudy.errors import UserError

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
    origin: str = "catalog"  # "catalog" or the price file it came from

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
    """``c3-highcpu-8`` -> ``c3-highcpu``; ``c7i.2xlarge`` -> ``c7i``; otherwise the name itself."""
    if "." in instance_type:
        return instance_type.split(".", 1)[0]
    m = re.match(r"^(.*?)-\d+$", instance_type)
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
    )


def shipped_rows() -> list[Price]:
    text = resources.files("cpustudy").joinpath("data/prices.csv").read_text(encoding="utf-8")
    return parse_csv(text.splitlines(), "cpustudy/data/prices.csv", "catalog")


# -- the catalog -------------------------------------------------------------------------------------


class Catalog:
    """The shipped prices, extended (and overridden row by row) by a user's price file."""

    def __init__(self, rows: list[Price]) -> None:
        self.rows = rows

    @classmethod
    def load(cls, extra: str | Path | None = None) -> "Catalog":
        rows = shipped_rows()
        if extra is not None:
            user = read_csv(extra)
            index = {r.key: i for i, r in enumerate(rows)}
            for r in user:
                if r.key in index:
                    rows[index[r.key]] = r
                else:
                    index[r.key] = len(rows)
                    rows.append(r)
        return cls(rows)

    def families(self) -> list[str]:
        return sorted({f"{r.provider}:{r.family}" for r in self.rows if not r.accelerator})

    def _family_rows(self, spec: str, region: str | None) -> list[Price]:
        provider, family = parse_family(spec)
        rows = [r for r in self.rows if r.provider == provider and r.family == family and not r.accelerator]
        if not rows:
            raise UserError(
                f"no CPU instance family {spec!r} in the price catalog: choose one of "
                f"{', '.join(self.families())} or add rows with --prices"
            )
        regions = list(dict.fromkeys(r.region for r in rows))
        chosen = region if region is not None else regions[0]
        rows = [r for r in rows if r.region == chosen]
        if not rows:
            raise UserError(
                f"instance family {spec!r} has no prices for region {region!r}: it has "
                f"{', '.join(repr(r) for r in regions)}"
            )
        return sorted(rows, key=lambda r: r.vcpus)

    def check_family(self, spec: str, region: str | None = None) -> None:
        self._family_rows(spec, region)

    def cpu_instance(self, spec: str, vcpus: int, region: str | None = None) -> tuple[Price | None, str]:
        """The family's instance with ``vcpus`` vCPUs, or the next larger (said so in the note)."""
        rows = self._family_rows(spec, region)
        for r in rows:
            if r.vcpus >= vcpus:
                note = "" if r.vcpus == vcpus else (
                    f"no {vcpus}-vCPU {r.family}: priced as the next larger, {r.instance_type} ({r.vcpus} vCPUs)"
                )
                return r, note
        return None, f"no {r.family} instance has {vcpus} vCPUs or more (largest: {rows[-1].instance_type})"

    def instance(self, name: str, region: str | None = None) -> Price:
        """``provider:instance_type``."""
        provider, sep, itype = name.partition(":")
        rows = [r for r in self.rows if sep and r.provider == provider and r.instance_type == itype]
        if region is not None:
            rows = [r for r in rows if r.region == region] or rows
        if not rows:
            known = ", ".join(sorted(r.name for r in self.rows if r.accelerator))
            raise UserError(
                f"no instance {name!r} in the price catalog: write PROVIDER:INSTANCE_TYPE, e.g. one of "
                f"{known}, or add it with --prices"
            )
        return rows[0]

    def gpu_instance(self, provider: str, accelerator: str, region: str | None = None) -> Price | None:
        """The cheapest single-accelerator instance of ``provider`` whose accelerator is ``accelerator``."""
        acc = accelerator.upper()
        rows = [
            r for r in self.rows
            if r.provider == provider and r.accelerator_count == 1
            and (r.accelerator.upper() == acc or r.accelerator.upper().startswith(acc + "-"))
        ]
        if region is not None:
            rows = [r for r in rows if r.region == region] or rows
        if not rows:
            return None
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
