"""Stored results -> one summary table: time, cost and both relative to a baseline (pandas).

Rules, applied to runs with status ``ok`` only:

* **Configuration**: one summary row per (study, workload, device, vCPUs, build); repeats are aggregated
  by their median, with the interquartile range (``*_iqr_s``) and ``n_runs`` beside it.
* **Full training time** (``total_time_s``): for the imported 2017 study, the sum of the logged epochs'
  ``elapsed``, as the study computed it; for cpustudy's own runs, the full-epoch time (``epoch_time_s``:
  median of the timed epochs, or projected from a step cap) x the workload's default epochs
  (``cpustudy.workloads.WORKLOADS[name].epochs``). ``total_basis`` says which.
* **Price**: the 2017 study's runs use the 2017 rates (``gcp-2017`` rows: preemptible n1-highcpu CPUs,
  on-demand n1-standard-1 + K80). Other CPU results use ``--instance-family`` (default
  ``gcp:n2-highcpu``): the instance with that many vCPUs, or the next larger (``price_note`` says so).
  Other GPU results use ``--gpu-instance``, or the single-GPU instance of the same provider whose
  accelerator appears in the run's software report. One basis: spot rates by default (the study's
  premise), on-demand with ``--on-demand``; a configuration whose instance has no rate on that basis is
  not priced (``price_note`` says why), never priced on the other basis. The exception is the 2017
  study's own pricing: its K80 is on-demand as that study priced it (``price_kind`` and ``price_note``
  say so).
* **Cost** = time x price per second: per epoch, per full training (``cost_usd``), per million samples.
* **Baseline** (1.0x), per study and workload: ``--baseline gpu`` or the default = that study's GPU run of
  the workload when there is one; otherwise, and clearly labelled as a fallback, the stock build (``tf``
  or ``pip``) at the fewest vCPUs. ``--baseline BUILD@VCPUS`` picks a CPU configuration; where it was
  not measured for a workload, the default is used there, labelled as a fallback.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cpustudy import prices
from cpustudy.errors import UserError
from cpustudy.store import Store

KEYS = ["study", "workload", "device", "vcpus", "build"]
INTERNAL_STUDIES = ("tune", "bench-overhead")
STOCK_BUILDS = ("tf", "pip")
#: Studies whose full-training time is the sum of their logged epochs (imported logs).
SUMMED_STUDIES = {"woolf2017"}
#: How imported studies are priced: their own era's rates.
STUDY_PRICING = {
    "woolf2017": {"cpu": "gcp-2017:n1-highcpu", "gpu": "gcp-2017:n1-standard-1+1xK80"},
}
STUDY_TITLES = {"woolf2017": "Woolf (2017)", "cpustudy": "cpustudy"}
#: Display names of builds in sentences.
BUILD_NAMES = {"pip": "pip", "compiled": "compiled", "gpu": "GPU"}

SUMMARY_COLUMNS = [
    "study", "workload", "device", "vcpus", "build", "label", "n_runs", "epochs",
    "epoch_time_s", "epoch_time_iqr_s", "total_time_s", "total_time_iqr_s", "total_basis",
    "samples_per_s", "time_rel_baseline", "cost_usd", "cost_rel_baseline", "cost_per_epoch_usd",
    "cost_per_million_samples_usd", "price_usd_per_hour", "price_kind", "instance", "region",
    "price_note", "price_source", "price_as_of", "baseline", "baseline_kind", "baseline_note",
    "speedup_vs_fewest_vcpus", "parallel_efficiency", "build_speedup_vs_stock", "projected", "data",
    "machines", "tf_version", "gflops_per_s", "peak_gflops", "pct_of_peak", "within_run_iqr_s", "unstable",
    "gpu_utilization", "suspect", "validation", "validation_time_s", "val_accuracy", "total_with_validation_s",
]


@dataclass
class Options:
    baseline: str | None = None
    prices: str | None = None
    instance_family: str | None = None
    region: str | None = None
    on_demand: bool = False
    deadline: float | None = None
    study: str | None = None
    gpu_instance: str | None = None


@dataclass
class Baseline:
    study: str
    workload: str
    label: str  # the configuration's chart label ("gpu", "cpu1 tf")
    name: str  # in words ("the GPU", "1 vCPU tf")
    kind: str  # "gpu" | "requested" | "fallback"
    note: str  # why this one (for fallbacks: what was missing)
    total_time_s: float
    cost_usd: float | None
    suspect: str = ""  # why the baseline cannot be trusted (no finding rests on it), or ""

    @property
    def is_gpu(self) -> bool:
        return self.kind == "gpu"


@dataclass
class Analysis:
    db: str
    options: Options
    runs: pd.DataFrame
    summary: pd.DataFrame
    software: pd.DataFrame
    prices_used: pd.DataFrame
    baselines: dict[tuple[str, str], Baseline]
    notes: list[str] = field(default_factory=list)

    @property
    def studies(self) -> list[str]:
        return list(dict.fromkeys(self.summary["study"]))

    def workloads(self, study: str) -> list[str]:
        return list(dict.fromkeys(self.summary.loc[self.summary["study"] == study, "workload"]))


# -- loading -----------------------------------------------------------------------------------------


def build_with_setting(run: dict[str, Any]) -> str:
    """The build name, plus what was set differently from the defaults (so runs of different
    settings are never pooled into one median): ``tf+tfdata``, ``tf+b64``, ``tf+t1/2``, ``tf+tuned``."""
    import json

    build = str(run.get("build"))
    if run.get("study") == "woolf2017":
        return build
    try:
        settings = json.loads(run.get("settings") or "{}")
    except ValueError:
        settings = {}
    parts = []
    if settings.get("tuning_id"):
        parts.append("tuned")
    else:
        if run.get("input_pipeline") not in (None, "numpy"):
            parts.append(str(run["input_pipeline"]))
        workload = _workload_info(str(run.get("workload")))
        if workload is not None and run.get("batch_size") not in (None, workload.batch_size):
            parts.append(f"b{run['batch_size']}")
        vcpus = run.get("vcpus")
        if (run.get("intra_threads"), run.get("inter_threads")) not in ((None, None), (vcpus, vcpus)):
            parts.append(f"t{run.get('intra_threads')}/{run.get('inter_threads')}")
        # A build's own env (KERAS_BACKEND=jax for jax-here) is not a setting: subtract what the run
        # stored as the build's env; runs stored before that use the recipe here, and when this
        # checkout lacks the recipe (measured elsewhere) nothing can be told apart: all of it is the build's.
        env = settings.get("env") or {}
        build_env = settings.get("build_env")
        if not isinstance(build_env, dict):
            build_env = _recipe_env(build)
        if build_env is None:
            build_env = env
        extra_env = {k: v for k, v in env.items() if k not in build_env or str(build_env[k]) != str(v)}
        parts += [f"{k}={v}" for k, v in sorted(extra_env.items())]
    return "+".join([build, *parts])


def _recipe_env(build: str) -> dict[str, str] | None:
    """The env of this checkout's recipe named ``build``; None when there is no such recipe here."""
    from cpustudy.environment import builds

    try:
        return dict(builds.load(build).env)
    except UserError:
        return None


