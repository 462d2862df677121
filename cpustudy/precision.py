"""Precision policies: which there are, which is the default, and where each runs natively.

One place for the decision, used by the command line, the parent (a refusal before anything runs: one
line, not one failed run per cell) and the worker (the GPU it really got). Standard library only: the
worker imports it before pinning its CPUs.
"""

from __future__ import annotations

from typing import Iterable

#: Keras' default dtype policy, and what every run stored before precisions existed trained with.
DEFAULT = "float32"
#: The Keras dtype policies a run can train with.
POLICIES = (DEFAULT, "mixed_bfloat16", "mixed_float16")
#: Short names for a configuration's name (``tf+bf16``).
TAGS = {"mixed_bfloat16": "bf16", "mixed_float16": "fp16"}
#: CPU flags (as Linux names them) that run each reduced precision natively.
NATIVE_ON_CPU = {"mixed_bfloat16": ("avx512_bf16", "amx_bf16"), "mixed_float16": ("avx512_fp16", "amx_fp16")}
#: A flag every 64-bit Arm CPU's ``Features`` line has (NEON) and no x86 CPU's ``flags``: tells the two apart.
ARM_MARKER = "asimd"
#: The least CUDA compute capability whose tensor cores run each reduced precision natively.
NATIVE_ON_GPU = {"mixed_float16": 7.0, "mixed_bfloat16": 8.0}


def setting_label(policy: str | None, batch_size: object, *, precisions: bool = True, batches: bool = True) -> str:
    """A training setting's label as a comparison names it, the axes asked for only: ``bf16 b256``, ``fp32``,
    ``b64`` (no batch size: no ``b`` part)."""
    return " ".join(([TAGS.get(policy or DEFAULT, "fp32")] if precisions else [])
                    + ([f"b{batch_size}"] if batches and batch_size else []))


def reduced(policy: object) -> bool:
    """Whether ``policy`` names a precision other than the default (None or "" is the default)."""
    return isinstance(policy, str) and policy not in ("", DEFAULT)


def unknown(policy: str) -> str | None:
    """Why ``policy`` is not a policy (None: it is one)."""
    return None if policy in POLICIES else f"--precision {policy}: use one of {', '.join(POLICIES)}"


def cpu_problem(policy: str, cpu_flags: Iterable[str] | None) -> str | None:
    """Why ``policy`` would be emulated on a CPU with ``cpu_flags`` (slower than float32: a false finding
    about it), or None. Flags that cannot be read (None) show none."""
    if policy not in NATIVE_ON_CPU:
        return None
    flags = {str(f).lower() for f in cpu_flags or ()}
    if ARM_MARKER in flags:
        return arm_problem(policy, flags)
    if flags & set(NATIVE_ON_CPU[policy]):
        return None
    want = " or ".join(f.upper() for f in NATIVE_ON_CPU[policy])
    return (f"--precision {policy}: this CPU has no {want}, so it would be emulated (slower than float32): use "
            "--precision float32, or a CPU that has it (bfloat16: Cooper Lake, Sapphire Rapids, Zen 4)")


def arm_problem(policy: str, flags: set[str]) -> str:
    """Why ``policy`` is refused on a 64-bit Arm CPU (``Features`` ``flags``): with BF16 instructions
    (Neoverse V1/V2: Graviton3/4, Axion) TensorFlow's aarch64 build may run some bfloat16 kernels natively
    (oneDNN with the Arm Compute Library) and emulate others (Eigen), op by op and version by version, and
    cpustudy has measured neither here; without them, or for float16, it is emulated."""
    if policy == "mixed_bfloat16" and "bf16" in flags:
        return ("--precision mixed_bfloat16: this Arm CPU has BF16 instructions, but whether TensorFlow's "
                "aarch64 build runs Keras' mixed_bfloat16 on them natively rather than emulated (slower than "
                "float32) is not established for this workload: cpustudy does not claim it; use --precision "
                "float32")
    if policy == "mixed_bfloat16":
        return ("--precision mixed_bfloat16: this Arm CPU has no BF16 instructions, so it would be emulated "
                "(slower than float32): use --precision float32")
    return (f"--precision {policy}: cpustudy knows no native float16 path in TensorFlow on Arm CPUs, so it would "
            "be emulated (slower than float32): use --precision float32")


def gpu_problem(policy: str, capability: float | None) -> str | None:
    """Why ``policy`` cannot run natively on a GPU of ``capability`` (None: it can, or nothing is known)."""
    need = NATIVE_ON_GPU.get(policy)
    if need is None or capability is None or capability >= need:
        return None
    return (f"--precision {policy} needs a GPU of compute capability {need:g} or more to run natively; this one "
            f"has {capability:g}: use --precision float32" + (" or mixed_float16" if capability >= 7.0 else ""))
