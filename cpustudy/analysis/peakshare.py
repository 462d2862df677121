"""A run's share of its device's peak, only where the comparison means something. Standard library.

The share is ``achieved / peak`` only when the peak was measured on the device the run trained on and
at the precision it computed in (a bfloat16 run against a bfloat16 matmul peak; a float32 run
against the float32 peak, TF32 included where the framework uses it). A peak below the rate the run
achieved is not a peak (measured on a busy machine, or at another precision): the share is then
withheld with that reason, so a share above 100 % cannot be reported.
"""

from __future__ import annotations

import math

#: The matmul precision a peak must have been measured at for a run of each Keras policy.
PEAK_PRECISION = {"mixed_bfloat16": "bf16", "mixed_float16": "fp16"}


def _number(value: float | str | None) -> float | None:
    if value is None:  # as float(None)'s TypeError: none
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def _text(value: object, default: str) -> str:
    """A stored text, ``default`` where there is none (None, or pandas' NaN for a missing value)."""
    missing = value is None or (isinstance(value, float) and math.isnan(value)) or value == ""
    return default if missing else str(value)


def peak_share(achieved: float | None, peak: float | None, *, device: object = "cpu", peak_device: object = None,
               policy: object = None, peak_precision: object = None) -> tuple[float | None, str]:
    """(percent of peak or None, why none). ``device``/``peak_device``: where the run trained and the peak
    was measured (a peak stored without a device was measured on the CPUs); ``policy``: the run's Keras
    precision policy; ``peak_precision``: the matmul precision the peak was measured at."""
    a, p = _number(achieved), _number(peak)
    if a is None or p is None:
        return None, "not measured"
    if _text(peak_device, "cpu") != _text(device, "cpu"):
        return None, "peak measured on another device"
    wanted = PEAK_PRECISION.get(_text(policy, ""))
    measured = _text(peak_precision, "fp32")
    if (wanted or "") != (measured if measured in PEAK_PRECISION.values() else ""):
        return None, f"peak measured at {measured}, the run computed in {wanted or 'float32'}"
    if a > p:
        return None, (f"peak {p:.0f} GFLOP/s is below the {a:.0f} GFLOP/s the run achieved: not a peak (measured "
                      "while the machine was busy?), so no share of it is given")
    return 100.0 * a / p, ""


def isa_share(achieved: float | None, isa_peak: float | None) -> tuple[float | None, str]:
    """(percent of the instruction sets' theoretical peak or None, why none). That peak is an estimate at the
    clock the machine reported, which a core boosting above it beats (seen: a Zen 4 VM reporting 2.60 GHz
    whose matmul peak was 1.36x the estimate, and cifar10_cnn runs at 100.4 % of it): where the run achieved
    more than the estimate, the estimate is no ceiling and no share of it is given."""
    a, p = _number(achieved), _number(isa_peak)
    if a is None or p is None:
        return None, ""
    if a > p:
        return None, (f"the run's {a:.0f} GFLOP/s beat the {p:.0f} GFLOP/s ISA estimate: the core ran above the clock "
                      "it reported, so the estimate is no ceiling and no share of it is given")
    return 100.0 * a / p, ""
