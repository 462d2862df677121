"""What machine a measurement ran on: CPU model, instruction sets, topology, memory.

Read from Linux (``/proc/cpuinfo``, ``/sys/devices/system/cpu``) and py-cpuinfo, never assumed.
No TensorFlow here: what the TensorFlow build itself reports is probed in a worker (see ``worker``).

x86 and 64-bit Arm alike: an Arm ``/proc/cpuinfo`` has no ``model name``, ``vendor_id`` or ``flags``; its
CPU is named from ``CPU implementer`` and ``CPU part`` (:data:`ARM_PARTS`) and its instruction sets are its
``Features`` line (``sve2 bf16 i8mm ...``), checked against :data:`ARM_ISA_FLAGS` instead of the x86 ones.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import platform
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Instruction sets that matter for deep-learning kernels, as Linux names them.
ISA_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512dq",
    "avx512cd",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)

#: Instruction-set features that matter for deep-learning kernels on 64-bit Arm, as Linux's ``Features`` line
#: names them: NEON (``asimd``) and its dot-product, half-precision and FP16-FML extensions, the Int8 and
#: BFloat16 matrix-multiply extensions, the scalable vectors (SVE, SVE2) with their own BF16 and I8MM, SME.
ARM_ISA_FLAGS = (
    "asimd",
    "asimddp",
    "asimdhp",
    "asimdfhm",
    "i8mm",
    "bf16",
    "sve",
    "sve2",
    "svei8mm",
    "svebf16",
    "sme",
    "sme2",
)

#: ``CPU implementer`` codes of 64-bit Arm CPUs.
ARM_IMPLEMENTERS = {0x41: "ARM", 0x42: "Broadcom", 0x48: "HiSilicon", 0x4E: "NVIDIA", 0x51: "Qualcomm",
                    0x61: "Apple", 0xC0: "Ampere"}
#: (implementer, ``CPU part``) -> core. Arm's Neoverse cores are what the clouds rent: N1 (AWS Graviton2,
#: GCP Tau T2A, Ampere Altra), V1 (Graviton3), V2 (Graviton4, Google Axion, NVIDIA Grace), N2, V3, N3.
ARM_PARTS = {
    (0x41, 0xD03): "Cortex-A53",
    (0x41, 0xD08): "Cortex-A72",
    (0x41, 0xD0B): "Cortex-A76",
    (0x41, 0xD0C): "Neoverse N1",
    (0x41, 0xD40): "Neoverse V1",
    (0x41, 0xD49): "Neoverse N2",
    (0x41, 0xD4F): "Neoverse V2",
    (0x41, 0xD84): "Neoverse V3",
    (0x41, 0xD8E): "Neoverse N3",
    (0xC0, 0xAC3): "AmpereOne",
}

SYS_CPU = Path("/sys/devices/system/cpu")
PROC_CPUINFO = Path("/proc/cpuinfo")


@dataclass
class CpuTopology:
    """Logical CPUs grouped as the kernel reports them."""

    # logical cpu -> (package, core, numa node)
    cpus: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    # the order runs take CPUs in (``CPUSTUDY_CPUS``); empty: lowest first
    order: tuple[int, ...] = ()

    @property
    def logical(self) -> int:
        return len(self.cpus)

    @property
    def cores(self) -> int:
        return len({(p, c) for p, c, _ in self.cpus.values()})

    @property
    def packages(self) -> int:
        return len({p for p, _, _ in self.cpus.values()})

    @property
    def numa_nodes(self) -> int:
        return len({n for _, _, n in self.cpus.values()})

    @property
    def threads_per_core(self) -> int:
        return max(1, round(self.logical / max(1, self.cores)))


def _read_int(path: Path, default: int = 0) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return default


def _numa_of(cpu_dir: Path) -> int:
    for child in cpu_dir.glob("node*"):
        try:
            return int(child.name[4:])
        except ValueError:
            continue
    return 0


def read_topology(allowed: set[int] | None = None, root: Path = SYS_CPU) -> CpuTopology:
    """The topology of the CPUs this process may run on: its affinity mask by default, narrowed and ordered by
    ``CPUSTUDY_CPUS`` where that is set (a CPU list such as ``2-9`` or ``1,0``: runs are pinned within it, taking
    its CPUs in the order given; two measurements side by side on disjoint CPUs, or CPU 0 left to the system)."""
    order: tuple[int, ...] = ()
    if allowed is None:
        allowed = set(os.sched_getaffinity(0))
        given = os.environ.get("CPUSTUDY_CPUS", "").strip()
        if given:
            order = _cpu_order(given, allowed)
            allowed = set(order)
    topo = CpuTopology(order=order)
    for cpu in sorted(allowed):
        d = root / f"cpu{cpu}"
        t = d / "topology"
        topo.cpus[cpu] = (
            _read_int(t / "physical_package_id"),
            _read_int(t / "core_id", cpu),
            _numa_of(d),
        )
    return topo


def _cpu_order(given: str, allowed: set[int]) -> tuple[int, ...]:
    """``CPUSTUDY_CPUS`` as CPUs in the order written, each once; a clear error where it is not a CPU list or names
    a CPU this process may not run on."""
    from cpustudy.errors import UserError

    parts = [part.strip() for part in given.split(",")]
    try:  # each part as Linux writes it (parse_cpu_list), kept in the order given; an empty part is refused
        if not all(parts):
            raise ValueError(given)
        order = list(dict.fromkeys(c for part in parts for c in sorted(parse_cpu_list(part))))
        if not order:  # a range written backwards (1-0)
            raise ValueError(given)
    except ValueError:
        raise UserError(f"CPUSTUDY_CPUS={given!r} is not a CPU list: write it as 0-3 or 1,0 (or unset it)") from None
    outside = [c for c in order if c not in allowed]
    if outside:
        raise UserError(f"CPUSTUDY_CPUS={given!r} names CPU(s) {format_cpu_list(outside)} that this process "
                        f"may not run on: use CPUs of {format_cpu_list(allowed)} (or unset it)")
    return tuple(order)


def cgroup_cpu_quota() -> float | None:
    """CPUs allowed by a cgroup v2 CPU quota (``docker --cpus``), or None when unlimited."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return int(quota) / int(period)


