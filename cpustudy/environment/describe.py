"""This machine in words: what ``cpustudy machine`` shows (hardware, state, the default build's
software), as a dict for JSON and as labelled lines for a terminal."""

from __future__ import annotations

from typing import Any, Callable


def describe_machine(check: bool = False, probe: bool = True,
                     progress: Callable[[str], None] = lambda s: None) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    from cpustudy.environment import machine, state
    from cpustudy.environment.probe import probe_software_cached

    progress("reading the CPU")
    m = machine.collect()
    info: dict[str, Any] = m.as_dict()
    if check:
        progress("sampling the machine's load")
        info["state"] = state.machine_state()
        info["warnings"] = state.warnings(info["state"])
    if probe:
        progress("probing TensorFlow in a worker (cached until the packages change)")
        info["software"] = probe_software_cached()
    lines = [
        ("CPU", f"{m.cpu_model} ({m.cpu_vendor}, {m.arch})"),
        ("topology", f"{m.logical_cpus} logical CPUs, {m.physical_cores} cores, "
                     f"{m.threads_per_core} thread(s) per core, {m.sockets} socket(s), "
                     f"{m.numa_nodes} NUMA node(s)"),
        ("instruction sets", m.isa_summary),
        ("memory", f"{m.memory_bytes / 2**30:.1f} GiB"),
        ("cgroup CPU quota", "none" if m.cgroup_cpus is None else f"{m.cgroup_cpus:g} CPUs"),
        ("OS", m.os),
        ("fingerprint", m.fingerprint),
    ]
    from cpustudy.prices import platforms

    platform = platforms.platform_of(info)
    info["platform"] = None if platform is None else {"name": platform.name, "how": platform.how,
                                                      "sure": platform.sure, "families": list(platform.families),
                                                      "source": platform.source, "as_of": platform.as_of}
    lines.append(("platform", "none cpustudy knows: results are priced as the default family"
                  if platform is None else f"{platform.name}; {platform.sure}; by {platform.how}"))
    if platform is not None:
        lines.append(("cloud families", "; ".join(
            f"{f} ({platforms.vcpu_words(f, m.threads_per_core)})" for f in platform.families)
            + f". Sources: {platform.source}"))
    if check:
        lines += _state_lines(info["state"], info["warnings"])
    sw = info.get("software")
    if sw and sw.get("error"):
        lines.append(("TensorFlow", f"could not be probed: {sw['error']}"))
    elif sw:
        lines += [
            ("Python", sw.get("python_version", "")),
            ("TensorFlow", str(sw.get("tf_version", "not used"))),
            ("Keras", f"{sw.get('keras_version')} (backend {sw.get('keras_backend')})"),
            ("oneDNN", {True: "on", False: "off"}.get(sw.get("onednn"), "unknown")),
            ("TF not compiled for", sw.get("tf_missing_isa") or "nothing it reports"),
        ]
    return info, lines


def builds_table(probe: bool, progress: Callable[[str], None] = lambda s: None) -> tuple[list[dict[str, Any]], str]:
    """Every build: whether it is ready here and, probed in a worker, what it really contains
    (remembered until its interpreter or packages change); and the instruction sets this CPU offers."""
    from cpustudy.environment import builds, machine
    from cpustudy.environment.probe import probe_software_cached

    m = machine.collect(use_cpuinfo=False)
    cpu_isa = " ".join(sorted(f.upper() for f, on in m.isa.items() if on))
    rows = []
    everything = builds.all_builds()
    for i, b in enumerate(everything.values(), 1):
        progress(f"checking build {b.name} ({i}/{len(everything)})")
        ready, why = b.readiness(set(m.flags))
        row: dict[str, Any] = {"build": b.name, "kind": b.kind, "ready": ready, "status": why,
                               "description": b.description}
        if ready and probe:
            sw = probe_software_cached(b.python, b.worker_env())
            if sw.get("error"):
                row.update(ready=False, status=f"probe failed: {sw['error']}")
            else:
                missing = set((sw.get("tf_missing_isa") or "").split())
                row.update(
                    tf=sw.get("tf_version"), keras=sw.get("keras_version"), backend=sw.get("keras_backend"),
                    onednn=sw.get("onednn"),
                    tf_not_compiled_for=" ".join(sorted(missing)) if sw.get("tf_isa_report") else
                    ("n/a" if sw.get("tf_version") is None else "nothing reported"),
                    cpu_offers=cpu_isa,
                )
        rows.append(row)
    return rows, cpu_isa


def _state_lines(st: dict[str, Any], warnings: list[str]) -> list[tuple[str, str]]:
    """``machine --check``'s lines: the load, busy processes, governor, SMT and turbo, and the verdict."""
    return [
        ("load average", " ".join(f"{x:.2f}" for x in st["loadavg"])),
        ("busy processes", ", ".join(f"{p['name']} ({p['pid']}) {p['cpu_percent']:.0f} %"
                                     for p in st["busy_processes"]) or "none"),
        ("governor", st["governor"] or "not readable here"),
        ("SMT active", {True: "yes", False: "no"}.get(st["smt_active"], "not readable here")),
        ("turbo", {True: "on", False: "off"}.get(st["turbo"], "not readable here")),
        ("verdict", "; ".join(warnings) or "quiet enough to measure"),
    ]