def load_runs(store: Store, study: str | None = None) -> pd.DataFrame:
    """Runs with status ok, one row each, with their epochs' sum and the machine they ran on."""
    rows = store.runs(status="ok")
    if not rows:
        total = store.count("runs")
        why = f"its {total} run(s) did not finish ok" if total else "it is empty"
        raise UserError(
            f"no finished runs in {store.path} ({why}): measure with `cpustudy run`, import the 2017 study "
            "with `cpustudy import woolf2017 LOGS_DIR`, or pass --db"
        )
    df = pd.DataFrame(rows)
    if study is not None:
        studies = sorted(df["study"].unique())
        df = df[df["study"] == study]
        if df.empty:
            raise UserError(f"no finished runs of study {study!r} in {store.path}: it has {', '.join(studies)}")
    else:
        # The tuner's trials and the overhead benchmark's runs are not configurations to compare.
        df = df[~df["study"].isin(INTERNAL_STUDIES)]
        if df.empty:
            raise UserError(f"{store.path} holds only tuner or benchmark runs: pass --study tune to report them")
    # Not comparable as a configuration: more vCPUs than the machine had, or no timed epoch (only the
    # warm-up, tracing included). Left out of every figure.
    keep = (df["oversubscribed"].fillna(0).astype(int) == 0) & ~(
        (df["study"] != "woolf2017") & (df["timed_epochs"].fillna(1).astype(int) == 0))
    df = df[keep]
    if df.empty:
        raise UserError(f"{store.path} has no comparable runs: all are oversubscribed or warm-up only "
                        "(measure with --epochs 2 or more, without --oversubscribe)")
    df["build"] = [build_with_setting(r) for r in df.to_dict("records")]
    df["workload_base"] = df["workload"]
    df["workload"] = [workload_variant(r) for r in df.to_dict("records")]
    epochs = pd.DataFrame(store.epochs())
    if epochs.empty:
        sums = pd.DataFrame(columns=["run_id", "epochs_sum", "epochs_logged"])
    else:
        sums = epochs.groupby("run_id").agg(epochs_sum=("elapsed_s", "sum"), epochs_logged=("epoch", "size"))
        sums = sums.reset_index()
    df = df.merge(sums, how="left", left_on="id", right_on="run_id")
    df["epochs_logged"] = df["epochs_logged"].fillna(0).astype(int)
    return df.reset_index(drop=True)


