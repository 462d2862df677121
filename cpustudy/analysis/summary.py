"""Comparable runs -> one summary table, a row per configuration: time, cost and both relative to a
baseline (pandas); the report asks its questions of it (Pareto front, cheapest, then and now: ``cpustudy.report``).

* **Configuration**: one summary row per (study, workload, device, vCPUs, build); repeats are aggregated
  by their median, with the interquartile range (``*_iqr_s``) and ``n_runs`` beside it.
* **Full training time**, per run: see ``cpustudy.analysis.runs``; **price and cost**: see
  ``cpustudy.analysis.costs``; **baseline** (1.0x) per study and workload: see
  ``cpustudy.analysis.baselines``; **suspect** GPU results: see ``cpustudy.analysis.suspect``.
* **Scaling**: speedup over the same build at the fewest vCPUs, parallel efficiency, and each build's
  speedup over the stock build at the same vCPUs.

:func:`analyze` runs these steps in that order and returns an :class:`Analysis`.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from cpustudy import precision
from cpustudy.analysis.frames import number, records, rows, run_records
from cpustudy import prices
from cpustudy.analysis import anchor, costs, projection
from cpustudy.analysis.baselines import Baseline, apply_baselines, parse_baseline
from cpustudy.analysis.runs import (CONFIG_KEYS, config_label, example_validates, guess_family, load_runs, outdated, run_totals,
                                    vcpus_int)
from cpustudy.analysis.studies import IMPORTED_STUDIES, STOCK_BUILDS, study
from cpustudy.analysis.holdup import Family, blocks, busy_reason, judging, machine_noise, period_of, verdict
from cpustudy.analysis.stats import DEFAULT_NOISE, Noise
from cpustudy.analysis.peakshare import peak_share
from cpustudy.analysis.suspect import gpu_caveat, suspect_column
from cpustudy.errors import UserError
from cpustudy.workloads.base import MIN_PROJECTED_STEPS
from cpustudy.store import Store

if TYPE_CHECKING:
    from cpustudy.analysis.totarget import Comparison

#: Per configuration, made of its fields: its name (``build``) and what decisions read.
CONFIG_COLUMNS = ("build", "stock", "changes_accuracy", "series")

SUMMARY_COLUMNS = [
    "study", "workload", "device", "vcpus", "build", "label", "n_runs", "timed_runs", "epochs",
    "epoch_time_s", "epoch_time_iqr_s", "total_time_s", "total_time_iqr_s", "total_basis", "billed_s",
    "samples_per_s", "samples_per_s_basis", "time_rel_baseline", "cost_usd", "cost_rel_baseline", "cost_per_epoch_usd",
    "cost_per_million_samples_usd", "price_usd_per_hour", "price_kind", "instance", "region",
    "price_note", "price_source", "price_as_of", "baseline", "baseline_kind", "baseline_note",
    "speedup_vs_fewest_vcpus", "parallel_efficiency", "build_speedup_vs_stock", "projected", "data",
    "machines", "tf_version", "gflops_per_s", "peak_gflops", "pct_of_peak", "within_run_iqr_s", "unstable",
    "gpu_utilization", "suspect", "gpu_caveat", "validation", "validation_time_s", "val_accuracy", "total_with_validation_s",
    "build_family", "batch_size", "precision_policy", "target_accuracy", "target", "target_runs", "target_reached_runs",
    "epochs_to_target", "time_to_target_s", "target_time_min", "target_time_max", "target_pi_low", "target_pi_high",
    "target_level", "cost_to_target_usd",
]


@dataclass
class Options:
    """The ``report`` command's choices: baseline, prices, deadline, study."""

    baseline: str | None = None
    prices: str | None = None
    instance_family: str | None = None
    region: str | None = None
    on_demand: bool = False
    deadline: float | None = None
    study: str | None = None
    gpu_instance: str | None = None


