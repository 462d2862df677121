"""What each configuration of the summary costs: its instance, the rate on the report's one basis, and
time x rate.

* **Price**: the 2017 study's runs use the 2017 rates (``gcp-2017`` rows: preemptible n1-highcpu CPUs,
  on-demand n1-standard-1 + K80). Other CPU results use ``--instance-family`` where given, else the cloud
  family that runs their own CPU (``prices.own_family``: the cheapest of the families documented to run it; where
  none is known or priced, ``gcp:n2-highcpu``, said so): the instance with that many vCPUs, or the next
  larger (``price_note`` says so).
  Other GPU results use ``--gpu-instance``, or the single-GPU instance of the same provider whose
  accelerator appears in the run's software report. One basis: spot rates by default (the study's
  premise), on-demand with ``--on-demand``; a configuration whose instance has no rate on that basis is
  not priced (``price_note`` says why), never priced on the other basis. The exception is the 2017
  study's own pricing: its K80 is on-demand as that study priced it (``price_kind`` and ``price_note``
  say so).
* **Cost** = time x price per second: per epoch, per full training (``cost_usd``), per million samples.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import pandas as pd

from cpustudy import prices
from cpustudy.analysis.runs import vcpus_int
from cpustudy.analysis.frames import Row, ids, number, rows
from cpustudy.analysis.studies import study, study_title
from cpustudy.errors import UserError

#: The summary's columns that say how a configuration was priced. ``priced_by``: ``cloud`` (the resources
#: its cloud job ran on), ``family`` (the family's VM with that many vCPUs or, said by ``priced_vcpus``,
#: the next larger), ``gpu`` (a GPU instance) or ``study`` (an imported study's own rates).
PRICE_COLUMNS = ("instance", "region", "price_usd_per_hour", "price_kind", "price_note", "price_source",
                 "price_as_of", "price_origin", "priced_by", "priced_vcpus")


#: Where a cloud run ran: the resources its job carried (or, where they cannot be read, its instance type), its zone.
Where = tuple[prices.Resources | str, object]


def _run_facts(summary_row: Row, runs: Mapping[int, Row]) -> tuple[str, list[Where], Mapping[str, object],
                                                                float | None]:
    """A summary row's runs (by its ``run_ids``: the summary's own grouping, no key of this module's; ``runs``: the
    rows of ``load_runs`` by id): their software text (where a GPU's name is read), the resources each cloud run ran
    on (``prices.Resources``) with its zone where the frame has them (read with ``getattr``), the first run's machine,
    and the memory an instance needs for them (``prices.memory_need_gib`` of the largest peak)."""
    mine = [runs[i] for i in ids(summary_row.run_ids) if i in runs]
    text = " ".join(str(x or "") for r in mine for x in (r.software, r.settings, r.cpu_model))
    where: list[Where] = []
    for r in mine:
        res, inst, zone = (getattr(r, f"cloud_{k}", None) for k in ("resources", "instance", "zone"))
        if isinstance(res, prices.Resources):
            where.append((res, zone))
        elif isinstance(inst, str):  # its resources unreadable: its instance type
            where.append((inst, zone))  # neither (None): its record is unreadable
    return text, where, prices.machine_of(mine[0]._asdict()) if mine else {}, memory_need([r._asdict() for r in mine])


def memory_need(runs: Iterable[Mapping[str, object]]) -> float | None:
    """The memory an instance needs for the trainings in ``runs``: from their largest recorded peak."""
    needs = [n for n in (prices.memory_need_gib(r.get("peak_rss_bytes")) for r in runs) if n is not None]
    return max(needs) if needs else None


def cpu_price(catalog: prices.Catalog, family: str | None, machine: Mapping[str, object], vcpus: int,
              region: str | None, spot: bool, memory_gib: float | None) -> tuple[prices.Price | None, str]:
    """A CPU run measured on a machine of one's own: the instance of ``family`` where one was asked for, else of the
    cheapest family that runs its CPU (``prices.own_family``), at the vCPUs that hold the same cores and with the
    ``memory_gib`` the training needs."""
    if family:
        tpc = machine.get("threads_per_core")
        return catalog.cpu_instance(family, vcpus, region, memory_gib=memory_gib, spot=spot,
                                    threads_per_core=tpc if isinstance(tpc, int) and tpc > 0 else None)
    return prices.own_family(catalog, machine, vcpus, region, spot, memory_gib)


def _cloud_price(catalog: prices.Catalog, where: list[Where]) -> tuple[prices.Price | None, str]:
    """A configuration measured in cloud jobs: priced as the resources its job carried (the plan's own:
    the VM and its accelerators), in the region it ran in; the zone is named."""
    distinct = sorted({(r, z) for r, z in where}, key=str)
    resources, zone = distinct[0]
    if not isinstance(resources, prices.Resources):  # a cloud run whose accelerators cannot be read
        return None, f"measured on {resources}: its recorded accelerators cannot be read, so it is not priced"
    try:
        price = catalog.for_resources(resources)
    except UserError:
        return None, f"measured on {resources.name}: not in the price catalog"
    note = f"measured on {resources.name}" + (f" in {zone}" if zone else "") + (
        f" (runs in {len(distinct)} places; priced as the first)" if len(distinct) > 1 else "")
    return price, note


def _gpu_price(catalog: prices.Catalog, study_name: str, text: str, *, family: str, region: str | None,
               gpu_instance: str | None) -> tuple[prices.Price | None, str]:
    """A GPU configuration measured elsewhere: ``--gpu-instance``, or the single-GPU instance of the
    family's provider whose accelerator the run's software report names."""
    if gpu_instance:
        return catalog.instance(gpu_instance, region), ""
    acc = prices.detect_accelerator(text)
    provider = prices.parse_family(family)[0]
    price = catalog.gpu_instance(provider, acc, region) if acc else None
    if price is None:
        what = f"a {acc}" if acc else "which GPU"
        raise UserError(
            f"cannot price the GPU runs of {study_name}: the catalog has no single-GPU {provider} "
            f"instance for {what}" if acc else
            f"cannot tell which GPU the {study_name} GPU runs used: pass --gpu-instance "
            "PROVIDER:INSTANCE_TYPE (e.g. gcp:g2-standard-4 for one L4)")
    return price, f"GPU {acc} (from the run's software report) priced as {price.instance_type}"


def price_configurations(summary: pd.DataFrame, runs: pd.DataFrame, catalog: prices.Catalog, *,
                         family: str | None, region: str | None, gpu_instance: str | None,
                         spot: bool) -> pd.DataFrame:
    """Per summary row: the instance that prices it and its rate (``PRICE_COLUMNS``), or only a
    ``price_note`` saying why it is not priced."""
    asked = family
    family = family or prices.DEFAULT_FAMILY
    by_id = {int(number(r.id)): r for r in rows(runs, index=False)}
    out: list[dict[str, object]] = []
    for s in rows(summary, index=False):
        own = study(s.study).pricing
        vcpus = vcpus_int(number(s.vcpus))
        text, where, machine, memory = _run_facts(s, by_id)
        price: prices.Price | None
        by = "cloud" if where else "study" if own else "gpu" if s.device == "gpu" else "family"
        if where:
            price, note = _cloud_price(catalog, where)
        elif s.device == "gpu":
            price, note = (catalog.instance(own["gpu"]), "") if own else _gpu_price(
                catalog, str(s.study), text, family=family, region=region, gpu_instance=gpu_instance)
        elif vcpus is None:
            price, note = None, "vCPUs unknown: not priced"
        else:  # an imported study's own family, else the family asked for, else priced as the CPU it ran on
            price, note = catalog.cpu_instance(own["cpu"], vcpus) if own else cpu_price(
                catalog, asked, machine, vcpus, region, spot, memory)
            note = note if price is not None else note + ": not priced"
        q = None if price is None else prices.quote(price, spot=spot,
                                                    own_pricing_of=study_title(s.study) if own else None)
        if price is None or q is None:  # one basis per report: no rate on it means unpriced, not the other basis's rate
            why = (note, prices.unpriced_note(price, spot) if price is not None else "")
            out.append({"instance": None, "price_note": "; ".join(n for n in why if n)})
            continue
        out.append({"instance": price.name, "region": price.region, "price_usd_per_hour": q.usd_per_hour,
                    "price_kind": q.kind, "price_note": "; ".join(n for n in (note, q.note) if n),
                    "price_source": price.source, "price_as_of": price.as_of, "price_origin": price.origin,
                    "priced_by": by, "priced_vcpus": price.vcpus})
    return pd.DataFrame(out, index=summary.index)


def add_costs(summary: pd.DataFrame, priced: pd.DataFrame) -> pd.DataFrame:
    """The summary with its prices (from :func:`price_configurations`) and costs: per full training as it bills
    (``cost_usd``, from ``billed_s``), per epoch and per million samples."""
    summary = summary.copy()
    for c in PRICE_COLUMNS:
        summary[c] = priced[c] if c in priced else None
    rate = pd.to_numeric(summary["price_usd_per_hour"], errors="coerce")
    summary["cost_usd"] = prices.usd(rate, pd.to_numeric(summary["billed_s"], errors="coerce"))  # what it bills
    summary["cost_per_epoch_usd"] = prices.usd(rate, summary["epoch_time_s"])
    summary["cost_per_million_samples_usd"] = prices.usd(rate, 1e6) / summary["samples_per_s"]
    if "time_to_target_s" in summary:
        summary["cost_to_target_usd"] = prices.usd(rate, summary["time_to_target_s"])
    return summary


def prices_used(summary: pd.DataFrame) -> pd.DataFrame:
    """Each instance, region and basis that priced a configuration, once, with its source."""
    used = summary.dropna(subset=["instance"]).drop_duplicates(["instance", "region", "price_kind"])
    return used[["instance", "region", "price_kind", "price_usd_per_hour", "price_source", "price_as_of",
                 "price_origin"]].reset_index(drop=True)
