"""Prices from SkyPilot's catalog: the per-zone ``vms.csv`` files SkyPilot keeps on this machine.

SkyPilot (``pip install skypilot``) downloads its price catalogs to
``${SKY_RUNTIME_DIR:-$HOME}/.sky/catalogs/v8/<cloud>/vms.csv`` whenever one of its commands runs online
(``sky show-gpus``, ``sky check``, ...) and refreshes them every 7 hours; the file's modification time
is the day it was downloaded. This module reads those files (it never imports ``sky``, never downloads
anything, and never copies the catalog anywhere: it carries no licence) and turns them into
:class:`cpustudy.prices.model.Price` rows, one per instance type (and accelerator) and region:

* **Zone.** SkyPilot lists each zone; spot prices vary by zone. A row takes the zone with the lowest
  spot price of its region (named in ``zone`` and in ``source``) and the region's on-demand price.
* **GCP.** VM rows carry the VM price only; a GPU's price is a row of its own with an empty
  ``InstanceType``. Machine types with built-in GPUs (``a2-highgpu-1g`` = one A100, ``a3-highgpu-1g``
  = one H100, ``g2-standard-4`` = one L4, ...) are priced as VM row + GPU row of the same zone, on-demand
  and spot alike; ``n1-standard-4+1xT4`` is ``n1-standard-4`` with one T4 attached. A machine type with
  built-in GPUs this module does not know is left out (counted in ``rejected``), never priced without
  its GPUs.
* **AWS.** One row per instance and zone, GPU included in ``Price``. Local Zones (``use1-atl2-az1``: a
  city's zone of us-east-1, opted into separately, often with much lower spot prices) are left out: a
  region's price is that of its own availability zones (``use1-az4``).
* **Anomalies** are left out and counted, one reason per instance and region, in ``rejected``: a price
  that is not a positive number, a placeholder-looking price (over 1000 USD/h), spot above on-demand,
  vCPUs missing or fractional (shared-core types). A row without ``SpotPrice`` keeps its on-demand price.

Standard library only; a 100,000-row catalog reads in well under a second.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, NamedTuple

from cpustudy.prices.model import Price, family_of, number

#: The clouds whose catalogs are read, in the order they are read.
CLOUDS = ("gcp", "aws")
#: SkyPilot's catalog schema version this module reads (SkyPilot 0.14).
SCHEMA = "v8"
#: Any price above this (USD per hour) is taken for a placeholder, not a price.
PLACEHOLDER_USD_PER_HOUR = 1000.0

#: GCP machine types whose GPUs are part of the machine type: (accelerator, count) as SkyPilot names them.
GCP_BUILT_IN_GPUS: dict[str, tuple[str, int]] = {
    **{f"a2-highgpu-{n}g": ("A100", n) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": ("A100", 16),
    **{f"a2-ultragpu-{n}g": ("A100-80GB", n) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": ("H100", n) for n in (1, 2, 4, 8)},
    **{f"g2-standard-{v}": ("L4", 1) for v in (4, 8, 12, 16, 32)},
    "g2-standard-24": ("L4", 2),
    "g2-standard-48": ("L4", 4),
    "g2-standard-96": ("L4", 8),
}
#: GCP machine-type prefixes whose GPUs are built in: one not in GCP_BUILT_IN_GPUS is left out.
GCP_GPU_FAMILIES = ("a2-", "a3-", "a4-", "a4x-", "g2-", "g4-")
#: GCP instances made of a VM with GPUs attached, named as the shipped catalog names them:
#: name -> (VM machine type, accelerator, count).
GCP_ATTACHED_GPUS: dict[str, tuple[str, str, int]] = {
    "n1-standard-4+1xT4": ("n1-standard-4", "T4", 1),
    "n1-standard-8+1xT4": ("n1-standard-8", "T4", 1),
}

_GCP_COLUMNS = ("InstanceType", "vCPUs", "MemoryGiB", "AcceleratorName", "AcceleratorCount", "Region",
                "AvailabilityZone", "Price", "SpotPrice")
_AWS_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price",
                "SpotPrice", "Region", "AvailabilityZone")


@dataclass
class SkyCatalog:
    """One SkyPilot ``vms.csv`` as price rows."""

    cloud: str
    path: Path
    as_of: str  # the file's modification date, YYYY-MM-DD: when SkyPilot downloaded it
    rows: list[Price]
    rejected: list[str] = field(default_factory=list)  # one short reason per instance and region left out

    def describe(self) -> str:
        """``gcp catalog ~/.sky/catalogs/v8/gcp/vms.csv (2026-11-22, 1234 rows, 5 rejected)``."""
        return (f"{self.cloud} catalog {shown(self.path)} ({self.as_of}, {len(self.rows)} rows, "
                f"{len(self.rejected)} rejected)")


def catalog_root() -> Path:
    """``${SKY_RUNTIME_DIR:-$HOME}/.sky/catalogs/v8``, read at call time."""
    base = os.environ.get("SKY_RUNTIME_DIR") or os.path.expanduser("~")
    return Path(base) / ".sky" / "catalogs" / SCHEMA


def catalog_path(cloud: str, root: Path | None = None) -> Path:
    return (root if root is not None else catalog_root()) / cloud / "vms.csv"


def shown(path: Path) -> str:
    """``path`` with the home folder written ``~``."""
    home = os.path.expanduser("~")
    text = str(path)
    if home not in ("", "/", "~") and (text == home or text.startswith(home.rstrip("/") + "/")):
        return "~" + text[len(home.rstrip("/")):]
    return text


def read(cloud: str, root: Path | None = None) -> SkyCatalog | None:
    """The catalog of ``cloud`` (``gcp`` or ``aws``) under ``root`` (default :func:`catalog_root`), or
    ``None`` when SkyPilot has not downloaded it. A file that cannot be read is a catalog without rows
    whose ``rejected`` says why."""
    if cloud not in CLOUDS:
        raise ValueError(f"no SkyPilot catalog reader for {cloud!r}: one of {', '.join(CLOUDS)}")
    path = catalog_path(cloud, root)
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        return None
    except OSError as exc:
        return SkyCatalog(cloud, path, "", [], [f"{shown(path)}: cannot read it ({exc.strerror})"])
    as_of = dt.date.fromtimestamp(mtime).isoformat()
    catalog = SkyCatalog(cloud, path, as_of, [])
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                catalog.rejected.append(f"{shown(path)}: empty file")
                return catalog
            needed = _GCP_COLUMNS if cloud == "gcp" else _AWS_COLUMNS
            missing = [c for c in needed if c not in header]
            if missing:
                catalog.rejected.append(
                    f"{shown(path)}: header lacks {', '.join(missing)}: not SkyPilot's {SCHEMA} schema")
                return catalog
            col = {c: header.index(c) for c in needed}
            if cloud == "gcp":
                _gcp(reader, col, catalog)
            else:
                _aws(reader, col, catalog)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        catalog.rows = []
        catalog.rejected.append(f"{shown(path)}: cannot read it ({exc})")
    return catalog


# -- one zone's offer --------------------------------------------------------------------------------

_Offer = tuple[str, float | None, float | None]  # zone, on-demand, spot


def _positive(text: str, what: str) -> float | None | str:
    """A positive finite number, ``None`` when empty, or the reason it is not one."""
    value = number(text)
    return f"{what} {value}" if isinstance(value, str) else None if value is None else float(value)


def _price(text: str) -> float | None | str:
    """A price, ``None`` when empty, or the reason it is not one."""
    value = _positive(text, "price")
    if isinstance(value, float) and value > PLACEHOLDER_USD_PER_HOUR:
        return f"price {text.strip()} USD/h looks like a placeholder"
    return value


def _offer(zone: str, price: str, spot: str) -> _Offer | str:
    """One zone's on-demand and spot price, or why the row is left out."""
    od = _price(price)
    sp = _price(spot)
    for value in (od, sp):
        if isinstance(value, str):
            return f"zone {zone}: {value}"
    assert not isinstance(od, str) and not isinstance(sp, str)
    if od is None and sp is None:
        return f"zone {zone}: no price"
    if od is not None and sp is not None and sp > od:
        return f"zone {zone}: spot {sp:g} above on-demand {od:g}"
    return zone, od, sp