@dataclass
class Analysis:
    """Everything a report shows, computed from one database."""

    db: str
    options: Options
    runs: pd.DataFrame
    summary: pd.DataFrame
    software: pd.DataFrame
    prices_used: pd.DataFrame
    baselines: dict[tuple[str, str], Baseline]
    notes: list[str] = field(default_factory=list)
    price_catalogs: str = ""  # which SkyPilot price catalogs were read, or that none was
    projection: pd.DataFrame = field(default_factory=pd.DataFrame)  # projected vs full epochs (projection.py)
    noise: Noise = DEFAULT_NOISE  # what the runs tell of this machine's noise (holdup.machine_noise)
    page: Family | None = None  # how the report's page judged its comparisons (holdup.page), once judged
    #: every run the database stores, by what became of it (:func:`stored_runs`): on the page, failed, left out ...
    stored: dict[str, int] = field(default_factory=dict)
    #: per (workload as stored, target accuracy): the comparison whose figures the summary's target rows show
    #: (:func:`to_target`); the report's finding at that target names its leader, as ``compare`` would
    comparisons: dict[tuple[str, float], Comparison] = field(default_factory=dict)

    @property
    def studies(self) -> list[str]:
        return list(dict.fromkeys(self.summary["study"]))

    def workloads(self, study: str) -> list[str]:
        return list(dict.fromkeys(self.summary.loc[self.summary["study"] == study, "workload"]))


# -- summary -----------------------------------------------------------------------------------------


def _iqr(x: pd.Series[float]) -> float:
    x = x.dropna()
    if len(x) < 2:
        return 0.0 if len(x) == 1 else math.nan
    return float(x.quantile(0.75) - x.quantile(0.25))


def _join(x: pd.Series[str]) -> str:
    """A text column's distinct values (None and NaN left out) in one text."""
    return "; ".join(str(v) for v in dict.fromkeys(v for v in x if v is not None and not pd.isna(v)))


def _column(g: pd.DataFrame, name: str) -> pd.Series[float]:
    return pd.to_numeric(g[name], errors="coerce") if name in g else pd.Series(math.nan, index=g.index)


def _median(g: pd.DataFrame, name: str) -> float:
    """The median of a column's numbers; NaN where it has none."""
    return float(_column(g, name).median())


def _efficiency(g: pd.DataFrame) -> dict[str, object]:
    """Achieved training GFLOP/s (analytic FLOPs x samples/s), the measured FP32 peak at the same
    threads, the share of it, and whether any run's timed epochs varied by more than 5 % (CV)."""
    achieved = _column(g, "samples_per_s") * _column(g, "flops_per_sample") / 1e9
    # Only a peak measured on the device the run trained on, at the precision it computed in, and not
    # below what the run achieved (analysis.peakshare): a share above 100 % cannot be reported.
    get = lambda c: g[c] if c in g else pd.Series(None, index=g.index, dtype=object)  # noqa: E731
    shares = [peak_share(x, p, device=d, peak_device=pd_, policy=pol, peak_precision=pp)[0]
              for x, p, d, pd_, pol, pp in zip(achieved, _column(g, "peak_gflops"), get("device"), get("peak_device"),
                                               get("precision_policy"), get("peak_precision"))]
    pct = pd.Series(shares, index=g.index, dtype="float64")
    peak = _column(g, "peak_gflops").where(pct.notna())
    unstable = _column(g, "unstable")
    return {"gflops_per_s": float(achieved.median()), "peak_gflops": float(peak.median()),
            "pct_of_peak": float(pct.median()), "within_run_iqr_s": _median(g, "epoch_time_iqr_s"),
            "unstable": bool((unstable.fillna(0) > 0).any())}


def target_text(target: object, accuracy: float) -> str:
    """A target as reports name it: ``validation accuracy 0.9`` for ``--target-accuracy``, else its text."""
    if isinstance(target, str) and target:
        return target
    return f"validation accuracy {float(accuracy):g}"


def _billed(g: pd.DataFrame) -> dict[str, object]:
    """A full training's billed seconds (each run's ``billed_s``): median and range."""
    billed = _column(g, "billed_s")
    return {"billed_s": float(billed.median()), "billed_min_s": float(billed.min()),
            "billed_max_s": float(billed.max()), "run_bills": tuple(float(x) for x in billed.dropna())}


