"""Cloud targets: what ``--targets`` names, resolved to one pinned instance type each.

A benchmark cell is a machine type, never "the cheapest VM with 16 vCPUs": ``gcp:n2-highcpu-8`` and
``aws:c7i.4xlarge`` name one; ``gcp:H100:1`` names a GPU and is pinned here to the catalog's cheapest
single-GPU instance type for it (``a3-highgpu-1g``), so the task and its price agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cpustudy import prices
from cpustudy.errors import UserError
from cpustudy.names import split_list

CLOUDS = ("gcp", "aws", "azure")
_GPU = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")


@dataclass(frozen=True)
class CloudTarget:
    instance_type: str
    accelerator: str | None  # e.g. "H100" (SkyPilot's name), None for a CPU VM
    accelerator_count: int
    price: prices.Price  # the catalog row that prices it

    @property
    def cloud(self) -> str:
        return self.price.provider

    @property
    def vcpus(self) -> int:
        return self.price.vcpus

    @property
    def device(self) -> str:
        return "gpu" if self.accelerator else "cpu"

    @property
    def name(self) -> str:
        """As written in the task's environment and the runs: ``gcp:n2-highcpu-8``, ``gcp:a3-highgpu-1g+H100:1``."""
        gpu = f"+{self.accelerator}:{self.accelerator_count}" if self.accelerator else ""
        return f"{self.cloud}:{self.instance_type}{gpu}"

    @property
    def resources(self) -> prices.Resources:
        """What it runs on, as the catalog prices it (the VM and its accelerators, in the row's region)."""
        return prices.Resources(self.cloud, self.instance_type, self.accelerator or "", self.accelerator_count,
                                self.price.region)

    @property
    def slug(self) -> str:
        """For file and job names: letters, digits and dashes."""
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")


def parse(text: str, catalog: prices.Catalog, region: str | None = None) -> list[CloudTarget]:
    """``--targets``: comma-separated ``CLOUD:INSTANCE_TYPE`` or ``CLOUD:GPU:COUNT``."""
    out = []
    for item in split_list(text, "--targets", "gcp:n2-highcpu-8,gcp:H100:1"):
        out.append(one(item.strip(), catalog, region))
    names = [t.name for t in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UserError(f"--targets: {', '.join(dupes)} named twice: give each target once")
    return out


def one(item: str, catalog: prices.Catalog, region: str | None, flag: str = "--targets") -> CloudTarget:
    """One ``CLOUD:INSTANCE_TYPE`` or ``CLOUD:GPU:COUNT``; ``flag`` names the option in its errors."""
    parts = item.split(":")
    cloud = parts[0].lower()
    if cloud not in CLOUDS or len(parts) not in (2, 3) or not all(parts):
        raise UserError(f"{flag}: {item!r} is not CLOUD:INSTANCE_TYPE or CLOUD:GPU:COUNT (e.g. "
                        "gcp:n2-highcpu-8, aws:c7i.4xlarge, gcp:H100:1)")
    if len(parts) == 3:
        gpu, count_text = parts[1], parts[2]
        if not _GPU.match(gpu) or not count_text.isdigit() or int(count_text) < 1:
            raise UserError(f"{flag}: {item!r}: write the GPU as NAME:COUNT, e.g. gcp:H100:1")
        count = int(count_text)
        if count != 1:
            raise UserError(f"{flag}: {item!r}: the study's GPU baseline is one GPU; give {cloud}:{gpu}:1")
        row = catalog.gpu_instance(cloud, gpu, region)
        if row is None:
            raise UserError(f"{flag}: no single-{gpu} instance of {cloud} in the price catalog"
                            f"{_missing(catalog, cloud)}: name the instance type instead ({cloud}:INSTANCE_TYPE) "
                            "or add it with --prices FILE")
        return CloudTarget(row.instance_type.split("+", 1)[0], gpu.upper(), count, row)
    instance_type = parts[1]
    rows = [r for r in catalog.rows if r.provider == cloud and r.instance_type.split("+", 1)[0] == instance_type]
    if region is not None:
        rows = [r for r in rows if r.region == region] or rows
    if not rows:
        import difflib

        names = sorted({r.instance_type.split("+", 1)[0] for r in catalog.rows if r.provider == cloud})
        close = difflib.get_close_matches(instance_type, names, n=1, cutoff=0.6)
        hint = f"did you mean {cloud}:{close[0]}? " if close else ""
        raise UserError(f"{flag}: {cloud}:{instance_type} is not in the price catalog{_missing(catalog, cloud)}: "
                        f"{hint}(`cpustudy prices --provider {cloud}` lists what is; add one with --prices FILE)")
    row = rows[0]
    if row.accelerator:
        acc = row.accelerator.split("-", 1)[0].upper()
        return CloudTarget(instance_type, acc, row.accelerator_count or 1, row)
    return CloudTarget(instance_type, None, 0, row)


def _missing(catalog: prices.Catalog, cloud: str) -> str:
    """", whose SkyPilot gcp catalog is missing (~/.sky/...)" when it is."""
    if cloud not in catalog.sky_missing:
        return ""
    from cpustudy.prices import sky

    return (f", whose SkyPilot {cloud} catalog is missing ({sky.shown(sky.catalog_path(cloud))}: "
            "any online `sky` command, e.g. `sky show-gpus`, downloads it)")