def _vcpus(text: str) -> int | str:
    value = _positive(text, "vCPUs")
    if value is None:
        return "vCPUs missing"
    if isinstance(value, str):
        return value
    if value != int(value):
        return f"fractional vCPUs ({text.strip()}: a shared-core type)"
    return int(value)


def _memory(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _count(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        return 0
    return int(value) if math.isfinite(value) and value > 0 else 0


def _best(offers: list[_Offer]) -> _Offer:
    """The zone with the lowest spot price (none when no zone has one) and the region's on-demand
    price (the lowest of its zones, should they differ)."""
    zone, spot = "", None
    for z, _, s in offers:
        if s is not None and (spot is None or s < spot):
            zone, spot = z, s
    demands = [od for _, od, _ in offers if od is not None]
    return zone, (min(demands) if demands else None), spot


def _source(path: Path, zone: str, spot: float | None, detail: str = "") -> str:
    where = f"zone {zone}" if spot is not None else "on-demand only: no spot price in the catalog"
    return f"SkyPilot catalog {shown(path)} ({where}{'; ' + detail if detail else ''})"


def _row(catalog: SkyCatalog, itype: str, vcpus: int, memory: float | None, accelerator: str, count: int,
         region: str, zone: str, on_demand: float | None, spot: float | None, detail: str = "") -> Price:
    return Price(
        provider=catalog.cloud,
        instance_type=itype,
        family=family_of(itype),
        vcpus=vcpus,
        memory_gib=memory,
        accelerator=accelerator,
        accelerator_count=count,
        region=region,
        on_demand=on_demand,
        spot=spot,
        source=_source(catalog.path, zone, spot, detail),
        as_of=catalog.as_of,
        origin="skypilot",
        zone=zone,
    )


class _Groups:
    """Offers per (name, region), with the first reason each group had a row left out."""

    def __init__(self) -> None:
        self.offers: dict[tuple[str, str], list[_Offer]] = {}
        self.specs: dict[tuple[str, str], tuple[int, float | None, str, int]] = {}
        self.bad: dict[tuple[str, str], list[str]] = {}

    def reject(self, key: tuple[str, str], reason: str) -> None:
        self.bad.setdefault(key, []).append(reason)

    def reasons(self, cloud: str, kept: set[tuple[str, str]]) -> list[str]:
        out = []
        for (name, region), reasons in self.bad.items():
            fate = "partly kept" if (name, region) in kept else "left out"
            more = f" (and {len(reasons) - 1} more zone(s))" if len(reasons) > 1 else ""
            out.append(f"{cloud} {name} in {region or 'no region'}: {reasons[0]}{more}; {fate}")
        return out


class _Line(NamedTuple):
    """One line of a ``vms.csv``, by column name (both clouds' schemas have these columns)."""

    itype: str
    vcpus: str
    memory: str
    accelerator: str
    n_accelerators: str
    region: str
    zone: str
    price: str
    spot: str


def _lines(reader: Iterator[list[str]], col: dict[str, int]) -> Iterator[_Line]:
    """The catalog's lines with the fields this module reads, stripped; short lines skipped."""
    names = ("InstanceType", "vCPUs", "MemoryGiB", "AcceleratorName", "AcceleratorCount", "Region",
             "AvailabilityZone", "Price", "SpotPrice")
    index = [col[n] for n in names]
    width = max(index) + 1
    for fields in reader:
        if len(fields) >= width:
            yield _Line(*(fields[i].strip() for i in index))


def _vm_offer(groups: "_Groups", line: _Line) -> tuple[int, _Offer] | None:
    """A VM line's vCPUs and offer, or None (its reason recorded with its instance and region)."""
    key = (line.itype, line.region)
    vcpus = _vcpus(line.vcpus)
    if isinstance(vcpus, str):
        groups.reject(key, vcpus)
        return None
    offer = _offer(line.zone, line.price, line.spot)
    if isinstance(offer, str):
        groups.reject(key, offer)
        return None
    return vcpus, offer


def _gcp(reader: Iterator[list[str]], col: dict[str, int], catalog: SkyCatalog) -> None:
    vms = _Groups()
    gpus: dict[tuple[str, int, str], _Offer] = {}  # (accelerator, count, zone) -> offer
    for line in _lines(reader, col):
        if not line.itype:  # a GPU's own row: priced per zone, summed with the VM it is attached to
            offer = _offer(line.zone, line.price, line.spot) if line.accelerator else "no accelerator"
            if not isinstance(offer, str):
                gpus[(line.accelerator, _count(line.n_accelerators), line.zone)] = offer
            continue
        got = _vm_offer(vms, line)
        if got is not None:
            key = (line.itype, line.region)
            vms.offers.setdefault(key, []).append(got[1])
            vms.specs.setdefault(key, (got[0], _memory(line.memory), "", 0))
    attached: dict[str, list[tuple[str, str, int]]] = {}
    for name, (vm, acc, n) in GCP_ATTACHED_GPUS.items():
        attached.setdefault(vm, []).append((name, acc, n))
    kept: set[tuple[str, str]] = set()
    for key, offers in vms.offers.items():
        _gcp_rows(catalog, vms, key, offers, gpus, attached.get(key[0], []), kept)
    catalog.rejected.extend(vms.reasons(catalog.cloud, kept))


def _gcp_rows(catalog: SkyCatalog, vms: "_Groups", key: tuple[str, str], offers: list[_Offer],
              gpus: dict[tuple[str, int, str], _Offer], attached: list[tuple[str, str, int]],
              kept: set[tuple[str, str]]) -> None:
    """One GCP machine type's rows in one region: the VM alone (unless its GPUs are built in), and the
    VM with its GPUs, priced as VM row + GPU row of the same zone."""
    itype, region = key
    vcpus, memory, _, _ = vms.specs[key]
    built_in = GCP_BUILT_IN_GPUS.get(itype)
    if built_in is None and itype.startswith(GCP_GPU_FAMILIES):
        vms.reject(key, "GPUs built in, but which is not known here: not priced without them")
        return
    if built_in is None:
        zone, od, spot = _best(offers)
        catalog.rows.append(_row(catalog, itype, vcpus, memory, "", 0, region, zone, od, spot))
        kept.add(key)
    for name, acc, n in ([(itype, *built_in)] if built_in else []) + attached:
        summed: list[_Offer] = []
        for zone, od, spot in offers:
            g = gpus.get((acc, n, zone))
            if g is None:
                continue
            total_od = None if od is None or g[1] is None else round(od + g[1], 6)
            total_spot = None if spot is None or g[2] is None else round(spot + g[2], 6)
            if total_od is not None or total_spot is not None:
                summed.append((zone, total_od, total_spot))
        if not summed:  # a machine type sold without its GPUs is an anomaly; a VM GPUs attach to is not
            if built_in is not None and name == itype:
                vms.reject(key, f"no {n}x {acc} price in the zones of {itype}: not priced without it")
            continue
        zone, od, spot = _best(summed)
        detail = f"{itype} VM + {n}x {acc} rows summed"
        catalog.rows.append(_row(catalog, name, vcpus, memory, acc, n, region, zone, od, spot, detail))
        kept.add((name, region))


#: An AWS availability-zone id of a Local Zone (``use1-atl2-az1``), not of the region itself (``use1-az4``).
AWS_LOCAL_ZONE = re.compile(r"^[a-z]+\d+-[a-z]+\d+[a-z]?-az\d+$")


def _aws(reader: Iterator[list[str]], col: dict[str, int], catalog: SkyCatalog) -> None:
    groups = _Groups()
    for line in _lines(reader, col):
        if not line.itype or AWS_LOCAL_ZONE.match(line.zone):
            continue
        got = _vm_offer(groups, line)
        if got is None:
            continue
        key = (line.itype, line.region)
        groups.offers.setdefault(key, []).append(got[1])
        if key not in groups.specs:
            count = _count(line.n_accelerators) if line.accelerator else 0
            groups.specs[key] = (got[0], _memory(line.memory), line.accelerator, max(count, 1) if line.accelerator else 0)
    for key, offers in groups.offers.items():
        itype, region = key
        vcpus, memory, acc, count = groups.specs[key]
        zone, od, spot = _best(offers)
        catalog.rows.append(_row(catalog, itype, vcpus, memory, acc, count, region, zone, od, spot))
    catalog.rejected.extend(groups.reasons(catalog.cloud, set(groups.offers)))