def parse_cpuinfo(text: str) -> dict[str, str]:
    """The fields of the first processor in a ``/proc/cpuinfo`` text (the others repeat them)."""
    info: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor is enough
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
    return info


def proc_cpuinfo(path: Path = PROC_CPUINFO) -> dict[str, str]:
    try:
        return parse_cpuinfo(path.read_text())
    except OSError:
        return {}


def _hex(text: str | None) -> int | None:
    try:
        return int(str(text), 0)
    except ValueError:
        return None


def arm_cpu(info: dict[str, str]) -> tuple[str, str] | None:
    """(model, vendor) of a 64-bit Arm CPU from its ``CPU implementer`` and ``CPU part`` (``ARM Neoverse
    V2``, ``ARM``), or None when ``info`` is not an Arm CPU's. A part not in :data:`ARM_PARTS` is named by
    its number, never guessed."""
    implementer, part = _hex(info.get("CPU implementer")), _hex(info.get("CPU part"))
    if implementer is None:
        return None
    vendor = ARM_IMPLEMENTERS.get(implementer, f"implementer {implementer:#x}")
    core = ARM_PARTS.get((implementer, part or 0)) if part is not None else None
    if core is None:
        core = "unknown part" if part is None else f"part {part:#x}"
    return f"{vendor} {core}", vendor


def cpu_identity(info: dict[str, str]) -> tuple[str, str, list[str]]:
    """(model, vendor, flags) as ``/proc/cpuinfo`` fields give them, x86 (``model name``, ``vendor_id``,
    ``flags``) or Arm (implementer and part, ``Features``); empty strings where absent."""
    flags = sorted(set((info.get("flags") or info.get("Features") or "").split()))
    arm = arm_cpu(info)
    if arm is not None and not info.get("model name"):
        return arm[0], arm[1], flags
    return info.get("model name", ""), info.get("vendor_id", ""), flags


def isa_of(flags: list[str] | set[str], arch: str) -> dict[str, bool]:
    """Which of the instruction sets that matter here the CPU has: the Arm list on ``aarch64``/``arm64``,
    the x86 list otherwise."""
    names = ARM_ISA_FLAGS if arch.lower() in ("aarch64", "arm64") else ISA_FLAGS
    have = set(flags)
    return {f: f in have for f in names}


