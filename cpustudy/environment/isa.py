"""The theoretical peak of a CPU's instruction sets: an estimate stored beside the measured peak.

cores x FLOP per cycle per core x clock, where FLOP per cycle per core = FMA units x SIMD lanes x 2
(a fused multiply-add is two FLOPs), or AMX's 1,024 bfloat16 FLOP per cycle per core. It is what the
silicon could do, not what a matmul reaches: the measured peak (a matmul in the run's build) is what a
run's share of peak is taken against, and this one says how far that matmul is from the hardware.

The clock is the one the machine reported when it was described (the brand string's nominal clock
where it has one, else ``/proc/cpuinfo``'s ``cpu MHz``); turbo and AVX-512 licence clocks differ, so the
figure is an estimate and always labelled so. SMT siblings share a core's FMA units: vCPUs count as
cores only where a core has one thread. Standard library only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

#: Per-core FLOP per cycle of the x86 matrix/vector units, by precision (the widest the flags allow).
AMX_FLOP_PER_CYCLE = 1024  # AMX-BF16 / AMX-FP16: one 16x32 by 32x16 tile product per 16 cycles


@dataclass(frozen=True)
class IsaPeak:
    """A theoretical peak and how it was reckoned."""

    gflops: float
    flop_per_cycle: int  # per core
    cores: float
    ghz: float
    basis: str

    def label(self) -> str:
        return f"{self.gflops:.0f} GFLOP/s (estimate: {self.basis})"


def _flags(machine: Mapping[str, Any]) -> set[str]:
    flags = machine.get("flags") or []
    return set(flags.split() if isinstance(flags, str) else flags)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _x86(machine: Mapping[str, Any], precision: str) -> tuple[int, str] | None:
    flags = _flags(machine)
    extra = machine.get("extra") or {}
    amd = "AMD" in str(machine.get("cpu_vendor", "")).upper() or "AMD" in str(machine.get("cpu_model", "")).upper()
    family, model = _int(extra.get("family")), _int(extra.get("model"))
    # Zen 4 runs AVX-512 on 256-bit datapaths; Zen 5 (family 26) and Intel's server cores have 2 full
    # 512-bit FMA units (some Xeon Silver/Bronze parts have one: the figure then halves).
    half_width_512 = amd and family is not None and family < 26
    if precision == "bf16":
        if "amx_bf16" in flags:
            return AMX_FLOP_PER_CYCLE, "AMX-BF16 1024 FLOP/cycle/core"
        if "avx512_bf16" in flags:
            return (64, "AVX512_BF16 on 2 x 256-bit units: 64 FLOP/cycle/core") if half_width_512 else \
                (128, "AVX512_BF16: 2 units x 16 lanes x 2 products x 2 = 128 FLOP/cycle/core")
        return None
    if precision == "fp16":
        if "amx_fp16" in flags:
            return AMX_FLOP_PER_CYCLE, "AMX-FP16 1024 FLOP/cycle/core"
        if "avx512_fp16" in flags:
            return 128, "AVX512_FP16: 2 FMA units x 32 lanes x 2 = 128 FLOP/cycle/core"
        return None
    if precision != "fp32":
        return None
    if "avx512f" in flags:
        return (32, "AVX-512 on 2 x 256-bit FMA units: 32 FLOP/cycle/core") if half_width_512 else \
            (64, "AVX-512: 2 FMA units x 16 fp32 lanes x 2 = 64 FLOP/cycle/core")
    if "avx2" in flags and "fma" in flags:
        if amd and family == 23 and model is not None and model < 0x30:  # Zen/Zen+: 2 x 128-bit FMA
            return 16, "AVX2 on 2 x 128-bit FMA units (Zen 1): 16 FLOP/cycle/core"
        return 32, "AVX2/FMA: 2 FMA units x 8 fp32 lanes x 2 = 32 FLOP/cycle/core"
    if "avx" in flags:
        return 16, "AVX without FMA: 8-lane add + 8-lane multiply = 16 FLOP/cycle/core"
    if "sse2" in flags:
        return 8, "SSE2: 4-lane add + 4-lane multiply = 8 FLOP/cycle/core"
    return None


#: Arm cores' fp32 FMA pipes: (pipes, lanes per pipe).
ARM_FP32 = {"Neoverse N1": (2, 4), "Neoverse N2": (2, 4), "Neoverse V1": (2, 8), "Neoverse V2": (4, 4),
            "Neoverse V3": (4, 4), "Neoverse N3": (2, 4)}


def _arm(machine: Mapping[str, Any], precision: str) -> tuple[int, str] | None:
    if precision != "fp32":
        return None  # bf16 matmul rates (BFMMLA) per core are not established here
    model = str(machine.get("cpu_model", ""))
    for core, (pipes, lanes) in ARM_FP32.items():
        if core in model:
            flop = pipes * lanes * 2
            return flop, f"{core}: {pipes} FMA pipes x {lanes} fp32 lanes x 2 = {flop} FLOP/cycle/core"
    return None


def clock_ghz(machine: Mapping[str, Any]) -> tuple[float, str] | None:
    """The clock the estimate uses: the brand string's nominal clock (``@ 2.10GHz``), else the
    ``cpu MHz`` /proc/cpuinfo reported when the machine was described."""
    found = re.search(r"@\s*([0-9.]+)\s*GHz", str(machine.get("cpu_model", "")))
    if found:
        return float(found.group(1)), "nominal clock from the CPU's name"
    try:
        mhz = float(machine.get("cpu_mhz") or 0)
    except (TypeError, ValueError):
        return None
    return (mhz / 1000, "clock /proc/cpuinfo reported") if mhz > 0 else None


def theoretical(machine: Mapping[str, Any], cpus: int, precision: str = "fp32") -> IsaPeak | None:
    """The theoretical peak of ``cpus`` logical CPUs of ``machine`` (a ``Machine.as_dict()`` or a stored
    machine's info) at ``precision`` (fp32, bf16, fp16), or None where it cannot be reckoned (an unknown
    core, no native unit for the precision, no clock)."""
    arch = str(machine.get("arch", ""))
    per = _arm(machine, precision) if arch in ("aarch64", "arm64") else _x86(machine, precision)
    clock = clock_ghz(machine)
    if per is None or clock is None or cpus < 1:
        return None
    flop, unit = per
    ghz, clock_source = clock
    tpc = max(1, _int(machine.get("threads_per_core")) or 1)
    cores = math.ceil(cpus / tpc)  # vCPUs are taken as whole cores (choose_cpus), siblings together
    gflops = cores * flop * ghz
    core_text = f"{cores} core{'s' if cores != 1 else ''}" + (f" ({cpus} vCPUs, {tpc} per core)" if tpc > 1 else "")
    basis = f"{core_text} x {unit} x {ghz:.2f} GHz, the {clock_source}; turbo and vector clocks differ"
    return IsaPeak(gflops, flop, cores, ghz, basis)
