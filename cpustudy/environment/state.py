"""Is this machine quiet enough to measure on? Load, busy processes, frequency governor, SMT, turbo.

The state is read at the start of every measurement and stored with the run, so a noisy figure
can be traced to a busy machine; ``cpustudy machine --check`` prints it and a sweep warns first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

SYS_CPU = Path("/sys/devices/system/cpu")
BUSY_PROCESS_PERCENT = 10.0


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def busy_processes(sample_s: float = 0.3, threshold: float = BUSY_PROCESS_PERCENT) -> list[dict[str, Any]]:
    """Other processes using more than ``threshold`` % of one CPU over a short sample."""
    import time

    import psutil

    me = {os.getpid(), os.getppid()}
    procs = []
    for p in psutil.process_iter(["pid", "name"]):
        try:
            p.cpu_percent(None)
            procs.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    time.sleep(sample_s)
    out = []
    for p in procs:
        try:
            pct = p.cpu_percent(None)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if pct >= threshold and p.pid not in me:
            out.append({"pid": p.pid, "name": p.info.get("name"), "cpu_percent": round(pct, 1)})
    return sorted(out, key=lambda d: -d["cpu_percent"])


def machine_state(sample_s: float = 0.3) -> dict[str, Any]:
    """The state that disturbs measurements, as far as this machine lets it be read."""
    load1, load5, load15 = os.getloadavg()
    governors = sorted({g for g in (_read(p) for p in SYS_CPU.glob("cpu[0-9]*/cpufreq/scaling_governor")) if g})
    smt = _read(SYS_CPU / "smt" / "active")
    no_turbo = _read(SYS_CPU / "intel_pstate" / "no_turbo")
    boost = _read(SYS_CPU / "cpufreq" / "boost")
    turbo: bool | None = None
    if no_turbo is not None:
        turbo = no_turbo == "0"
    elif boost is not None:
        turbo = boost == "1"
    return {
        "loadavg": [round(load1, 2), round(load5, 2), round(load15, 2)],
        "cpus": os.cpu_count(),
        "busy_processes": busy_processes(sample_s) if sample_s > 0 else [],
        "governor": ",".join(governors) or None,
        "smt_active": None if smt is None else smt == "1",
        "turbo": turbo,
        "transparent_hugepages": thp_mode(),
    }


def thp_mode() -> str | None:
    """Transparent huge pages as the kernel offers them (``always``, ``madvise`` or ``never``; the one in
    brackets in ``/sys/kernel/mm/transparent_hugepage/enabled``): with ``madvise`` only memory asked for
    gets them, such as glibc malloc's heap under ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``."""
    text = _read(Path("/sys/kernel/mm/transparent_hugepage/enabled")) or ""
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else None


#: Other processes' CPU use, in % of one CPU, that makes the machine busy for a measurement.
BUSY_CPU_PERCENT = 50.0
#: The worker's threads waiting for a CPU this share of the time inside the steps or more make a run
#: contended: its steps ran slower for want of a CPU (its own threads outnumbering its CPUs, or other
#: work), not for their work. Seen on a quiet 2-core Zen 3 VM at 1 vCPU: 0.02-0.03 usually; 0.3-0.45 in 2 of
#: 12 processes, whose steps took 1.5-2x as long. On a Zen 4 VM at 1 vCPU cifar10_cnn's threads waited
#: 0.08-0.10 at its usual speed (12 runs' steps within 4 %; tf.data's threads beside the compute): the line
#: sits between the two.
CONTENDED_WAIT_SHARE = 0.20
#: A share is judged against what its configuration normally waits: a configuration whose own threads outnumber
#: its vCPUs waits at its usual speed (mnist_mlp at 1 vCPU on a quiet Zen 4 VM: 0.22-0.76 in 12 normal runs). A
#: run is contended only where it waited this much more than the median of the other runs of its configuration
#: on the same machine and its epochs took ``CONTENDED_SLOWER`` times theirs or longer; with no other run to
#: judge it against, it is not called contended.
CONTENDED_EXCESS = 0.10
CONTENDED_SLOWER = 1.10


def contended(wait: float | None, epoch_s: float | None, peers: Iterable[tuple[Any, Any]]) -> bool:
    """Whether a run that waited ``wait`` (share of the time inside its steps) for epochs of ``epoch_s`` was
    contended, against ``peers``: the (wait, epoch time) of the other runs of its configuration."""
    import math
    import statistics

    def ok(v: Any) -> bool:
        return v is not None and not (isinstance(v, float) and math.isnan(v))

    known = [(float(w), float(t)) for w, t in peers if ok(w) and ok(t) and float(t) > 0]
    if not (ok(wait) and ok(epoch_s) and known):
        return False
    usual_wait = statistics.median(w for w, _ in known)
    usual_time = statistics.median(t for _, t in known)
    return float(wait or 0.0) >= max(CONTENDED_WAIT_SHARE, usual_wait + CONTENDED_EXCESS) and \
        float(epoch_s or 0.0) >= CONTENDED_SLOWER * usual_time


def parsed(state: Any) -> dict[str, Any]:
    """A recorded state as a mapping (it may be stored as JSON text); {} when unreadable or not recorded."""
    import json
    from collections.abc import Mapping

    if isinstance(state, str):
        try:
            state = json.loads(state)
        except ValueError:
            return {}
    return dict(state) if isinstance(state, Mapping) else {}


def busy_share(state: Any) -> tuple[float, str] | None:
    """Other processes' CPU use in a recorded state (a mapping, or its JSON) when it makes the machine busy
    (``BUSY_CPU_PERCENT`` % of a CPU or more): the % and the top two; None when quiet or not recorded."""
    procs = parsed(state).get("busy_processes") or []
    used = sum(float(p.get("cpu_percent") or 0) for p in procs)
    if used < BUSY_CPU_PERCENT:
        return None
    return used, ", ".join(f"{p.get('name')} {float(p.get('cpu_percent') or 0):.0f} %" for p in procs[:2])


def warnings(state: dict[str, Any]) -> list[str]:
    """Plain-language reasons this state may distort timings (empty when it looks quiet)."""
    out = []
    cpus = state.get("cpus") or 1
    load1 = state["loadavg"][0]
    if load1 > 0.5 * cpus:
        out.append(f"load average {load1:.2f} on {cpus} CPU(s): other work competes for the CPUs")
    for p in state.get("busy_processes", [])[:3]:
        out.append(f"process {p['pid']} ({p['name']}) uses {p['cpu_percent']:.0f} % of a CPU")
    gov = state.get("governor")
    if gov and gov != "performance":
        out.append(f"CPU frequency governor is {gov!r}, not 'performance': clocks may vary between runs")
    return out