def workload_variant(run: dict[str, Any]) -> str:
    """The workload's name, plus where its augmentation ran when that differs from the study's way
    (on the host): ``cifar10_cnn (augment: model)``. Augmentation inside the model is different work
    on a GPU (25-60x slower there), so such runs get their own baseline and are never compared with
    host-augmented ones; runs stored before ``host`` existed augmented in the model."""
    name = str(run.get("workload"))
    w = _workload_info(name)
    default = (w.options.get("augment") if w is not None else None)
    where = run.get("augment")
    if run.get("study") in SUMMED_STUDIES or default is None or where is None or pd.isna(where) or where == default:
        return name
    return f"{name} (augment: {where})"


def _example_validates(name: str) -> bool:
    """Whether the workload's example validated every epoch (unknown workloads: assume it did, so a
    missing validation time shows as "training only" rather than as like for like)."""
    w = _workload_info(name)
    return w is None or w.validation_samples > 0


def _workload_info(name: str) -> Any:
    from cpustudy.workloads import ALL as WORKLOADS

    return WORKLOADS.get(name)


def run_totals(df: pd.DataFrame) -> pd.DataFrame:
    """Per run: full-training epochs, total time and its basis, samples per second."""
    df = df.copy()
    totals, train_epochs, bases, sps = [], [], [], []
    for r in df.itertuples(index=False):
        w = _workload_info(getattr(r, "workload_base", r.workload))
        epoch_time = r.epoch_time_s
        if r.study in SUMMED_STUDIES and r.epochs_logged:
            n = int(r.epochs_logged)
            totals.append(float(r.epochs_sum))
            bases.append(f"sum of {n} logged epochs")
        else:
            n = int(w.epochs) if w is not None else int(r.epochs or r.epochs_logged or 1)
            totals.append(float(epoch_time) * n if epoch_time is not None and not pd.isna(epoch_time) else math.nan)
            kind = "projected epoch time" if r.projected else "epoch time"
            bases.append(f"{kind} x {n} epochs" + ("" if w is not None else " (as run)"))
        train_epochs.append(n)
        s = r.samples_per_s
        if (s is None or pd.isna(s)) and w is not None and epoch_time and not pd.isna(epoch_time):
            s = w.samples_per_epoch / float(epoch_time)
        sps.append(s)
    df["train_epochs"] = train_epochs
    df["total_time_s"] = totals
    df["total_basis"] = bases
    df["samples_per_s_est"] = pd.to_numeric(pd.Series(sps, index=df.index, dtype="float64"))
    return df


# -- labels ------------------------------------------------------------------------------------------


def _vcpus_int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def config_label(study: str, device: str, vcpus: Any, build: str, gpu_builds: int = 1,
                 gpu_vcpus: int = 1) -> str:
    """The chart label: the study's own (``gpu``, ``cpu64pip``, ``cpu64cmp``) for its data, else
    ``gpu`` / ``cpu2 tf`` (``gpu tf-x`` when a study has GPU runs of several builds, ``gpu (8 vCPUs)``
    when its GPU runs had different numbers of host vCPUs)."""
    v = _vcpus_int(vcpus)
    if device == "gpu":
        label = "gpu" if gpu_builds <= 1 or study in SUMMED_STUDIES else f"gpu {build}"
        return label if gpu_vcpus <= 1 or v is None else f"{label} ({v} vCPU{'s' if v != 1 else ''})"
    if study == "woolf2017":
        short = {"pip": "pip", "compiled": "cmp"}.get(build, build)
        return f"cpu{v}{short}"
    return f"cpu{v} {build}"