@dataclass
class Machine:
    hostname: str
    cpu_model: str
    cpu_vendor: str
    arch: str
    flags: list[str]
    isa: dict[str, bool]
    logical_cpus: int
    physical_cores: int
    threads_per_core: int
    sockets: int
    numa_nodes: int
    memory_bytes: int
    os: str
    cpu_mhz: float | None = None
    cgroup_cpus: float | None = None
    hypervisor: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        """Stable identity of the hardware: CPU, flags, topology and memory (not the hostname, which a
        container gets anew on every start)."""
        key = json.dumps(
            [self.cpu_model, self.flags, self.logical_cpus, self.physical_cores,
             self.sockets, self.memory_bytes],
            sort_keys=True,
        )
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fingerprint"] = self.fingerprint
        return d

    @property
    def isa_summary(self) -> str:
        return " ".join(k.upper() for k, v in self.isa.items() if v) or "-"


def with_py_cpuinfo(model: str, vendor: str, flags: list[str],
                    ci: dict[str, Any]) -> tuple[str, str, list[str], dict[str, Any]]:
    """What py-cpuinfo's ``get_cpu_info()`` adds where ``/proc/cpuinfo`` had nothing: the brand, vendor and
    flags, and caches and family as extras. On Arm py-cpuinfo takes the ``processor : 0`` line for the brand
    (``"0"``) and has no vendor: a brand that is only a number is no brand."""
    brand = str(ci.get("brand_raw") or "").strip()
    if brand.isdigit():
        brand = ""
    extra = {k: ci.get(k) for k in ("l2_cache_size", "l3_cache_size", "family", "model")}
    return (model or brand, vendor or str(ci.get("vendor_id_raw") or ""),
            flags or sorted(ci.get("flags") or []), extra)


@functools.cache
def _py_cpuinfo() -> dict[str, Any]:
    import cpuinfo

    return dict(cpuinfo.get_cpu_info())


def py_cpuinfo() -> dict[str, Any]:
    """py-cpuinfo's ``get_cpu_info()``, read once per process (it starts a subprocess: about 1.4 s on a
    2-core VM, paid by every command and every in-process test that describes the machine); a copy each call."""
    return copy.deepcopy(_py_cpuinfo())


def collect(use_cpuinfo: bool = True, *, cpuinfo_path: Path = PROC_CPUINFO, sys_cpu: Path = SYS_CPU,
            arch: str | None = None) -> Machine:
    """Describe this machine (or, for tests, the ``/proc/cpuinfo`` and ``/sys/devices/system/cpu`` copies
    at ``cpuinfo_path`` and ``sys_cpu`` of a machine of ``arch``). py-cpuinfo fills in only what
    /proc/cpuinfo lacks. ``extra["cpuid"]`` keeps what CPUID and the caches say (this machine's CPUID only
    when describing this machine) and ``extra["platform"]`` the CPU platform they identify, with its
    evidence and how sure (:func:`cpustudy.prices.platforms.platform_of`)."""
    import psutil

    from cpustudy.environment import cpuid
    from cpustudy.prices import platforms

    proc = proc_cpuinfo(cpuinfo_path)
    model, vendor, flags = cpu_identity(proc)
    mhz: float | None = float(proc["cpu MHz"]) if proc.get("cpu MHz") else None
    extra: dict[str, Any] = {}
    if use_cpuinfo:
        try:
            model, vendor, flags, extra = with_py_cpuinfo(model, vendor, flags, py_cpuinfo())
        except Exception as exc:  # py-cpuinfo can fail in odd sandboxes; /proc is enough
            extra["cpuinfo_error"] = str(exc)
    this_machine = cpuinfo_path == PROC_CPUINFO and sys_cpu == SYS_CPU
    extra["cpuid"] = cpuid.evidence(sys_cpu / "cpu0" / "cache") if this_machine else cpuid.read_caches(
        sys_cpu / "cpu0" / "cache")
    arch = arch or platform.machine()
    online = _online_cpus(sys_cpu) or (set(range(os.cpu_count() or 1)) if sys_cpu == SYS_CPU else set())
    topo = read_topology(online, sys_cpu)
    m = Machine(
        hostname=socket.gethostname(),
        cpu_model=model or platform.processor() or "unknown",
        cpu_vendor=vendor or "unknown",
        arch=arch,
        flags=flags,
        isa=isa_of(flags, arch),
        logical_cpus=topo.logical,
        physical_cores=topo.cores,
        threads_per_core=topo.threads_per_core,
        sockets=topo.packages,
        numa_nodes=topo.numa_nodes,
        memory_bytes=int(psutil.virtual_memory().total),
        os=f"{platform.system()} {platform.release()}",
        cpu_mhz=mhz,
        cgroup_cpus=cgroup_cpu_quota(),
        hypervisor="yes" if "hypervisor" in flags else None,
        extra=extra,
    )
    found = platforms.platform_of(m.as_dict())
    extra["platform"] = None if found is None else {"name": found.name, "how": found.how, "sure": found.sure}
    return m


