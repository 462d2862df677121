"""Machine description and topology-aware CPU choice."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cpustudy import precision
from cpustudy.environment import machine
from cpustudy.errors import UserError


def topo(spec):
    """spec: {cpu: (package, core, node)}"""
    return machine.CpuTopology(cpus=dict(spec))


SMT_2x4 = topo({0: (0, 0, 0), 1: (0, 1, 0), 2: (0, 2, 0), 3: (0, 3, 0),
                4: (0, 0, 0), 5: (0, 1, 0), 6: (0, 2, 0), 7: (0, 3, 0)})
NUMA_2 = topo({0: (0, 0, 0), 1: (0, 1, 0), 2: (1, 0, 1), 3: (1, 1, 1), 4: (1, 2, 1)})


def test_smt_vcpus_are_sibling_pairs():
    assert SMT_2x4.threads_per_core == 2 and SMT_2x4.cores == 4
    assert machine.choose_cpus(2, SMT_2x4) == [0, 4]  # one whole core, both hardware threads
    assert machine.choose_cpus(4, SMT_2x4) == [0, 1, 4, 5]


def test_stays_in_one_numa_node_when_it_fits():
    assert machine.choose_cpus(3, NUMA_2) == [2, 3, 4]
    assert machine.choose_cpus(2, NUMA_2) == [2, 3]  # the larger node first
    assert sorted(machine.choose_cpus(5, NUMA_2)) == [0, 1, 2, 3, 4]


def test_too_many_vcpus_is_refused_unless_oversubscribed():
    with pytest.raises(UserError, match="--oversubscribe") as exc:
        machine.choose_cpus(16, SMT_2x4)
    assert "8 logical CPU" in str(exc.value)
    assert machine.choose_cpus(16, SMT_2x4, oversubscribe=True) == list(range(8))


def test_cpu_list_round_trip():
    assert machine.parse_cpu_list("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert machine.format_cpu_list([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"


def test_collect_describes_this_machine():
    m = machine.collect(use_cpuinfo=False)
    assert m.logical_cpus >= 1 and m.physical_cores >= 1
    assert m.memory_bytes > 2**28
    assert set(machine.ISA_FLAGS) == set(m.isa)
    if os.path.exists("/proc/cpuinfo"):
        assert m.flags and m.cpu_model
    assert len(m.fingerprint) == 16 and m.fingerprint == machine.collect(use_cpuinfo=False).fingerprint


def test_read_topology_of_this_process():
    t = machine.read_topology()
    assert t.logical == len(os.sched_getaffinity(0))


ARM = Path(__file__).parent / "fixtures" / "arm-neoverse-v2"  # 8 vCPUs of a Graviton4 (c8g.2xlarge)


def arm_machine(**kw):
    return machine.collect(use_cpuinfo=False, cpuinfo_path=ARM / "proc" / "cpuinfo",
                           sys_cpu=ARM / "sys" / "devices" / "system" / "cpu", arch="aarch64", **kw)


def test_an_arm_neoverse_v2_is_described_from_its_cpuinfo_and_topology():
    m = arm_machine()
    assert (m.cpu_model, m.cpu_vendor, m.arch) == ("ARM Neoverse V2", "ARM", "aarch64")
    assert {"asimd", "sve", "sve2", "svebf16", "bf16", "i8mm"} <= set(m.flags) and m.flags == sorted(m.flags)
    assert set(m.isa) == set(machine.ARM_ISA_FLAGS) and not set(m.isa) & set(machine.ISA_FLAGS)
    assert m.isa["sve2"] and m.isa["bf16"] and m.isa["i8mm"] and not m.isa["sme"]
    assert "SVE2" in m.isa_summary and "BF16" in m.isa_summary and "AVX" not in m.isa_summary
    # no SMT on Graviton: 8 vCPUs are 8 cores, one package, one NUMA node
    assert (m.logical_cpus, m.physical_cores, m.threads_per_core, m.sockets, m.numa_nodes) == (8, 8, 1, 1, 1)
    assert m.cpu_mhz is None and m.hypervisor is None  # arm64 cpuinfo has neither
    here = machine.collect(use_cpuinfo=False)
    assert m.fingerprint == arm_machine().fingerprint and m.fingerprint != here.fingerprint
    topo = machine.read_topology(set(range(8)), ARM / "sys" / "devices" / "system" / "cpu")
    assert machine.choose_cpus(4, topo) == [0, 1, 2, 3]  # 4 vCPUs are 4 cores, not 2 cores' siblings


@pytest.mark.parametrize("implementer,part,model,vendor", [
    ("0x41", "0xd0c", "ARM Neoverse N1", "ARM"),  # Graviton2, Tau T2A
    ("0x41", "0xd40", "ARM Neoverse V1", "ARM"),  # Graviton3
    ("0x41", "0xd4f", "ARM Neoverse V2", "ARM"),  # Graviton4, Axion
    ("0x41", "0xd8e", "ARM Neoverse N3", "ARM"),
    ("0xc0", "0xac3", "Ampere AmpereOne", "Ampere"),
    ("0x41", "0xd99", "ARM part 0xd99", "ARM"),  # not in the table: named by number, not guessed
    ("0x99", "0xd4f", "implementer 0x99 part 0xd4f", "implementer 0x99"),
])
def test_arm_cores_are_named_from_implementer_and_part(implementer, part, model, vendor):
    info = {"processor": "0", "Features": "fp asimd", "CPU implementer": implementer, "CPU part": part}
    assert machine.arm_cpu(info) == (model, vendor)
    assert machine.cpu_identity(info) == (model, vendor, ["asimd", "fp"])


def test_x86_cpuinfo_is_read_as_before():
    info = machine.parse_cpuinfo("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) "
                                 "Platinum 8481C CPU @ 2.70GHz\nflags\t\t: fpu avx512f amx_bf16 avx512_bf16\n\n"
                                 "processor\t: 1\nmodel name\t: something else\n")
    assert machine.arm_cpu(info) is None
    model, vendor, flags = machine.cpu_identity(info)
    assert (model, vendor) == ("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", "GenuineIntel")
    assert machine.isa_of(flags, "x86_64")["avx512_bf16"] and set(machine.isa_of(flags, "x86_64")) == set(
        machine.ISA_FLAGS)


def test_py_cpuinfo_on_arm_does_not_rename_the_cpu():
    """py-cpuinfo reads ``processor : 0`` as the brand on arm64 and has no vendor there."""
    flags = machine.cpu_identity(machine.proc_cpuinfo(ARM / "proc" / "cpuinfo"))[2]
    ci = {"brand_raw": "0", "vendor_id_raw": "", "flags": ["asimd"], "l2_cache_size": 2097152, "family": -1}
    model, vendor, got, extra = machine.with_py_cpuinfo("ARM Neoverse V2", "ARM", flags, ci)
    assert (model, vendor, got) == ("ARM Neoverse V2", "ARM", flags) and extra["l2_cache_size"] == 2097152
    assert machine.with_py_cpuinfo("", "", [], ci)[:3] == ("", "", ["asimd"])  # never the CPU "0"
    assert machine.with_py_cpuinfo("", "", [], {"brand_raw": "AMD EPYC 9B14", "vendor_id_raw": "AuthenticAMD"}
                                   )[:2] == ("AMD EPYC 9B14", "AuthenticAMD")


def test_precision_on_arm_is_refused_with_the_reason():
    flags = machine.cpu_flags(ARM / "proc" / "cpuinfo")
    assert flags is not None and "bf16" in flags  # the Features line, not x86's absent flags line
    why = precision.cpu_problem("mixed_bfloat16", flags)
    assert why and "has BF16 instructions" in why and "does not claim" in why and "float32" in why
    graviton2 = {"fp", "asimd", "asimddp", "atomics"}
    assert "no BF16 instructions" in precision.cpu_problem("mixed_bfloat16", graviton2)
    assert "float16" in precision.cpu_problem("mixed_float16", flags)
    assert precision.cpu_problem("float32", flags) is None
    # x86 is judged as before: its own BF16 flags, and no Arm wording
    assert precision.cpu_problem("mixed_bfloat16", {"avx2", "avx512_bf16"}) is None
    assert "AVX512_BF16 or AMX_BF16" in precision.cpu_problem("mixed_bfloat16", {"avx2", "fma"})


def test_cpustudy_cpus_narrows_and_orders_the_cpus_runs_take(monkeypatch):
    """Two measurements side by side take disjoint CPUs (the suite's two workers do, each its own CPU first), or
    CPU 0 is left to the system; a CPU this process may not run on is refused in one line."""
    allowed = sorted(os.sched_getaffinity(0))
    SMT = machine.CpuTopology(cpus=SMT_2x4.cpus, order=(3, 7, 1, 5, 0, 4, 2, 6))
    assert machine.choose_cpus(2, SMT) == [3, 7] and machine.choose_cpus(4, SMT) == [1, 3, 5, 7]
    NUMA = machine.CpuTopology(cpus=NUMA_2.cpus, order=(1, 0, 4, 3, 2))
    assert machine.choose_cpus(2, NUMA) == [3, 4]  # the larger node still first, its CPUs in the order given
    assert machine.choose_cpus(3, NUMA) == [2, 3, 4] and machine.choose_cpus(1, NUMA) == [4]
    monkeypatch.setenv("CPUSTUDY_CPUS", ",".join(map(str, reversed(allowed))))
    t = machine.read_topology()
    assert t.order == tuple(reversed(allowed)) and machine.choose_cpus(1, t) == [allowed[-1]]
    monkeypatch.setenv("CPUSTUDY_CPUS", str(allowed[0]))
    assert machine.read_topology().logical == 1
    monkeypatch.setenv("CPUSTUDY_CPUS", f"{allowed[-1] + 1}")
    with pytest.raises(UserError, match=r"names CPU\(s\) \d+ that this process may not run on: use CPUs of"):
        machine.read_topology()
    for wrong in ("0-a", "1,,0", "1-0"):  # not a number, an empty item, a range written backwards
        monkeypatch.setenv("CPUSTUDY_CPUS", wrong)
        with pytest.raises(UserError, match="is not a CPU list: write it as 0-3"):
            machine.read_topology()
