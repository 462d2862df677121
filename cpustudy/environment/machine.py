"""What machine a measurement ran on: CPU model, instruction sets, topology, memory.

Read from Linux (``/proc/cpuinfo``, ``/sys/devices/system/cpu``) and py-cpuinfo, never assumed.
No TensorFlow here: what the TensorFlow build itself reports is probed in a worker (see ``worker``).
"""

from __future__ import annotations

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

SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass
class CpuTopology:
    """Logical CPUs grouped as the kernel reports them."""

    # logical cpu -> (package, core, numa node)
    cpus: dict[int, tuple[int, int, int]] = field(default_factory=dict)

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
    """The topology of the CPUs this process may run on (its affinity mask by default)."""
    if allowed is None:
        allowed = set(os.sched_getaffinity(0))
    topo = CpuTopology()
    for cpu in sorted(allowed):
        d = root / f"cpu{cpu}"
        t = d / "topology"
        topo.cpus[cpu] = (
            _read_int(t / "physical_package_id"),
            _read_int(t / "core_id", cpu),
            _numa_of(d),
        )
    return topo


def cgroup_cpu_quota() -> float | None:
    """CPUs allowed by a cgroup v2 CPU quota (``docker --cpus``), or None when unlimited."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return int(quota) / int(period)


def proc_cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip():
                break  # the first processor is enough
            k, _, v = line.partition(":")
            info[k.strip()] = v.strip()
    except OSError:
        pass
    return info


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


def collect(use_cpuinfo: bool = True) -> Machine:
    """Describe this machine. py-cpuinfo fills in what /proc/cpuinfo lacks (brand on some arches)."""
    import psutil

    proc = proc_cpuinfo()
    flags = sorted(set(proc.get("flags", "").split()))
    model = proc.get("model name", "")
    vendor = proc.get("vendor_id", "")
    mhz: float | None = float(proc["cpu MHz"]) if proc.get("cpu MHz") else None
    extra: dict[str, Any] = {}
    if use_cpuinfo:
        try:
            import cpuinfo

            ci = cpuinfo.get_cpu_info()
            model = model or ci.get("brand_raw", "")
            vendor = vendor or ci.get("vendor_id_raw", "")
            flags = flags or sorted(ci.get("flags", []))
            extra["l2_cache_size"] = ci.get("l2_cache_size")
            extra["l3_cache_size"] = ci.get("l3_cache_size")
            extra["family"] = ci.get("family")
            extra["model"] = ci.get("model")
        except Exception as exc:  # py-cpuinfo can fail in odd sandboxes; /proc is enough
            extra["cpuinfo_error"] = str(exc)
    all_cpus = set(range(os.cpu_count() or 1))
    online = _online_cpus() or all_cpus
    topo = read_topology(online)
    hypervisor = "yes" if "hypervisor" in flags else None
    return Machine(
        hostname=socket.gethostname(),
        cpu_model=model or platform.processor() or "unknown",
        cpu_vendor=vendor or "unknown",
        arch=platform.machine(),
        flags=flags,
        isa={f: f in flags for f in ISA_FLAGS},
        logical_cpus=topo.logical,
        physical_cores=topo.cores,
        threads_per_core=topo.threads_per_core,
        sockets=topo.packages,
        numa_nodes=topo.numa_nodes,
        memory_bytes=int(psutil.virtual_memory().total),
        os=f"{platform.system()} {platform.release()}",
        cpu_mhz=mhz,
        cgroup_cpus=cgroup_cpu_quota(),
        hypervisor=hypervisor,
        extra=extra,
    )


def _online_cpus() -> set[int]:
    try:
        text = (SYS_CPU / "online").read_text().strip()
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
    siblings; without SMT, N cores. Cores are taken from one NUMA node (then one package) first.
    With ``oversubscribe`` and more vCPUs than CPUs, every CPU is returned (the caller records it).
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
    for (node, _pkg, _core), cpus in sorted(cores.items()):
        by_node.setdefault(node, []).append(cpus)
    # Prefer a node that can hold all vCPUs; otherwise fill nodes in order, largest first.
    nodes = sorted(by_node, key=lambda n: (-sum(map(len, by_node[n])), n))
    fitting = [n for n in nodes if sum(map(len, by_node[n])) >= vcpus]
    order = ([fitting[0]] + [n for n in nodes if n != fitting[0]]) if fitting else nodes
    chosen: list[int] = []
    for node in order:
        for core_cpus in by_node[node]:
            for cpu in core_cpus:
                if len(chosen) < vcpus:
                    chosen.append(cpu)
    return sorted(chosen)


def cpu_flags() -> set[str] | None:
    """This CPU's instruction-set flags as Linux names them (``avx512f``); None where unreadable."""
    flags = proc_cpuinfo().get("flags")
    return set(flags.split()) if flags else None


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
