"""The instruction sets' theoretical peak stored beside the measured one, and a peak at more vCPUs that
falls below the one kept at fewer: not kept. No TensorFlow."""

from __future__ import annotations

import pytest

from cpustudy.environment import isa
from cpustudy.measure import peaks
from cpustudy.store import Store
from cpustudy.worker.protocol import RunConfig
from conftest import run_config

ZEN3 = {"arch": "x86_64", "cpu_model": "AMD EPYC 7B13", "cpu_vendor": "AuthenticAMD", "cpu_mhz": 2450.0,
        "threads_per_core": 1, "flags": ["sse2", "avx", "avx2", "fma"], "extra": {"family": 25, "model": 1}}
ZEN4 = {**ZEN3, "cpu_model": "AMD EPYC 9B14", "flags": ZEN3["flags"] + ["avx512f", "avx512_bf16"],
        "extra": {"family": 25, "model": 17}}
SPR = {"arch": "x86_64", "cpu_model": "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", "cpu_vendor": "GenuineIntel",
       "cpu_mhz": 2699.998, "threads_per_core": 2,
       "flags": ["sse2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"], "extra": {}}
GRAVITON4 = {"arch": "aarch64", "cpu_model": "ARM Neoverse V2", "cpu_mhz": 2800.0, "threads_per_core": 1,
             "flags": ["asimd", "sve2", "bf16"]}


def test_cores_times_flop_per_cycle_times_the_reported_clock():
    zen3 = isa.theoretical(ZEN3, 2, "fp32")
    assert zen3 is not None and zen3.gflops == pytest.approx(2 * 32 * 2.45)
    assert "2 cores x AVX2/FMA" in zen3.basis and "2.45 GHz" in zen3.basis
    assert "estimate" in zen3.label()
    assert isa.theoretical(ZEN3, 2, "bf16") is None  # no native bfloat16 unit: nothing to reckon
    # Zen 4 runs AVX-512 on 256-bit units: no more than AVX2 per cycle
    assert isa.theoretical(ZEN4, 1, "fp32").flop_per_cycle == 32
    assert isa.theoretical(ZEN4, 1, "bf16").flop_per_cycle == 64


def test_smt_siblings_share_a_core_and_amx_counts_1024_bf16_flop_per_cycle():
    one, two = isa.theoretical(SPR, 1, "fp32"), isa.theoretical(SPR, 2, "fp32")
    assert one.gflops == two.gflops == pytest.approx(64 * 2.7)  # 2 vCPUs = one core's two threads
    assert "(2 vCPUs, 2 per core)" in two.basis and "nominal clock from the CPU's name" in two.basis
    bf16 = isa.theoretical(SPR, 4, "bf16")
    assert bf16.flop_per_cycle == 1024 and bf16.gflops == pytest.approx(2 * 1024 * 2.7)


def test_arm_cores_by_name_and_nothing_where_the_core_or_clock_is_unknown():
    assert isa.theoretical(GRAVITON4, 4, "fp32").gflops == pytest.approx(4 * 32 * 2.8)
    assert isa.theoretical(GRAVITON4, 4, "bf16") is None
    assert isa.theoretical({**GRAVITON4, "cpu_model": "some Arm core"}, 4, "fp32") is None
    assert isa.theoretical({**ZEN3, "cpu_mhz": None}, 2, "fp32") is None


def _config(**kw) -> RunConfig:
    base = dict(vcpus=2, cpus=(0, 1), cpu_list="0-1", intra_threads=2, inter_threads=2, flops_per_sample=1e6,
                machine_state={"busy_processes": []})
    return run_config(**{**base, **kw})


def test_a_run_stores_the_isa_peak_of_its_cpus_and_none_on_a_gpu():
    config = _config()
    stored = peaks.isa(ZEN3, config)
    assert stored["isa_peak_gflops"] == pytest.approx(2 * 32 * 2.45) and "2 cores" in stored["isa_peak_basis"]
    assert peaks.isa(ZEN3, _config(device="gpu")) == {"isa_peak_gflops": None, "isa_peak_basis": None}
    bf16 = peaks.isa(SPR, _config(precision_policy="mixed_bfloat16", vcpus=4, cpus=(0, 1, 2, 3), cpu_list="0-3"))
    assert bf16["isa_peak_gflops"] == pytest.approx(2 * 1024 * 2.7)


def test_a_peak_below_the_one_kept_at_fewer_vcpus_is_not_kept(tmp_path):
    store = Store.open(tmp_path / "p.sqlite")
    mid = store.machine_id({"fingerprint": "f" * 16, "cpu_model": "x", "flags": []})
    for vcpus, peak, build in ((1, 100.0, "tf"), (1, 150.0, "tf-onednn"), (2, 190.0, "tf")):
        store.insert_run_row({"uuid": f"u{vcpus}{build}", "machine_id": mid, "status": "ok", "workload": "mnist_mlp",
                              "build": build, "vcpus": vcpus, "intra_threads": vcpus, "peak_gflops": peak,
                              "created_at": "2026-11-25T00:00:00"})
    four = _config(vcpus=4, cpus=(0, 1, 2, 3), cpu_list="0-3", intra_threads=4)
    assert peaks.at_fewer_vcpus(store, mid, four) == (190.0, 2)  # the best of the same build, fewer vCPUs
    assert peaks.at_fewer_vcpus(store, mid, _config(vcpus=1, cpus=(0,), cpu_list="0", intra_threads=1)) is None
    assert peaks.at_fewer_vcpus(store, mid, _config(vcpus=4, cpus=(0, 1, 2, 3), cpu_list="0-3", intra_threads=8)) is None
    summary = {"samples_per_s": 10_000.0}  # 10 GFLOP/s achieved
    said = peaks.doubt(four, {"gflops": 120.0}, summary, fewer=(190.0, 2))
    assert said.startswith("120.0 GFLOP/s at 4 vCPUs is below the 190.0 GFLOP/s kept at 2 vCPU(s)")
    assert peaks.doubt(four, {"gflops": 180.0}, summary, fewer=(190.0, 2)) == ""  # within SMT/noise tolerance
    store.close()
