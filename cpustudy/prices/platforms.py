"""Which cloud instance families run the CPU a run measured.

A run stores the machine it ran on (``cpu_model``, ``cpu_vendor``, ``arch``, ``flags`` and, from py-cpuinfo,
``extra["family"]`` / ``extra["model"]``: the x86 CPUID family and model). :func:`platform_of` names the CPU
platform (``AMD EPYC 4th gen (Genoa, Zen 4)``) and :func:`families_for` the instance families, in cpustudy's
price-catalog naming (``gcp:c3d-highcpu``, ``aws:c7a``), that the providers document as running it: the
families a result measured on this CPU speaks for.

Evidence, strongest first: the vendor with the CPUID family and model (x86); then the model name (the
``EPYC 9B14`` / ``Xeon Platinum 8481C`` numbering, a code name in the brand, Arm's ``Neoverse V2``). VMs
often hide the part (``AMD EPYC``): the CPUID numbers still tell the generation. When nothing matches,
the answer is None (and no families), never a guess; :attr:`Platform.how` says which evidence matched.

Every row of :data:`PLATFORMS` names its sources (``source``: the providers' own documentation, one URL per
claim) and the day they were read (``as_of``). A claim that could not be confirmed from a fetched copy of
the page is marked "as recalled" in ``source``: check it before relying on it. The mapping ages: providers
add series and CPU platforms; re-read the pages and update ``as_of`` with the rows.

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

#: The pages the rows cite.
GCP_CPU_PLATFORMS = "https://cloud.google.com/compute/docs/cpu-platforms"
GCP_MIN_CPU = "https://cloud.google.com/compute/docs/instances/specify-min-cpu-platform"
GCP_GENERAL = "https://cloud.google.com/compute/docs/general-purpose-machines"
GCP_COMPUTE = "https://cloud.google.com/compute/docs/compute-optimized-machines"
AWS_COMPUTE = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/compute-optimized-instances.html"
AWS_GRAVITON = "https://github.com/aws/aws-graviton-getting-started/blob/main/README.md"

READ_ON = "2026-11-25"


@dataclass(frozen=True)
class Platform:
    """A CPU platform and the instance families that run it.

    ``families`` are cpustudy family names (``PROVIDER:FAMILY``, as the price catalog names them), in no
    particular order; empty when no family cpustudy knows runs it. ``source`` names the URL(s) each family
    claim rests on, marked "as recalled" where it was not confirmed from a fetched page; ``as_of`` is the
    day the sources were read. ``how`` is filled by :func:`platform_of`: the evidence that matched."""

    name: str
    vendor: str  # "AMD" | "Intel" | "Arm"
    families: tuple[str, ...]
    source: str
    as_of: str
    how: str = ""
    sure: str = ""  # filled by platform_of: "certain", "probable" or "ambiguous", and why


SKYLAKE_CASCADE = Platform(
    name="Intel Xeon Scalable 1st/2nd gen (Skylake-SP, Cascade Lake)",
    vendor="Intel",
    families=("gcp:n2-highcpu", "gcp:c2-standard", "aws:c5"),
    source=(f"{GCP_MIN_CPU} (gcp:n2 runs Cascade Lake or Ice Lake; read 2026-11-25); "
            f"{GCP_COMPUTE} (gcp:c2 Cascade Lake; as recalled); "
            "https://aws.amazon.com/ec2/instance-types/c5/ (aws:c5 Xeon Platinum 8124M Skylake-SP and 8275CL "
            "Cascade Lake; as recalled). CPUID 6/85 is both generations: GCP's n2 and c2 run only Cascade Lake"),
    as_of=READ_ON,
)

ICE_LAKE = Platform(
    name="Intel Xeon Scalable 3rd gen (Ice Lake-SP)",
    vendor="Intel",
    families=("gcp:n2-highcpu", "aws:c6i"),
    source=(f"{GCP_MIN_CPU} (gcp:n2 runs Ice Lake or Cascade Lake; read 2026-11-25); "
            "https://aws.amazon.com/ec2/instance-types/c6i/ (aws:c6i 3rd gen Xeon Scalable, Ice Lake; as recalled; "
            "AWS's SDK release notes name Ice Lake for C6id: https://github.com/aws/aws-sdk-go/releases/tag/v1.44.82)"),
    as_of=READ_ON,
)

SAPPHIRE_RAPIDS = Platform(
    name="Intel Xeon Scalable 4th gen (Sapphire Rapids)",
    vendor="Intel",
    families=("gcp:c3-highcpu", "aws:c7i"),
    source=(f"{GCP_GENERAL} (gcp:c3 4th gen Xeon Scalable, Sapphire Rapids; read 2026-11-25); "
            "https://aws.amazon.com/ec2/instance-types/c7i/ (aws:c7i 4th gen Xeon Scalable, Sapphire Rapids; "
            "as recalled)"),
    as_of=READ_ON,
)

EMERALD_RAPIDS = Platform(
    name="Intel Xeon Scalable 5th gen (Emerald Rapids)",
    vendor="Intel",
    families=("gcp:n4-highcpu", "gcp:c4-highcpu"),
    source=(f"{GCP_GENERAL} (gcp:n4 5th gen Xeon Scalable, Emerald Rapids; read 2026-11-25); "
            f"{GCP_MIN_CPU} (gcp:c4 runs Emerald Rapids or Granite Rapids; read 2026-11-25). "
            "No AWS compute-optimized family cpustudy names runs it"),
    as_of=READ_ON,
)

GRANITE_RAPIDS = Platform(
    name="Intel Xeon 6 P-core (Granite Rapids)",
    vendor="Intel",
    families=("gcp:c4-highcpu", "aws:c8i"),
    source=(f"{GCP_MIN_CPU} (gcp:c4 runs Emerald Rapids or Granite Rapids; read 2026-11-25; which c4 shapes "
            f"run Granite Rapids: {GCP_CPU_PLATFORMS}, as recalled); "
            "https://aws.amazon.com/ec2/instance-types/c8i/ (aws:c8i custom Intel Xeon 6, Granite Rapids; "
            "as recalled)"),
    as_of=READ_ON,
)

ROME = Platform(
    name="AMD EPYC 2nd gen (Rome, Zen 2)",
    vendor="AMD",
    families=("gcp:n2d-highcpu", "aws:c5a"),
    source=(f"{GCP_CPU_PLATFORMS} (gcp:n2d runs Rome or Milan; as recalled); "
            "https://github.com/aws/aws-sdk-php/releases/tag/3.140.1 (AWS's SDK release notes: C5a, "
            "2nd gen AMD EPYC; read 2026-11-25; the product page https://aws.amazon.com/ec2/instance-types/c5/ "
            "as recalled)"),
    as_of=READ_ON,
)

MILAN = Platform(
    name="AMD EPYC 3rd gen (Milan, Zen 3)",
    vendor="AMD",
    families=("gcp:n2d-highcpu", "gcp:t2d-standard", "gcp:c2d-highcpu", "aws:c6a"),
    source=(f"{GCP_CPU_PLATFORMS} (gcp:n2d runs Rome or Milan, gcp:t2d and gcp:c2d Milan; as recalled); "
            "https://github.com/aws/aws-sdk-js-v3/commit/57c38e8466cfe494da95fa3964967ab8272e6152 (AWS's SDK "
            "changelog: C6a, 3rd gen AMD EPYC; read 2026-11-25; the product page "
            "https://aws.amazon.com/ec2/instance-types/c6a/ as recalled)"),
    as_of=READ_ON,
)

GENOA = Platform(
    name="AMD EPYC 4th gen (Genoa, Zen 4)",
    vendor="AMD",
    families=("gcp:c3d-highcpu", "aws:c7a"),
    source=(f"{AWS_COMPUTE} (aws:c7a 4th gen AMD EPYC; read 2026-11-25); "
            f"{GCP_CPU_PLATFORMS} (gcp:c3d 4th gen AMD EPYC, Genoa; as recalled)"),
    as_of=READ_ON,
)

TURIN = Platform(
    name="AMD EPYC 5th gen (Turin, Zen 5)",
    vendor="AMD",
    families=("gcp:c4d-highcpu", "gcp:n4d-highcpu", "aws:c8a"),
    source=(f"{GCP_CPU_PLATFORMS} (gcp:c4d and gcp:n4d 5th gen AMD EPYC, Turin; as recalled); "
            "https://aws.amazon.com/ec2/instance-types/c8a/ (aws:c8a 5th gen AMD EPYC, Turin; as recalled)"),
    as_of=READ_ON,
)

NEOVERSE_N1 = Platform(
    name="Arm Neoverse N1 (AWS Graviton2, Ampere Altra)",
    vendor="Arm",
    families=("gcp:t2a-standard", "aws:c6g"),
    source=(f"{AWS_GRAVITON} (aws:c6g Graviton2, Neoverse-N1; read 2026-11-25); "
            f"{GCP_CPU_PLATFORMS} (gcp:t2a Ampere Altra; read 2026-11-25; Altra's cores are Neoverse N1: "
            "as recalled)"),
    as_of=READ_ON,
)

NEOVERSE_V1 = Platform(
    name="Arm Neoverse V1 (AWS Graviton3)",
    vendor="Arm",
    families=("aws:c7g",),
    source=f"{AWS_GRAVITON} (aws:c7g Graviton3, Neoverse-V1; read 2026-11-25). No GCP series runs it",
    as_of=READ_ON,
)

NEOVERSE_V2 = Platform(
    name="Arm Neoverse V2 (Google Axion, AWS Graviton4)",
    vendor="Arm",
    families=("gcp:c4a-highcpu", "aws:c8g"),
    source=(f"{AWS_GRAVITON} (aws:c8g Graviton4, Neoverse-V2; read 2026-11-25); "
            f"{GCP_CPU_PLATFORMS} (gcp:c4a Google Axion, Neoverse V2; as recalled)"),
    as_of=READ_ON,
)

NEOVERSE_N2 = Platform(
    name="Arm Neoverse N2",
    vendor="Arm",
    families=(),
    source=("https://developer.arm.com/Processors/Neoverse%20N2 (the core; as recalled). No GCP or AWS "
            "family cpustudy names runs it (Azure's Cobalt 100 does)"),
    as_of=READ_ON,
)

SAPPHIRE_OR_EMERALD = Platform(
    name="Intel Xeon Scalable 4th or 5th gen (Sapphire or Emerald Rapids)",
    vendor="Intel",
    families=SAPPHIRE_RAPIDS.families + EMERALD_RAPIDS.families,
    source=f"{SAPPHIRE_RAPIDS.source}; {EMERALD_RAPIDS.source}",
    as_of=READ_ON,
)

#: Every platform this module can name, in no particular order.
PLATFORMS: tuple[Platform, ...] = (
    SKYLAKE_CASCADE, ICE_LAKE, SAPPHIRE_RAPIDS, EMERALD_RAPIDS, SAPPHIRE_OR_EMERALD, GRANITE_RAPIDS,
    ROME, MILAN, GENOA, TURIN,
    NEOVERSE_N1, NEOVERSE_V1, NEOVERSE_V2, NEOVERSE_N2,
)

#: Intel family 6 model (decimal) -> platform.
INTEL_MODELS: dict[int, Platform] = {
    85: SKYLAKE_CASCADE,  # 0x55: Skylake-SP and Cascade Lake (and Cooper Lake); the stepping tells them apart
    106: ICE_LAKE,  # 0x6A: Ice Lake-SP
    108: ICE_LAKE,  # 0x6C: Ice Lake-D
    143: SAPPHIRE_RAPIDS,  # 0x8F
    207: EMERALD_RAPIDS,  # 0xCF
    173: GRANITE_RAPIDS,  # 0xAD
}

#: AMD family 25 (0x19) model ranges (inclusive) -> platform.
AMD_FAMILY_25: tuple[tuple[int, int, Platform], ...] = (
    (0x00, 0x0F, MILAN),
    (0x20, 0x2F, MILAN),
    (0x30, 0x3F, MILAN),
    (0x10, 0x1F, GENOA),
    (0xA0, 0xAF, GENOA),  # Bergamo (Zen 4c)
)

#: Xeon Scalable numbering: the second digit of Platinum/Gold/Silver/Bronze NNNN is the generation.
XEON_SCALABLE_GENERATIONS: dict[str, Platform] = {
    "1": SKYLAKE_CASCADE, "2": SKYLAKE_CASCADE, "3": ICE_LAKE, "4": SAPPHIRE_RAPIDS, "5": EMERALD_RAPIDS,
}

#: EPYC numbering: (series digit, generation digit) of EPYC SXXG -> platform.
EPYC_GENERATIONS: dict[tuple[str, str], Platform] = {
    ("7", "2"): ROME, ("7", "3"): MILAN, ("9", "4"): GENOA, ("9", "5"): TURIN,
}

#: Code names in a brand (QEMU's CPU models spell them ``Cascadelake-Server``, ``EPYC-Milan``) -> platform.
CODE_NAMES: tuple[tuple[str, Platform], ...] = (
    (r"CASCADE[\s-]?LAKE", SKYLAKE_CASCADE), (r"SKYLAKE[\s-]?(?:SERVER|SP)", SKYLAKE_CASCADE),
    (r"ICE[\s-]?LAKE(?![\s-]?CLIENT)", ICE_LAKE), (r"SAPPHIRE[\s-]?RAPIDS", SAPPHIRE_RAPIDS),
    (r"EMERALD[\s-]?RAPIDS", EMERALD_RAPIDS), (r"GRANITE[\s-]?RAPIDS", GRANITE_RAPIDS),
    (r"ROME", ROME), (r"MILAN", MILAN), (r"GENOA", GENOA), (r"BERGAMO", GENOA), (r"TURIN", TURIN),
)

NEOVERSE_CORES: dict[str, Platform] = {
    "N1": NEOVERSE_N1, "V1": NEOVERSE_V1, "V2": NEOVERSE_V2, "N2": NEOVERSE_N2,
}

_XEON_SCALABLE = re.compile(r"\b(?:PLATINUM|GOLD|SILVER|BRONZE)\s+\d(\d)\d\d([A-Z]*)")
_XEON_6 = re.compile(r"\bXEON(?:\(R\))?\s+(?:6\s+)?(6\d{3}P)\b")
_EPYC = re.compile(r"\bEPYC(?:\(TM\))?\s+(\d)[0-9A-Z]{2}(\d)(?!\d)")
_NEOVERSE = re.compile(r"\bNEOVERSE[\s_-]*([NV]\d)\b")


def _int(value: Any) -> int | None:
    """An int from py-cpuinfo's field: an int, or a decimal ("25") or hex ("0x19") string."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    try:
        return int(text, 16) if text.startswith("0x") else int(text)
    except ValueError:
        return None


