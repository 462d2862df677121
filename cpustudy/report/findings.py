"""The report's English: findings computed from the summary, the notes beside them, and the phrases
charts and page share (which baseline, which study).

Every sentence is computed from ``Analysis``; nothing here draws or writes a file.
"""

from __future__ import annotations

import time

import pandas as pd

from cpustudy import __version__
from cpustudy.analysis import pricing
from cpustudy.analysis.baselines import Baseline
from cpustudy.analysis.runs import config_name
from cpustudy.analysis.studies import STOCK_BUILDS, study_title
from cpustudy.analysis.summary import Analysis, cheapest


def times(v: float, sign: str = "×") -> str:
    """A ratio as the report writes it: two decimals (``1.23×``), two significant digits under 0.095
    (``0.042×``)."""
    return f"{v:.2f}{sign}" if v >= 0.095 else f"{v:.2g}{sign}"


def findings(a: Analysis) -> list[str]:
    """Plain-language findings, each computed from the summary."""
    out: list[str] = []
    s = a.summary
    for study in a.studies:
        ss = s[s["study"] == study]
        prefix = f"{study_title(study)}: " if len(a.studies) > 1 else ""
        for workload in a.workloads(study):
            g = ss[ss["workload"] == workload]
            base = a.baselines.get((study, workload))
            if base is None:
                continue
            if base.suspect:
                out.append(f"{prefix}Withheld for {workload}: its GPU baseline ({base.label}) is suspect "
                           f"({base.suspect}), so no comparison with it is stated.")
                continue
            g = g[g["suspect"].fillna("") == ""]  # a suspect GPU run is shown, never compared
            star = lambda r: " (projected)" if r["projected"] else ""  # noqa: E731
            idx = cheapest(g)
            if len(g) == 1:
                r = g.iloc[0]
                out.append(f"{prefix}Only one configuration of {workload} was measured: "
                           f"{config_name(r['device'], r['vcpus'], r['build'])}{star(r)}.")
                continue
            if idx is not None and base.cost_usd and g.loc[idx, "label"] == base.label and not base.is_gpu:
                r = g.loc[idx]
                rest = g.drop(index=idx)
                j = cheapest(rest)
                nxt = (f"; the next cheapest, {config_name(rest.loc[j, 'device'], rest.loc[j, 'vcpus'], rest.loc[j, 'build'])}"
                       f", costs {times(rest.loc[j, 'cost_rel_baseline'])} as much at "
                       f"{times(rest.loc[j, 'time_rel_baseline'])} its time{star(rest.loc[j])}") if j is not None else ""
                out.append(f"{prefix}{base.name}, the baseline, is also the cheapest configuration for "
                           f"{workload}{star(r)}{nxt}.")
            elif idx is not None and base.cost_usd:
                r = g.loc[idx]
                if base.is_gpu and r["device"] == "gpu":
                    cpu = g[g["device"] != "gpu"]
                    j = cheapest(cpu)
                    if j is not None:
                        c = cpu.loc[j]
                        out.append(
                            f"{prefix}The GPU is the cheapest configuration for {workload}; the cheapest CPU "
                            f"configuration, {config_name(c['device'], c['vcpus'], c['build'])}, costs "
                            f"{times(c['cost_rel_baseline'])} as much at {times(c['time_rel_baseline'])} its time{star(c)}."
                        )
                elif base.is_gpu:
                    out.append(
                        f"{prefix}{config_name(r['device'], r['vcpus'], r['build'])} is the cheapest configuration "
                        f"for {workload}: {times(r['cost_rel_baseline'])} the GPU's cost at "
                        f"{times(r['time_rel_baseline'])} its time{star(r)}."
                    )
                else:
                    out.append(
                        f"{prefix}{config_name(r['device'], r['vcpus'], r['build'])} is the cheapest configuration "
                        f"for {workload}: {times(r['cost_rel_baseline'])} the cost of {base.name} (the fallback "
                        f"baseline, {base.note.split(': ', 1)[0]}) at {times(r['time_rel_baseline'])} its time{star(r)}."
                        if base.kind == "fallback" else
                        f"{prefix}{config_name(r['device'], r['vcpus'], r['build'])} is the cheapest configuration "
                        f"for {workload}: {times(r['cost_rel_baseline'])} the cost of {base.name} (the baseline) at "
                        f"{times(r['time_rel_baseline'])} its time{star(r)}."
                    )
            fastest = g.dropna(subset=["total_time_s"]).sort_values("total_time_s")
            if not fastest.empty and fastest.index[0] != idx:
                f = fastest.iloc[0]
                whose = "the GPU's" if base.is_gpu else f"{base.name}'s"
                if f["device"] == "gpu" and base.is_gpu:
                    cpu = fastest[fastest["device"] != "gpu"]
                    if not cpu.empty:
                        c = cpu.iloc[0]
                        out.append(
                            f"{prefix}The GPU is the fastest configuration for {workload}; the fastest CPU "
                            f"configuration, {config_name(c['device'], c['vcpus'], c['build'])}, takes "
                            f"{times(c['time_rel_baseline'])} its time{star(c)}."
                        )
                else:
                    out.append(
                        f"{prefix}{config_name(f['device'], f['vcpus'], f['build'])} is the fastest configuration "
                        f"for {workload}: {times(f['time_rel_baseline'])} {whose} time at "
                        f"{times(f['cost_rel_baseline']) if not pd.isna(f['cost_rel_baseline']) else 'an unknown'} "
                        f"its cost{star(f)}."
                    )
            if a.options.deadline is not None:
                d = cheapest(g, a.options.deadline)
                if d is None:
                    quickest = fastest.iloc[0] if not fastest.empty else None
                    out.append(
                        f"{prefix}No configuration trains {workload} within the {a.options.deadline:g} s deadline"
                        + (f"; the fastest, {config_name(quickest['device'], quickest['vcpus'], quickest['build'])}, "
                           f"takes {quickest['total_time_s']:.0f} s." if quickest is not None else ".")
                    )
                else:
                    r = g.loc[d]
                    out.append(
                        f"{prefix}Within the {a.options.deadline:g} s deadline, "
                        f"{config_name(r['device'], r['vcpus'], r['build'])} is the cheapest configuration for "
                        f"{workload}: {r['total_time_s']:.0f} s for {r['cost_usd']:.4f} USD."
                    )
        out += _study_findings(ss, prefix)
    if s["projected"].any():
        out.append("Figures marked (projected) or * come from epochs capped to fewer steps and projected to a "
                   "full epoch.")
    return out


