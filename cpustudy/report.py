"""Charts (plotnine) and the report page (HTML and Markdown) from an ``Analysis``.

One function per figure, each returning a ggplot object (or None where the figure does not apply, e.g.
a build heatmap with a single build), so tests can inspect them without rendering:

* ``fig_time_relative`` / ``fig_cost_relative``: the study's two charts per workload, horizontal bars
  relative to the baseline, dashed line at 1.0x;
* ``fig_speedup``: speedup over the fewest vCPUs per build, with the ideal (linear) line and parallel
  efficiency;
* ``fig_build_heatmap``: each build's speedup over the stock build, workload x build, per vCPU count;
* ``fig_time_cost``: time vs cost with the Pareto front and the cheapest configuration meeting a deadline;
* ``fig_then_now``: the 2017 study next to newer results, per workload.

``write_report`` renders them (PNG and SVG) and writes ``summary.csv``, ``index.html`` (self-contained:
images embedded as data URIs, no external fonts or scripts) and ``report.md`` (for GitHub, images next
to it).
"""

from __future__ import annotations

import base64
import html
import math
import textwrap
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any, Callable

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from plotnine import (  # noqa: E402
    aes,
    coord_flip,
    element_blank,
    element_line,
    element_rect,
    element_text,
    facet_wrap,
    geom_col,
    geom_hline,
    geom_line,
    geom_path,
    geom_point,
    geom_text,
    geom_tile,
    geom_vline,
    ggplot,
    labs,
    scale_color_manual,
    scale_fill_gradient2,
    scale_fill_manual,
    scale_x_log10,
    scale_x_continuous,
    scale_y_continuous,
    scale_y_log10,
    theme,
    theme_minimal,
)

from cpustudy import __version__
from cpustudy.analysis import pricing
from cpustudy.analysis.baselines import Baseline
from cpustudy.analysis.runs import config_name
from cpustudy.analysis.studies import STOCK_BUILDS, STUDY_TITLES
from cpustudy.analysis.summary import SUMMARY_COLUMNS, Analysis, cheapest, pareto_front, then_and_now

# -- look --------------------------------------------------------------------------------------------

#: Colour families (light -> dark): GPU reds, pip/stock blues, compiled greens, then other families.
FAMILIES = {
    "gpu": ["#fcae91", "#fb6a4a", "#de2d26", "#a50f15"],
    "stock": ["#bdd7e7", "#6baed6", "#3182bd", "#08519c"],
    "compiled": ["#bae4b3", "#74c476", "#31a354", "#006d2c"],
}
OTHER_FAMILIES = [
    ["#cbc9e2", "#9e9ac8", "#756bb1", "#54278f"],  # purples
    ["#fdbe85", "#fd8d3c", "#e6550d", "#a63603"],  # oranges
    ["#d4b9da", "#c994c7", "#dd1c77", "#980043"],  # pinks
    ["#c7e9b4", "#7fcdbb", "#2c7fb8", "#253494"],  # teals
    ["#d9d9d9", "#969696", "#636363", "#252525"],  # greys
]


def theme_cpustudy(base_size: float = 11) -> Any:
    """``theme_minimal`` with a bold title, no minor grid, muted captions and facet strips."""
    return theme_minimal(base_size=base_size) + theme(
        plot_title=element_text(weight="bold", size=base_size * 1.25, ha="left"),
        plot_subtitle=element_text(color="#444444", size=base_size * 0.95, ha="left"),
        plot_caption=element_text(color="#666666", size=base_size * 0.75, ha="right"),
        panel_grid_minor=element_blank(),
        panel_grid_major=element_line(color="#e5e5e5", size=0.5),
        axis_text=element_text(color="#333333"),
        axis_title=element_text(color="#333333", size=base_size * 0.95),
        strip_text=element_text(weight="bold", size=base_size * 0.9),
        strip_background=element_rect(fill="#f2f2f2", color="none"),
        legend_position="bottom",
        plot_background=element_rect(fill="white", color="white"),
    )


def build_family(build: str, device: str) -> str:
    if device == "gpu":
        return "gpu"
    if build in STOCK_BUILDS:
        return "stock"
    if build == "compiled" or "compiled" in build or "march" in build:
        return "compiled"
    return "other"


