"""The baseline (1.0x) of each study and workload, and every configuration's time and cost relative to it.

``--baseline gpu`` or the default = that study's GPU run of the workload when there is one (a suspect
GPU run only when no other GPU run is there); otherwise, and clearly labelled as a fallback, the stock
build (``tf`` or ``pip``) at the fewest vCPUs. ``--baseline BUILD@VCPUS`` picks a CPU configuration;
where it was not measured for a workload, the default is used there, labelled as a fallback.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cpustudy.analysis.runs import config_name
from cpustudy.analysis.studies import STOCK_BUILDS
from cpustudy.errors import UserError


@dataclass
class Baseline:
    study: str
    workload: str
    label: str  # the configuration's chart label ("gpu", "cpu1 tf")
    name: str  # in words ("the GPU", "1 vCPU tf")
    kind: str  # "gpu" | "requested" | "fallback"
    note: str  # why this one (for fallbacks: what was missing)
    total_time_s: float
    cost_usd: float | None
    suspect: str = ""  # why the baseline cannot be trusted (no finding rests on it), or ""

    @property
    def is_gpu(self) -> bool:
        return self.kind == "gpu"


def parse_baseline(text: str | None) -> tuple[str, str | None, int | None]:
    """``--baseline``: ("auto" | "gpu" | "config", build, vCPUs); a malformed one is a ``UserError``."""
    if text is None or text.strip() in ("", "auto"):
        return ("auto", None, None)
    t = text.strip()
    if t.lower() == "gpu":
        return ("gpu", None, None)
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._+-]*)@(\d+)$", t)
    if not m or int(m.group(2)) <= 0:
        raise UserError(f"--baseline {text!r}: write gpu, or BUILD@VCPUS such as tf@1 or pip@8")
    return ("config", m.group(1), int(m.group(2)))


def _fallback(g: pd.DataFrame) -> tuple[Any, str]:
    cpu = g[(g["device"] != "gpu") & g["total_time_s"].notna()]
    if cpu.empty:
        return None, ""
    stock = cpu[cpu["build"].isin(STOCK_BUILDS)]
    if not stock.empty:
        row = stock.sort_values(["vcpus", "build"]).index[0]
        return row, "the stock build at the fewest vCPUs"
    row = cpu.sort_values(["vcpus", "build"]).index[0]
    return row, "no stock build (tf or pip) measured: the build at the fewest vCPUs"


def choose_baselines(summary: pd.DataFrame, spec_text: str | None) -> dict[tuple[str, str], tuple[Any, str, str]]:
    """(study, workload) -> (summary index, kind, note)."""
    kind, build, vcpus = parse_baseline(spec_text)
    chosen: dict[tuple[str, str], tuple[Any, str, str]] = {}
    matched_any = False
    for (study, workload), g in summary.groupby(["study", "workload"], sort=False):
        g = g[g["total_time_s"].notna()]
        # A GPU run that cannot be right is the baseline only when no other GPU run is there.
        gpu = g[g["device"] == "gpu"].assign(_bad=lambda d: d["suspect"].fillna("") != "")
        gpu = gpu.sort_values(["_bad", "vcpus", "build"])
        if kind == "config":
            hit = g[(g["device"] != "gpu") & (g["build"] == build) & (g["vcpus"] == vcpus)]
            if not hit.empty:
                matched_any = True
                chosen[(study, workload)] = (hit.index[0], "requested", f"{build}@{vcpus}, as requested")
                continue
        elif not gpu.empty:
            matched_any = True
            chosen[(study, workload)] = (gpu.index[0], "gpu", "the GPU run of this workload")
            continue
        row, why = _fallback(g)
        if row is None:
            if not gpu.empty:  # --baseline BUILD@V missing, only GPU rows: use the GPU
                chosen[(study, workload)] = (gpu.index[0], "fallback", f"{build}@{vcpus} not measured: the GPU")
            continue
        missing = {"auto": "no GPU run", "gpu": "no GPU run", "config": f"{build}@{vcpus} not measured"}[kind]
        chosen[(study, workload)] = (row, "fallback", f"{missing} of {workload}: {why}")
    if kind != "auto" and not matched_any:
        if kind == "gpu":
            raise UserError(
                "--baseline gpu: there are no GPU runs in the results (measure with --device gpu, or leave "
                "--baseline out for the stock build at the fewest vCPUs)"
            )
        configs = sorted({f"{r.build}@{r.vcpus}" for r in summary.itertuples() if r.device != "gpu"})
        raise UserError(
            f"--baseline {spec_text}: no such configuration in the results: choose gpu or one of "
            f"{', '.join(configs[:12])}{' ...' if len(configs) > 12 else ''}"
        )
    return chosen


def apply_baselines(summary: pd.DataFrame, spec_text: str | None) -> tuple[pd.DataFrame, dict[tuple[str, str], Baseline]]:
    """The summary with ``time_rel_baseline``, ``cost_rel_baseline`` and which baseline and why; and the
    baselines by (study, workload)."""
    summary = summary.copy()
    baselines: dict[tuple[str, str], Baseline] = {}
    for col in ("time_rel_baseline", "cost_rel_baseline"):
        summary[col] = math.nan
    summary["baseline"] = None
    summary["baseline_kind"] = None
    summary["baseline_note"] = None
    for (study, workload), (idx, kind, note) in choose_baselines(summary, spec_text).items():
        b = summary.loc[idx]
        base = Baseline(
            study=study, workload=workload, label=b["label"],
            name=config_name(b["device"], b["vcpus"], b["build"]),
            kind=kind if not (kind == "fallback" and b["device"] == "gpu") else "fallback",
            note=note, total_time_s=float(b["total_time_s"]),
            cost_usd=None if pd.isna(b["cost_usd"]) else float(b["cost_usd"]),
            suspect=str(b.get("suspect") or ""),
        )
        baselines[(study, workload)] = base
        mask = (summary["study"] == study) & (summary["workload"] == workload)
        summary.loc[mask, "time_rel_baseline"] = summary.loc[mask, "total_time_s"] / base.total_time_s
        if base.cost_usd:
            summary.loc[mask, "cost_rel_baseline"] = summary.loc[mask, "cost_usd"] / base.cost_usd
        summary.loc[mask, "baseline"] = base.label
        summary.loc[mask, "baseline_kind"] = kind
        summary.loc[mask, "baseline_note"] = note
    return summary, baselines
