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
from typing import Hashable

import pandas as pd

from cpustudy.analysis.frames import rows
from cpustudy.names import config_name
from cpustudy.analysis.studies import STOCK_BUILDS
from cpustudy.errors import UserError


@dataclass
class Baseline:
    study: str
    workload: str
    label: str  # the configuration's chart label ("gpu", "cpu1 tf")
    name: str  # in words ("the GPU", "1 vCPU tf")
    kind: str  # "gpu" | "requested" | "fallback"
    reason: str  # why this one: "the GPU run of this workload", "the stock build at the fewest vCPUs"
    total_time_s: float
    cost_usd: float | None
    suspect: str = ""  # why the baseline cannot be trusted (no finding rests on it), or ""
    missing: str = ""  # for a fallback: what was asked for and not measured ("no GPU run", "tf@8 not measured")

    @property
    def note(self) -> str:
        """In one line: what was missing (for a fallback) and why this one."""
        return f"{self.missing} of {self.workload}: {self.reason}" if self.missing else self.reason

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


@dataclass(frozen=True)
class BaselineChoice:
    """The summary row chosen as a workload's baseline (its label in the summary's index), and why (``Baseline``'s
    fields)."""

    index: Hashable
    kind: str
    reason: str
    missing: str = ""


def _fallback(g: pd.DataFrame) -> tuple[Hashable | None, str]:
    """The stock build at the fewest vCPUs among the configurations with a full-training time (``g``: all of the
    workload's), else the configuration at the fewest vCPUs that has one, and why not the stock build: none was
    measured (a stock recipe only with settings, ``tf+b64``, is not stock), or it has no full-training time."""
    every = g[g["device"] != "gpu"]
    cpu = every[every["total_time_s"].notna()]
    if cpu.empty:
        return None, ""
    stock = cpu[cpu["stock"].astype(bool)]
    if not stock.empty:
        row = stock.sort_values(["vcpus", "platform", "build"]).index[0]
        return row, "the stock build at the fewest vCPUs"
    row = cpu.sort_values(["vcpus", "platform", "build"]).index[0]
    untimed = every[every["stock"].astype(bool)]
    if not untimed.empty:
        why = (f"the stock build ({', '.join(sorted(set(untimed['build'].astype(str))))}) has no full-training time "
               "(no run of it timed an epoch after the warm-up)")
    else:
        with_settings = sorted(set(every.loc[every["recipe"].isin(STOCK_BUILDS), "build"].astype(str))) \
            if "recipe" in every else []
        why = "no stock build (tf or pip at its default settings) measured" + (
            f", only with settings ({', '.join(with_settings)})" if with_settings else "")
    return row, f"{why}: the configuration at the fewest vCPUs with a full-training time"


def choose_baselines(summary: pd.DataFrame, spec_text: str | None) -> dict[tuple[str, str], BaselineChoice]:
    """(study, workload) -> the chosen row and why. ``--baseline BUILD@VCPUS`` names a configuration
    (``tf+b64@1``) or a recipe, which means its stock run (``tf@8``: tf at default settings, on the
    first platform where several measured it)."""
    kind, build, vcpus = parse_baseline(spec_text)
    chosen: dict[tuple[str, str], BaselineChoice] = {}
    matched_any = False
    for group, g in summary.groupby(["study", "workload"], sort=False):
        study, workload = str(group[0]), str(group[1])
        every = g
        g = g[g["total_time_s"].notna()]
        # A GPU run that cannot be right is the baseline only when no other GPU run is there.
        gpu = g[g["device"] == "gpu"].assign(_bad=lambda d: d["suspect"].fillna("") != "")
        gpu = gpu.sort_values(["_bad", "vcpus", "build"])
        if kind == "config":
            named = (g["build"] == build) | ((g["recipe"] == build) & g["stock"].astype(bool))
            hit = g[(g["device"] != "gpu") & named & (g["vcpus"] == vcpus)].sort_values(["platform", "build"])
            if not hit.empty:
                matched_any = True
                chosen[(study, workload)] = BaselineChoice(hit.index[0], "requested", f"{build}@{vcpus}, as requested")
                continue
        elif not gpu.empty:
            matched_any = True
            chosen[(study, workload)] = BaselineChoice(gpu.index[0], "gpu", "the GPU run of this workload")
            continue
        row, why = _fallback(every)
        if row is None:
            if not gpu.empty:  # --baseline BUILD@V missing, only GPU rows: use the GPU
                chosen[(study, workload)] = BaselineChoice(gpu.index[0], "fallback", "the GPU", f"{build}@{vcpus} not measured")
            continue
        missing = {"auto": "no GPU run", "gpu": "no GPU run", "config": f"{build}@{vcpus} not measured"}[kind]
        chosen[(study, workload)] = BaselineChoice(row, "fallback", why, missing)
    if kind != "auto" and not matched_any:
        if kind == "gpu":
            raise UserError(
                "--baseline gpu: there are no GPU runs in the results (measure with --device gpu, or leave "
                "--baseline out for the stock build at the fewest vCPUs)"
            )
        configs = sorted({f"{r.build}@{r.vcpus}" for r in rows(summary) if r.device != "gpu"})
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
    summary["is_baseline"] = False
    for (study, workload), choice in choose_baselines(summary, spec_text).items():
        idx, kind = choice.index, choice.kind
        b = summary.loc[[idx]].iloc[0]  # its row (a summary's labels are unique: ``summary._order``)
        base = Baseline(
            study=study, workload=workload, label=b["label"],
            name=config_name(b["device"], b["vcpus"], b["build"]),
            kind=kind, reason=choice.reason, missing=choice.missing, total_time_s=float(b["total_time_s"]),
            cost_usd=None if pd.isna(b["cost_usd"]) else float(b["cost_usd"]),
            suspect=str(b.get("suspect") or ""),
        )
        note = base.note
        summary.loc[idx, "is_baseline"] = True
        baselines[(study, workload)] = base
        mask = (summary["study"] == study) & (summary["workload"] == workload)
        summary.loc[mask, "time_rel_baseline"] = summary.loc[mask, "total_time_s"] / base.total_time_s
        if base.cost_usd:
            summary.loc[mask, "cost_rel_baseline"] = summary.loc[mask, "cost_usd"] / base.cost_usd
        summary.loc[mask, "baseline"] = base.label
        summary.loc[mask, "baseline_kind"] = kind
        summary.loc[mask, "baseline_note"] = note
    return summary, baselines
