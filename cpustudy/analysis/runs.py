"""Stored runs -> one pandas row per comparable run: what it measured, under which name it is reported
(its build plus any setting that differs from the defaults, its workload plus a variant such as where
augmentation ran), and its full-training time.

* **Comparable**: status ``ok``, not oversubscribed, at least one timed epoch (the imported 2017 study
  logged no warm-up, so all of its runs are); the tuner's trials and the overhead benchmark's runs only
  when their study is asked for.
* **Build family** (``build_family``): the family of the build's recipe (``family = ...``: pip,
  compiled, jax, torch), as the run stored it in its settings; for runs stored before that and for the
  imported 2017 study, guessed from the build's name (:func:`guess_family`). Reports colour by it.
* **Full training time** (``total_time_s``): for the imported 2017 study, the sum of the logged epochs'
  ``elapsed``, as the study computed it; for cpustudy's own runs, the full-epoch time (``epoch_time_s``:
  median of the timed epochs, or projected from a step cap) x the workload's default epochs
  (``cpustudy.workloads.WORKLOADS[name].epochs``). ``total_basis`` says which.
"""

from __future__ import annotations

import functools
import json
import math
import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Iterable, Mapping, cast

import pandas as pd

from cpustudy import precision
from cpustudy.analysis.frames import number, rows, run_records
from cpustudy.prices import Resources, family_of
from cpustudy.analysis import studies
from cpustudy.analysis.billed import Billed
from cpustudy.analysis.studies import (IMPORTED_STUDIES, INTERNAL_STUDIES, STOCK_BUILDS,
                                      SUMMED_STUDIES)
from cpustudy.errors import UserError
from cpustudy.store import Readable
from cpustudy.store.rows import JSON, EpochRow, RunRow

if TYPE_CHECKING:
    from cpustudy.workloads.base import Workload


#: What makes a configuration: the fields a summary row is grouped on (:func:`add_configuration`).
CONFIG_KEYS = ["study", "workload", "device", "vcpus", "recipe", "tags", "platform"]


def setting_tags(run: RunRow, *, batch: bool = True) -> list[str]:
    """What the run set differently from the defaults, as short tags (``tfdata``, ``b64``, ``bf16``,
    ``t1/2``, an extra variable ``K=V``; ``tuned`` for a tuned run), for the configuration's name: runs
    of different settings are never pooled into one median. ``batch=False`` leaves out the batch size
    (the batch-size chart's series)."""
    if studies.study(run.get("study")).imported:
        return []
    settings = settings_of(run.get("settings"))
    tuning = run.get("tuning_id")
    if (tuning is not None and not pd.isna(tuning)) or settings.get("tuning_id"):
        return ["tuned"]
    parts = []
    if not took_default_input(run, settings):
        parts.append(str(run["input_pipeline"]))
    if batch and not default_batch(run) and (size := run.get("batch_size")) is not None:  # not default: it has one
        parts.append(f"b{int(size)}")
    policy = run.get("precision_policy")
    if precision.reduced(policy):
        parts.append(precision.TAGS.get(str(policy), str(policy)))
    vcpus = run.get("vcpus")
    if (run.get("intra_threads"), run.get("inter_threads")) not in ((None, None), (vcpus, vcpus)):
        parts.append(f"t{run.get('intra_threads')}/{run.get('inter_threads')}")
    # A build's own env (KERAS_BACKEND=jax for jax-here) is not a setting: subtract what the run
    # stored as the build's env; runs that stored none use this checkout's recipe, and when it lacks
    # the recipe (measured elsewhere) nothing can be told apart: all of it is the build's.
    env = settings.get("env") or {}
    build_env = settings.get("build_env")
    if not isinstance(build_env, dict):
        from cpustudy.environment import builds

        try:
            build_env = dict(builds.load(str(run.get("build"))).env)
        except UserError:  # no such recipe here
            build_env = env
    extra_env = {k: v for k, v in env.items() if k not in build_env or str(build_env[k]) != str(v)}
    return parts + [f"{k}={v}" for k, v in sorted(extra_env.items())]