def _vendor(info: Mapping[str, Any]) -> str | None:
    """"AMD", "Intel", "Arm" or None, from cpu_vendor, else from the brand or the architecture."""
    vendor = str(info.get("cpu_vendor") or "").strip().upper()
    model = str(info.get("cpu_model") or "").upper()
    arch = str(info.get("arch") or "").lower()
    if vendor in ("AUTHENTICAMD", "AMD") or (vendor in ("", "UNKNOWN") and re.search(r"\bAMD\b", model)):
        return "AMD"
    if vendor in ("GENUINEINTEL", "INTEL") or (vendor in ("", "UNKNOWN") and "INTEL" in model):
        return "Intel"
    if vendor.startswith("ARM") or arch in ("aarch64", "arm64") or "NEOVERSE" in model:
        return "Arm"
    return None


def _by_cpuid(vendor: str | None, family: int | None, model: int | None) -> Platform | None:
    if vendor == "Intel" and family == 6 and model is not None:
        return INTEL_MODELS.get(model)
    if vendor != "AMD" or family is None:
        return None
    if family == 26:  # 0x1A: Zen 5
        return TURIN
    if model is None:
        return None
    if family == 23 and model == 0x31:  # 0x17: Zen 2 Rome (other family-23 models: Naples, clients)
        return ROME
    if family == 25:
        for low, high, platform in AMD_FAMILY_25:
            if low <= model <= high:
                return platform
    return None


