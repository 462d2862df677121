"""The report's charts (plotnine) from an ``Analysis``.

One function per figure, each returning a ggplot object (or None where the figure does not apply, e.g.
a build heatmap with a single build), so tests can inspect them without rendering:

* ``fig_time_relative`` / ``fig_cost_relative``: the study's two charts per workload, horizontal bars
  relative to the baseline, dashed line at 1.0x;
* ``fig_speedup``: speedup over the fewest vCPUs per build, with the ideal (linear) line and parallel
  efficiency;
* ``fig_build_heatmap``: each build's speedup over the stock build, workload x build, per vCPU count;
* ``fig_time_cost``: time vs cost with the Pareto front and the cheapest configuration meeting a deadline;
* ``fig_then_now``: the 2017 study next to newer results, per workload.

``figures`` lists them in page order; ``render`` saves one (PNG, SVG).
"""

from __future__ import annotations

import math
import textwrap
import warnings
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd
from plotnine import (
    aes,
    coord_flip,
    element_blank,
    facet_wrap,
    geom_blank,
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
    position_dodge,
    scale_color_manual,
    scale_fill_gradient2,
    scale_fill_manual,
    scale_x_continuous,
    scale_x_log10,
    scale_y_continuous,
    scale_y_log10,
    theme,
)

from cpustudy import __version__
from cpustudy.analysis.runs import vcpus_int
from cpustudy.analysis import studies
from cpustudy.analysis.studies import IMPORTED_STUDIES, study_title
from cpustudy.analysis.runs import example_validates
from cpustudy.analysis.summary import Analysis
from cpustudy.report import beyond
from cpustudy.report.findings import baseline_phrase, baseline_subtitle, cheapest, times
from cpustudy.report.labels import LabelledPlot
from cpustudy.report.theme import build_colours, colour_map, theme_cpustudy

# -- figures -----------------------------------------------------------------------------------------


def front_of(points: Sequence[tuple[float | None, float | None]]) -> list[bool]:
    """The one Pareto front of (time, cost) pairs, lower better in both: a point is on it when it has both and no
    other point is at least as good in both and better in one. Points alike are all on it (a tie is no reason to
    leave one out); a point without a time or a cost never is."""
    known = [(float(t), float(c)) for t, c in points if t is not None and c is not None
             and math.isfinite(float(t)) and math.isfinite(float(c))]

    def dominated(t: float, c: float) -> bool:
        return any(t2 <= t and c2 <= c and (t2 < t or c2 < c) for t2, c2 in known)

    return [t is not None and c is not None and math.isfinite(float(t)) and math.isfinite(float(c))
            and not dominated(float(t), float(c)) for t, c in points]


def pareto_front(df: pd.DataFrame, x: str = "total_time_s", y: str = "cost_usd") -> pd.Series[bool]:
    """Per configuration, whether it is on the Pareto front of ``x`` and ``y`` (:func:`front_of`: ties kept)."""
    points = [(None if pd.isna(a) else float(a), None if pd.isna(b) else float(b)) for a, b in zip(df[x], df[y])]
    return pd.Series(front_of(points), index=df.index, dtype=bool)