def took_default_input(run: RunRow, settings: Mapping[str, object]) -> bool:
    """Whether the run stored no input pipeline, or the one its build took by default when it was measured (its
    ``settings``' ``input_default``: ``tfdata`` on TensorFlow; ``numpy`` where they hold none)."""
    return run.get("input_pipeline") in (None, str(settings.get("input_default") or "numpy"))


def older_default_inputs(recs: list[RunRow]) -> list[bool]:
    """Which runs took an older default input pipeline beside runs of the same study and build that took
    another (runs stored before the default became ``tfdata`` beside runs after it): those get their
    pipeline as a tag, in the configuration's name and its series alike, so the two are never pooled and
    only the current default is stock."""
    took_default = [took_default_input(r, settings_of(r.get("settings"))) for r in recs]
    seen: dict[tuple[str | None, str | None], set[str | None]] = {}
    for r, default in zip(recs, took_default):
        if default and r.get("input_pipeline") is not None:
            seen.setdefault((r.get("study"), r.get("build")), set()).add(r.get("input_pipeline"))
    return [default and r.get("input_pipeline") == "numpy" and len(seen[(r.get("study"), r.get("build"))]) > 1
            for r, default in zip(recs, took_default)]


#: Environment switches whose effect the run records itself (oneDNN as TensorFlow reported it).
RECORDED_SWITCHES = ("TF_ENABLE_ONEDNN_OPTS",)


def resolved_program(run: RunRow) -> str:
    """What the run's build and settings resolved to on its machine, as one comparable text: device,
    interpreter, TensorFlow, Keras and backend versions, oneDNN as TensorFlow reported it, XLA as Keras
    resolved it, and any other variable the worker had. Two builds with the same text ran the same
    program (``tf-onednn`` where TensorFlow turns oneDNN on by default is ``tf``). "" where the run did
    not record its oneDNN state (an imported study, an older or a non-TensorFlow run): never called equal."""
    if studies.study(run.get("study")).imported or run.get("onednn") is None or pd.isna(run.get("onednn")):
        return ""
    settings = settings_of(run.get("settings"))
    env = {k: v for k, v in (settings.get("env") or {}).items() if k not in RECORDED_SWITCHES}
    xla = run.get("xla")
    return json.dumps([run.get("device") or "cpu", settings.get("python"), run.get("tf_version"),
                       run.get("keras_version"), run.get("keras_backend"), bool(run.get("onednn")),
                       None if xla is None or pd.isna(xla) else bool(xla), sorted(env.items())], default=str)


def default_batch(run: RunRow) -> bool:
    """Whether the run trained at its workload's own batch size (unknown batch or workload: yes)."""
    workload = workload_info(str(run.get("workload")))
    batch = run.get("batch_size")
    return workload is None or batch is None or pd.isna(batch) or int(batch) == workload.batch_size


def changes_accuracy(run: RunRow) -> bool:
    """Whether the run's batch size or precision is not its workload's own: either can change the
    accuracy reached, so its time is not the example's training."""
    return not default_batch(run) or precision.reduced(run.get("precision_policy"))


def cloud_of(run: RunRow) -> dict[str, JSON] | None:
    """Where a run measured in a cloud job ran (``cpustudy.environment.cloud``), or None."""
    where = settings_of(run.get("settings")).get("cloud")
    return where if isinstance(where, dict) and where.get("instance_type") else None


def short_cpu(model: object) -> str:
    """A CPU model without its trademarks and filler (``Xeon Platinum 8373C @ 2.60GHz``, ``Xeon @ 2.80GHz``,
    ``EPYC 7B13``): short, but two different models never read the same."""
    text = re.sub(r"\((R|TM)\)|\bCPU\b|\bProcessor\b|\bIntel\b|\bAMD\b|\d+-Core", " ", str(model or ""),
                  flags=re.IGNORECASE)
    return " ".join(text.split()) or "unknown CPU"


def cpu_label(run: RunRow) -> str:
    """A run's CPU as a label: its model (:func:`short_cpu`); where the model names no part (a hypervisor's
    ``Intel(R) Xeon(R) Processor``, ``AMD EPYC``), with the platform cpustudy reads from the machine's stored flags
    and CPUID (``Xeon (Granite Rapids)``), so that two such machines of different hardware are never pooled."""
    short = short_cpu(run.get("cpu_model"))
    if re.search(r"\d", short):
        return short
    named = _platform_name(json.dumps(settings_of(run.get("machine_info")), sort_keys=True))
    return f"{short} ({named})" if named else short