def _online_cpus(root: Path = SYS_CPU) -> set[int]:
    try:
        text = (root / "online").read_text().strip()
    except OSError:
        return set()
    return parse_cpu_list(text)


def parse_cpu_list(text: str) -> set[int]:
    """Linux's list format, e.g. ``0-3,8,10-11``."""
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def format_cpu_list(cpus: list[int] | set[int]) -> str:
    """The inverse of ``parse_cpu_list``: ``[0, 1, 2, 5]`` -> ``0-2,5``."""
    out: list[str] = []
    xs = sorted(cpus)
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def choose_cpus(vcpus: int, topo: CpuTopology, *, oversubscribe: bool = False) -> list[int]:
    """The logical CPUs that stand for ``vcpus`` cloud vCPUs on this machine.

    A cloud vCPU is a hardware thread, so on an SMT machine N vCPUs are N/2 whole cores with both
    siblings; without SMT, N cores. Cores are taken from one NUMA node (then one package) first, in the
    topology's order where it has one (``CPUSTUDY_CPUS``). With ``oversubscribe`` and more vCPUs than CPUs,
    every CPU is returned (the caller records it).
    """
    from cpustudy.errors import UserError

    if vcpus > topo.logical:
        if oversubscribe:
            return sorted(topo.cpus)
        raise UserError(
            f"{vcpus} vCPUs cannot be measured honestly here: this machine lets cpustudy use "
            f"{topo.logical} logical CPU(s); use --vcpus {topo.logical} or fewer, or --oversubscribe "
            "to measure anyway (stored as oversubscribed)"
        )
    # Group logical CPUs into cores, cores into NUMA nodes.
    cores: dict[tuple[int, int, int], list[int]] = {}
    for cpu, (pkg, core, node) in sorted(topo.cpus.items()):
        cores.setdefault((node, pkg, core), []).append(cpu)
    by_node: dict[int, list[list[int]]] = {}
    rank = {cpu: i for i, cpu in enumerate(topo.order)}  # CPUSTUDY_CPUS's order; else by node, package and core

    def first(cpus: list[int]) -> int:
        return min(rank[c] for c in cpus)

    for (node, _pkg, _core), cpus in sorted(cores.items(), key=lambda kv: (kv[0][0], first(kv[1])) if rank else kv[0]):
        by_node.setdefault(node, []).append(cpus)
    # Prefer a node that can hold all vCPUs; otherwise fill nodes in order, largest first.
    nodes = sorted(by_node, key=lambda n: (-sum(map(len, by_node[n])), first(by_node[n][0]) if rank else n))
    fitting = [n for n in nodes if sum(map(len, by_node[n])) >= vcpus]
    order = ([fitting[0]] + [n for n in nodes if n != fitting[0]]) if fitting else nodes
    chosen: list[int] = []
    for node in order:
        for core_cpus in by_node[node]:
            for cpu in core_cpus:
                if len(chosen) < vcpus:
                    chosen.append(cpu)
    return sorted(chosen)


def cpu_flags(path: Path = PROC_CPUINFO) -> set[str] | None:
    """This CPU's instruction-set flags as Linux names them (``avx512f`` on x86, the ``Features`` line's
    ``bf16`` on Arm); None where unreadable."""
    flags = cpu_identity(proc_cpuinfo(path))[2]
    return set(flags) if flags else None


def gpu_compute_capability() -> float | None:
    """The first NVIDIA GPU's CUDA compute capability as ``nvidia-smi`` reports it (9.0 for an H100), or
    None (no GPU, no driver, or a driver too old to report it)."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout
        return float(out.splitlines()[0].strip())
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def gpu_names() -> list[str]:
    """NVIDIA GPUs that ``nvidia-smi`` lists (empty where there is none or no driver)."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.split(":", 1)[1].split("(")[0].strip() for line in out.splitlines() if line.startswith("GPU")]
