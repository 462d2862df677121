"""The CPU -> cloud instance family map (cpustudy.prices.platforms): pure, no TensorFlow."""

from __future__ import annotations

import re
from datetime import date

import pytest

from cpustudy.prices import platforms
from cpustudy.prices.platforms import PLATFORMS, families_for, platform_of

# This session's machine: a VM that hides the part ("AMD EPYC"), with CPUID family 25 model 17 (0x11).
THIS_SESSION = {
    "cpu_model": "AMD EPYC",
    "cpu_vendor": "AuthenticAMD",
    "arch": "x86_64",
    "flags": ["avx512f", "avx512_bf16", "avx2", "fma"],
    "extra": {"family": 25, "model": 17},
}


def test_this_sessions_cpu_is_genoa_with_c3d_and_c7a():
    p = platform_of(THIS_SESSION)
    assert p is not None
    assert p.name == "AMD EPYC 4th gen (Genoa, Zen 4)"
    assert p.vendor == "AMD"
    assert {"gcp:c3d-highcpu", "aws:c7a"} <= set(p.families)
    assert p.how == "CPUID family 25 model 17"
    assert set(families_for(THIS_SESSION)) == set(p.families)


def test_zen5_family_26_is_turin():
    info = {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD", "arch": "x86_64", "extra": {"family": 26, "model": 2}}
    p = platform_of(info)
    assert p is not None and "Turin" in p.name
    assert {"gcp:c4d-highcpu", "aws:c8a"} <= set(families_for(info))
    assert "aws:c7a" not in families_for(info)


def test_intel_family_6_model_143_is_sapphire_rapids():
    info = {"cpu_model": "Intel(R) Xeon(R) CPU @ 2.70GHz", "cpu_vendor": "GenuineIntel", "arch": "x86_64",
            "extra": {"family": 6, "model": 143}}
    p = platform_of(info)
    assert p is not None and "Sapphire Rapids" in p.name
    assert {"gcp:c3-highcpu", "aws:c7i"} <= set(p.families)
    assert p.how == "CPUID family 6 model 143"


def test_brand_only_xeon_8581c_is_emerald_rapids():
    info = {"cpu_model": "INTEL(R) XEON(R) PLATINUM 8581C", "cpu_vendor": "GenuineIntel", "arch": "x86_64"}
    p = platform_of(info)
    assert p is not None and "Emerald Rapids" in p.name
    assert "8581C" in p.how
    assert {"gcp:n4-highcpu", "gcp:c4-highcpu"} <= set(p.families)


def test_brand_only_parts_by_their_numbering():
    def name(model: str, vendor: str = "") -> str | None:
        p = platform_of({"cpu_model": model, "cpu_vendor": vendor})
        return p.name if p else None

    assert "Sapphire Rapids" in name("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", "GenuineIntel")
    assert "Genoa" in name("AMD EPYC 9B14", "AuthenticAMD")
    assert "Milan" in name("AMD EPYC 7B13")
    assert "Rome" in name("AMD EPYC 7R32")
    assert "Turin" in name("AMD EPYC 9R45")
    assert "Granite Rapids" in name("Intel(R) Xeon(R) 6985P-C", "GenuineIntel")
    assert "Cascade Lake" in name("Intel Xeon Processor (Cascadelake)", "GenuineIntel")  # QEMU's CPU model names
    assert "Milan" in name("AMD EPYC-Milan Processor", "AuthenticAMD")
    assert name("Intel Xeon Processor (Skylake, IBRS)", "GenuineIntel") is None  # client or server: not guessed
    assert name("Intel(R) Xeon(R) Platinum 8380H CPU", "GenuineIntel") is None  # Cooper Lake, not Ice Lake
    assert name("AMD EPYC 7601", "AuthenticAMD") is None  # Naples: no family listed, not guessed
    assert name("Intel(R) Xeon(R) 6780E", "GenuineIntel") is None  # Sierra Forest E-cores, not Granite Rapids


def test_cpuid_wins_over_a_hidden_part_and_numbers_may_be_strings():
    info = {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD", "extra": {"family": "25", "model": "0x01"}}
    p = platform_of(info)
    assert p is not None and "Milan" in p.name
    assert "gcp:t2d-standard" in p.families


def test_arm_neoverse_v2_is_c4a_and_c8g():
    for vendor in ("ARM", ""):
        info = {"cpu_model": "ARM Neoverse-V2", "cpu_vendor": vendor, "arch": "aarch64", "flags": []}
        p = platform_of(info)
        assert p is not None and p.vendor == "Arm"
        assert {"gcp:c4a-highcpu", "aws:c8g"} <= set(families_for(info))
    assert "aws:c6g" in families_for({"cpu_model": "ARM Neoverse N1", "cpu_vendor": "ARM", "arch": "aarch64"})
    assert families_for({"cpu_model": "ARM Neoverse V1", "cpu_vendor": "ARM", "arch": "aarch64"}) == ("aws:c7g",)


@pytest.mark.parametrize("info", [
    {"cpu_model": "Hygon C86 7185", "cpu_vendor": "HygonGenuine", "arch": "x86_64", "extra": {"family": 24, "model": 1}},
    {"cpu_model": "unknown", "cpu_vendor": "unknown", "arch": "x86_64", "extra": {}},
    {"cpu_model": "Intel(R) Core(TM) i7-13700K", "cpu_vendor": "GenuineIntel", "extra": {"family": 6, "model": 183}},
    {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD", "extra": {"family": 25}},  # no model: Milan or Genoa?
    {"cpu_model": "ARM Neoverse-V3", "cpu_vendor": "ARM", "arch": "aarch64"},
    {},
])
def test_unknown_cpu_gives_none_and_no_families(info):
    assert platform_of(info) is None
    assert families_for(info) == ()


def test_every_row_is_sourced_and_dated():
    assert len(PLATFORMS) >= 12
    for p in PLATFORMS:
        assert p.source.startswith("http"), p.name
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.as_of), p.name
        assert date.fromisoformat(p.as_of) <= date(2026, 11, 25), p.name
        assert p.vendor in ("AMD", "Intel", "Arm"), p.name
        assert p.how == "", p.name  # filled only by the matcher
        for family in p.families:
            assert re.fullmatch(r"(gcp|aws):[a-z0-9]+(-[a-z]+)?", family), family


def test_families_use_the_price_catalogs_names():
    """Families cpustudy already prices keep the catalog's exact name (provider:family, column 1 and 3)."""
    from cpustudy.prices.shipped import shipped_rows

    priced = {f"{row.provider}:{row.family}" for row in shipped_rows()}
    named = {f for p in PLATFORMS for f in p.families}
    for family in ("gcp:c3-highcpu", "gcp:c4-highcpu", "gcp:c4d-highcpu", "gcp:n2-highcpu", "gcp:n4-highcpu",
                   "gcp:t2d-standard", "aws:c7a", "aws:c7i", "aws:c8g"):
        assert family in priced and family in named, family
    assert platforms.GENOA.families == tuple(dict.fromkeys(platforms.GENOA.families))  # no duplicates
