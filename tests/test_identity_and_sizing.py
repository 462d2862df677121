"""Priced and sized as the machine it ran on: the CPU identified by its evidence under a hypervisor
(cpustudy.environment.cpuid, cpustudy.prices.platforms), a vCPU's worth, the memory a training needs, and
which cpustudy measured a run (cpustudy.provenance). No TensorFlow here except where marked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cpustudy import prices, provenance
from cpustudy.analysis import summary
from cpustudy.environment import cpuid, machine
from cpustudy.prices import platforms
from cpustudy.store import Store

# The VM of issue 35: the hypervisor hides the name and rewrote CPUID's model to 167 (Rocket Lake, a desktop
# part); AMX, AMX-FP16, PREFETCHI, AVX10, leaf 36, a 64 KB L1i and a 480 MiB L3 come through.
GRANITE_VM = {
    "cpu_model": "Intel(R) Xeon(R) Processor", "cpu_vendor": "GenuineIntel", "arch": "x86_64",
    "flags": ["hypervisor", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"],
    "threads_per_core": 1,
    "extra": {"family": 6, "model": 167,
              "cpuid": {"max_leaf": 36, "family": 6, "model": 167, "avx10_version": 1, "l1i_kib": 64,
                        "l3_kib": 480 * 1024, "features": ["amx_fp16", "amx_tile", "avx10", "prefetchi"]}},
}


def _with(info: dict, **cpuid_changes) -> dict:
    out = json.loads(json.dumps(info))
    out["extra"]["cpuid"].update(cpuid_changes)
    return out


def test_a_granite_rapids_behind_a_hypervisor_is_named_by_its_evidence():
    p = platforms.platform_of(GRANITE_VM)
    assert p is not None and p.name == platforms.GRANITE_RAPIDS.name
    assert p.sure == "certain"
    for marker in ("AMX-FP16", "PREFETCHI", "AVX10.1", "highest CPUID leaf 36", "64 KB L1i", "480 MB L3"):
        assert marker in p.how
    assert "model 167" in p.how and "rewritten" in p.how  # the rewritten model is named, not believed
    assert "gcp:c4-highcpu" in p.families


def test_one_marker_is_probable_amx_alone_is_ambiguous_and_the_l3_tells_emerald():
    bare = {"features": ["amx_tile"], "max_leaf": 32, "l1i_kib": 32, "avx10_version": None}
    one = platforms.platform_of(_with(GRANITE_VM, **{**bare, "l3_kib": 100 * 1024, "features": ["amx_tile", "prefetchi"]}))
    assert one is not None and one.name == platforms.GRANITE_RAPIDS.name and one.sure.startswith("probable")
    amx = platforms.platform_of(_with(GRANITE_VM, **{**bare, "l3_kib": 100 * 1024}))
    assert amx is not None and amx.name == platforms.SAPPHIRE_OR_EMERALD.name and amx.sure.startswith("ambiguous")
    assert {"gcp:c3-highcpu", "gcp:c4-highcpu"} <= set(amx.families)
    emerald = platforms.platform_of(_with(GRANITE_VM, **{**bare, "l3_kib": 300 * 1024}))
    assert emerald is not None and emerald.name == platforms.EMERALD_RAPIDS.name


def test_a_cpuid_model_contradicted_by_the_instruction_sets_is_not_believed():
    # A hypervisor presenting "Cascadelake-Server" (6/85) on a host with AMX: the features win.
    info = _with(GRANITE_VM, model=85, max_leaf=27, l1i_kib=32, l3_kib=100 * 1024, features=["amx_tile"])
    info["extra"]["model"] = 85
    p = platforms.platform_of(info)
    assert p is not None and p.name == platforms.SAPPHIRE_OR_EMERALD.name
    assert "CPUID family 6 model 85" in p.how and "contradicted by AMX" in p.how
    # The same model without AMX is what it says, probable under a hypervisor.
    plain = {"cpu_model": "Intel(R) Xeon(R) Processor", "cpu_vendor": "GenuineIntel", "arch": "x86_64",
             "flags": ["hypervisor", "avx512f"], "extra": {"family": 6, "model": 85}}
    q = platforms.platform_of(plain)
    assert q is not None and q.name == platforms.SKYLAKE_CASCADE.name and q.sure.startswith("probable")


def test_amd_generations_by_their_instruction_sets_where_cpuid_says_nothing():
    base = {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD", "arch": "x86_64"}
    zen4 = platforms.platform_of({**base, "flags": ["avx2", "avx512f", "avx512_bf16"]})
    zen5 = platforms.platform_of({**base, "flags": ["avx2", "avx512f", "avx512_bf16", "avx512_vp2intersect"]})
    zen3 = platforms.platform_of({**base, "flags": ["avx2", "vaes"]})
    assert zen4 is not None and zen4.name == platforms.GENOA.name and zen4.sure == "probable"
    assert zen5 is not None and zen5.name == platforms.TURIN.name
    assert zen3 is not None and zen3.name == platforms.MILAN.name
    # Zen 4 by CPUID, as priced today: an AMD family.
    genoa = platforms.platform_of({**base, "flags": ["avx512f"], "extra": {"family": 25, "model": 17}})
    assert genoa is not None and genoa.name == platforms.GENOA.name and "aws:c7a" in genoa.families


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="Linux only")
def test_cpuid_read_here_agrees_with_the_kernel():
    """Two independent readings of this machine: CPUID executed here and /proc/cpuinfo."""
    got = cpuid.read_cpuid()
    if "error" in got:
        pytest.skip(got["error"])
    proc = machine.proc_cpuinfo()
    assert got["family"] == int(proc["cpu family"]) and got["model"] == int(proc["model"])
    assert got["vendor"] == proc["vendor_id"]
    kernel = set(proc.get("flags", "").split())
    for name in set(cpuid.FEATURE_BITS.values()) & {"avx512f", "amx_tile", "amx_bf16", "avx512_fp16", "avx_vnni",
                                                     "avx512_bf16"}:
        assert (name in got["features"]) == (name in kernel), name
    assert got["max_leaf"] >= 1


def test_caches_are_read_from_sysfs(tmp_path):
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "64K"), (2, "Unified", "2048K"),
                                             (3, "Unified", "491520K")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert cpuid.read_caches(tmp_path) == {"l1d_kib": 48, "l1i_kib": 64, "l2_kib": 2048, "l3_kib": 480 * 1024}


def test_a_vcpus_worth_follows_the_family():
    assert platforms.vcpu_kind("gcp:c4-highcpu")[0] == "thread"
    assert platforms.vcpu_kind("gcp:t2d-standard")[0] == "core"
    assert platforms.vcpu_kind("aws:c7a")[0] == "core" and platforms.vcpu_kind("aws:c8g")[0] == "core"
    assert platforms.vcpu_kind("aws:c7i")[0] == "thread"
    assert platforms.equivalent_vcpus(2, 1, "gcp:c4-highcpu")[0] == 4  # 2 whole cores = 4 hyperthreads
    assert platforms.equivalent_vcpus(4, 2, "gcp:c4-highcpu") == (4, "")
    assert platforms.equivalent_vcpus(4, 2, "aws:c7a")[0] == 2
    assert platforms.equivalent_vcpus(2, None, "gcp:c4-highcpu") == (2, "")


def test_a_granite_rapids_run_on_whole_cores_is_priced_as_the_same_cores_of_c4():
    catalog = prices.Catalog.load(sky=False)
    price, note = prices.own_family(catalog, GRANITE_VM, 2, None, spot=True)
    assert price is not None and price.name == "gcp:c4-highcpu-4", note
    assert "Granite Rapids" in note and "same cores are 4 of its vCPUs" in note


def test_an_instance_without_the_memory_a_training_needs_is_never_chosen():
    catalog = prices.Catalog.load(sky=False)
    need = prices.memory_need_gib(7 * 2**30)  # 7 GiB peak -> 8.9 GiB with the margin and the OS's reserve
    assert need == pytest.approx(7 * 1.2 + 0.5)
    price, note = catalog.cpu_instance("gcp:c4-highcpu", 2, threads_per_core=1, memory_gib=need)
    assert price is not None and price.name == "gcp:c4-highcpu-8" and price.memory_gib >= need
    assert "c4-highcpu-4 has 8 GiB" in note
    none, why = catalog.cpu_instance("gcp:c4-highcpu", 2, memory_gib=10_000.0)
    assert none is None and "10000.0 GiB" in why


def _run(store: Store, machine_id: int, vcpus: int, peak_rss: int | None, t: float = 10.0) -> int:
    run = store.start_run(machine_id, {"workload": "mnist_mlp", "build": "tf", "vcpus": vcpus, "epochs": 3,
                                       "data": "synthetic"})
    store.add_epoch(run, {"epoch": 1, "elapsed_s": 20.0, "warmup": True})
    for e in (2, 3):
        store.add_epoch(run, {"epoch": e, "elapsed_s": t, "samples_per_s": 6000.0})
    store.finish_run(run, "ok", {"epoch_time_s": t, "measured_epoch_time_s": t, "samples_per_s": 6000.0,
                                 "timed_epochs": 2, "projected": False, "peak_rss_bytes": peak_rss})
    return run


def test_the_report_prices_a_big_training_on_an_instance_that_holds_it(tmp_path):
    db = tmp_path / "big.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({**GRANITE_VM, "fingerprint": "fp-gnr", "logical_cpus": 2})
        _run(s, m, 2, 7 * 2**30)
        _run(s, m, 1, None)
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    two = a.summary[a.summary["vcpus"] == 2].iloc[0]
    one = a.summary[a.summary["vcpus"] == 1].iloc[0]
    assert two["instance"] == "gcp:c4-highcpu-8", two["price_note"]  # 4 vCPUs hold the cores, 8 the memory
    assert "less than the 8.9 GiB" in two["price_note"]
    assert one["instance"] == "gcp:c4-highcpu-2", one["price_note"]  # no peak recorded: sized by cores alone
    from cpustudy.report.findings import larger_vm_notes

    said = larger_vm_notes(a.summary)
    assert any(x.startswith("Cost at 1 vCPU is that of gcp:c4-highcpu-2 (2 vCPUs), the VM that holds the same "
                            "physical cores: 1 vCPU is here 1 whole core") for x in said), said
    assert any(x.startswith("Cost at 2 vCPUs is that of gcp:c4-highcpu-8") and "the training's memory" in x
               for x in said), said


def test_every_new_run_carries_its_cpustudy_and_an_old_machine_gains_the_evidence(tmp_path):
    db = tmp_path / "prov.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "x", "extra": {"family": 6}})
        run = _run(s, m, 1, 123456)
        row = s.runs()[0]
        assert row["id"] == run
        from cpustudy import __version__

        assert (row["cpustudy_version"], row["method_version"]) == (__version__, provenance.METHOD_VERSION)
        assert row["cpustudy_commit"] == provenance.commit()
        assert row["peak_rss_bytes"] == 123456
        assert s.machine_id({"fingerprint": "fp", "extra": {"family": 7, "cpuid": {"max_leaf": 36}}}) == m
        extra = s.machine_info(m)["extra"]
        assert extra["cpuid"] == {"max_leaf": 36} and extra["family"] == 6  # added, never replaced


def test_the_commit_comes_from_the_checkout_or_the_plan(monkeypatch):
    provenance.commit.cache_clear()
    monkeypatch.setenv("CPUSTUDY_COMMIT", "0123456789ab")
    try:
        assert provenance.commit() == "0123456789ab"
        assert "0123456789ab" in provenance.code_key()
    finally:
        provenance.commit.cache_clear()
    monkeypatch.delenv("CPUSTUDY_COMMIT")
    here = provenance.commit()
    if (Path(provenance.__file__).resolve().parent.parent / ".git").exists():
        assert here is not None and len(here.split("-")[0]) == 12
    assert "method" in provenance.versions_text({("0.2.0", here, provenance.METHOD_VERSION)})
    assert provenance.versions_text({(None, None, None)}) == "a cpustudy before versions were recorded"
    assert set(provenance.METHOD_HISTORY) == set(range(1, provenance.METHOD_VERSION + 1))


def test_the_version_is_one_in_the_package_and_its_metadata():
    import tomllib

    from cpustudy import __version__

    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
    assert project["version"] == __version__


def test_compare_never_prices_a_cloud_candidate_too_small_for_the_training():
    from cpustudy.analysis.totarget import Candidate, price_of, memory_need
    from cpustudy.cloud.targets import CloudTarget

    catalog = prices.Catalog.load(sky=False)
    small = catalog.instance("gcp:c4-highcpu-2")  # 4 GiB
    c = Candidate("gcp:c4-highcpu-2", "cloud", "tf", 2, target=CloudTarget("c4-highcpu-2", None, 0, small))
    need = memory_need([{"peak_rss_bytes": 5 * 2**30}, {"peak_rss_bytes": None}])
    assert need == pytest.approx(5 * 1.2 + 0.5)
    rate, note = price_of(catalog, True, None, c, None, {}, need)
    assert rate is None and "less than the 6.5 GiB" in note and "not a candidate" in note
    rate, note = price_of(catalog, True, None, c, None, {}, memory_need([{"peak_rss_bytes": 2**30}]))
    assert rate is not None and rate > 0