def _target(g: pd.DataFrame) -> dict[str, object]:
    """Time to a target accuracy: the target, how many runs reached it, and the median epochs and billed time
    (:class:`~cpustudy.analysis.billed.Billed`) of those that did (NaN when none did, or when no run had a target)."""
    target = _column(g, "target_accuracy")
    other = _column(g, "target")  # --target on another metric, as its text
    if not (target.notna().any() or other.notna().any()):
        return {"target_accuracy": math.nan, "target": None, "target_runs": 0, "target_reached_runs": 0,
                "epochs_to_target": math.nan, "time_to_target_s": math.nan, "target_time_min": math.nan,
                "target_time_max": math.nan, "target_times": ()}
    reached = g[_column(g, "target_reached").fillna(0) > 0]
    billed = pd.Series([b.seconds(float(e)) for b, e in zip(reached["billed"], _column(reached, "epochs_to_target"))
                        if b is not None and pd.notna(e)], dtype=float)
    return {
        "target_accuracy": float(target.max()) if target.notna().any() else math.nan,
        "target": target_text(other.dropna().iloc[0] if other.notna().any() else None, target.max()),
        "target_runs": int((target.notna() | other.notna()).sum()),
        "target_reached_runs": len(reached),
        "epochs_to_target": _median(reached, "epochs_to_target"), "time_to_target_s": float(billed.median()),
        "target_time_min": float(billed.min()), "target_time_max": float(billed.max()),
        "target_times": tuple(float(x) for x in billed),
    }