def config_name(device: str, vcpus: Any, build: str) -> str:
    """In words: ``16 vCPUs compiled``, ``the GPU``."""
    if device == "gpu":
        return "the GPU"
    v = _vcpus_int(vcpus)
    return f"{v} vCPU{'s' if v != 1 else ''} {BUILD_NAMES.get(build, build)}"


# -- pricing -----------------------------------------------------------------------------------------


def _price_groups(summary: pd.DataFrame, runs: pd.DataFrame, catalog: prices.Catalog,
                  opts: Options) -> pd.DataFrame:
    family = opts.instance_family or prices.DEFAULT_FAMILY
    out: list[dict[str, Any]] = []
    texts: dict[tuple, str] = {}
    for r in runs.itertuples(index=False):
        key = (r.study, r.workload, r.device, _vcpus_int(r.vcpus), r.build)
        texts[key] = texts.get(key, "") + " ".join(str(x or "") for x in (r.software, r.settings, r.cpu_model))
    for s in summary.itertuples(index=False):
        sp = STUDY_PRICING.get(s.study)
        vcpus = _vcpus_int(s.vcpus)
        note = ""
        price: prices.Price | None
        if s.device == "gpu":
            if sp:
                price = catalog.instance(sp["gpu"])
            elif opts.gpu_instance:
                price = catalog.instance(opts.gpu_instance, opts.region)
            else:
                text = texts.get((s.study, s.workload, s.device, vcpus, s.build), "")
                acc = prices.detect_accelerator(text)
                provider = prices.parse_family(family)[0]
                price = catalog.gpu_instance(provider, acc, opts.region) if acc else None
                if price is None:
                    what = f"a {acc}" if acc else "which GPU"
                    raise UserError(
                        f"cannot price the GPU runs of {s.study}: the catalog has no single-GPU {provider} "
                        f"instance for {what}" if acc else
                        f"cannot tell which GPU the {s.study} GPU runs used: pass --gpu-instance "
                        "PROVIDER:INSTANCE_TYPE (e.g. gcp:g2-standard-4 for one L4)"
                    )
                note = f"GPU {acc} (from the run's software report) priced as {price.instance_type}"
        else:
            if vcpus is None:
                out.append({"instance": None, "price_note": "vCPUs unknown: not priced"})
                continue
            price, note = catalog.cpu_instance(sp["cpu"] if sp else family, vcpus, None if sp else opts.region)
        if price is None:
            out.append({"instance": None, "price_note": note + ": not priced"})
            continue
        q = prices.quote(price, spot=not opts.on_demand,
                         own_pricing_of=STUDY_TITLES.get(s.study, s.study) if sp else None)
        if q is None:  # one basis per report: no rate on it means unpriced, not the other basis's rate
            why = prices.unpriced_note(price, spot=not opts.on_demand)
            out.append({"instance": None, "price_note": "; ".join(n for n in (note, why) if n)})
            continue
        out.append({
            "instance": price.name,
            "region": price.region,
            "price_usd_per_hour": q.usd_per_hour,
            "price_kind": q.kind,
            "price_note": "; ".join(n for n in (note, q.note) if n),
            "price_source": price.source,
            "price_as_of": price.as_of,
            "price_origin": price.origin,
        })
    return pd.DataFrame(out, index=summary.index)


# -- summary -----------------------------------------------------------------------------------------


def _iqr(x: pd.Series) -> float:
    x = x.dropna()
    if len(x) < 2:
        return 0.0 if len(x) == 1 else math.nan
    return float(x.quantile(0.75) - x.quantile(0.25))


def _join(x: pd.Series) -> str:
    return "; ".join(str(v) for v in dict.fromkeys(v for v in x if v is not None and not pd.isna(v)))


def _column(g: pd.DataFrame, name: str) -> pd.Series:
    return pd.to_numeric(g[name], errors="coerce") if name in g else pd.Series(math.nan, index=g.index)