@functools.lru_cache(maxsize=64)
def _platform_name(info: str) -> str:
    """The platform cpustudy reads from a machine's stored description (JSON), short (``Granite Rapids``); ""
    where it knows none (read once per machine: every run of it asks)."""
    from cpustudy.prices import platforms

    parsed = json.loads(info)
    found = platforms.platform_of(parsed) if parsed.get("flags") else None
    if found is None:
        return ""
    named = re.search(r"\(([^)]*)\)", found.name)
    return named.group(1) if named else found.name


def add_cloud(df: pd.DataFrame) -> None:
    """Columns for runs measured in a cloud job: ``cloud_instance`` (``gcp:n2-highcpu-8``), its region,
    zone, spot flag and recoveries; and the ``platform`` each run is told apart by: a cloud run's
    instance family (``n2-highcpu``), plus the CPU model when one family landed on several
    (``n2-highcpu/Xeon 8373C``); a CPU run measured elsewhere, its CPU (:func:`cpu_label`) when a study's runs
    come from several (databases merged from several machines; ``EPYC 9B14``, ``Xeon (Granite Rapids)``); else "". Runs on
    different platforms are never pooled into one median, and each platform has its own stock build."""
    recs = run_records(df)
    where = [cloud_of(r) for r in recs]
    df["cloud_instance"] = [f"{w['cloud']}:{w['instance_type']}" if w else None for w in where]
    df["cloud_resources"] = pd.Series([Resources.of_run(w) if w else None for w in where], index=df.index,
                                      dtype=object)  # what prices it
    for col in ("region", "zone", "spot", "recoveries"):
        df[f"cloud_{col}"] = [w.get(col) if w else None for w in where]
    families: dict[str, set[str]] = {}
    local_models: dict[str, set[str]] = {}
    for r, w in zip(recs, where):
        if w:
            families.setdefault(family_of(str(w["instance_type"])), set()).add(short_cpu(r.get("cpu_model")))
        elif not studies.study(r.get("study")).imported and r.get("device") != "gpu":
            local_models.setdefault(str(r.get("study")), set()).add(cpu_label(r))
    platforms = []
    for r, w in zip(recs, where):
        if not w:
            several = len(local_models.get(str(r.get("study")), ())) > 1 and r.get("device") != "gpu"
            platforms.append(cpu_label(r) if several else "")
            continue
        fam = family_of(str(w["instance_type"]))
        platforms.append(fam + (f"/{short_cpu(r.get('cpu_model'))}" if len(families[fam]) > 1 else ""))
    df["platform"] = platforms


def session_of(run: RunRow) -> str:
    """The measuring session a stored run came from (one sweep, run or compare call), "" where it did not say."""
    return str(settings_of(run.get("settings")).get("session") or "")


#: Measuring sessions of one machine closer than this (one's last run to the next one's first) are one period: their
#: shifts are no independent draws of how the machine moves between sessions. On the Granite Rapids VM (2026-11-27),
#: 13 sessions within 40 minutes agreed within 3 %; 2.5 hours later every training ran about 30 % slower.
PERIOD_GAP_S = 3600.0


def periods(runs: Iterable[RunRow]) -> dict[str, str]:
    """Each stored session's period (``period <its first session>``), per machine: sessions in time order, a new
    period where one starts more than ``PERIOD_GAP_S`` after every earlier one of its machine ended. Runs without a
    session or a time are left out (a session missing from the result is a period of its own)."""
    spans: dict[tuple[str, str], list[datetime]] = {}
    for r in runs:
        session = session_of(r)
        start = stored_time(r.get("created_at"))
        if not session or start is None:
            continue
        end = stored_time(r.get("finished_at"))
        end = start if end is None else max(start, end)
        key = (str(r.get("machine_id") or r.get("machine") or ""), session)
        span = spans.setdefault(key, [start, end])
        span[0], span[1] = min(span[0], start), max(span[1], end)
    out: dict[str, str] = {}
    last: dict[str, tuple[datetime, str]] = {}  # machine -> (latest end so far, its period)
    for (machine, session), (start, end) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        seen = last.get(machine)
        if seen is None or (start - seen[0]).total_seconds() > PERIOD_GAP_S:
            seen = (end, f"period {session}")
        out[session] = seen[1]
        last[machine] = (max(seen[0], end), seen[1])
    return out