def _study_findings(ss: pd.DataFrame, prefix: str) -> list[str]:
    out = []
    cpu = ss[(ss["device"] != "gpu") & ss["build_speedup_vs_stock"].notna() & ~ss["build"].isin(STOCK_BUILDS)]
    for build, g in cpu.groupby("build", sort=False):
        stock = ss[(ss["device"] != "gpu") & ss["build"].isin(STOCK_BUILDS)]["build"]
        stock_name = stock.iloc[0] if not stock.empty else "the stock build"
        faster = int((g["build_speedup_vs_stock"] > 1).sum())
        by_v = g.groupby("vcpus")["build_speedup_vs_stock"].median()
        detail = ", ".join(f"{times(v)} at {int(k)} vCPU{'s' if int(k) != 1 else ''}" for k, v in by_v.items())
        out.append(
            f"{prefix}{build} was faster than {stock_name} in {faster} of {len(g)} comparisons at equal vCPUs "
            f"(median speedup {times(g['build_speedup_vs_stock'].median())}; {detail})."
        )
    cpus = ss[(ss["device"] != "gpu") & ss["vcpus"].notna()]
    counts = sorted(int(v) for v in cpus["vcpus"].unique())
    if len(counts) >= 2:
        lo, hi = counts[-2], counts[-1]
        a = cpus[cpus["vcpus"] == lo].set_index(["workload", "build"])["total_time_s"]
        b = cpus[cpus["vcpus"] == hi].set_index(["workload", "build"])["total_time_s"]
        both = a.index.intersection(b.index)
        if len(both):
            ratio = (a[both] / b[both])
            out.append(
                f"{prefix}Going from {lo} to {hi} vCPUs made training faster in {int((ratio > 1).sum())} of "
                f"{len(both)} workload × build pairs (median speedup {times(float(ratio.median()))})."
            )
    gpu_beaten = []
    for workload, g in ss.groupby("workload", sort=False):
        base_rows = g[g["label"] == g["baseline"]]
        if (g["baseline_kind"] == "gpu").any() and not (base_rows["suspect"].fillna("") != "").any():
            c = g[(g["device"] != "gpu") & (g["time_rel_baseline"] < 1)]
            n = int((g["device"] != "gpu").sum())
            if len(c):
                gpu_beaten.append(f"{workload} ({len(c)} of {n} CPU configurations)")
    if gpu_beaten:
        out.append(f"{prefix}CPUs trained faster than the GPU for: {'; '.join(gpu_beaten)}.")
    return out