def _by_name(vendor: str | None, model_name: str) -> tuple[Platform, str] | None:
    name = model_name.upper()
    if vendor in ("Intel", None):
        m = _XEON_SCALABLE.search(name)
        # A 3rd-gen number (x3xx) with an H suffix is Cooper Lake (CPUID 6/85), not Ice Lake: not named here.
        if m and not (m.group(1) == "3" and m.group(2).startswith("H")) and m.group(1) in XEON_SCALABLE_GENERATIONS:
            return XEON_SCALABLE_GENERATIONS[m.group(1)], f"model name {m.group(0).split()[-1]}"
        m = _XEON_6.search(name)  # Xeon 6 P-core (6xxxP); the E-core 6xxxE parts are Sierra Forest
        if m:
            return GRANITE_RAPIDS, f"model name {m.group(1)}"
    if vendor in ("AMD", None):
        m = _EPYC.search(name)
        if m and (m.group(1), m.group(2)) in EPYC_GENERATIONS:
            part = name[m.start():m.end()].split()[-1]
            return EPYC_GENERATIONS[(m.group(1), m.group(2))], f"model name {part}"
    if vendor in ("Arm", None):
        m = _NEOVERSE.search(name)
        if m and m.group(1) in NEOVERSE_CORES:
            return NEOVERSE_CORES[m.group(1)], f"model name Neoverse {m.group(1)}"
    if vendor in ("AMD", "Intel"):
        for pattern, platform in CODE_NAMES:
            m = re.search(rf"\b{pattern}\b", name)
            if m and platform.vendor == vendor:
                return platform, f"model name {m.group(0).title()}"
    return None


