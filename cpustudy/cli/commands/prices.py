"""``cpustudy prices``: the instance prices reports use, with where each comes from and its date."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from cpustudy.cli.args import Subparsers, add_format

if TYPE_CHECKING:
    from cpustudy.prices.catalog import Catalog

#: The table's columns, most important first: a narrow terminal drops the last ones.
TABLE_COLUMNS = ["instance", "region", "on_demand", "spot", "as_of", "source", "vcpus", "accelerator", "zone",
                 "memory_gib", "origin"]
#: CSV and JSON: a price file's columns (so the output can be edited and given back with --prices),
#: then the zone and where each row came from.
FILE_COLUMNS = ["provider", "instance_type", "family", "vcpus", "memory_gib", "accelerator", "accelerator_count",
                "region", "on_demand_usd_per_hour", "spot_usd_per_hour", "source", "as_of", "zone", "origin"]


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "prices",
        help="the instance prices reports use: shipped, from SkyPilot's catalog, or from --prices FILE",
        description="List the prices `cpustudy report` would use, each with its source and date. The shipped "
        "catalog comes first; SkyPilot's price catalog, when SkyPilot has downloaded it to this machine "
        "(~/.sky/catalogs/v8/{gcp,aws}/vms.csv), replaces shipped rows of the same provider, instance type "
        "and region and adds the rest; a --prices FILE wins over both.",
    )
    p.add_argument("--provider", help="only this provider, e.g. gcp, aws, gcp-2017")
    p.add_argument("--family", metavar="[PROVIDER:]FAMILY", help="only this instance family, e.g. n2-highcpu")
    p.add_argument("--instance", metavar="[PROVIDER:]INSTANCE_TYPE", help="only this instance type, e.g. a3-highgpu-1g")
    p.add_argument("--region", help="only this region, e.g. us-central1 (default: each instance's row in the "
                   "region reports price it in: us-central1 on gcp, us-east-1 on aws, else the first listed)")
    p.add_argument("--all-regions", action="store_true", help="every region's row of each instance")
    p.add_argument("--gpu", action="store_true", help="only instances with accelerators (GPUs)")
    p.add_argument("--prices", metavar="FILE",
                   help="CSV of prices that extends the catalog, as in `cpustudy report --prices`")
    p.add_argument("--no-skypilot", dest="skypilot", action="store_false",
                   help="leave SkyPilot's catalog out: the shipped prices (and --prices FILE) only")
    p.add_argument("--rejected", action="store_true",
                   help="list the rows of SkyPilot's catalog left out as anomalies, with the reason, instead")
    add_format(p)
    p.set_defaults(func=run)


def _usd(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def sky_line(catalog: Catalog, looked: bool) -> str:
    """The first line: which SkyPilot catalogs priced the list, or where they were looked for."""
    from cpustudy.prices import sky

    if not looked:
        return "SkyPilot's catalog not read (--no-skypilot): shipped prices only"
    found = "; ".join(f"SkyPilot {s.describe()}" for s in catalog.sky_sources)
    where = ", ".join(sky.shown(sky.catalog_path(c)) for c in catalog.sky_missing)
    get = "running any `sky` command online (e.g. `sky show-gpus`) downloads it"
    if not catalog.sky_sources:
        return f"no SkyPilot catalog found (looked for {where}): shipped prices only; {get}"
    if catalog.sky_missing:
        return f"{found}; none at {where} ({get})"
    return found


def family_hint(catalog: Catalog, provider: str | None, asked: str) -> str:
    """For a --family that matches no row: the families that start with it (``n4``: ``gcp:n4-highcpu``), else
    the nearest names, as the flag to give; empty when none is near or the family is known (another flag
    left nothing)."""
    import difflib

    fam_provider, _, name = asked.rpartition(":")
    providers = {p for p in (provider, fam_provider) if p}
    families = sorted({f"{r.provider}:{r.family}" for r in catalog.rows if all(r.provider == p for p in providers)})
    if any(f.split(":", 1)[1] == name.strip() for f in families):
        return ""  # the family is known: another flag left nothing
    near = [f for f in families if f.split(":", 1)[1].startswith(name.strip())] or \
        difflib.get_close_matches(name.strip(), [f.split(":", 1)[1] for f in families], n=3)
    near = [f for f in families if f in near or f.split(":", 1)[1] in near]
    if not near:
        return ""
    return f"did you mean {' or '.join(f'--family {f}' for f in near[:6])}" + (
        f" (and {len(near) - 6} more)" if len(near) > 6 else "") + "?"


def run(args: argparse.Namespace) -> int:
    from cpustudy.prices import Catalog
    from cpustudy.cli.output import emit_rows, say
    from cpustudy.errors import UserError

    catalog = Catalog.load(args.prices, sky=args.skypilot)
    table = args.format == "table"
    first = sky_line(catalog, args.skypilot)
    say(first, err=not table)  # CSV and JSON stay machine-readable on stdout
    if args.rejected:
        rejected = [{"cloud": s.cloud, "file": str(s.path), "reason": reason}
                    for s in catalog.sky_sources for reason in s.rejected]
        if table and not rejected:
            say("no row of SkyPilot's catalog was rejected" if catalog.sky_sources else "nothing was read")
            return 0
        return emit_rows(args, rejected, ["cloud", "reason", "file"], "rows of SkyPilot's catalog left out")

    rows = catalog.select(provider=args.provider, family=args.family, instance=args.instance, region=args.region,
                          all_regions=args.all_regions, gpu=args.gpu)
    if not rows:
        flags = " ".join(f"--{k} {v}" for k, v in (("provider", args.provider), ("family", args.family),
                                                    ("instance", args.instance), ("region", args.region)) if v)
        flags += " --gpu" if args.gpu else ""
        hint = family_hint(catalog, args.provider, args.family) if args.family else ""
        raise UserError(f"no price in the catalog matches {flags.strip()}: {hint or 'see `cpustudy prices` without them'}")
    if not table:
        out = [{c: getattr(r, c, None) for c in FILE_COLUMNS}
               | {"on_demand_usd_per_hour": r.on_demand, "spot_usd_per_hour": r.spot, "origin": r.origin}
               for r in rows]
        return emit_rows(args, out, FILE_COLUMNS, "")
    out = [{
        "instance": r.name,
        "region": r.region,
        "on_demand": _usd(r.on_demand),
        "spot": _usd(r.spot),
        "source": r.source,
        "as_of": r.as_of,
        "vcpus": r.vcpus,
        "accelerator": f"{r.accelerator_count}x {r.accelerator}" if r.accelerator else "",
        "zone": r.zone,
        "memory_gib": r.memory_gib,
        "origin": r.origin,
    } for r in rows]
    where = "" if args.region or args.all_regions else " (each in the region reports use; see --all-regions)"
    return emit_rows(args, out, TABLE_COLUMNS, f"{len(out)} price(s), USD per hour{where}")