def then_and_now(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload in both the 2017 study and newer results: the 2017 GPU, the best 2017 CPU, the best
    CPU now and the GPU now (fastest full training of each; a suspect GPU run is left out).

    Like with like: the study's logged epochs include its validation on the test set, so a newer
    configuration counts training plus its measured validation where it validated
    (``--validation study``); where it did not, its training time alone is shown and ``basis`` says so.
    """
    old = summary[summary["study"].isin(IMPORTED_STUDIES)]
    new = summary[~summary["study"].isin(IMPORTED_STUDIES)]
    rows = []
    if old.empty or new.empty:
        return pd.DataFrame(columns=["workload", "series", "label", "study", "total_time_s", "cost_usd", "basis",
                                     "training_only"])
    new = new.copy()
    with_val = pd.to_numeric(new["total_with_validation_s"], errors="coerce") if "total_with_validation_s" in new \
        else pd.Series(math.nan, index=new.index)
    validates = [example_validates(w) for w in new.get("workload_base", new["workload"])]
    new["basis"] = ["training only" if pd.isna(v) else "training + validation" if val
                    else "training (the example did not validate)" for v, val in zip(with_val, validates)]
    new["training_only"] = with_val.isna()  # no validation time where the example validated
    new["total_time_s"] = with_val.fillna(new["total_time_s"])
    if "suspect" in new:
        new = new[new["suspect"].fillna("") == ""]
    old = old.assign(basis="training + validation (logged)", training_only=False)
    for workload in [w for w in dict.fromkeys(old["workload"]) if w in set(new["workload"])]:
        for era, df in (("2017", old), ("now", new)):
            g = df[(df["workload"] == workload)].dropna(subset=["total_time_s"])
            for device in ("gpu", "cpu"):
                d = g[(g["device"] == "gpu") == (device == "gpu")].sort_values("total_time_s")
                if era == "now" and (~d["training_only"]).any():
                    d = d[~d["training_only"]]  # like with like: validated ones where there are
                if d.empty:
                    continue
                r = d.iloc[0]
                series = f"{era} {'GPU' if device == 'gpu' else 'best CPU'}"
                rows.append({"workload": workload, "series": series, "label": r["label"], "study": r["study"],
                             "total_time_s": r["total_time_s"], "cost_usd": r["cost_usd"],
                             "projected": bool(r["projected"]), "basis": r["basis"],
                             "training_only": bool(r["training_only"])})
    return pd.DataFrame(rows)


def bar_text(v: float) -> str:
    """A ratio as printed beside a bar (``1.23x``); nothing for NaN."""
    if pd.isna(v):
        return ""
    return times(v, "x")


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
    df["text"] = [t + ("  suspect" if sus else "") for t, sus in zip(df[col].map(bar_text), df["suspect"].fillna(""))]
    top = float(df[col].max())
    machine = df.loc[df["is_baseline"].astype(bool), "machines"]
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
    if all(studies.study(s).summed_epochs for s in df["study"]):
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
    return f"Cost = billed time x {' and '.join(parts)} ({', '.join(src)} prices)."


def fig_speedup(a: Analysis, study: str) -> ggplot | None:
    """Speedup vs vCPUs per build, with the ideal (linear) speedup; labels: parallel efficiency."""
    s = a.summary
    df = s[(s["study"] == study) & (s["device"] != "gpu") & s["speedup_vs_fewest_vcpus"].notna()].copy()
    df = df[df.groupby(["workload", "build"])["vcpus"].transform("nunique") >= 2]  # a curve needs 2 points
    if df.empty:
        return None
    df["vcpus"] = df["vcpus"].astype(float)
    colours = build_colours(df)
    ideal = []
    for w, g in df.groupby("workload", sort=False):
        lo = g["vcpus"].min()
        for v in sorted(g["vcpus"].unique()):
            ideal.append({"workload": w, "vcpus": v, "ideal": v / lo})
    ideal_df = pd.DataFrame(ideal)
    ys = pd.concat([df["speedup_vs_fewest_vcpus"], ideal_df["ideal"]])
    labels = efficiency_labels(df, span=math.log2(float(ys.max()) / float(ys.min())))
    workloads = list(dict.fromkeys(df["workload"]))
    for d in (df, labels):
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
        # One text layer per placement (plotnine takes ha/va as parameters, not aesthetics).
        + [geom_text(aes(y="label_y", label="eff"), data=g, size=6.5, va=va, ha=ha, nudge_x=LABEL_NUDGE[str(ha)],
                     show_legend=False) for (va, ha), g in labels.groupby(["va", "ha"], observed=True)]
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


LABEL_NUDGE = {"center": 0.0, "left": 0.15, "right": -0.15}  # log2 units to the side of a point


def efficiency_labels(df: pd.DataFrame, span: float = 1.0) -> pd.DataFrame:
    """One parallel-efficiency label per point past a build's first vCPU count, placed from that point's
    own row: at each (workload, vCPUs) the fastest-scaling build is labelled above its point, the slowest
    below it, and any build between them beside its point (``va`` "center"; to the right, or to the left
    at the largest vCPU count, where the panel ends), so no label sits on another build's point. A label
    clears its point by 6 % of the y axis (``span``: its range in powers of two).
    Columns: the point's (workload, build, vcpus, speedup_vs_fewest_vcpus), ``eff``, ``label_y``, ``va``,
    ``ha``."""
    first = df.groupby(["workload", "build"])["vcpus"].transform("min")
    d = df[df["vcpus"] > first].copy()
    d["eff"] = d["parallel_efficiency"].map(lambda e: f"{e:.0%}")
    d["va"] = "center"
    for _, g in d.groupby(["workload", "vcpus"], sort=False):
        order = g.sort_values(["speedup_vs_fewest_vcpus", "build"]).index
        d.loc[order[-1], "va"] = "bottom"
        if len(order) > 1:
            d.loc[order[0], "va"] = "top"
    gap = 2 ** (0.06 * max(1.0, span))
    shift = d["va"].map({"bottom": gap, "top": 1 / gap, "center": 1.0})
    d["label_y"] = d["speedup_vs_fewest_vcpus"] * shift
    d["ha"] = "center"
    d.loc[d["va"] == "center", "ha"] = "left"
    d.loc[(d["va"] == "center") & (d["vcpus"] == df["vcpus"].max()), "ha"] = "right"
    return d


def fig_build_heatmap(a: Analysis, study: str) -> ggplot | None:
    """Each build's speedup over the stock build at the same vCPU count (workload x build, per vCPUs)."""
    s = a.summary
    df = s[(s["study"] == study) & (s["device"] != "gpu") & s["build_speedup_vs_stock"].notna()
           & ~s["stock"].astype(bool)].copy()
    if df.empty:
        return None
    stock = s[(s["study"] == study) & s["stock"].astype(bool)]["recipe"].drop_duplicates()
    stock_name = stock.iloc[0] if len(stock) else "stock"
    counts = sorted(int(v) for v in df["vcpus"].unique())
    name = lambda v: f"{int(v)} vCPU{'s' if int(v) != 1 else ''}"  # noqa: E731
    df["vcpus_label"] = pd.Categorical(df["vcpus"].map(name), categories=[name(c) for c in counts], ordered=True)
    workloads = list(dict.fromkeys(df["workload"]))[::-1]
    df["workload"] = pd.Categorical(df["workload"], categories=workloads, ordered=True)
    # A comparison that does not hold up (holdup.verdict, as the findings judge it) is drawn neutral and
    # marked, never coloured as a finding.
    held = df["build_vs_stock_reason"].fillna("") == "" if "build_vs_stock_reason" in df else pd.Series(True, index=df.index)
    same = df["build_same_as_stock"].fillna(False).astype(bool) if "build_same_as_stock" in df else \
        pd.Series(False, index=df.index)
    df["text"] = [f"{v:.2f}x" + ("\nsame configuration" if sm else "" if ok else "\ninconclusive")
                  for v, ok, sm in zip(df["build_speedup_vs_stock"], held, same)]
    df["log_speedup"] = df["build_speedup_vs_stock"].map(math.log2).where(held, 0.0)
    lim = max(0.1, float(df["log_speedup"].abs().max()))
    open_ = int((~held).sum())
    builds = df["build"].nunique()
    return (
        ggplot(df, aes(x="build", y="workload", fill="log_speedup"))
        + geom_tile(color="white", size=0.8)
        + geom_text(aes(label="text"), size=8, color="#111111")
        + facet_wrap("vcpus_label", nrow=1)
        + scale_fill_gradient2(low="#d7301f", mid="#f7f7f7", high="#238b45", midpoint=0, limits=(-lim, lim),
                               breaks=log2_breaks(lim), labels=lambda v: [f"{2 ** float(x):.3g}x" for x in v])
        + labs(
            x="build",
            y="",
            fill=f"speedup over {stock_name}",
            title=f"Build speedup over {stock_name} at the same vCPU count: {study_title(study)}",
            subtitle=f"{stock_name} time / build time; green = faster than {stock_name}, red = slower"
            + (f"; grey: inconclusive ({open_})" if open_ else ""),
            caption=f"Full training time.  cpustudy {__version__}",
        )
        + theme_cpustudy()
        + theme(panel_grid_major=element_blank(),
                legend_key_width=200,  # a colour bar long enough for its labels to stand apart
                figure_size=(max(9.0, 1.0 + len(counts) * (1.1 + 0.9 * builds)), max(3.8, 2.6 + 0.45 * len(workloads))))
    )


def log2_breaks(lim: float) -> list[float]:
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


def point_labels(df: pd.DataFrame) -> list[str]:
    """The text beside each dot of the time-vs-cost chart: its vCPU count, or "GPU"."""
    return ["GPU" if d == "gpu" else f"{vcpus_int(v)}" for d, v in zip(df["device"], df["vcpus"])]


def span_frame(df: pd.DataFrame, x: str, y: str, ratio: float = 1.6) -> pd.DataFrame:
    """Invisible corner points per workload so that each free log axis spans at least ``ratio`` (a panel
    of one point, or of points almost equal, otherwise gets a degenerate axis and loses its labels)."""
    rows = []
    for w, g in df.groupby("workload", sort=False, observed=True):
        corner: dict[str, Any] = {"workload": w}
        for col in (x, y):
            lo, hi = float(g[col].min()), float(g[col].max())
            grow = math.sqrt(ratio * lo / hi) if hi < ratio * lo else 1.0
            corner[col] = (lo / grow, hi * grow)
        rows.append({"workload": w, x: corner[x][0], y: corner[y][0]})
        rows.append({"workload": w, x: corner[x][1], y: corner[y][1]})
    return pd.DataFrame(rows)


def fig_time_cost(a: Analysis, study: str, deadline: float | None = None) -> ggplot | None:
    """Time vs cost per configuration, each dot labelled with its vCPUs (or GPU) and coloured by build,
    with the Pareto front where it has two or more points and the cheapest configuration meeting the
    deadline (or the cheapest overall without one) ringed."""
    s = a.summary
    # a full training as it bills (start-up, tracing, epochs, validation): the seconds its cost is priced from
    df = s[(s["study"] == study)].dropna(subset=["billed_s", "cost_usd"]).copy()
    if df.empty:
        return None
    df["pareto"] = False
    df["pick"] = False
    for _, g in df.groupby("workload", sort=False):
        g = g[g["suspect"].fillna("") == ""]  # a suspect GPU result is drawn, never on the front or picked
        df.loc[g.index, "pareto"] = pareto_front(g, x="billed_s")
        idx = cheapest(g, deadline)
        if idx is not None:
            df.loc[idx, "pick"] = True
    gpu_builds = df.loc[df["device"] == "gpu", "build"].nunique()
    df["build_key"] = [("gpu" if gpu_builds <= 1 else f"gpu {b}") if d == "gpu" else b
                       for b, d in zip(df["build"], df["device"])]
    df["text"] = point_labels(df)
    colours = build_colours(df, "build_key")
    workloads = list(dict.fromkeys(df["workload"]))
    df["workload"] = pd.Categorical(df["workload"], categories=workloads, ordered=True)
    fronts = df[df["pareto"]].groupby("workload", observed=True)["pareto"].transform("size")
    front = df[df["pareto"]][fronts >= 2].sort_values(["workload", "billed_s"])
    picks = df[df["pick"]]
    blank = span_frame(df, "billed_s", "cost_usd")
    blank["workload"] = pd.Categorical(blank["workload"], categories=workloads, ordered=True)
    ncol = min(4, len(workloads))
    nrow = math.ceil(len(workloads) / ncol)
    p = (
        LabelledPlot(df, aes(x="billed_s", y="cost_usd"))  # labels set apart once laid out: none over another
        + geom_blank(data=blank)
        + geom_path(data=front, color="#555555", linetype="dashed", size=0.6)
        + geom_point(aes(color="build_key"), size=2.4, alpha=0.9)
        + geom_point(data=picks, shape="o", size=6, color="#111111", fill="none", stroke=1.0)
        + geom_text(aes(label="text", color="build_key"), size=6.5, ha="left", va="bottom", nudge_x=0.02,
                    nudge_y=0.02, show_legend=False)
        + facet_wrap("workload", ncol=ncol, scales="free")
        + scale_x_log10(expand=(0.08, 0, 0.2, 0), labels=_seconds)
        + scale_y_log10(expand=(0.1, 0, 0.15, 0), labels=_dollars)
        + scale_color_manual(values=colours)
        + labs(
            x="Full training, billed: start-up, epochs, validation (s, log scale)",
            y="Cost of full training (USD, log scale)",
            color="build",
            title=f"Time vs cost: {study_title(study)}",
            subtitle=_time_cost_subtitle(len(workloads), front, picks, deadline),
            caption=f"{_price_caption(df)}  cpustudy {__version__}",
        )
        + theme_cpustudy()
        + theme(figure_size=(3.2 * ncol + 1, 2.8 * nrow + 1.6))
    )
    if deadline is not None:
        p = p + geom_vline(xintercept=deadline, color="#b2182b", linetype="dotted", size=0.7)
    return p


def _time_cost_subtitle(panels: int, front: pd.DataFrame, picks: pd.DataFrame, deadline: float | None) -> str:
    """What the time-vs-cost chart draws: the Pareto front where a panel has one, and what is ringed."""
    what = (f"lowest median cost within {deadline:g} s ringed" if deadline is not None else "lowest median cost ringed"
            ) + " (a finding only where the page states one)"
    if deadline is not None and picks["workload"].nunique() < panels:
        what += f" (none finishes in time in {panels - picks['workload'].nunique()} panel(s))"
    lone = panels - front["workload"].nunique()
    if front.empty:
        pareto = "one configuration is both the fastest and the cheapest in every panel (no front to draw)"
    elif lone:
        pareto = (f"dashed: Pareto front (nothing is both faster and cheaper); in {lone} panel(s) one "
                  "configuration is both fastest and cheapest")
    else:
        pareto = "dashed: Pareto front (nothing is both faster and cheaper)"
    return f"Numbers: vCPUs; {pareto}; {what}"


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
    newer = sorted(set(df.loc[~df["study"].isin(IMPORTED_STUDIES), "study"]))
    now = df[~df["study"].isin(IMPORTED_STUDIES)]
    trained_only = int(now["training_only"].astype(bool).sum())
    basis = ("now: training + validation, as the study timed it" if not trained_only else
             f"now: training + validation; † = training only, not validated ({trained_only} of {len(now)} bars)")
    df["text"] = [t + (" †" if only else "") for t, only in zip(df["text"], df["training_only"].astype(bool))]
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
    return position_dodge(width=width)


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
        out.append((sec, f"{_slug(study)}-throughput-vs-batch", "throughput against batch size",
                    partial(beyond.fig_throughput_batch, a, study)))
        out.append((sec, f"{_slug(study)}-cost-to-target", "cost to reach the target accuracy",
                    partial(beyond.fig_cost_to_target, a, study)))
    out.append(("Then and now", "then-vs-now", "then (2017) vs now per workload", lambda: fig_then_now(a)))
    return out