#: Instruction sets a platform cannot have: seeing one contradicts a CPUID model or a name that says it.
#: Granite Rapids added AMX-FP16, PREFETCHI and AVX10 (Intel SDM; Linux ``intel-family.h`` lists AMX parts);
#: AMD's Zen 4 added AVX-512, Zen 5 VP2INTERSECT.
NEWER_THAN: dict[str, tuple[str, ...]] = {
    SKYLAKE_CASCADE.name: ("amx_tile", "avx512_fp16", "amx_fp16", "prefetchi", "avx10"),
    ICE_LAKE.name: ("amx_tile", "avx512_fp16", "amx_fp16", "prefetchi", "avx10"),
    SAPPHIRE_RAPIDS.name: ("amx_fp16", "prefetchi", "avx10"),
    EMERALD_RAPIDS.name: ("amx_fp16", "prefetchi", "avx10"),
    SAPPHIRE_OR_EMERALD.name: ("amx_fp16", "prefetchi", "avx10"),
    ROME.name: ("avx512f", "vaes"),
    MILAN.name: ("avx512f",),
    GENOA.name: ("avx512_vp2intersect",),
}
#: The largest L3 of a Sapphire Rapids (112.5 MiB) and of an Emerald Rapids (320 MiB), in KiB: a larger one
#: is a newer part. Granite Rapids has 64 KiB of L1i per core (its predecessors 32) and CPUID leaf 0x24.
SPR_MAX_L3_KIB = 115_200
EMR_MAX_L3_KIB = 327_680
GNR_L1I_KIB = 64
GNR_MAX_LEAF = 0x24
_NAMES = {"amx_tile": "AMX", "amx_fp16": "AMX-FP16", "prefetchi": "PREFETCHI", "avx10": "AVX10",
          "avx512_vp2intersect": "VP2INTERSECT", "avx512f": "AVX-512", "avx512_bf16": "AVX512-BF16",
          "avx512_fp16": "AVX512-FP16", "vaes": "VAES", "gfni": "GFNI", "avx512_vbmi2": "AVX512-VBMI2"}