def ago_s(runs: Iterable[RunRow]) -> float:
    """Seconds from the latest end (else start) among ``runs`` to now (the store's clock); 0 where none has a time.
    More than ``PERIOD_GAP_S``: they were measured in an earlier period."""
    from cpustudy.store.store import now

    ends = [t for r in runs if (t := stored_time(r.get("finished_at") or r.get("created_at"))) is not None]
    return ((stored_time(now()) or max(ends)) - max(ends)).total_seconds() if ends else 0.0


def stored_time(text: object) -> datetime | None:
    """A stored time (``Store``'s ISO 8601, with or without its offset; none: UTC) as an aware datetime, or None.
    ``datetime.fromisoformat``, not ``pd.to_datetime``: this runs for every stored run each time a candidate's speed
    samples are read (0.1 us a time against 230)."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def settings_of(stored: object) -> dict[str, JSON]:
    """A run's stored settings (its whole configuration, as JSON text, or already read); {} when unreadable."""
    if isinstance(stored, dict):
        return stored
    try:
        settings = json.loads(stored or "{}") if isinstance(stored, str) else {}
    except ValueError:
        return {}
    return settings if isinstance(settings, dict) else {}


def build_family(run: RunRow) -> str:
    """The run's build family as stored (``settings["build_family"]``), else :func:`guess_family`."""
    family = settings_of(run.get("settings")).get("build_family")
    return family if isinstance(family, str) and family else guess_family(str(run.get("build")))


def guess_family(build: str) -> str:
    """The family a build's name suggests: ``pip`` for the stock builds (tf, pip), ``compiled`` for a
    name with "compiled" or "march" in it, else ``other``."""
    if build in STOCK_BUILDS:
        return "pip"
    if "compiled" in build or "march" in build:
        return "compiled"
    return "other"


def load_runs(store: Readable, study: str | None = None) -> pd.DataFrame:
    """Runs with status ok, one row each, with their epochs' sum and the machine they ran on."""
    rows = store.runs(status="ok")
    if not rows:
        total = store.count("runs")
        why = f"its {total} run(s) did not finish ok" if total else "it is empty"
        raise UserError(
            f"no finished runs in {store.path} ({why}): measure with `cpustudy run`, import the 2017 study "
            "with `cpustudy import woolf2017 LOGS_DIR`, or pass --db"
        )
    by_run: dict[int, list[EpochRow]] = {}
    for e in store.epochs():
        by_run.setdefault(int(e["run_id"]), []).append(e)
    df = pd.DataFrame(rows)
    df["billed"] = pd.Series([Billed.of_run(r, by_run.get(int(r["id"]), [])) for r in rows], dtype=object)  # parts
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
    # warm-up, tracing included), unless the run reached its target accuracy in that epoch: its time to
    # the target is measured; its full-training figures are not (``warmup_only``, left out of them).
    df["warmup_only"] = ~df["study"].isin(IMPORTED_STUDIES) & (df["timed_epochs"].fillna(1).astype(int) == 0)
    reached = pd.to_numeric(df["target_reached"], errors="coerce").fillna(0) > 0
    keep = (df["oversubscribed"].fillna(0).astype(int) == 0) & (~df["warmup_only"] | reached)
    df = df[keep]
    if df.empty:
        raise UserError(f"{store.path} has no comparable runs: all are oversubscribed or warm-up only "
                        "(measure with --epochs 2 or more, without --oversubscribe)")
    add_configuration(df)
    df["workload_base"] = df["workload"]
    df["workload"] = [workload_variant(r) for r in run_records(df)]
    epochs = pd.DataFrame([e for es in by_run.values() for e in es])
    if epochs.empty:
        sums = pd.DataFrame(columns=["run_id", "epochs_sum", "epochs_logged"])
    else:
        sums = epochs.groupby("run_id").agg(epochs_sum=("elapsed_s", "sum"), epochs_logged=("epoch", "size"))
        sums = sums.reset_index()
    df = df.merge(sums, how="left", left_on="id", right_on="run_id")
    df["epochs_logged"] = df["epochs_logged"].fillna(0).astype(int)
    return df.reset_index(drop=True)


