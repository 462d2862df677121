"""When a GPU measurement cannot be right: the rules a baseline must pass before a finding rests on it.

A GPU run is *suspect* when

* its GPU was idle most of the time: the median utilisation the driver reported during its training
  (NVML or nvidia-smi, sampled by the worker) is under ``IDLE_BELOW`` %: the run measured the host
  (input pipeline, Python, launches), not the GPU; or
* it trained more slowly than one vCPU of the same workload and settings would: slower than the
  best CPU throughput per vCPU measured (a CPU at N vCPUs does at most N times the work of one, so
  rate(N) / N bounds one vCPU's rate from below); or
* CPU configurations trained faster than it and its GPU utilisation was not recorded (runs measured
  before the worker sampled it): "CPUs beat the GPU" is the finding a broken GPU run produces, so it
  needs evidence that the GPU was busy.

A suspect run is still shown, labelled, but no finding is drawn from a comparison with it.
"""

from __future__ import annotations

import math
from typing import Iterable

IDLE_BELOW = 50.0  # % GPU utilisation


def _known(v: float | None) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def gpu_reasons(samples_per_s: float | None, gpu_utilization: float | None,
                cpu_rates_per_vcpu: Iterable[float | None], cpu_faster: int = 0) -> list[str]:
    """Why a GPU run cannot be trusted (empty when nothing is wrong that can be told); ``cpu_faster``
    is how many CPU configurations of the same workload trained faster."""
    reasons = []
    if gpu_utilization is not None and _known(gpu_utilization) and gpu_utilization < IDLE_BELOW:
        reasons.append(f"GPU busy only {gpu_utilization:.0f} % of its training time")
    rates = [float(r) for r in cpu_rates_per_vcpu if r is not None and _known(r) and r > 0]
    if samples_per_s is not None and _known(samples_per_s) and rates and samples_per_s < max(rates):
        reasons.append(f"slower than one vCPU ({samples_per_s:,.0f} vs at least {max(rates):,.0f} samples/s)")
    if not _known(gpu_utilization) and cpu_faster:
        reasons.append(f"{cpu_faster} CPU configuration{'s' if cpu_faster != 1 else ''} trained faster and its "
                       "GPU utilisation was not recorded (an idle GPU cannot be ruled out)")
    return reasons