def colour_map(df: pd.DataFrame) -> dict[str, str]:
    """label -> colour: the build's family, darker for more vCPUs."""
    others: dict[str, list[str]] = {}
    colours: dict[str, str] = {}
    for (build, device), g in df.groupby(["build", "device"], sort=True):
        fam = build_family(build, device)
        if fam == "other":
            if build not in others:
                others[build] = OTHER_FAMILIES[len(others) % len(OTHER_FAMILIES)]
            palette = others[build]
        else:
            palette = FAMILIES[fam]
        counts = sorted({int(v) for v in g["vcpus"].dropna()})
        for r in g.itertuples():
            if len(counts) <= 1 or pd.isna(r.vcpus):
                colours[r.label] = palette[2]
            else:
                i = counts.index(int(r.vcpus))
                colours[r.label] = _shade(palette, i / (len(counts) - 1))
    return colours


def _shade(palette: list[str], t: float) -> str:
    """A colour along the palette from its second (t=0) to its last entry (t=1)."""
    stops = palette[1:]
    pos = t * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    f = pos - i
    a, b = _rgb(stops[i]), _rgb(stops[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


def _rgb(hexcolour: str) -> tuple[int, int, int]:
    h = hexcolour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def build_colour(build: str, device: str, others: dict[str, str]) -> str:
    fam = build_family(build, device)
    if fam == "other":
        if build not in others:
            others[build] = OTHER_FAMILIES[len(others) % len(OTHER_FAMILIES)][2]
        return others[build]
    return FAMILIES[fam][2]


def _times(v: float) -> str:
    if pd.isna(v):
        return ""
    return f"{v:.2f}x" if v >= 0.095 else f"{v:.2g}x"


def study_title(study: str) -> str:
    return STUDY_TITLES.get(study, study)


def baseline_phrase(b: Baseline) -> str:
    """For titles: 'GPU', or the fallback configuration."""
    if b.is_gpu:
        return "GPU"
    return b.label


def baseline_subtitle(b: Baseline, machine: str) -> str:
    where = f" ({machine})" if machine else ""
    if b.kind == "gpu":
        return f"1.0x = {b.label}{where}" + (f"  SUSPECT: {b.suspect}" if b.suspect else "")
    if b.kind == "requested":
        return f"1.0x = {b.label}{where}, as requested"
    why, _, what = b.note.partition(": ")
    return f"Fallback baseline ({why}): 1.0x = {b.label}{where}, {what or why}"


# -- figures -----------------------------------------------------------------------------------------


def _workload_rows(a: Analysis, study: str, workload: str) -> pd.DataFrame:
    s = a.summary
    return s[(s["study"] == study) & (s["workload"] == workload)].copy()


def _relative(a: Analysis, study: str, workload: str, metric: str) -> ggplot | None:
    col = "time_rel_baseline" if metric == "time" else "cost_rel_baseline"
    df = _workload_rows(a, study, workload)
    b = a.baselines.get((study, workload))
    if b is None or df.empty:
        return None
    colours = colour_map(df)
    df = df.dropna(subset=[col])
    if df.empty:
        return None
    df["bar"] = df["label"] + df["projected"].map({True: "*", False: ""})
    colours = {lab + ("*" if p else ""): colours[lab] for lab, p in zip(df["label"], df["projected"])}
    order = list(df["bar"])[::-1]  # coord_flip draws the first level at the bottom
    df["bar"] = pd.Categorical(df["bar"], categories=order, ordered=True)
    df["text"] = [t + ("  suspect" if sus else "") for t, sus in zip(df[col].map(_times), df["suspect"].fillna(""))]
    top = float(df[col].max())
    machine = df.loc[df["label"] == b.label, "machines"]
    what = "Training time" if metric == "time" else "Training cost"
    sub = baseline_subtitle(b, machine.iloc[0] if len(machine) else "")
    caption = [f"{study_title(study)}; {_basis(df)}."]
    if metric == "cost":
        caption.append(_price_caption(df))
    if df["projected"].any():
        caption.append("* projected from epochs capped to fewer steps.")
    if (df["suspect"].fillna("") != "").any():
        caption.append("suspect: a GPU result that cannot be right (see the report's notes); compared with nothing.")
    caption[-1] += f"  cpustudy {__version__}"
    return (
        ggplot(df, aes(x="bar", y=col, fill="bar"))
        + geom_col(width=0.72, show_legend=False)
        + geom_hline(yintercept=1.0, linetype="dashed", color="#333333", size=0.6)
        + geom_text(aes(label="text"), ha="left", nudge_y=top * 0.015, size=8, color="#222222")
        + coord_flip()
        + scale_fill_manual(values=colours)
        + scale_y_continuous(expand=(0, 0, 0.14, 0), labels=lambda v: [f"{x:g}x" for x in v])
        + labs(
            x="",
            y=f"{what} relative to {baseline_phrase(b)} (lower is better)",
            title=f"{what} of {workload}, relative to {baseline_phrase(b)}",
            subtitle=textwrap.fill(sub, 90),
            caption="\n".join(caption),
        )
        + theme_cpustudy()
        + theme(panel_grid_major_y=element_blank(), figure_size=(8, max(3.2, 0.42 * len(df) + 2.0)))
    )


def fig_time_relative(a: Analysis, study: str, workload: str) -> ggplot | None:
    """Full training time of each platform x build relative to the baseline (the study's first chart)."""
    return _relative(a, study, workload, "time")


def fig_cost_relative(a: Analysis, study: str, workload: str) -> ggplot | None:
    """Full training cost relative to the baseline (the study's second chart)."""
    return _relative(a, study, workload, "cost")


def _basis(df: pd.DataFrame) -> str:
    bases = sorted(set("; ".join(df["total_basis"]).split("; ")))
    if all(b.startswith("sum of") for b in bases):
        return "time = sum of all logged epochs, as the study computed it"
    return "time = full-epoch time x the workload's default epochs"


def _price_caption(df: pd.DataFrame) -> str:
    parts = []
    for kind in ("spot", "on-demand"):
        g = df[df["price_kind"] == kind]
        if len(g):
            devs = sorted(set(g["device"]))
            parts.append(f"{kind} rates for {'/'.join(d.upper() for d in devs)}")
    src = sorted(set(i.split(":")[0] for i in df["instance"].dropna()))
    return f"Cost = time x {' and '.join(parts)} ({', '.join(src)} prices)."


def fig_speedup(a: Analysis, study: str) -> ggplot | None:
    """Speedup vs vCPUs per build, with the ideal (linear) speedup; labels: parallel efficiency."""
    s = a.summary
    df = s[(s["study"] == study) & (s["device"] != "gpu") & s["speedup_vs_fewest_vcpus"].notna()].copy()
    df = df[df.groupby(["workload", "build"])["vcpus"].transform("nunique") >= 2]  # a curve needs 2 points
    if df.empty:
        return None
    df["vcpus"] = df["vcpus"].astype(float)
    others: dict[str, str] = {}
    colours = {b: build_colour(b, "cpu", others) for b in sorted(df["build"].unique())}
    ideal = []
    for w, g in df.groupby("workload", sort=False):
        lo = g["vcpus"].min()
        for v in sorted(g["vcpus"].unique()):
            ideal.append({"workload": w, "vcpus": v, "ideal": v / lo})
    ideal_df = pd.DataFrame(ideal)
    df["eff"] = df["parallel_efficiency"].map(lambda e: f"{e:.0%}")
    first = df.groupby(["workload", "build"])["vcpus"].transform("min")
    labelled = df[df["vcpus"] > first]
    above = labelled[labelled["build"].isin(STOCK_BUILDS)]
    below = labelled[~labelled["build"].isin(STOCK_BUILDS)]
    workloads = list(dict.fromkeys(df["workload"]))
    for d in (df, above, below):
        d["workload"] = pd.Categorical(d["workload"], categories=workloads, ordered=True)
    ideal_df["workload"] = pd.Categorical(ideal_df["workload"], categories=workloads, ordered=True)
    counts = sorted(df["vcpus"].unique())
    ncol = min(4, len(workloads))
    nrow = math.ceil(len(workloads) / ncol)
    return (
        ggplot(df, aes(x="vcpus", y="speedup_vs_fewest_vcpus", color="build"))
        + geom_line(aes(x="vcpus", y="ideal"), data=ideal_df, color="#888888", linetype="dashed",
                    inherit_aes=False)
        + geom_line(size=0.9)
        + geom_point(size=2.2)
        + geom_text(aes(label="eff"), data=above, nudge_y=0.1, size=6.5, va="bottom", show_legend=False)
        + geom_text(aes(label="eff"), data=below, nudge_y=-0.1, size=6.5, va="top", show_legend=False)
        + facet_wrap("workload", ncol=ncol)
        + scale_x_continuous(trans="log2", breaks=counts, labels=[f"{int(c)}" for c in counts])
        + scale_y_continuous(trans="log2", labels=lambda v: [f"{x:g}x" for x in v])
        + scale_color_manual(values=colours)
        + labs(
            x="vCPUs",
            y="Speedup over the same build at the fewest vCPUs",
            color="build",
            title=f"Scaling with vCPUs: {study_title(study)}",
            subtitle="Dashed: ideal linear speedup. Labels: parallel efficiency (speedup / ideal).",
            caption=f"Full training time; {_basis(df)}.  cpustudy {__version__}",
        )
        + theme_cpustudy()
        + theme(figure_size=(3.0 * ncol + 1, 2.6 * nrow + 1.6))
    )


def fig_build_heatmap(a: Analysis, study: str) -> ggplot | None:
    """Each build's speedup over the stock build at the same vCPU count (workload x build, per vCPUs)."""
    s = a.summary
    df = s[(s["study"] == study) & (s["device"] != "gpu") & s["build_speedup_vs_stock"].notna()
           & ~s["build"].isin(STOCK_BUILDS)].copy()
    if df.empty:
        return None
    stock = s[(s["study"] == study) & s["build"].isin(STOCK_BUILDS)]["build"]
    stock_name = stock.iloc[0] if len(stock) else "stock"
    counts = sorted(int(v) for v in df["vcpus"].unique())
    name = lambda v: f"{int(v)} vCPU{'s' if int(v) != 1 else ''}"  # noqa: E731
    df["vcpus_label"] = pd.Categorical(df["vcpus"].map(name), categories=[name(c) for c in counts], ordered=True)
    workloads = list(dict.fromkeys(df["workload"]))[::-1]
    df["workload"] = pd.Categorical(df["workload"], categories=workloads, ordered=True)
    df["text"] = df["build_speedup_vs_stock"].map(lambda v: f"{v:.2f}x")
    df["log_speedup"] = df["build_speedup_vs_stock"].map(math.log2)
    lim = max(0.1, float(df["log_speedup"].abs().max()))
    builds = df["build"].nunique()
    return (
        ggplot(df, aes(x="build", y="workload", fill="log_speedup"))
        + geom_tile(color="white", size=0.8)
        + geom_text(aes(label="text"), size=8, color="#111111")
        + facet_wrap("vcpus_label", nrow=1)
        + scale_fill_gradient2(low="#d7301f", mid="#f7f7f7", high="#238b45", midpoint=0, limits=(-lim, lim),
                               breaks=_log2_breaks(lim), labels=lambda v: [f"{2 ** float(x):.3g}x" for x in v])
        + labs(
            x="build",
            y="",
            fill=f"speedup over {stock_name}",
            title=f"Build speedup over {stock_name} at the same vCPU count: {study_title(study)}",
            subtitle=f"{stock_name} time / build time; green = faster than {stock_name}, red = slower",
            caption=f"Full training time.  cpustudy {__version__}",
        )
        + theme_cpustudy()
        + theme(panel_grid_major=element_blank(),
                legend_key_width=200,  # a colour bar long enough for its labels to stand apart
                figure_size=(max(9.0, 1.0 + len(counts) * (1.1 + 0.9 * builds)), max(3.8, 2.6 + 0.45 * len(workloads))))
    )


def _log2_breaks(lim: float) -> list[float]:
    """Legend breaks for a speedup scale on log2, at round speedups within +-lim, at least 2*lim/7
    apart so that their labels never overlap on the colour bar (1x always among them)."""
    nice = [math.log2(v) for v in (1 / 4, 1 / 3, 1 / 2, 2 / 3, 4 / 5, 5 / 4, 3 / 2, 2, 3, 4)]
    gap = 2 * lim / 7
    picks = [0.0]
    for side in (-1, 1):
        last = 0.0
        for p in sorted((p for p in nice if p * side > 0 and abs(p) <= lim + 1e-9), key=abs):
            if abs(p - last) >= gap - 1e-9:
                picks.append(p)
                last = p
    return sorted(picks)


def fig_time_cost(a: Analysis, study: str, deadline: float | None = None) -> ggplot | None:
    """Time vs cost per configuration with the Pareto front and the cheapest one meeting the deadline
    (or the cheapest overall without one)."""
    s = a.summary
    df = s[(s["study"] == study)].dropna(subset=["total_time_s", "cost_usd"]).copy()
    if df.empty:
        return None
    df["pareto"] = False
    df["pick"] = False
    for _, g in df.groupby("workload", sort=False):
        g = g[g["suspect"].fillna("") == ""]  # a suspect GPU result is drawn, never on the front or picked
        df.loc[g.index, "pareto"] = pareto_front(g)
        idx = cheapest(g, deadline)
        if idx is not None:
            df.loc[idx, "pick"] = True
    others: dict[str, str] = {}
    df["build_key"] = [("gpu" if d == "gpu" else b) for b, d in zip(df["build"], df["device"])]
    colours = {k: build_colour(b, d, others)
               for k, b, d in sorted(set(zip(df["build_key"], df["build"], df["device"])))}
    workloads = list(dict.fromkeys(df["workload"]))
    df["workload"] = pd.Categorical(df["workload"], categories=workloads, ordered=True)
    front = df[df["pareto"]].sort_values(["workload", "total_time_s"])
    picks = df[df["pick"]]
    ncol = min(4, len(workloads))
    nrow = math.ceil(len(workloads) / ncol)
    what = f"cheapest within {deadline:g} s (ringed)" if deadline is not None else "cheapest (ringed)"
    p = (
        ggplot(df, aes(x="total_time_s", y="cost_usd"))
        + geom_path(data=front, color="#555555", linetype="dashed", size=0.6)
        + geom_point(aes(color="build_key"), size=2.4, alpha=0.9)
        + geom_point(data=picks, shape="o", size=6, color="#111111", fill="none", stroke=1.0)
        + geom_text(aes(label="label"), data=front, size=6.5, ha="left", va="bottom", nudge_x=0.012,
                    nudge_y=0.03, color="#333333")
        + facet_wrap("workload", ncol=ncol, scales="free")
        + scale_x_log10(expand=(0.08, 0, 0.2, 0), labels=_seconds)
        + scale_y_log10(expand=(0.1, 0, 0.15, 0), labels=_dollars)
        + scale_color_manual(values=colours)
        + labs(
            x="Full training time (s, log scale)",
            y="Cost of full training (USD, log scale)",
            color="build",
            title=f"Time vs cost: {study_title(study)}",
            subtitle=f"Dashed: Pareto front (nothing is both faster and cheaper); {what}",
            caption=f"{_price_caption(df)}  cpustudy {__version__}",
        )
        + theme_cpustudy()
        + theme(figure_size=(3.2 * ncol + 1, 2.8 * nrow + 1.6))
    )
    if deadline is not None:
        p = p + geom_vline(xintercept=deadline, color="#b2182b", linetype="dotted", size=0.7)
    return p


def _seconds(values: Any) -> list[str]:
    return [f"{v:,.0f}" if v >= 10 else f"{v:.2g}" for v in values]


def _dollars(values: Any) -> list[str]:
    return [f"{v:.2g}" if v < 1 else f"{v:,.2f}" for v in values]


def fig_then_now(a: Analysis) -> ggplot | None:
    """The 2017 study beside newer results: the fastest GPU and CPU configuration of each, per workload."""
    df = then_and_now(a.summary)
    if df.empty:
        return None
    series = [s for s in ("2017 GPU", "2017 best CPU", "now GPU", "now best CPU") if s in set(df["series"])]
    palette = {"2017 GPU": "#fb6a4a", "2017 best CPU": "#6baed6", "now GPU": "#a50f15", "now best CPU": "#08519c"}
    df["series"] = pd.Categorical(df["series"], categories=series[::-1], ordered=True)
    workloads = list(dict.fromkeys(df["workload"]))[::-1]
    df["workload"] = pd.Categorical(df["workload"], categories=workloads, ordered=True)
    df["text"] = [f"{lab}{'*' if p else ''}  {t:,.0f} s" for lab, p, t in zip(df["label"], df["projected"],
                                                                        df["total_time_s"])]
    newer = sorted(set(df.loc[~df["study"].eq("woolf2017"), "study"]))
    now = df[~df["study"].eq("woolf2017")]
    trained_only = int((now["basis"] == "training only").sum())
    basis = ("now: training + validation, as the study timed it" if not trained_only else
             f"now: training + validation; † = training only, not validated ({trained_only} of {len(now)} bars)")
    df["text"] = [t + (" †" if b == "training only" else "") for t, b in zip(df["text"], df["basis"])]
    return (
        ggplot(df, aes(x="workload", y="total_time_s", fill="series"))
        + geom_col(position="dodge", width=0.8)
        + geom_text(aes(label="text"), position=_dodge(0.8), ha="left", size=7, color="#222222")
        + coord_flip()
        + scale_y_log10(expand=(0, 0, 0.35, 0), labels=_seconds)
        + scale_fill_manual(values=palette, breaks=series)
        + labs(
            x="",
            y="Full training time (s, log scale)",
            fill="",
            title="Then and now: the fastest GPU and CPU configuration per workload",
            subtitle=f"2017: Woolf's study (K80 GPU, Skylake vCPUs); now: {', '.join(newer)}\n"
                     f"Epochs: 2017 = training + validation (the study's logs);\n{basis}",
            caption="2017 totals sum every logged epoch (first one included); now = steady-state epoch time x epochs,\n"
                    f"without warm-up or start-up, which favours now.  * projected.  cpustudy {__version__}",
        )
        + theme_cpustudy()
        + theme(panel_grid_major_y=element_blank(), figure_size=(9, 1.2 + 0.9 * len(workloads)))
    )


def _dodge(width: float) -> Any:
    from plotnine import position_dodge

    return position_dodge(width=width)


# -- findings ----------------------------------------------------------------------------------------


def _x(v: float) -> str:
    return f"{v:.2f}×" if v >= 0.095 else f"{v:.2g}×"


def findings(a: Analysis) -> list[str]:
    """Plain-language findings, each computed from the summary."""
    out: list[str] = []
    s = a.summary
    for study in a.studies:
        ss = s[s["study"] == study]
        prefix = f"{STUDY_TITLES.get(study, study)}: " if len(a.studies) > 1 else ""
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
                       f", costs {_x(rest.loc[j, 'cost_rel_baseline'])} as much at "
                       f"{_x(rest.loc[j, 'time_rel_baseline'])} its time{star(rest.loc[j])}") if j is not None else ""
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
                            f"{_x(c['cost_rel_baseline'])} as much at {_x(c['time_rel_baseline'])} its time{star(c)}."
                        )
                elif base.is_gpu:
                    out.append(
                        f"{prefix}{config_name(r['device'], r['vcpus'], r['build'])} is the cheapest configuration "
                        f"for {workload}: {_x(r['cost_rel_baseline'])} the GPU's cost at "
                        f"{_x(r['time_rel_baseline'])} its time{star(r)}."
                    )
                else:
                    out.append(
                        f"{prefix}{config_name(r['device'], r['vcpus'], r['build'])} is the cheapest configuration "
                        f"for {workload}: {_x(r['cost_rel_baseline'])} the cost of {base.name} (the fallback "
                        f"baseline, {base.note.split(': ', 1)[0]}) at {_x(r['time_rel_baseline'])} its time{star(r)}."
                        if base.kind == "fallback" else
                        f"{prefix}{config_name(r['device'], r['vcpus'], r['build'])} is the cheapest configuration "
                        f"for {workload}: {_x(r['cost_rel_baseline'])} the cost of {base.name} (the baseline) at "
                        f"{_x(r['time_rel_baseline'])} its time{star(r)}."
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
                            f"{_x(c['time_rel_baseline'])} its time{star(c)}."
                        )
                else:
                    out.append(
                        f"{prefix}{config_name(f['device'], f['vcpus'], f['build'])} is the fastest configuration "
                        f"for {workload}: {_x(f['time_rel_baseline'])} {whose} time at "
                        f"{_x(f['cost_rel_baseline']) if not pd.isna(f['cost_rel_baseline']) else 'an unknown'} "
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
        detail = ", ".join(f"{_x(v)} at {int(k)} vCPU{'s' if int(k) != 1 else ''}" for k, v in by_v.items())
        out.append(
            f"{prefix}{build} was faster than {stock_name} in {faster} of {len(g)} comparisons at equal vCPUs "
            f"(median speedup {_x(g['build_speedup_vs_stock'].median())}; {detail})."
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
                f"{len(both)} workload × build pairs (median speedup {_x(float(ratio.median()))})."
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


# -- rendering ---------------------------------------------------------------------------------------


def render(fig: ggplot, base: Path, dpi: int = 110, formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    out = []
    for fmt in formats:
        path = base.parent / f"{base.name}.{fmt}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fig.save(path, dpi=dpi, verbose=False)
        out.append(path)
    return out


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)


def figures(a: Analysis, deadline: float | None = None) -> list[tuple[str, str, str, Callable[[], Any]]]:
    """(section, file stem, alt text, factory) for every chart of the report, in page order."""
    out: list[tuple[str, str, str, Callable[[], Any]]] = []
    for study in a.studies:
        sec = study_title(study)
        for w in a.workloads(study):
            out.append((sec, f"{_slug(study)}-{_slug(w)}-time", f"{w}: training time relative to baseline",
                        partial(fig_time_relative, a, study, w)))
            out.append((sec, f"{_slug(study)}-{_slug(w)}-cost", f"{w}: training cost relative to baseline",
                        partial(fig_cost_relative, a, study, w)))
        out.append((sec, f"{_slug(study)}-speedup", "speedup vs vCPUs per build", partial(fig_speedup, a, study)))
        out.append((sec, f"{_slug(study)}-build-heatmap", "build speedup heatmap",
                    partial(fig_build_heatmap, a, study)))
        out.append((sec, f"{_slug(study)}-time-vs-cost", "time vs cost with Pareto front",
                    partial(fig_time_cost, a, study, deadline)))
    out.append(("Then and now", "then-vs-now", "then (2017) vs now per workload", lambda: fig_then_now(a)))
    return out


# -- the page ----------------------------------------------------------------------------------------

TABLE_COLUMNS = [
    ("study", "study"), ("workload", "workload"), ("label", "config"), ("n_runs", "runs"),
    ("epochs", "epochs"), ("epoch_time_s", "epoch s (median)"), ("epoch_time_iqr_s", "IQR over runs s"),
    ("within_run_iqr_s", "IQR within runs s"), ("unstable", "stability"), ("pct_of_peak", "% of FP32 peak"),
    ("total_time_s", "total s"), ("gpu_utilization", "GPU busy"), ("suspect", "suspect"),
    ("time_rel_baseline", "time ×"), ("cost_usd", "cost USD"), ("cost_rel_baseline", "cost ×"),
    ("cost_per_million_samples_usd", "USD / M samples"), ("instance", "priced as"), ("price_kind", "rate"),
    ("baseline", "baseline"), ("projected", "projected"),
]


def _fmt(col: str, v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    if col == "unstable":
        return "unstable: CV > 5 %" if bool(v) else ""
    if isinstance(v, bool) or col == "projected":
        return "projected" if bool(v) else ""
    if col in ("pct_of_peak", "gpu_utilization"):
        return f"{float(v):.0f} %"
    if col == "suspect":
        return f"suspect: {v}" if v else ""
    if col in ("time_rel_baseline", "cost_rel_baseline"):
        return _times(float(v)).replace("x", "×")
    if col in ("cost_usd", "cost_per_million_samples_usd", "cost_per_epoch_usd"):
        return f"{float(v):.4g}"
    if col in ("epoch_time_s", "total_time_s"):
        return f"{float(v):,.1f}" if float(v) >= 100 else f"{float(v):.3g}"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _rows(df: pd.DataFrame, cols: list[tuple[str, str]]) -> list[list[str]]:
    return [[_fmt(c, r[c]) for c, _ in cols] for _, r in df.iterrows()]


def _html_table(header: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>'


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;
color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.7em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#555;font-size:.92em}.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.5em .8em}
.fallback{background:#fdecea;border-left:4px solid #d93025;padding:.5em .8em}
.charts{display:flex;flex-wrap:wrap;gap:1em}.charts figure{margin:0;flex:1 1 520px}
figure img{max-width:100%;height:auto;border:1px solid #eee}
table{border-collapse:collapse;font-size:.82em;margin:1em 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td:nth-child(-n+3){text-align:left}
table.wide td{white-space:normal;text-align:left;max-width:40em}
"""


def write_report(a: Analysis, out_dir: Path, *, dpi: int = 110, formats: tuple[str, ...] = ("png", "svg"),
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = a.summary
    summary[SUMMARY_COLUMNS].to_csv(out_dir / "summary.csv", index=False)
    charts: list[tuple[str, str, str]] = []  # (section, stem, alt)
    skipped: list[str] = []
    for section, stem, alt, make in figures(a, a.options.deadline):
        fig = make()
        if fig is None:
            skipped.append(stem)
            continue
        if progress:
            progress(stem)
        render(fig, out_dir / stem, dpi=dpi, formats=formats)
        charts.append((section, stem, alt))
    facts = findings(a)
    _write_html(a, out_dir, charts, facts)
    _write_md(a, out_dir, charts, facts)
    return {"out": out_dir, "charts": [c[1] for c in charts], "skipped": skipped, "findings": facts}


def _suspect_notes(a: Analysis) -> list[str]:
    """GPU configurations that cannot be right, and GPU runs whose utilisation was not recorded."""
    out = []
    gpu = a.summary[a.summary["device"] == "gpu"]
    for r in gpu.itertuples(index=False):
        where = f"{study_title(r.study)}, {r.workload}, {r.label}"
        if r.suspect:
            role = " (the baseline: every finding that would compare with it is withheld)" \
                if r.label == r.baseline else " (shown, compared with nothing)"
            out.append(f"{where} is suspect{role}: {r.suspect}.")
        elif r.study not in ("woolf2017",) and pd.isna(r.gpu_utilization):
            out.append(f"{where}: GPU utilisation was not recorded (measured before cpustudy sampled it), "
                       "so an idle GPU cannot be ruled out.")
    return out


def _fallback_notes(a: Analysis) -> list[str]:
    out = []
    for (study, workload), b in a.baselines.items():
        if b.kind == "fallback":
            out.append(f"{study_title(study)}, {workload}: fallback baseline {b.label} ({b.note}).")
    return out


def _header_lines(a: Analysis) -> list[str]:
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


def _image_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _software_rows(a: Analysis) -> tuple[list[str], list[list[str]]]:
    cols = ["study", "cpu_model", "machine", "logical_cpus", "device", "build", "tf_version", "keras_version",
            "keras_backend", "python_version", "onednn", "xla", "tf_missing_isa", "runs", "workloads"]
    header = ["study", "machine", "fingerprint", "logical CPUs", "device", "build", "TensorFlow", "Keras",
              "backend", "Python", "oneDNN", "XLA", "TF not compiled for", "runs", "workloads"]
    rows = [[_fmt(c, r[c]) for c in cols] for _, r in a.software.iterrows()]
    return header, rows


def _price_rows(a: Analysis) -> tuple[list[str], list[list[str]]]:
    header = ["instance", "region", "rate", "USD/h", "source", "as of"]
    rows = [[str(r.instance), str(r.region), str(r.price_kind), f"{r.price_usd_per_hour:.6g}", str(r.price_source),
             str(r.price_as_of)] for r in a.prices_used.itertuples()]
    notes = sorted({n for n in a.summary["price_note"].dropna() if n})
    return header, rows + [["", "", "", "", f"note: {n}", ""] for n in notes]


def _write_html(a: Analysis, out: Path, charts: list[tuple[str, str, str]], facts: list[str]) -> None:
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>cpustudy report: {e(', '.join(a.studies))}</title><style>{CSS}</style></head><body>",
        "<h1>Which CPU configuration trains fastest and cheapest?</h1>",
        '<div class="meta">' + "<br>".join(e(line) for line in _header_lines(a)) + "</div>",
    ]
    sus = _suspect_notes(a)
    if sus:
        parts.append('<p class="fallback"><strong>Suspect GPU results.</strong> ' + " ".join(e(x) for x in sus) + "</p>")
    fb = _fallback_notes(a)
    if fb:
        parts.append('<p class="fallback"><strong>Fallback baseline.</strong> ' + " ".join(e(x) for x in fb) + "</p>")
    if a.notes:
        parts.append('<p class="note">' + " ".join(e(n) + "." for n in a.notes) + "</p>")
    parts.append("<h2>Findings</h2><ul>" + "".join(f"<li>{e(f)}</li>" for f in facts) + "</ul>")
    section = None
    for sec, stem, alt in charts:
        if sec != section:
            if section is not None:
                parts.append("</div>")
            parts.append(f"<h2>{e(sec)}</h2><div class=\"charts\">")
            section = sec
        parts.append(f'<figure><img src="{_image_uri(out / (stem + ".png"))}" alt="{e(alt)}">'
                     f'<figcaption><a href="{e(stem)}.svg">{e(stem)}.svg</a></figcaption></figure>')
    if section is not None:
        parts.append("</div>")
    header = [h for _, h in TABLE_COLUMNS]
    parts.append("<h2>Summary</h2><p>Every figure is computed from stored results; all columns are in "
                 '<a href="summary.csv">summary.csv</a>. Repeats are aggregated by their median.</p>')
    parts.append(_html_table(header, _rows(a.summary, TABLE_COLUMNS)))
    h, rows = _price_rows(a)
    parts.append("<h2>Prices used</h2>" + _html_table(h, rows, "wide"))
    h, rows = _software_rows(a)
    parts.append("<h2>Machines and software</h2>" + _html_table(h, rows))
    parts.append("</body></html>")
    (out / "index.html").write_text("\n".join(parts), encoding="utf-8")


def _write_md(a: Analysis, out: Path, charts: list[tuple[str, str, str]], facts: list[str]) -> None:
    lines = ["# Which CPU configuration trains fastest and cheapest?", ""]
    lines += [f"- {line}" for line in _header_lines(a)] + [""]
    sus = _suspect_notes(a)
    if sus:
        lines += ["> **Suspect GPU results.** " + " ".join(sus), ""]
    fb = _fallback_notes(a)
    if fb:
        lines += ["> **Fallback baseline.** " + " ".join(fb), ""]
    if a.notes:
        lines += ["> " + " ".join(n + "." for n in a.notes), ""]
    lines += ["## Findings", ""] + [f"- {f}" for f in facts] + [""]
    section = None
    for sec, stem, alt in charts:
        if sec != section:
            lines += [f"## {sec}", ""]
            section = sec
        lines += [f"![{alt}]({stem}.png)", ""]
    header = [h for _, h in TABLE_COLUMNS]
    lines += ["## Summary", "", "Every figure is computed from stored results; all columns are in "
              "[summary.csv](summary.csv). Repeats are aggregated by their median.", ""]
    lines += [_md_table(header, _rows(a.summary, TABLE_COLUMNS)), ""]
    h, rows = _price_rows(a)
    lines += ["## Prices used", "", _md_table(h, rows), ""]
    h, rows = _software_rows(a)
    lines += ["## Machines and software", "", _md_table(h, rows), ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