def _efficiency(g: pd.DataFrame) -> dict[str, Any]:
    """Achieved training GFLOP/s (analytic FLOPs x samples/s), the measured FP32 peak at the same
    threads, the share of it, and whether any run's timed epochs varied by more than 5 % (CV)."""
    achieved = _column(g, "samples_per_s") * _column(g, "flops_per_sample") / 1e9
    # Only a peak measured on the device the run trained on (runs from before peaks were told apart by
    # device measured theirs on the CPUs: right for CPU runs, wrong for GPU runs).
    peak_device = g["peak_device"] if "peak_device" in g else pd.Series(None, index=g.index, dtype=object)
    same = peak_device.fillna("cpu") == g["device"].fillna("cpu")
    peak = _column(g, "peak_gflops").where(same)
    pct = 100 * achieved / peak
    unstable = _column(g, "unstable")
    return {
        "gflops_per_s": float(achieved.median()) if achieved.notna().any() else math.nan,
        "peak_gflops": float(peak.median()) if peak.notna().any() else math.nan,
        "pct_of_peak": float(pct.median()) if pct.notna().any() else math.nan,
        "within_run_iqr_s": float(_column(g, "epoch_time_iqr_s").median())
        if _column(g, "epoch_time_iqr_s").notna().any() else math.nan,
        "unstable": bool((unstable.fillna(0) > 0).any()),
    }


def aggregate(runs: pd.DataFrame) -> pd.DataFrame:
    runs = runs.copy()
    runs["vcpus"] = runs["vcpus"].astype("Int64")
    rows = []
    for key, g in runs.groupby(KEYS, dropna=False, sort=False):
        rows.append({
            **dict(zip(KEYS, key)),
            "workload_base": g["workload_base"].iloc[0] if "workload_base" in g else key[1],
            "n_runs": len(g),
            "epochs": int(g["train_epochs"].max()),
            "epoch_time_s": float(g["epoch_time_s"].median()),
            "epoch_time_iqr_s": _iqr(g["epoch_time_s"]),
            "total_time_s": float(g["total_time_s"].median()),
            "total_time_iqr_s": _iqr(g["total_time_s"]),
            "total_basis": _join(g["total_basis"]),
            "samples_per_s": float(g["samples_per_s_est"].median()) if g["samples_per_s_est"].notna().any() else math.nan,
            "projected": bool(g["projected"].fillna(0).astype(int).any()),
            "data": _join(g["data"]),
            "machines": _join(g["cpu_model"]),
            "gpu_utilization": float(_column(g, "gpu_utilization").median())
            if _column(g, "gpu_utilization").notna().any() else math.nan,
            "validation": _join(g["validation"]) if "validation" in g else "",
            "validation_time_s": float(_column(g, "validation_time_s").median())
            if _column(g, "validation_time_s").notna().any() else math.nan,
            "val_accuracy": float(_column(g, "val_accuracy").median())
            if _column(g, "val_accuracy").notna().any() else math.nan,
            "tf_version": _join(g["tf_version"]),
            **_efficiency(g),
        })
    df = pd.DataFrame(rows)
    df["vcpus"] = df["vcpus"].astype("Int64")
    # Training plus the example's validation each epoch, as the study's logged epochs were; the same as
    # training alone for a workload whose example did not validate.
    validated = pd.Series([_example_validates(w) for w in df["workload_base"]], index=df.index)
    df["total_with_validation_s"] = df["total_time_s"].where(
        ~validated, df["total_time_s"] + df["validation_time_s"] * df["epochs"])
    df["suspect"] = suspect_column(df)
    return df


def suspect_column(summary: pd.DataFrame) -> list[str]:
    """Per configuration: why a GPU configuration cannot be trusted (``cpustudy.suspect``), or ""."""
    from cpustudy import suspect

    out = []
    for r in summary.itertuples(index=False):
        if r.device != "gpu" or r.study in SUMMED_STUDIES:
            out.append("")
            continue
        cpu = summary[(summary["study"] == r.study) & (summary["workload"] == r.workload)
                      & (summary["device"] != "gpu") & summary["vcpus"].notna()]
        rates = (cpu["samples_per_s"] / cpu["vcpus"].astype(float)).tolist()
        faster = int((cpu["total_time_s"] < r.total_time_s).sum())
        out.append("; ".join(suspect.gpu_reasons(r.samples_per_s, r.gpu_utilization, rates, faster)))
    return out


