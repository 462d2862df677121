"""Charts beyond the 2017 study: throughput against batch size, and the cost of reaching a target
validation accuracy (so a larger batch or bfloat16 that needs more epochs is judged fairly).
One function per figure, like :mod:`cpustudy.report.figures`; each returns None when the results
have nothing for it."""

from __future__ import annotations

import math

import pandas as pd
from plotnine import (
    aes,
    coord_flip,
    facet_wrap,
    geom_col,
    geom_line,
    geom_point,
    geom_text,
    ggplot,
    labs,
    scale_x_continuous,
    scale_fill_manual,
    scale_y_continuous,
    theme,
)

from cpustudy import __version__
from cpustudy.analysis.runs import vcpus_int
from cpustudy.analysis.studies import study_title
from cpustudy.analysis.summary import Analysis
from cpustudy.report.theme import theme_cpustudy


def series_name(device: str, vcpus: float | None, series: str) -> str:
    """A line of the batch-size chart: the configuration without its batch size (``series``, from
    ``analysis.runs.add_configuration``), on its device."""
    return f"GPU {series}" if device == "gpu" else f"{vcpus_int(vcpus)} vCPU {series}"


def fig_throughput_batch(a: Analysis, study: str) -> ggplot | None:
    """Samples per second against batch size, one line per device/vCPUs/build (and precision), for the
    series measured at two batch sizes or more."""
    s = a.summary
    df = s[(s["study"] == study) & s["batch_size"].notna() & s["samples_per_s"].notna()].copy()
    if df.empty:
        return None
    df["series"] = [series_name(d, v, b) for d, v, b in zip(df["device"], df["vcpus"], df["series"])]
    df = df[df.groupby(["workload", "series"])["batch_size"].transform("nunique") >= 2]
    if df.empty:
        return None
    df["batch_size"] = df["batch_size"].astype(float)
    sizes = sorted(df["batch_size"].unique())
    workloads = list(dict.fromkeys(df["workload"]))
    ncol = min(3, len(workloads))
    return (
        ggplot(df, aes(x="batch_size", y="samples_per_s", color="series"))
        + geom_line(size=0.9)
        + geom_point(size=2.2)
        + facet_wrap("workload", ncol=ncol, scales="free_y")
        + scale_x_continuous(trans="log2", breaks=sizes, labels=[f"{int(b)}" for b in sizes])
        + scale_y_continuous(labels=lambda v: [f"{x:,.0f}" for x in v])
        + labs(x="Batch size (log scale)", y="Training samples per second", color="",
               title=f"Throughput against batch size: {study_title(study)}",
               subtitle="Median over repeats; throughput alone: a larger batch may need more epochs to the same "
                        "accuracy (see the cost-to-accuracy chart)",
               caption=f"Steady-state epochs{'; some projected' if df['projected'].any() else ''}.  "
                       f"cpustudy {__version__}")
        + theme_cpustudy()
        + theme(figure_size=(3.6 * ncol + 1.5, 2.9 * math.ceil(len(workloads) / ncol) + 1.4))
    )


def fig_cost_to_target(a: Analysis, study: str) -> ggplot | None:
    """Cost (and time) to reach the target validation accuracy per configuration; configurations whose
    runs never reached it are drawn at zero and labelled so."""
    s = a.summary
    df = s[(s["study"] == study) & (s["target_runs"] > 0)].copy()
    if df.empty:
        return None
    df["reached"] = df["target_reached_runs"] > 0
    df["value"] = df["cost_to_target_usd"].where(df["reached"], 0.0).fillna(0.0)
    df["text"] = [
        (f"{c:.6f} USD, {t:.0f} s, {e:.0f} ep ({r}/{n})" if ok and pd.notna(c) else
         f"{t:.0f} s, {e:.0f} ep, not priced" if ok else f"not reached ({n} run{'s' if n != 1 else ''})")
        for ok, c, t, e, r, n in zip(df["reached"], df["cost_to_target_usd"], df["time_to_target_s"],
                                     df["epochs_to_target"], df["target_reached_runs"], df["target_runs"])]
    df = df.sort_values(["workload", "reached", "value"], ascending=[True, False, True])
    df["label"] = pd.Categorical(df["label"], categories=list(dict.fromkeys(df["label"]))[::-1], ordered=True)
    df["reached"] = df["reached"].map({True: "yes", False: "no"})
    targets = sorted({str(t) for t in df["target"].dropna()})  # as the summary names them
    workloads = list(dict.fromkeys(df["workload"]))
    top = float(df["value"].max()) or 1.0
    return (
        ggplot(df, aes(x="label", y="value", fill="reached"))
        + geom_col(width=0.7)
        + geom_text(aes(label="text"), ha="left", nudge_y=top * 0.02, size=7, color="#222222")
        + coord_flip()
        + facet_wrap("workload", ncol=1, scales="free_y")
        + scale_y_continuous(expand=(0, 0, 0.6, 0))
        + scale_fill_manual(values={"yes": "#3182bd", "no": "#bdbdbd"})
        + labs(x="", y="Cost to reach the target (USD)", fill="reached",
               title=f"Cost to reach {' / '.join(targets)}: {study_title(study)}",
               subtitle="Training time (warm-up epoch included) until the first epoch whose validation\n"
                        "reached the target, x the instance rate; (reached/runs), median of the runs that reached it",
               caption=f"Learnable data is a planted rule, a demonstration only.  cpustudy {__version__}")
        + theme_cpustudy()
        + theme(figure_size=(10, 1.6 + 0.45 * len(df) + 0.6 * len(workloads)))
    )