def baseline_phrase(b: Baseline) -> str:
    """For titles: 'GPU', or the fallback configuration."""
    if b.is_gpu:
        return "GPU"
    return b.label


def baseline_subtitle(b: Baseline, machine: str) -> str:
    """For a chart's subtitle: what 1.0x is, where it ran, and why it is the baseline."""
    where = f" ({machine})" if machine else ""
    if b.kind == "gpu":
        return f"1.0x = {b.label}{where}" + (f"  SUSPECT: {b.suspect}" if b.suspect else "")
    if b.kind == "requested":
        return f"1.0x = {b.label}{where}, as requested"
    why, _, what = b.note.partition(": ")
    return f"Fallback baseline ({why}): 1.0x = {b.label}{where}, {what or why}"


def suspect_notes(a: Analysis) -> list[str]:
    """GPU configurations that cannot be right, mostly idle ones (a caveat), and GPU runs whose
    utilisation was not recorded."""
    out = []
    gpu = a.summary[a.summary["device"] == "gpu"]
    for r in gpu.itertuples(index=False):
        where = f"{study_title(r.study)}, {r.workload}, {r.label}"
        if r.suspect:
            role = " (the baseline: every finding that would compare with it is withheld)" \
                if r.label == r.baseline else " (shown, compared with nothing)"
            out.append(f"{where} is suspect{role}: {r.suspect}.")
        elif r.gpu_caveat:
            out.append(f"{where}: {r.gpu_caveat}.")
        elif r.study not in ("woolf2017",) and pd.isna(r.gpu_utilization):
            out.append(f"{where}: GPU utilisation was not recorded (measured before cpustudy sampled it), "
                       "so an idle GPU cannot be ruled out.")
    return out


def fallback_notes(a: Analysis) -> list[str]:
    """Each workload whose baseline is a fallback, and why."""
    out = []
    for (study, workload), b in a.baselines.items():
        if b.kind == "fallback":
            out.append(f"{study_title(study)}, {workload}: fallback baseline {b.label} ({b.note}).")
    return out


def header_lines(a: Analysis) -> list[str]:
    """The page's header: database, studies, baseline, cost basis, what epoch times include, deadline."""
    o = a.options
    base = o.baseline or "default (the GPU run of each workload; otherwise the stock build at the fewest vCPUs)"
    rate = pricing.basis_sentence(o.on_demand)
    lines = [
        f"Database: {a.db}; generated {time.strftime('%Y-%m-%d %H:%M %Z')} by cpustudy {__version__}.",
        f"Studies: {', '.join(study_title(s) for s in a.studies)}; {len(a.runs)} finished runs, "
        f"{len(a.summary)} configurations.",
        f"Baseline: {base}.",
        f"{rate}; CPU family for new results {o.instance_family or 'gcp:n2-highcpu (default)'}"
        + (f"; GPU instance {o.gpu_instance}" if o.gpu_instance else "")
        + (f"; price file {o.prices}" if o.prices else "") + "; 2017 results use the 2017 rates.",
    ]
    lines.append("Epoch times are training only; the validation on the test set that the study's examples ran "
                 "after every epoch is timed apart (--validation study) and added only where the study's "
                 "logged epochs are compared (then and now).")
    if o.deadline is not None:
        lines.append(f"Deadline: {o.deadline:g} s of full training.")
    return lines