def _order(df: pd.DataFrame) -> pd.DataFrame:
    """The 2017 study first, then studies as first seen; workloads in the study's order; GPU first, then
    vCPUs descending, the stock build before others."""
    from cpustudy.store.importers.woolf2017 import WORKLOADS as STUDY_WORKLOADS

    wl_order = {w: i for i, w in enumerate(STUDY_WORKLOADS)}
    first = {s: i for i, s in enumerate(dict.fromkeys(df["study"]))}

    def key(r: Any) -> tuple:
        v = 0 if pd.isna(r.vcpus) else int(r.vcpus)
        return (0 if r.study == "woolf2017" else 1, first[r.study], wl_order.get(r.workload, 99), r.workload,
                0 if r.device == "gpu" else 1, -v, 0 if r.build in STOCK_BUILDS else 1, r.build)

    keys = [key(r) for r in df.itertuples(index=False)]
    order = sorted(range(len(df)), key=keys.__getitem__)
    return df.iloc[order].reset_index(drop=True)


def parse_baseline(text: str | None) -> tuple[str, str | None, int | None]:
    if text is None or text.strip() in ("", "auto"):
        return ("auto", None, None)
    t = text.strip()
    if t.lower() == "gpu":
        return ("gpu", None, None)
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._+-]*)@(\d+)$", t)
    if not m or int(m.group(2)) <= 0:
        raise UserError(f"--baseline {text!r}: write gpu, or BUILD@VCPUS such as tf@1 or pip@8")
    return ("config", m.group(1), int(m.group(2)))


def _fallback(g: pd.DataFrame) -> tuple[Any, str]:
    cpu = g[(g["device"] != "gpu") & g["total_time_s"].notna()]
    if cpu.empty:
        return None, ""
    stock = cpu[cpu["build"].isin(STOCK_BUILDS)]
    if not stock.empty:
        row = stock.sort_values(["vcpus", "build"]).index[0]
        return row, "the stock build at the fewest vCPUs"
    row = cpu.sort_values(["vcpus", "build"]).index[0]
    return row, "no stock build (tf or pip) measured: the build at the fewest vCPUs"


def choose_baselines(summary: pd.DataFrame, spec_text: str | None) -> dict[tuple[str, str], tuple[Any, str, str]]:
    """(study, workload) -> (summary index, kind, note)."""
    kind, build, vcpus = parse_baseline(spec_text)
    chosen: dict[tuple[str, str], tuple[Any, str, str]] = {}
    matched_any = False
    for (study, workload), g in summary.groupby(["study", "workload"], sort=False):
        g = g[g["total_time_s"].notna()]
        # A GPU run that cannot be right is the baseline only when no other GPU run is there.
        gpu = g[g["device"] == "gpu"].assign(_bad=lambda d: d["suspect"].fillna("") != "")
        gpu = gpu.sort_values(["_bad", "vcpus", "build"])
        if kind == "config":
            hit = g[(g["device"] != "gpu") & (g["build"] == build) & (g["vcpus"] == vcpus)]
            if not hit.empty:
                matched_any = True
                chosen[(study, workload)] = (hit.index[0], "requested", f"{build}@{vcpus}, as requested")
                continue
        elif not gpu.empty:
            matched_any = True
            chosen[(study, workload)] = (gpu.index[0], "gpu", "the GPU run of this workload")
            continue
        row, why = _fallback(g)
        if row is None:
            if not gpu.empty:  # --baseline BUILD@V missing, only GPU rows: use the GPU
                chosen[(study, workload)] = (gpu.index[0], "fallback", f"{build}@{vcpus} not measured: the GPU")
            continue
        missing = {"auto": "no GPU run", "gpu": "no GPU run", "config": f"{build}@{vcpus} not measured"}[kind]
        chosen[(study, workload)] = (row, "fallback", f"{missing} of {workload}: {why}")
    if kind != "auto" and not matched_any:
        if kind == "gpu":
            raise UserError(
                "--baseline gpu: there are no GPU runs in the results (measure with --device gpu, or leave "
                "--baseline out for the stock build at the fewest vCPUs)"
            )
        configs = sorted({f"{r.build}@{r.vcpus}" for r in summary.itertuples() if r.device != "gpu"})
        raise UserError(
            f"--baseline {spec_text}: no such configuration in the results: choose gpu or one of "
            f"{', '.join(configs[:12])}{' ...' if len(configs) > 12 else ''}"
        )
    return chosen