def several_batches(recs: list[RunRow]) -> dict[int, list[str]]:
    """``b64`` tags for runs of a workload cpustudy does not know (a model file, a script: no own batch size
    to differ from) where its runs trained at several batch sizes, keyed by ``id`` of the run's record: they
    are different configurations, never pooled into one median."""
    sizes: dict[str, set[int]] = {}
    for r in recs:
        b = r.get("batch_size")
        if workload_info(str(r.get("workload"))) is None and b is not None and not pd.isna(b):
            sizes.setdefault(str(r.get("workload")), set()).add(int(b))
    return {id(r): [f"b{int(cast(int, r['batch_size']))}"] for r in recs if len(sizes.get(str(r.get("workload")), ())) > 1}


def add_configuration(df: pd.DataFrame) -> None:
    """The configuration's fields the analysis groups and decides on, per run: ``recipe`` (the build
    as stored), ``tags`` (:func:`setting_tags`, joined by "+"), ``platform`` (:func:`add_cloud`), ``stock`` (a stock
    recipe at default settings), ``changes_accuracy``, ``series`` (the build without its batch size)
    and ``build``, the configuration's name made of them (``tf+b64@n2-highcpu``): one name per
    configuration, shown in charts and never parsed back."""
    recs = run_records(df)
    df["recipe"] = df["build"].astype(str)
    df["build_family"] = [build_family(r) for r in recs]
    older = older_default_inputs(recs)
    batched = several_batches(recs)
    tags = ["+".join(["numpy"] * o + setting_tags(r) + batched.get(id(r), [])) for r, o in zip(recs, older)]
    df["tags"] = tags
    df["stock"] = [str(r.get("build")) in STOCK_BUILDS and not t for r, t in zip(recs, tags)]
    df["changes_accuracy"] = [changes_accuracy(r) for r in recs]
    df["resolved"] = [resolved_program(r) for r in recs]
    add_cloud(df)
    at = ["" if not p else f"@{p}" for p in df["platform"]]
    unbatched = ["+".join(["numpy"] * o + setting_tags(r, batch=False)) for r, o in zip(recs, older)]
    df["build"] = [f"{b}{'+' + t if t else ''}{p}" for b, t, p in zip(df["recipe"], tags, at)]
    df["series"] = [f"{b}{'+' + t if t else ''}{p}" for b, t, p in zip(df["recipe"], unbatched, at)]


def outdated(df: pd.DataFrame) -> pd.Series[bool]:
    """Runs of an earlier version of their workload (its model, data generator or FLOPs changed since), or of a
    model file whose content has changed since (its name's newest run has another hash): not comparable with runs
    of the current one, never pooled with them (imported studies ran their own models: never outdated)."""
    current = [getattr(workload_info(str(w)), "version", None) for w in df["workload_base"]]
    stored = pd.to_numeric(df["workload_version"], errors="coerce").fillna(1)
    old = [c is not None and int(v) != c for c, v in zip(current, stored)]
    has = df["model_hash"].notna()
    newest = df[has].sort_values(["created_at", "id"]).groupby("workload_base")["model_hash"].last()
    edited = has & (df["model_hash"] != df["workload_base"].map(newest))
    return (pd.Series(old, index=df.index, dtype=bool) | edited) & ~df["study"].isin(IMPORTED_STUDIES)


def workload_variant(run: RunRow) -> str:
    """The workload's name, plus where its augmentation ran when that differs from the study's way
    (on the host): ``cifar10_cnn (augment: model)``. Augmentation inside the model is different work
    on a GPU (25-60x slower there), so such runs get their own baseline and are never compared with
    host-augmented ones; runs stored before ``host`` existed augmented in the model."""
    name = str(run.get("workload"))
    if run.get("data") == "learnable":  # planted labels: a demonstration, never pooled with real data
        name = f"{name} (learnable data)"
    w = workload_info(str(run.get("workload")))
    default = (w.options.get("augment") if w is not None else None)
    where = run.get("augment")
    if run.get("study") in SUMMED_STUDIES or default is None or where is None or pd.isna(where) or where == default:
        return name
    return f"{name} (augment: {where})"


