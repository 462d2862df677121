"""What each configuration of the summary costs: its instance, the rate on the report's one basis, and
time x rate.

* **Price**: the 2017 study's runs use the 2017 rates (``gcp-2017`` rows: preemptible n1-highcpu CPUs,
  on-demand n1-standard-1 + K80). Other CPU results use ``--instance-family`` (default
  ``gcp:n2-highcpu``): the instance with that many vCPUs, or the next larger (``price_note`` says so).
  Other GPU results use ``--gpu-instance``, or the single-GPU instance of the same provider whose
  accelerator appears in the run's software report. One basis: spot rates by default (the study's
  premise), on-demand with ``--on-demand``; a configuration whose instance has no rate on that basis is
  not priced (``price_note`` says why), never priced on the other basis. The exception is the 2017
  study's own pricing: its K80 is on-demand as that study priced it (``price_kind`` and ``price_note``
  say so).
* **Cost** = time x price per second: per epoch, per full training (``cost_usd``), per million samples.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from cpustudy.analysis import pricing
from cpustudy.analysis.runs import vcpus_int
from cpustudy.analysis.studies import STUDY_PRICING, study_title
from cpustudy.errors import UserError

#: The summary's columns that say how a configuration was priced.
PRICE_COLUMNS = ("instance", "region", "price_usd_per_hour", "price_kind", "price_note", "price_source",
                 "price_as_of", "price_origin")


def price_configurations(summary: pd.DataFrame, runs: pd.DataFrame, catalog: pricing.Catalog, *,
                         family: str | None, region: str | None, gpu_instance: str | None,
                         spot: bool) -> pd.DataFrame:
    """Per summary row: the instance that prices it and its rate (``PRICE_COLUMNS``), or only a
    ``price_note`` saying why it is not priced."""
    family = family or pricing.DEFAULT_FAMILY
    out: list[dict[str, Any]] = []
    texts: dict[tuple, str] = {}
    clouds: dict[tuple, set[tuple[str, str | None, str | None]]] = {}
    for r in runs.itertuples(index=False):
        key = (r.study, r.workload, r.device, vcpus_int(r.vcpus), r.build)
        texts[key] = texts.get(key, "") + " ".join(str(x or "") for x in (r.software, r.settings, r.cpu_model))
        instance = getattr(r, "cloud_instance", None)
        if isinstance(instance, str):
            clouds.setdefault(key, set()).add((instance, getattr(r, "cloud_region", None), getattr(r, "cloud_zone", None)))
    for s in summary.itertuples(index=False):
        sp = STUDY_PRICING.get(s.study)
        vcpus = vcpus_int(s.vcpus)
        note = ""
        price: pricing.Price | None
        where = clouds.get((s.study, s.workload, s.device, vcpus, s.build))
        if where:
            # Measured in the cloud: priced as the instance type it ran on, in its region (the zone is
            # named; the catalog prices a region at its cheapest zone).
            instance, run_region, zone = sorted(where, key=str)[0]
            try:
                price = catalog.instance(instance, run_region or region)
            except UserError:
                out.append({"instance": None, "price_note": f"measured on {instance}: not in the price catalog"})
                continue
            note = f"measured on {instance}" + (f" in {zone}" if zone else "") + (
                f" (runs in {len(where)} places; priced as the first)" if len(where) > 1 else "")
        elif s.device == "gpu":
            if sp:
                price = catalog.instance(sp["gpu"])
            elif gpu_instance:
                price = catalog.instance(gpu_instance, region)
            else:
                text = texts.get((s.study, s.workload, s.device, vcpus, s.build), "")
                acc = pricing.detect_accelerator(text)
                provider = pricing.parse_family(family)[0]
                price = catalog.gpu_instance(provider, acc, region) if acc else None
                if price is None:
                    what = f"a {acc}" if acc else "which GPU"
                    raise UserError(
                        f"cannot price the GPU runs of {s.study}: the catalog has no single-GPU {provider} "
                        f"instance for {what}" if acc else
                        f"cannot tell which GPU the {s.study} GPU runs used: pass --gpu-instance "
                        "PROVIDER:INSTANCE_TYPE (e.g. gcp:g2-standard-4 for one L4)"
                    )
                note = f"GPU {acc} (from the run's software report) priced as {price.instance_type}"
        else:
            if vcpus is None:
                out.append({"instance": None, "price_note": "vCPUs unknown: not priced"})
                continue
            price, note = catalog.cpu_instance(sp["cpu"] if sp else family, vcpus, None if sp else region)
        if price is None:
            out.append({"instance": None, "price_note": note + ": not priced"})
            continue
        q = pricing.quote(price, spot=spot, own_pricing_of=study_title(s.study) if sp else None)
        if q is None:  # one basis per report: no rate on it means unpriced, not the other basis's rate
            why = pricing.unpriced_note(price, spot=spot)
            out.append({"instance": None, "price_note": "; ".join(n for n in (note, why) if n)})
            continue
        out.append({
            "instance": price.name,
            "region": price.region,
            "price_usd_per_hour": q.usd_per_hour,
            "price_kind": q.kind,
            "price_note": "; ".join(n for n in (note, q.note) if n),
            "price_source": price.source,
            "price_as_of": price.as_of,
            "price_origin": price.origin,
        })
    return pd.DataFrame(out, index=summary.index)


def add_costs(summary: pd.DataFrame, priced: pd.DataFrame) -> pd.DataFrame:
    """The summary with its prices (from :func:`price_configurations`) and costs: per full training
    (``cost_usd``), per epoch and per million samples."""
    summary = summary.copy()
    for c in PRICE_COLUMNS:
        summary[c] = priced[c] if c in priced else None
    rate = pd.to_numeric(summary["price_usd_per_hour"], errors="coerce") / 3600.0
    summary["cost_usd"] = summary["total_time_s"] * rate
    summary["cost_per_epoch_usd"] = summary["epoch_time_s"] * rate
    summary["cost_per_million_samples_usd"] = rate * 1e6 / summary["samples_per_s"]
    if "time_to_target_s" in summary:
        summary["cost_to_target_usd"] = summary["time_to_target_s"] * rate
    return summary


def prices_used(summary: pd.DataFrame) -> pd.DataFrame:
    """Each instance, region and basis that priced a configuration, once, with its source."""
    used = summary.dropna(subset=["instance"]).drop_duplicates(["instance", "region", "price_kind"])
    return used[["instance", "region", "price_kind", "price_usd_per_hour", "price_source", "price_as_of",
                 "price_origin"]].reset_index(drop=True)
