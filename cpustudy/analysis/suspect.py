"""When a GPU measurement cannot be right: the rules a baseline must pass before a finding rests on it.

A GPU run is *suspect* when

* it trained more slowly than one vCPU of the same workload and settings would: slower than the
  best CPU throughput per vCPU measured (a CPU at N vCPUs does at most N times the work of one, so
  rate(N) / N bounds one vCPU's rate from below); or
* CPU configurations trained faster than it and its GPU was idle most of the time (the median
  utilisation the driver reported during its training, NVML or nvidia-smi, under ``IDLE_BELOW`` %)
  or its utilisation was not recorded (runs measured before the worker sampled it): "CPUs beat the
  GPU" is the finding a broken GPU run produces (the 2026-11-22 H100 run whose in-model augmentation
  ran 60x slow), so it needs evidence that the GPU was busy.

A GPU that is mostly idle but still faster than every CPU configuration is *not* suspect: small models
at the study's batch sizes leave an H100 idle 50-95 % of the time (measured on 2026-11-23: every
workload but fastText, JAX and PyTorch alike), and that is what training them there is like. Such a
run carries a caveat instead (``gpu_caveat``): its speed is bounded by the framework and the host, not
the GPU, and a larger batch could change the comparison.

A suspect run is still shown, labelled, but no finding is drawn from a comparison with it. The rules
are applied twice, alike: to the summary's GPU configurations (:func:`suspect_column`, for reports) and
to stored runs (:func:`gpu_suspicions`, for ``cpustudy results``). Standard library only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable, Sequence

from cpustudy.analysis.studies import INTERNAL_STUDIES, SUMMED_STUDIES

if TYPE_CHECKING:
    import pandas as pd

    from cpustudy.store.rows import RunRow

IDLE_BELOW = 50.0  # % GPU utilisation


def _known(v: float | None) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def gpu_reasons(samples_per_s: float | None, gpu_utilization: float | None,
                cpu_rates_per_vcpu: Iterable[float | None], cpu_faster: int = 0) -> list[str]:
    """Why a GPU run cannot be trusted (empty when nothing is wrong that can be told); ``cpu_faster``
    is how many CPU configurations of the same workload trained faster."""
    reasons = []
    if cpu_faster and gpu_utilization is not None and _known(gpu_utilization) and gpu_utilization < IDLE_BELOW:
        reasons.append(f"{cpu_faster} CPU configuration{'s' if cpu_faster != 1 else ''} trained faster while the "
                       f"GPU was busy only {gpu_utilization:.0f} % of its training time")
    rates = [float(r) for r in cpu_rates_per_vcpu if r is not None and _known(r) and r > 0]
    if samples_per_s is not None and _known(samples_per_s) and rates and samples_per_s < max(rates):
        reasons.append(f"slower than one vCPU ({samples_per_s:,.0f} vs at least {max(rates):,.0f} samples/s)")
    if not _known(gpu_utilization) and cpu_faster:
        reasons.append(f"{cpu_faster} CPU configuration{'s' if cpu_faster != 1 else ''} trained faster and its "
                       "GPU utilisation was not recorded (an idle GPU cannot be ruled out)")
    return reasons


def gpu_caveat(gpu_utilization: float | None) -> str:
    """What a mostly idle GPU run's figures mean (empty when it was busy or not measured)."""
    if gpu_utilization is None or not _known(gpu_utilization) or gpu_utilization >= IDLE_BELOW:
        return ""
    return (f"GPU busy only {gpu_utilization:.0f} % of its training time: at this batch size the model leaves it "
            "mostly idle, so its speed is the framework's and the host's rather than the GPU's, and a larger "
            "batch could change the comparison")


def suspect_column(summary: pd.DataFrame) -> list[str]:
    """Per configuration of the summary: why a GPU configuration cannot be trusted, or ""."""
    out = []
    from cpustudy.analysis.frames import number, rows  # pandas: only where a summary is read

    for r in rows(summary, index=False):
        if r.device != "gpu" or r.study in SUMMED_STUDIES:
            out.append("")
            continue
        cpu = summary[(summary["study"] == r.study) & (summary["workload"] == r.workload)
                      & (summary["device"] != "gpu") & summary["vcpus"].notna()]
        rates = (cpu["samples_per_s"] / cpu["vcpus"].astype(float)).tolist()
        faster = int((cpu["total_time_s"] < r.total_time_s).sum())
        out.append("; ".join(gpu_reasons(number(r.samples_per_s), number(r.gpu_utilization), rates, faster)))
    return out


def gpu_suspicions(runs: Sequence[RunRow]) -> dict[int, str]:
    """Run id -> why an ok GPU run cannot be right, judged as reports judge it: against the comparable ok
    CPU runs (not oversubscribed, not the tuner's or the overhead benchmark's) of the same study,
    workload and augmentation."""
    ok = [(r, rate) for r in runs if r["status"] == "ok" and (rate := r.get("samples_per_s"))
          and not r.get("oversubscribed") and r.get("study") not in INTERNAL_STUDIES]  # each with its rate
    out = {}
    for g, g_rate in ok:
        if g.get("device") != "gpu":
            continue
        same = [(c, c_rate, vcpus) for c, c_rate in ok if c.get("device") != "gpu" and (vcpus := c.get("vcpus"))
                and (c.get("study"), c["workload"], c.get("augment")) == (g.get("study"), g["workload"], g.get("augment"))]
        faster = {(c.get("build"), vcpus) for c, c_rate, vcpus in same if c_rate > g_rate}
        reasons = gpu_reasons(g_rate, g.get("gpu_utilization"), [c_rate / vcpus for _, c_rate, vcpus in same], len(faster))
        if reasons:
            out[g["id"]] = "; ".join(reasons)
    return out