def example_validates(name: str) -> bool:
    """Whether the workload's example validated every epoch (unknown workloads: assume it did, so a
    missing validation time shows as "training only" rather than as like for like)."""
    w = workload_info(name)
    return w is None or w.validation_samples > 0


def workload_info(name: str) -> Workload | None:
    """cpustudy's workload of that name, or None (the 2017 study's own text_generator_keras)."""
    from cpustudy.workloads import ALL as WORKLOADS

    return WORKLOADS.get(name)


def run_totals(df: pd.DataFrame) -> pd.DataFrame:
    """Per run: full-training epochs, its training time (``total_time_s``) and basis, what it bills
    (``billed_s``: the run's :class:`Billed` at those epochs; its training time where it stored no billed parts, the
    one place that says so), samples per second."""
    df = df.copy()
    totals, billed, train_epochs, bases, sps = [], [], [], [], []
    for r in rows(df, index=False):
        w = workload_info(str(getattr(r, "workload_base", r.workload)))
        epoch_time = number(r.epoch_time_s)  # NaN where none was timed
        if r.study in SUMMED_STUDIES and r.epochs_logged:
            n = int(number(r.epochs_logged))
            totals.append(number(r.epochs_sum))
            billed.append(number(r.epochs_sum))  # what the study logged is all that is known of its bill
            bases.append(f"sum of {n} logged epochs")
        else:
            n = int(w.epochs) if w is not None else int(number(r.epochs or r.epochs_logged or 1))
            totals.append(epoch_time * n)
            parts = getattr(r, "billed", None)
            billed.append(float(parts.seconds(n)) if isinstance(parts, Billed) else totals[-1])  # no parts: training
            kind = "projected epoch time" if r.projected else "epoch time"
            bases.append(f"{kind} x {n} epochs" + ("" if w is not None else " (as run)"))
        train_epochs.append(n)
        s = number(r.samples_per_s)
        if math.isnan(s) and w is not None and epoch_time and not math.isnan(epoch_time):
            s = w.samples_per_epoch / epoch_time
        sps.append(s)
    df["train_epochs"] = train_epochs
    df["total_time_s"] = totals  # training alone: what speed is compared by
    df["billed_s"] = billed  # a full training as it bills (analysis.billed): what costs are priced by
    # reached its target in the warm-up epoch: no full-training figure
    df.loc[df["warmup_only"].astype(bool), ["total_time_s", "billed_s", "epoch_time_s"]] = math.nan
    df["total_basis"] = bases
    df["samples_per_s_est"] = pd.to_numeric(pd.Series(sps, index=df.index, dtype="float64"))
    return df


# -- labels ------------------------------------------------------------------------------------------


def vcpus_int(v: float | None) -> int | None:
    """A stored vCPU count as an int; None where there is none (NaN, NA)."""
    return None if v is None or pd.isna(v) else int(v)


def config_label(study: str, device: str, vcpus: float | None, build: str, gpu_builds: int = 1,
                 gpu_vcpus: int = 1) -> str:
    """The chart label: the study's own (``gpu``, ``cpu64pip``, ``cpu64cmp``) for its data, else
    ``gpu`` / ``cpu2 tf`` (``gpu tf-x`` when a study has GPU runs of several builds, ``gpu (8 vCPUs)``
    when its GPU runs had different numbers of host vCPUs)."""
    v = vcpus_int(vcpus)
    if device == "gpu":
        label = "gpu" if gpu_builds <= 1 or study in SUMMED_STUDIES else f"gpu {build}"
        return label if gpu_vcpus <= 1 or v is None else f"{label} ({v} vCPU{'s' if v != 1 else ''})"
    short = studies.study(study).short_builds
    if short is not None:
        return f"cpu{v}{short.get(build, build)}"
    return f"cpu{v} {build}"