@dataclass(frozen=True)
class Evidence:
    """What a machine record says of its CPU beyond its name: the instruction sets (``/proc/cpuinfo``'s
    flags with the bits only CPUID shows), CPUID's family, model and highest leaf, AVX10's version and
    the caches (``extra["cpuid"]``, :mod:`cpustudy.environment.cpuid`; older records: py-cpuinfo's
    family and model only)."""

    features: frozenset[str]
    family: int | None = None
    model: int | None = None
    max_leaf: int | None = None
    avx10_version: int | None = None
    l1i_kib: int | None = None
    l3_kib: int | None = None
    hypervisor: bool = False

    @classmethod
    def of(cls, info: Mapping[str, Any]) -> "Evidence":
        extra = info.get("extra") if isinstance(info.get("extra"), Mapping) else {}
        assert isinstance(extra, Mapping)
        cpuid = extra.get("cpuid") if isinstance(extra.get("cpuid"), Mapping) else {}
        assert isinstance(cpuid, Mapping)
        flags = info.get("flags") or []
        features = set(flags.split() if isinstance(flags, str) else flags) | set(cpuid.get("features") or [])
        family = _int(cpuid.get("family")) if cpuid.get("family") is not None else _int(extra.get("family"))
        model = _int(cpuid.get("model")) if cpuid.get("model") is not None else _int(extra.get("model"))
        return cls(frozenset(features), family, model, _int(cpuid.get("max_leaf")), _int(cpuid.get("avx10_version")),
                   _int(cpuid.get("l1i_kib")), _int(cpuid.get("l3_kib")),
                   "hypervisor" in features or bool(cpuid.get("hypervisor")))

    def granite_markers(self) -> list[str]:
        """What marks a Granite Rapids here (the instruction sets, then the CPUID leaf and the caches)."""
        out = [_NAMES[f] + (f".{self.avx10_version}" if f == "avx10" and self.avx10_version else "")
               for f in ("amx_fp16", "prefetchi", "avx10") if f in self.features]
        if self.max_leaf is not None and self.max_leaf >= GNR_MAX_LEAF:
            out.append(f"highest CPUID leaf {self.max_leaf}")
        if self.l1i_kib is not None and self.l1i_kib >= GNR_L1I_KIB:
            out.append(f"{self.l1i_kib} KB L1i per core")
        if self.l3_kib is not None and self.l3_kib > EMR_MAX_L3_KIB:
            out.append(f"{self.l3_kib // 1024} MB L3")
        return out


