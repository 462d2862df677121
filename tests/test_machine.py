"""Machine description and topology-aware CPU choice."""

from __future__ import annotations

import os

import pytest

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
