"""The price model: a catalog row (``Price``), the rate used for a configuration (``Quote``), what a
run ran on (``Resources``: a VM and its accelerators), names of families, and the one number parser
every price source uses. Standard library only."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

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
#: An instance must hold a training's measured peak resident memory with this margin, plus a reserve for the
#: OS and its agents (a guest kernel and the cloud's agents take 0.3-0.5 GiB on a small VM; the peak counts
#: the framework's shared libraries, which the kernel can page out): an assumption, stated wherever it
#: decides an instance.
MEMORY_MARGIN = 1.2
MEMORY_RESERVE_GIB = 0.5


def memory_need_gib(peak_rss_bytes: Any) -> float | None:
    """The memory an instance needs for a training whose worker peaked at ``peak_rss_bytes`` resident:
    peak x :data:`MEMORY_MARGIN` + :data:`MEMORY_RESERVE_GIB`; None where no peak was recorded."""
    try:
        peak = float(peak_rss_bytes)
    except (TypeError, ValueError):
        return None
    if not peak > 0:  # NaN too
        return None
    return peak / 2**30 * MEMORY_MARGIN + MEMORY_RESERVE_GIB
#: The region a provider's prices are taken from when no ``--region`` is given (and the catalog has it;
#: otherwise the first region the catalog lists).
DEFAULT_REGIONS = {"gcp": "us-central1", "aws": "us-east-1"}

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


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
    origin: str = "shipped"  # "shipped" (cpustudy/data/prices.csv), "skypilot", or the price file it came from
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


@dataclass(frozen=True)
class Resources:
    """What a run ran on, as the price catalog names it: a VM of ``cloud`` and the accelerators attached
    to it or built into it (``gcp`` ``n1-standard-4`` + 1 ``T4``), in ``region`` (None: the provider's
    default). The plan writes it into a cloud job's environment and the run stores it, so the report
    prices the run exactly as the plan did."""

    cloud: str
    instance_type: str
    accelerator: str = ""
    accelerator_count: int = 0
    region: str | None = None

    @property
    def name(self) -> str:
        """``gcp:n1-standard-4+T4:1``, ``gcp:n2-highcpu-8``."""
        gpu = f"+{self.accelerator}:{self.accelerator_count}" if self.accelerator else ""
        return f"{self.cloud}:{self.instance_type}{gpu}"

    def as_dict(self) -> dict[str, Any]:
        return {"cloud": self.cloud, "instance_type": self.instance_type, "accelerator": self.accelerator,
                "accelerator_count": self.accelerator_count, "region": self.region}

    @classmethod
    def of_run(cls, where: Mapping[str, Any]) -> "Resources | None":
        """What a cloud run (its stored ``cloud`` context) ran on: from the resources its job carried
        (``priced``), or, for runs stored before that, from the target name (``gcp:n1-standard-4+T4:1``),
        accelerators included; None when it names no instance type."""
        priced = where.get("priced")
        if isinstance(priced, Mapping) and priced.get("instance_type"):
            try:
                count = int(priced.get("accelerator_count") or 0)
            except (TypeError, ValueError):
                return None
            return cls(str(priced["cloud"]), str(priced["instance_type"]), str(priced.get("accelerator") or ""),
                       count, where.get("region") or priced.get("region"))
        if not where.get("instance_type") or not where.get("cloud"):
            return None
        acc, _, n = str(where.get("accelerators") or "").partition(":")
        if acc and n and not n.isdigit():
            return None  # a damaged record names no countable accelerators: not priced, never as the bare VM
        return cls(str(where["cloud"]), str(where["instance_type"]), acc, int(n or 1) if acc else 0,
                   where.get("region"))


def usd(usd_per_hour: Any, seconds: Any) -> Any:
    """What ``seconds`` cost at ``usd_per_hour`` (numbers or pandas columns alike): the one place time
    becomes money."""
    return seconds * (usd_per_hour / 3600.0)


def number(text: str, *, integer: bool = False, positive: bool = True) -> float | int | None | str:
    """A price file's or a catalog's number: the value, ``None`` when empty, or why it is not one (not
    a number, not finite, negative, zero where it must be positive). Every source reads with this."""
    text = text.strip()
    if not text:
        return None
    try:
        value: float | int = int(text) if integer else float(text)
    except ValueError:
        return f"{text!r} is not a {'whole number' if integer else 'number'}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{text!r} is not a finite number"
    if value < 0:
        return f"{text!r} is negative"
    if positive and value == 0:
        return f"{text!r} must be greater than zero"
    return value