def _contradiction(platform: Platform, ev: Evidence) -> str:
    """What in ``ev`` a CPU of ``platform`` cannot have ("" where nothing does)."""
    seen = [_NAMES.get(f, f) for f in NEWER_THAN.get(platform.name, ()) if f in ev.features]
    if platform.vendor == "Intel" and platform is not GRANITE_RAPIDS and len(ev.granite_markers()) >= 2:
        seen += [m for m in ev.granite_markers() if m not in seen]
    if platform is SAPPHIRE_RAPIDS and ev.l3_kib is not None and ev.l3_kib > SPR_MAX_L3_KIB:
        seen.append(f"a {ev.l3_kib // 1024} MB L3 (a Sapphire Rapids has at most 112.5)")
    return ", ".join(dict.fromkeys(seen))


def _by_features(vendor: str | None, ev: Evidence) -> tuple[Platform, list[str], str] | None:
    """The platform the instruction sets and caches alone point to, the markers that did, and how sure:
    "certain" with two Granite Rapids markers or more, else "probable" (a hypervisor may mask any one
    marker), "ambiguous" where they fit two platforms (then the row names both)."""
    f = ev.features
    if vendor == "Intel":
        granite = ev.granite_markers()
        instruction_markers = {"amx_fp16", "prefetchi", "avx10"} & f
        if "amx_tile" in f or instruction_markers:
            if granite:
                sure = "certain" if len(granite) >= 2 else "probable: one Granite Rapids marker"
                return GRANITE_RAPIDS, ["AMX"] * ("amx_tile" in f) + granite, sure
            if ev.l3_kib is not None and ev.l3_kib > SPR_MAX_L3_KIB:
                return (EMERALD_RAPIDS, ["AMX", f"{ev.l3_kib // 1024} MB L3 (more than a Sapphire Rapids has)"],
                        "probable: AMX and the L3's size")
            return SAPPHIRE_OR_EMERALD, ["AMX"], "ambiguous: AMX is on both, and nothing here tells them apart"
        if "avx512f" in f:
            if {"gfni", "avx512_vbmi2"} & f:
                return ICE_LAKE, ["AVX-512", *[_NAMES[x] for x in ("gfni", "avx512_vbmi2") if x in f]], "probable"
            return SKYLAKE_CASCADE, ["AVX-512 without GFNI or AMX"], "probable"
    if vendor == "AMD":
        if "avx512f" in f:
            if "avx512_vp2intersect" in f:
                return TURIN, ["AVX-512", "VP2INTERSECT"], "probable"
            return GENOA, ["AVX-512", *["AVX512-BF16"] * ("avx512_bf16" in f), "no VP2INTERSECT"], "probable"
        if "vaes" in f and "avx2" in f:
            return MILAN, ["AVX2", "VAES", "no AVX-512"], "probable"
    return None