def apply_baselines(summary: pd.DataFrame, spec_text: str | None) -> tuple[pd.DataFrame, dict[tuple[str, str], Baseline]]:
    summary = summary.copy()
    baselines: dict[tuple[str, str], Baseline] = {}
    for col in ("time_rel_baseline", "cost_rel_baseline"):
        summary[col] = math.nan
    summary["baseline"] = None
    summary["baseline_kind"] = None
    summary["baseline_note"] = None
    for (study, workload), (idx, kind, note) in choose_baselines(summary, spec_text).items():
        b = summary.loc[idx]
        base = Baseline(
            study=study, workload=workload, label=b["label"],
            name=config_name(b["device"], b["vcpus"], b["build"]),
            kind=kind if not (kind == "fallback" and b["device"] == "gpu") else "fallback",
            note=note, total_time_s=float(b["total_time_s"]),
            cost_usd=None if pd.isna(b["cost_usd"]) else float(b["cost_usd"]),
            suspect=str(b.get("suspect") or ""),
        )
        baselines[(study, workload)] = base
        mask = (summary["study"] == study) & (summary["workload"] == workload)
        summary.loc[mask, "time_rel_baseline"] = summary.loc[mask, "total_time_s"] / base.total_time_s
        if base.cost_usd:
            summary.loc[mask, "cost_rel_baseline"] = summary.loc[mask, "cost_usd"] / base.cost_usd
        summary.loc[mask, "baseline"] = base.label
        summary.loc[mask, "baseline_kind"] = kind
        summary.loc[mask, "baseline_note"] = note
    return summary, baselines


def add_scaling(summary: pd.DataFrame) -> pd.DataFrame:
    """Speedup over the same build's fewest vCPUs (and parallel efficiency), and each build's speedup over
    the stock build at the same vCPU count."""
    summary = summary.copy()
    summary["speedup_vs_fewest_vcpus"] = math.nan
    summary["parallel_efficiency"] = math.nan
    summary["build_speedup_vs_stock"] = math.nan
    cpu = summary[(summary["device"] != "gpu") & summary["total_time_s"].notna() & summary["vcpus"].notna()]
    for _, g in cpu.groupby(["study", "workload", "build"], sort=False):
        first = g.sort_values("vcpus").iloc[0]
        speed = first["total_time_s"] / g["total_time_s"]
        ideal = g["vcpus"].astype(float) / float(first["vcpus"])
        summary.loc[g.index, "speedup_vs_fewest_vcpus"] = speed
        summary.loc[g.index, "parallel_efficiency"] = speed / ideal
    for _, g in cpu.groupby(["study", "workload", "vcpus"], sort=False):
        stock = g[g["build"].isin(STOCK_BUILDS)]
        if stock.empty:
            continue
        ref = stock.sort_values("build", key=lambda c: c.map(STOCK_BUILDS.index)).iloc[0]["total_time_s"]
        summary.loc[g.index, "build_speedup_vs_stock"] = ref / g["total_time_s"]
    return summary


def analyze(store: Store, opts: Options) -> Analysis:
    if opts.deadline is not None and not (opts.deadline > 0 and math.isfinite(opts.deadline)):
        raise UserError(f"--deadline {opts.deadline:g}: give a positive number of seconds")
    catalog = prices.Catalog.load(opts.prices)
    if opts.instance_family:
        catalog.check_family(opts.instance_family, opts.region)
    if opts.gpu_instance:
        catalog.instance(opts.gpu_instance, opts.region)
    parse_baseline(opts.baseline)
    runs = run_totals(load_runs(store, opts.study))
    notes: list[str] = []
    bad = runs["total_time_s"].isna()
    if bad.any():
        notes.append(f"{int(bad.sum())} ok run(s) without an epoch time were left out")
        runs = runs[~bad]
        if runs.empty:
            raise UserError(f"no run in {store.path} has an epoch time: nothing to report")
    summary = aggregate(runs)
    gpus = summary[summary["device"] == "gpu"]
    gpu_builds = gpus.groupby("study")["build"].nunique().to_dict()
    gpu_vcpus = gpus.groupby("study")["vcpus"].nunique().to_dict()
    summary["label"] = [
        config_label(r.study, r.device, r.vcpus, r.build, gpu_builds.get(r.study, 1), gpu_vcpus.get(r.study, 1))
        for r in summary.itertuples()
    ]
    summary = _order(summary)
    priced = _price_groups(summary, runs, catalog, opts)
    for c in ("instance", "region", "price_usd_per_hour", "price_kind", "price_note", "price_source",
              "price_as_of", "price_origin"):
        summary[c] = priced[c] if c in priced else None
    rate = pd.to_numeric(summary["price_usd_per_hour"], errors="coerce") / 3600.0
    summary["cost_usd"] = summary["total_time_s"] * rate
    summary["cost_per_epoch_usd"] = summary["epoch_time_s"] * rate
    summary["cost_per_million_samples_usd"] = rate * 1e6 / summary["samples_per_s"]
    summary, baselines = apply_baselines(summary, opts.baseline)
    summary = add_scaling(summary)
    unpriced = summary["cost_usd"].isna().sum()
    if unpriced:
        notes.append(f"{int(unpriced)} configuration(s) could not be priced (see price_note in summary.csv)")
    if len({m for m in summary["machines"] if ";" in str(m)}):
        notes.append("some configurations aggregate runs from more than one machine (see the machines column)")
    software = software_table(runs)
    used = summary.dropna(subset=["instance"]).drop_duplicates(["instance", "region", "price_kind"])
    prices_used = used[["instance", "region", "price_kind", "price_usd_per_hour", "price_source", "price_as_of",
                        "price_origin"]].reset_index(drop=True)
    return Analysis(str(store.path), opts, runs, summary, software, prices_used, baselines, notes)


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


