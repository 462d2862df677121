"""The price files: the rows shipped with cpustudy (``cpustudy/data/prices.csv``) and a user's
``--prices FILE``, each row checked, a problem named with file and line. Standard library only."""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path
from typing import Iterable

from cpustudy.errors import UserError
from cpustudy.prices.model import NAME_RE, COLUMNS, REQUIRED, Price, family_of, number


def _number(path: str, line: int, column: str, text: str, *, integer: bool = False,
            optional: bool = False, positive: bool = True) -> float | int | None:
    value = number(text, integer=integer, positive=positive)
    if isinstance(value, str):
        raise UserError(f"{path}:{line}: {column} {value}")
    if value is None and not optional:
        raise UserError(f"{path}:{line}: {column} is empty: give a number")
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
        if not NAME_RE.match(value):
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
    return parse_csv(text.splitlines(), "cpustudy/data/prices.csv", "shipped")