def _agreeing(platform: Platform, ev: Evidence, featured: tuple[Platform, list[str], str] | None) -> str:
    """How sure a platform named by CPUID or by name is: certain on bare metal; under a hypervisor (which may
    rewrite both) certain only where the instruction sets and caches point to it by what they have (AMX, an
    L3 too large for the generation before), probable where they agree only by what they lack (masking
    can take a feature away, never add one) or do not decide."""
    if not ev.hypervisor:
        return "certain"
    if featured is not None and featured[0] is platform and not featured[2].startswith("ambiguous") \
            and not any(m.startswith("no ") or " without " in m for m in featured[1]):
        return "certain: the instruction sets agree"
    return "probable: under a hypervisor, which may rewrite the CPU's name and model"


def platform_of(info: Mapping[str, Any]) -> Platform | None:
    """The CPU platform of a machine-info mapping, or None when no evidence matches a row of
    :data:`PLATFORMS` (an unknown or unlisted CPU: nothing is guessed).

    Evidence, strongest first, each taken only where the instruction sets and caches do not contradict it
    (a hypervisor rewrites CPUID's model and hides the name, but cannot give a guest AMX its host lacks):
    the CPUID family and model of a server part; the model name; the instruction sets and caches alone
    (:func:`_by_features`). The returned row's ``how`` says which evidence decided it (``CPUID family 25
    model 17``, ``model name 9B14``, ``AMX-FP16, PREFETCHI, ...``) and ``sure`` how sure that is."""
    vendor = _vendor(info)
    ev = Evidence.of(info)
    featured = _by_features(vendor, ev)
    contradicted: list[str] = []
    platform = _by_cpuid(vendor, ev.family, ev.model)
    cpuid_how = f"CPUID family {ev.family}" + (f" model {ev.model}" if ev.model is not None else "")
    if platform is not None:
        against = _contradiction(platform, ev)
        if not against:
            return replace(platform, how=cpuid_how, sure=_agreeing(platform, ev, featured))
        contradicted.append(f"{cpuid_how} ({platform.name}) contradicted by {against}")
    named = _by_name(vendor, str(info.get("cpu_model") or ""))
    if named is not None:
        against = _contradiction(named[0], ev)
        if not against:
            return replace(named[0], how=named[1], sure=_agreeing(named[0], ev, featured))
        contradicted.append(f"{named[1]} ({named[0].name}) contradicted by {against}")
    if featured is None:
        return None
    found, markers, sure = featured
    if platform is None and vendor == "Intel" and ev.family == 6 and ev.model is not None:
        contradicted.append(f"{cpuid_how} is no server part cpustudy knows (a hypervisor may have rewritten it)")
    how = "; ".join([", ".join(markers), *contradicted])
    return replace(found, how=how, sure=sure)