# -- questions asked of the summary ------------------------------------------------------------------


def pareto_front(df: pd.DataFrame, x: str = "total_time_s", y: str = "cost_usd") -> pd.Series:
    """True for configurations no other is both faster and cheaper than (ties kept)."""
    d = df.dropna(subset=[x, y]).sort_values([x, y])
    keep = pd.Series(False, index=df.index)
    best = math.inf
    for idx, row in d.iterrows():
        if row[y] < best:
            keep[idx] = True
            best = row[y]
    return keep


def cheapest(df: pd.DataFrame, deadline: float | None = None) -> Any:
    """Index of the cheapest configuration (meeting the deadline, if one is given), or None."""
    d = df.dropna(subset=["cost_usd"])
    if deadline is not None:
        d = d[d["total_time_s"] <= deadline]
    if d.empty:
        return None
    return d.sort_values(["cost_usd", "total_time_s"]).index[0]


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


def then_and_now(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload in both the 2017 study and newer results: the 2017 GPU, the best 2017 CPU, the best
    CPU now and the GPU now (fastest full training of each; a suspect GPU run is left out).

    Like with like: the study's logged epochs include its validation on the test set, so a newer
    configuration counts training plus its measured validation where it validated
    (``--validation study``); where it did not, its training time alone is shown and ``basis`` says so.
    """
    old = summary[summary["study"] == "woolf2017"]
    new = summary[summary["study"] != "woolf2017"]
    rows = []
    if old.empty or new.empty:
        return pd.DataFrame(columns=["workload", "series", "label", "study", "total_time_s", "cost_usd", "basis"])
    new = new.copy()
    with_val = pd.to_numeric(new.get("total_with_validation_s"), errors="coerce") if "total_with_validation_s" in new \
        else pd.Series(math.nan, index=new.index)
    validates = [_example_validates(w) for w in new.get("workload_base", new["workload"])]
    new["basis"] = ["training only" if pd.isna(v) else "training + validation" if val
                    else "training (the example did not validate)" for v, val in zip(with_val, validates)]
    new["total_time_s"] = with_val.fillna(new["total_time_s"])
    if "suspect" in new:
        new = new[new["suspect"].fillna("") == ""]
    old = old.assign(basis="training + validation (logged)")
    for workload in [w for w in dict.fromkeys(old["workload"]) if w in set(new["workload"])]:
        for era, df in (("2017", old), ("now", new)):
            g = df[(df["workload"] == workload)].dropna(subset=["total_time_s"])
            for device in ("gpu", "cpu"):
                d = g[(g["device"] == "gpu") == (device == "gpu")].sort_values("total_time_s")
                if era == "now" and (d["basis"] != "training only").any():
                    d = d[d["basis"] != "training only"]  # like with like: validated ones where there are
                if d.empty:
                    continue
                r = d.iloc[0]
                series = f"{era} {'GPU' if device == 'gpu' else 'best CPU'}"
                rows.append({"workload": workload, "series": series, "label": r["label"], "study": r["study"],
                             "total_time_s": r["total_time_s"], "cost_usd": r["cost_usd"],
                             "projected": bool(r["projected"]), "basis": r["basis"]})
    return pd.DataFrame(rows)