def aggregate(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration (``runs.CONFIG_KEYS``): medians over its runs, their spread, what they ran on."""
    runs = runs.copy()
    runs["vcpus"] = runs["vcpus"].astype("Int64")
    rows = []
    for key, g in runs.groupby(CONFIG_KEYS, dropna=False, sort=False):
        rated, basis = _rated(g)
        rows.append({
            **dict(zip(CONFIG_KEYS, key)),
            **{c: g[c].iloc[0] for c in CONFIG_COLUMNS},
            "workload_base": g["workload_base"].iloc[0] if "workload_base" in g else key[1],
            "build_family": g["build_family"].iloc[0] if "build_family" in g else guess_family(str(key[4])),
            **_times(g),
            **_billed(g),
            "busy": _join(pd.Series([busy_reason(m) or None for m in (g["machine_state"] if "machine_state" in g
                                                                      else [])], dtype="object")),
            "total_basis": _join(g["total_basis"]),
            "samples_per_s": float(rated["samples_per_s_est"].median()), "samples_per_s_basis": basis,
            "projected": bool(g["projected"].fillna(0).astype(int).any()),
            "data": _join(g["data"]),
            "machines": _join(g["cpu_model"]),
            "n_machines": int(g["machine"].nunique() if "machine" in g else g["cpu_model"].nunique()),  # fingerprints
            "gpu_utilization": _median(g, "gpu_utilization"),
            "validation": _join(g["validation"]) if "validation" in g else "",
            "validation_time_s": _median(g, "validation_time_s"), "val_accuracy": _median(g, "val_accuracy"),
            "tf_version": _join(g["tf_version"]),
            # one program for every run, else "" (unknown or mixed: never called the same as another)
            "resolved": g["resolved"].iloc[0] if "resolved" in g and g["resolved"].nunique() == 1 else "",
            "startup_s": _median(g, "startup_s"),
            "batch_size": int(_column(g, "batch_size").median()) if _column(g, "batch_size").notna().any() else None,
            "precision_policy": _join(g["precision_policy"].fillna(precision.DEFAULT)) if "precision_policy" in g
            else precision.DEFAULT,
            **_target(g),
            **_efficiency(rated),
        })
    df = pd.DataFrame(rows)
    df["vcpus"] = df["vcpus"].astype("Int64")
    # Training plus the example's validation each epoch, as the study's logged epochs were; the same as
    # training alone for a workload whose example did not validate.
    validated = pd.Series([example_validates(w) for w in df["workload_base"]], index=df.index)
    df["total_with_validation_s"] = df["total_time_s"].where(
        ~validated, df["total_time_s"] + df["validation_time_s"] * df["epochs"])
    df["suspect"] = suspect_column(df)
    df["gpu_caveat"] = [gpu_caveat(u) if d == "gpu" and not sus else ""
                        for d, u, sus in zip(df["device"], df["gpu_utilization"], df["suspect"])]
    return df


#: ``samples_per_s_basis``: what a configuration's samples/s (and the GFLOP/s made of it) rests on.
TIMED, WARMUP = "timed epochs", "warm-up epoch only (graph tracing included)"


def _rated(g: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The runs a configuration's rates (samples/s, GFLOP/s) rest on, and which they are: those that timed an epoch
    after the warm-up where there are; otherwise (every run reached its target within the warm-up: ``warmup_only``)
    the warm-up epochs, graph tracing included, said as such, never mixed with timed ones."""
    warmup = g["warmup_only"].fillna(False).astype(bool) if "warmup_only" in g else pd.Series(False, index=g.index)
    return (g[~warmup], TIMED) if not warmup.all() else (g, WARMUP)


def _times(g: pd.DataFrame) -> dict[str, object]:
    """A configuration's runs and their epoch and full-training times: medians, spreads, which runs and periods."""
    timed = g["total_time_s"].notna()
    return {
        "n_runs": len(g),
        # the runs that timed an epoch after the warm-up: what the epoch, total and billed figures rest on (a run that
        # reached its target within the warm-up counts for the target only: ``runs.run_totals``)
        "timed_runs": int(timed.sum()),
        "epochs": int(g["train_epochs"].max()),
        "epoch_time_s": float(g["epoch_time_s"].median()),
        "epoch_time_iqr_s": _iqr(g["epoch_time_s"]),
        "total_time_s": float(g["total_time_s"].median()),
        "total_time_iqr_s": _iqr(g["total_time_s"]),
        "run_times": tuple(float(x) for x in g["total_time_s"].dropna()),
        "run_ids": tuple(int(x) for x in g["id"]) if "id" in g else (),
        "timed_run_ids": tuple(int(x) for x, t in zip(g["id"], timed) if t) if "id" in g else (),
        "periods": tuple(sorted(set(g["period"]))) if "period" in g else (),
        "run_periods": tuple(p for p, t in zip(g["period"], timed) if t) if "period" in g else (),
    }


def _order(df: pd.DataFrame) -> pd.DataFrame:
    """The 2017 study first, then studies as first seen; workloads in the study's order; GPU first, then
    vCPUs descending, the stock build before others."""
    first = {s: i for i, s in enumerate(dict.fromkeys(df["study"]))}

    def key(name: str, workload: str, device: str, vcpus: float | None, platform: object, stock: object,
            build: str) -> tuple[int, int, int, str, int, int, str, int, str]:
        v = vcpus_int(vcpus) or 0
        s = study(name)
        wl = s.workload_order.index(workload) if workload in s.workload_order else 99
        return (0 if s.imported else 1, first[name], wl, workload,
                0 if device == "gpu" else 1, -v, str(platform), 0 if stock else 1, build)

    keys = [key(*r) for r in zip(df["study"], df["workload"], df["device"], df["vcpus"], df["platform"], df["stock"],
                                 df["build"])]
    order = sorted(range(len(df)), key=keys.__getitem__)
    return df.iloc[order].reset_index(drop=True)


def add_scaling(summary: pd.DataFrame) -> pd.DataFrame:
    """Speedup over the same build's fewest vCPUs (and parallel efficiency), and each build's speedup over
    the stock build at the same vCPU count."""
    summary = summary.copy()
    summary["speedup_vs_fewest_vcpus"] = math.nan
    summary["parallel_efficiency"] = math.nan
    summary["build_speedup_vs_stock"] = math.nan
    summary["build_vs_stock_reason"] = ""  # why a build's speedup over its stock run is inconclusive, or ""
    summary["build_same_as_stock"] = False  # it resolved to the stock build's own program here
    cpu = summary[(summary["device"] != "gpu") & summary["total_time_s"].notna() & summary["vcpus"].notna()]
    for _, g in cpu.groupby(["study", "workload", "recipe", "tags", "platform"], sort=False):
        first = g.sort_values("vcpus").iloc[0]
        speed = first["total_time_s"] / g["total_time_s"]
        ideal = g["vcpus"].astype(float) / float(first["vcpus"])
        summary.loc[g.index, "speedup_vs_fewest_vcpus"] = speed
        summary.loc[g.index, "parallel_efficiency"] = speed / ideal
    return judge_builds(summary)


def judge_builds(summary: pd.DataFrame) -> pd.DataFrame:
    """Each build's speedup over the stock build at its vCPUs on the same platform (instance family or CPU model: a
    build measured on two platforms is compared with each platform's own stock run), and whether that comparison
    holds up on the page being judged (``holdup.judging``): ``build_vs_stock_reason`` (empty when it holds) and
    ``build_same_as_stock``."""
    summary = summary.copy()
    cpu = summary[(summary["device"] != "gpu") & summary["total_time_s"].notna() & summary["vcpus"].notna()]
    for _, g in cpu.groupby(["study", "workload", "vcpus", "platform"], sort=False):
        stock = g[g["stock"].astype(bool)]
        if stock.empty:
            continue
        ref_row = stock.sort_values("recipe", key=lambda c: c.map(STOCK_BUILDS.index)).iloc[0]
        summary.loc[g.index, "build_speedup_vs_stock"] = ref_row["total_time_s"] / g["total_time_s"]
        for idx, row in zip(g.index, records(g)):
            if not row["stock"]:
                why = verdict(row, ref_row)
                summary.loc[idx, "build_vs_stock_reason"] = str(why)
                summary.loc[idx, "build_same_as_stock"] = why.same
    return summary


def _usable(runs: pd.DataFrame, path: str, notes: list[str]) -> pd.DataFrame:
    """The runs a report can use: those projected from too few steps, of an outdated workload, or without an epoch
    time are left out, each said in ``notes``; a ``UserError`` where none is left."""
    short = ~runs["study"].isin(IMPORTED_STUDIES) & runs["projected"].fillna(0).astype(bool) & (
        pd.to_numeric(runs["steps_per_epoch"], errors="coerce") < MIN_PROJECTED_STEPS)
    if short.any():
        notes.append(f"{int(short.sum())} run(s) projected from fewer than {MIN_PROJECTED_STEPS} steps per epoch were "
                     "left out: too few steps to project a full epoch from (measure with --steps-per-epoch "
                     f"{MIN_PROJECTED_STEPS} or more)")
        runs = runs[~short]
        if runs.empty:
            raise UserError(f"every run in {path} was projected from fewer than {MIN_PROJECTED_STEPS} steps per "
                            f"epoch: measure with --steps-per-epoch {MIN_PROJECTED_STEPS} or more")
    old = outdated(runs)
    if old.any():
        notes.append(f"{int(old.sum())} run(s) of an earlier version of their workload were left out (its model or "
                     "data changed since: measure them again)")
        runs = runs[~old]
        if runs.empty:
            raise UserError(f"every run in {path} measured an earlier version of its workload: measure again")
    reached = pd.to_numeric(runs["target_reached"], errors="coerce").fillna(0) > 0 if "target_reached" in runs \
        else pd.Series(False, index=runs.index)
    bad = runs["total_time_s"].isna() & ~reached  # a run that reached its target counts for the target
    if bad.any():
        notes.append(f"{int(bad.sum())} ok run(s) without an epoch time were left out")
        runs = runs[~bad]
        if runs.empty:
            raise UserError(f"no run in {path} has an epoch time: nothing to report")
    return runs


def _cost_notes(summary: pd.DataFrame) -> list[str]:
    """Why configurations have no full-training cost: no rate on the report's basis (``price_note`` says why), or a
    rate but no full-training time (every run of it reached its target in the warm-up epoch, so none timed an epoch
    after it: its cost to the target is given), each named."""
    rate = pd.to_numeric(summary["price_usd_per_hour"], errors="coerce").notna()
    untimed = summary["total_time_s"].isna()
    names = lambda m: ", ".join(f"{r.workload} {r.label}" for r in rows(summary[m], index=False))  # noqa: E731
    notes = []
    if (~rate).any():
        notes.append(f"{int((~rate).sum())} configuration(s) could not be priced (see price_note in summary.csv): "
                     f"{names(~rate)}")
    if (rate & untimed).any():
        notes.append(f"{int((rate & untimed).sum())} configuration(s) have a price but no full-training time, so no "
                     "full-training cost: none of their runs timed an epoch after the warm-up (each reached its target "
                     f"within it; its cost to the target is given): {names(rate & untimed)}")
    return notes


def _rate_notes(summary: pd.DataFrame) -> list[str]:
    """The configurations whose samples/s is their warm-up epoch's (no run timed an epoch after it: :func:`_rated`),
    each named."""
    warm = summary["samples_per_s_basis"] == WARMUP
    if not warm.any():
        return []
    names = ", ".join(f"{r.workload} {r.label}" for r in rows(summary[warm], index=False))
    return [f"{int(warm.sum())} configuration(s) have the samples/s of the warm-up epoch alone, graph tracing included "
            f"(none of their runs timed an epoch after it; samples_per_s_basis in summary.csv): {names}"]


def analyze(store: Store, opts: Options) -> Analysis:
    """Stored runs -> the summary, baselines, prices and software of one report; bad options are a
    ``UserError`` before anything is computed."""
    if opts.deadline is not None and not (opts.deadline > 0 and math.isfinite(opts.deadline)):
        raise UserError(f"--deadline {opts.deadline:g}: give a positive number of seconds")
    catalog = prices.Catalog.load(opts.prices)
    if opts.instance_family:
        catalog.check_family(opts.instance_family, opts.region)
    if opts.gpu_instance:
        catalog.instance(opts.gpu_instance, opts.region)
    parse_baseline(opts.baseline)
    notes: list[str] = []
    runs = _usable(run_totals(load_runs(store, opts.study)), str(store.path), notes)
    check = projection.projection_check(runs)
    both = projection.superseded(runs)
    if both.any():
        notes.append(f"{int(both.sum())} projected run(s) of configurations also measured in full epochs were left "
                     "out of the figures (the full epochs are the measurement): they are compared with them under "
                     "'Projections checked against full epochs'")
        runs = runs[~both]
    runs = runs.assign(period=period_of(runs))  # which measuring period each run came from (holdup.session_relation)
    summary = aggregate(runs)
    noise = machine_noise(runs, anchor.prior(run_records(runs)))
    gpus = summary[summary["device"] == "gpu"]
    gpu_builds = gpus.groupby("study")["build"].nunique().to_dict()
    gpu_vcpus = gpus.groupby("study")["vcpus"].nunique().to_dict()
    summary["label"] = [
        config_label(str(r.study), str(r.device), number(r.vcpus), str(r.build), gpu_builds.get(r.study, 1),
                     gpu_vcpus.get(r.study, 1))
        for r in rows(summary)
    ]
    summary = _order(summary)
    priced = costs.price_configurations(summary, runs, catalog, family=opts.instance_family, region=opts.region,
                                        gpu_instance=opts.gpu_instance, spot=not opts.on_demand)
    summary = costs.add_costs(summary, priced)
    summary, compared = to_target(summary, store, catalog, spot=not opts.on_demand, family=opts.instance_family)
    summary, baselines = apply_baselines(summary, opts.baseline)
    with judging(Family(noise, blocks=blocks(summary))):
        summary = add_scaling(summary)
    notes.extend(_cost_notes(summary))
    notes.extend(_rate_notes(summary))
    if (summary["n_machines"] > 1).any():
        notes.append("some configurations aggregate runs from more than one machine (see the machines column)")
    for note in (projection.stall_note(runs), projection.contention_note(runs)):
        if note:
            notes.append(note)
    software = software_table(runs)
    return Analysis(str(store.path), opts, runs, summary, software, costs.prices_used(summary), baselines, notes,
                    price_catalogs=catalog.sky_sentence() or "shipped price catalog only",
                    projection=check, noise=noise, stored=stored_runs(store, runs, opts.study), comparisons=compared)


#: What became of a stored run that a report does not show, in the order the page says it (:func:`stored_runs`).
STORED = ("page", "failed", "interrupted", "running", "other study", "internal", "oversubscribed", "warm-up only",
          "left out")


def stored_runs(store: Store, shown: pd.DataFrame, study_name: str | None = None) -> dict[str, int]:
    """Every run ``store`` holds, each counted once by what became of it (:data:`STORED`): on the page (``shown``'s
    ids), of another study than ``--study``, failed, interrupted (failed with an error that says so), still marked
    running (measuring, or stopped before it could say), of the tuner or overhead benchmark (never a configuration to
    compare), oversubscribed, warm-up only (no timed epoch and no target reached in it), or left out of the
    figures for a reason the page's notes give (projected from too few steps, an outdated workload, superseded by
    full epochs, no epoch time). Zero counts are left out."""
    from cpustudy.analysis.studies import INTERNAL_STUDIES

    on_page = {int(i) for i in shown["id"]} if "id" in shown else set()
    out = dict.fromkeys(STORED, 0)
    for r in store.runs():
        status, error = r["status"], str(r.get("error") or "")
        kind = ("page" if int(r["id"]) in on_page
                else "other study" if study_name is not None and r.get("study") != study_name
                else "interrupted" if status == "failed" and error.startswith("interrupted")
                else "failed" if status == "failed"
                else "running" if status == "running"
                else "internal" if study_name is None and r.get("study") in INTERNAL_STUDIES
                else "oversubscribed" if r.get("oversubscribed")
                else "warm-up only" if r.get("timed_epochs") == 0 and r.get("study") not in IMPORTED_STUDIES
                else "left out")
        out[kind] += 1
    return {k: n for k, n in out.items() if n}


#: How a summary row's time and cost to a target read where they are ``compare``'s (``target_basis`` begins so).
FROM_COMPARE = "one new training, as compare gives it"


def to_target(summary: pd.DataFrame, store: Store, catalog: prices.Catalog, *, spot: bool,
              family: str | None) -> tuple[pd.DataFrame, dict[tuple[str, float], Comparison]]:
    """Time and cost to a validation-accuracy target as ``compare`` and ``recommend --target-accuracy`` give
    them (:func:`cpustudy.analysis.totarget.stored`: one new training's billed time, median and prediction
    interval over the seeds trained to it and each configuration's speed runs), for the configurations
    whose runs it drew on (one timed only in speed runs among them, its target then this one); the runs' own medians
    elsewhere (``target_basis`` says which); and those comparisons, by workload and target."""
    from cpustudy.analysis import totarget

    summary = summary.copy()
    summary["target_basis"] = ["median of the runs that reached it" if n else "" for n in summary["target_reached_runs"]]
    summary["target_level"] = math.nan
    summary["target_pi_low"], summary["target_pi_high"] = math.nan, math.nan  # compare's prediction interval
    wanted = summary[summary["target_accuracy"].notna() & (summary["target_reached_runs"] > 0)]
    stored_as = wanted["workload_base"] if "workload_base" in wanted else wanted["workload"]  # not the display name
    pairs = dict.fromkeys(zip(stored_as, wanted["target_accuracy"]))
    compared: dict[tuple[str, float], Comparison] = {}
    for workload, target in pairs:
        with contextlib.suppress(UserError):
            # the machine's noise as compare reads it (every stored run): the same figures as compare's answer
            comparison = totarget.stored(store, str(workload), float(target), catalog=catalog, spot=spot, family=family)
            if comparison is None:
                continue
            compared[(str(workload), float(target))] = comparison
            for r in comparison.results:
                ids = set(r.run_ids)
                # a configuration timed only in speed runs (no target of its own) is a candidate of this target too;
                # one whose runs aimed at another target keeps that target's figures
                hit = [i for i, own, aim in zip(summary.index, summary["run_ids"], summary["target_accuracy"])
                       if ids & set(own) and (pd.isna(aim) or math.isclose(float(aim), float(target)))]
                for i in hit:
                    summary.loc[i, "target_accuracy"] = float(target)
                    summary.loc[i, "target"] = target_text(None, float(target))
                    summary.loc[i, ["time_to_target_s", "target_pi_low", "target_pi_high"]] = [
                        number(r.time_to_target_s), number(r.time_low_s), number(r.time_high_s)]
                    if r.cost_usd is not None:
                        summary.loc[i, "cost_to_target_usd"] = r.cost_usd
                    summary.loc[i, "target_level"] = r.level if r.time_low_s is not None else math.nan
                    summary.loc[i, "target_basis"] = (
                        f"{FROM_COMPARE}: {len(comparison.seeds)} seed(s), {r.speed_runs} speed run(s)")
    return summary, compared


def software_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Which machine and software each result came from."""
    cols = ["study", "machine", "cpu_model", "logical_cpus", "device", "build", "tf_version", "keras_version",
            "keras_backend", "python_version", "onednn", "xla", "tf_missing_isa"]
    df = runs.copy()
    for c in cols:
        if c not in df:
            df[c] = None
    df = df[cols + ["workload", "id"]].astype(object).where(df[cols + ["workload", "id"]].notna(), "")
    out = df.groupby(cols, sort=False, dropna=False).agg(runs=("id", "size"), workloads=("workload", "nunique"))
    return out.reset_index()