def families_for(info: Mapping[str, Any]) -> tuple[str, ...]:
    """The instance families that run ``info``'s CPU platform (:func:`platform_of`); () when it is unknown."""
    platform = platform_of(info)
    return platform.families if platform is not None else ()


#: Where a family's vCPU is a whole core: GCP's Tau T2D and T2A and its Arm series (every other GCP series
#: runs two vCPUs per core); AWS's Graviton families and its AMD families from the 7th generation on (every
#: other AWS vCPU is a hardware thread).
GCP_VCPU_SOURCE = (f"{GCP_CPU_PLATFORMS} ('For the Tau T2D and Tau T2A machine series, VMs always have one vCPU "
                   "per core. For all other machine series, VMs have two vCPUs per core by default'; Arm: one "
                   "thread per core; read 2026-11-26)")
AWS_VCPU_SOURCE = ("https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instance-optimize-cpu.html ('Each vCPU is "
                   "a thread of a CPU core, except for T2 instances, M7a instances, ... AWS Graviton'; threads per "
                   "core not modifiable for C7a, M7a, R7a; read 2026-11-26; the 8th-gen AMD families as recalled)")
_GCP_CORE_SERIES = ("t2d", "t2a", "c4a", "h3")
_AWS_CORE = re.compile(r"^[a-z]+(?:\d+g[a-z]*|[7-9]a[a-z]*)$")  # c7g, c8gn, c7a, m8a: Graviton, AMD 7th gen on


def vcpu_kind(family: str) -> tuple[str, str] | None:
    """``("thread", source)`` where one vCPU of ``family`` (``gcp:c4-highcpu``, ``aws:c7a``) is a hardware
    thread (two share a core), ``("core", source)`` where it is a whole core; None for an unknown provider."""
    provider, _, name = family.partition(":")
    series = name.split("-")[0].lower()
    if provider.startswith("gcp"):
        return ("core" if series in _GCP_CORE_SERIES else "thread"), GCP_VCPU_SOURCE
    if provider == "aws":
        return ("core" if _AWS_CORE.match(series) else "thread"), AWS_VCPU_SOURCE
    return None


def equivalent_vcpus(vcpus: int, threads_per_core: int | None, family: str) -> tuple[int, str]:
    """The vCPUs of ``family`` that hold the same physical cores as ``vcpus`` logical CPUs of a machine with
    ``threads_per_core`` (1: whole cores; 2: two threads a core, taken in pairs as ``choose_cpus`` does), and
    a sentence saying why where that is not ``vcpus``. Unknown either way: ``vcpus``, unchanged.

    A run on 2 whole cores priced as a 2-vCPU family of hardware threads would be priced as one core: up to
    2x optimistic for compute-bound training; priced as 4 of its vCPUs it holds the same 2 cores."""
    kind = vcpu_kind(family)
    if not threads_per_core or kind is None:
        return vcpus, ""
    cores = -(-vcpus // threads_per_core)
    theirs = cores * 2 if kind[0] == "thread" else cores
    if theirs == vcpus:
        return vcpus, ""
    here = (f"{vcpus} vCPU{'s are' if vcpus != 1 else ' is'} here {cores} "
            f"{'whole core' if threads_per_core == 1 else 'core'}{'s' if cores != 1 else ''} "
            f"({threads_per_core} thread{'s' if threads_per_core != 1 else ''} per core)")
    return theirs, (f"{here}; one {family} vCPU is a {'hardware thread' if kind[0] == 'thread' else 'whole core'}, "
                    f"so the same cores are {theirs} of its vCPUs")


def vcpu_words(family: str, threads_per_core: int | None) -> str:
    """``a vCPU is a hardware thread: 2 here are 4 there`` for ``cpustudy machine``'s families line."""
    kind = vcpu_kind(family)
    if kind is None:
        return "its vCPU's worth unknown"
    words = f"a vCPU is a {'hardware thread' if kind[0] == 'thread' else 'whole core'}"
    if threads_per_core:
        theirs, _ = equivalent_vcpus(2, threads_per_core, family)
        words += f"; 2 vCPUs here are {theirs} there"
    return words
