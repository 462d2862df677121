"""The x86 CPUID instruction itself, and the evidence it and sysfs give of a CPU's generation.

A hypervisor may hide the CPU's name ("Intel(R) Xeon(R) Processor") and rewrite its CPUID family and
model (a Granite Rapids host seen as family 6 model 167, a desktop Rocket Lake), but it must pass the
instruction sets a guest may use, and it usually passes the caches and the highest CPUID leaf. Linux's
``/proc/cpuinfo`` does not show every bit that tells generations apart (``amx_fp16``, ``prefetchi`` and
AVX10 are missing even on bare metal in the kernels seen), so :func:`read` executes CPUID:

* leaf 0: the highest basic leaf (36, 0x24, from Granite Rapids on: AVX10's leaf);
* leaf 1: family, model, stepping as the guest sees them, and the hypervisor bit;
* leaf 7 subleaf 0: AVX-512, AMX-TILE/BF16/INT8, AVX512-FP16, VP2INTERSECT;
* leaf 7 subleaf 1: AVX-VNNI, AVX512-BF16, AMX-FP16, PREFETCHI, AVX10 (Intel SDM vol. 2A, CPUID);
* leaf 0x24: AVX10's version where AVX10 is set;
* leaf 0x40000000: the hypervisor's signature (``KVMKVMKVM``, ``Microsoft Hv``).

The caches (L1 instruction per core, L3 per package) come from sysfs. Executing CPUID from Python means
placing its machine code in an executable page and calling it through ctypes (as py-cpuinfo does); where
that is not allowed (a hardened kernel, not x86-64), :func:`read` says why and the evidence is what
``/proc/cpuinfo`` and sysfs give. Standard library only.
"""

from __future__ import annotations

import ctypes
import mmap
import platform
from pathlib import Path
from typing import Any

#: x86-64 System V: ``void cpuid(uint32 leaf, uint32 subleaf, uint32 out[4])``.
#: push rbx; mov r8, rdx; mov eax, edi; mov ecx, esi; cpuid;
#: mov [r8], eax; mov [r8+4], ebx; mov [r8+8], ecx; mov [r8+12], edx; pop rbx; ret
_CODE = bytes.fromhex("53" "4989d0" "89f8" "89f1" "0fa2" "418900" "41895804" "41894808" "4189500c" "5b" "c3")

SYS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")

#: (leaf, subleaf, register, bit) -> the feature's name, as Linux would name it where it names it.
FEATURE_BITS: dict[tuple[int, int, str, int], str] = {
    (7, 0, "ebx", 16): "avx512f",
    (7, 0, "edx", 8): "avx512_vp2intersect",
    (7, 0, "edx", 22): "amx_bf16",
    (7, 0, "edx", 23): "avx512_fp16",
    (7, 0, "edx", 24): "amx_tile",
    (7, 0, "edx", 25): "amx_int8",
    (7, 1, "eax", 4): "avx_vnni",
    (7, 1, "eax", 5): "avx512_bf16",
    (7, 1, "eax", 21): "amx_fp16",
    (7, 1, "edx", 14): "prefetchi",
    (7, 1, "edx", 19): "avx10",
}
_REGS = ("eax", "ebx", "ecx", "edx")


class _Cpuid:
    """CPUID through a page of machine code (x86-64 Linux only)."""

    def __init__(self) -> None:
        self._page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self._page.write(_CODE)
        address = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
        self._fn = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32))(address)

    def __call__(self, leaf: int, subleaf: int = 0) -> dict[str, int]:
        out = (ctypes.c_uint32 * 4)()
        self._fn(leaf, subleaf, out)
        return dict(zip(_REGS, list(out)))


def _ascii(*words: int) -> str:
    return b"".join(w.to_bytes(4, "little") for w in words).decode("ascii", "replace").strip("\x00 ")


def read_cpuid() -> dict[str, Any]:
    """What CPUID says (see the module's docstring): ``max_leaf``, ``vendor``, ``family``, ``model``,
    ``stepping``, ``features`` (names of :data:`FEATURE_BITS` that are set), ``avx10_version``,
    ``hypervisor``; or ``{"error": why}`` where CPUID cannot be executed here."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {"error": f"not x86-64 ({platform.machine()})"}
    try:
        cpuid = _Cpuid()
    except (OSError, ValueError, AttributeError) as exc:  # no executable pages allowed
        return {"error": f"CPUID not executable here: {exc}"}
    leaf0 = cpuid(0)
    max_leaf = leaf0["eax"]
    out: dict[str, Any] = {"max_leaf": max_leaf, "vendor": _ascii(leaf0["ebx"], leaf0["edx"], leaf0["ecx"])}
    eax1 = cpuid(1)
    base_family, base_model = (eax1["eax"] >> 8) & 0xF, (eax1["eax"] >> 4) & 0xF
    ext_family, ext_model = (eax1["eax"] >> 20) & 0xFF, (eax1["eax"] >> 16) & 0xF
    out["family"] = base_family + (ext_family if base_family == 0xF else 0)
    out["model"] = base_model + ((ext_model << 4) if base_family in (6, 0xF) else 0)
    out["stepping"] = eax1["eax"] & 0xF
    features: list[str] = []
    if max_leaf >= 7:
        regs = {0: cpuid(7, 0)}
        if regs[0]["eax"] >= 1:
            regs[1] = cpuid(7, 1)
        features = [name for (leaf, sub, reg, bit), name in FEATURE_BITS.items()
                    if leaf == 7 and sub in regs and regs[sub][reg] >> bit & 1]
    out["features"] = sorted(features)
    if "avx10" in features and max_leaf >= 0x24:
        out["avx10_version"] = cpuid(0x24)["ebx"] & 0xFF
    if eax1["ecx"] >> 31 & 1:
        hv = cpuid(0x40000000)
        out["hypervisor"] = _ascii(hv["ebx"], hv["ecx"], hv["edx"]) or "unnamed"
    return out


def _size_kib(text: str) -> int | None:
    text = text.strip().upper()
    try:
        if text.endswith("K"):
            return int(text[:-1])
        if text.endswith("M"):
            return int(text[:-1]) * 1024
        return int(text) // 1024
    except ValueError:
        return None


def read_caches(root: Path = SYS_CACHE) -> dict[str, int]:
    """CPU 0's caches from sysfs, in KiB: ``l1i_kib``, ``l1d_kib``, ``l2_kib``, ``l3_kib`` (each as one
    core or, for the L3, one package sees it); the ones sysfs does not list are absent."""
    out: dict[str, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = _size_kib((index / "size").read_text())
        except OSError:
            continue
        if size is None:
            continue
        name = f"l{level}" + ({"Instruction": "i", "Data": "d"}.get(kind, "") if level == "1" else "")
        out[f"{name}_kib"] = size
    return out


def evidence(cache_root: Path = SYS_CACHE) -> dict[str, Any]:
    """CPUID's answers (:func:`read_cpuid`) and the caches (:func:`read_caches`) in one mapping: what a
    machine record keeps as ``extra["cpuid"]`` for :func:`cpustudy.prices.platforms.identify`."""
    return {**read_cpuid(), **read_caches(cache_root)}
