"""What ``cpustudy results`` shows: stored runs and epochs as rows for people (a table) and programs (CSV,
JSON), every run as stored (failed ones too), GPU runs marked as the report would mark them. Standard
library (and rich for the table) only: no pandas."""

from __future__ import annotations

import csv
import io
import json
from typing import Iterable, Mapping, Sequence

from cpustudy.analysis.peakshare import isa_share, peak_share
from cpustudy.analysis.suspect import gpu_suspicions
from cpustudy.store import Store
from cpustudy.store.rows import RunRow

RUN_COLUMNS = (
    "run_id",
    "status",
    "workload",
    "device",
    "build",
    "vcpus",
    "cpu_list",
    "threads",
    "data",
    "batch_size",
    "epochs",
    "steps_per_epoch",
    "epoch_time_s",
    "epoch_time_iqr_s",
    "epoch_time_cv",
    "unstable",
    "samples_per_s",
    "gflops_per_s",
    "peak_gflops",
    "pct_of_peak",
    "peak_device",
    "peak_precision",
    "peak_note",
    "isa_peak_gflops",
    "pct_of_isa_peak",
    "isa_peak_basis",
    "precision_policy",
    "float32_math",
    "target_accuracy",
    "target",
    "target_reached",
    "epochs_to_target",
    "time_to_target_s",
    "mem_bandwidth_gbs",
    "epoch_boundary_s",
    "stall_s",
    "stall_max_s",
    "wait_share",
    "cpu_utilization",
    "gpu_utilization",
    "suspect",
    "validation",
    "validation_time_s",
    "val_loss",
    "val_accuracy",
    "augment",
    "startup_s",
    "projected",
    "timed_epochs",
    "basis",
    "input_pipeline",
    "warmup_steps",
    "error",
    "cpu_model",
    "tf_version",
    "keras_version",
    "keras_backend",
    "onednn",
    "xla",
    "tf_missing_isa",
    "flops_source",
    "model_file",
    "model_hash",
    "oversubscribed",
    "repeat",
    "machine",
    "peak_rss_bytes",
    "gpu_peak_bytes",
    "cpustudy_version",
    "cpustudy_commit",
    "method_version",
    "created_at",
)

EPOCH_COLUMNS = (
    "run_id",
    "workload",
    "build",
    "vcpus",
    "epoch",
    "elapsed_s",
    "steps",
    "samples_per_s",
    "loss",
    "accuracy",
    "warmup",
    "cpu_s",
    "steps_s",
    "boundary_s",
    "idle_s",
    "wait_s",
    "validation_s",
    "validation_steps",
    "val_loss",
    "val_accuracy",
    "gpu_util",
)

# Columns the human table shows, most important first: a narrow terminal shows the first that fit
# (CSV and JSON have every column).
TABLE_COLUMNS = (
    "run_id",
    "status",
    "workload",
    "build",
    "vcpus",
    "epoch_time_s",  # a projected time marked with * in the table (`cpustudy results`)
    "samples_per_s",
    "device",  # a GPU run shows its host's vCPUs beside it: without this it reads as a CPU run
    "augment",  # cifar10_cnn's host, model or none: different work under one workload name
    "basis",
    "epoch_time_iqr_s",
    "unstable",
    "stall_s",
    "suspect",
    "error",
    "precision_policy",
    "time_to_target_s",
    "data",
    "epochs",
    "steps_per_epoch",
    "pct_of_peak",
    "startup_s",
)


def run_rows(store: Store) -> list[dict[str, object]]:
    rows = []
    runs = store.runs()
    suspicious = gpu_suspicions(runs)
    for r in runs:
        gflops = (
            sps * flops / 1e9
            if (sps := r.get("samples_per_s")) and (flops := r.get("flops_per_sample"))
            else None
        )
        share, why = peak_share(gflops, r.get("peak_gflops"), device=r.get("device"), peak_device=r.get("peak_device"),
                                policy=r.get("precision_policy"), peak_precision=r.get("peak_precision"))
        isa_pct, isa_why = isa_share(gflops, r.get("isa_peak_gflops"))
        same_device = (r.get("peak_device") or "cpu") == (r.get("device") or "cpu")  # else its peak is not the run's
        rows.append(
            {
                **{k: r.get(k) for k in RUN_COLUMNS},
                "run_id": r["id"],
                "study": r.get("study"),
                "threads": f"{r['intra_threads']}/{r['inter_threads']}" if r.get("intra_threads") is not None else None,
                "steps_per_epoch": r.get("steps_per_epoch") or r.get("full_steps_per_epoch"),
                "gflops_per_s": gflops,
                "peak_gflops": r.get("peak_gflops") if same_device else None,
                "pct_of_peak": share,
                "peak_note": "; ".join(x for x in (why, isa_why) if x) or None,
                "pct_of_isa_peak": isa_pct,
                "float32_math": r.get("precision"),  # how the framework computed float32 matmuls (fp32, tf32)
                **{k: None if r.get(k) is None else bool(r.get(k)) for k in ("target_reached", "unstable", "onednn", "xla")},
                "suspect": suspicious.get(r["id"]),
                "projected": bool(r.get("projected")),
                "oversubscribed": bool(r.get("oversubscribed")),
                "error": (r.get("error") or "").splitlines()[0] if r.get("error") else None,
                "basis": basis(r),
            }
        )
    return rows


def measured_by(runs: Sequence[Mapping[str, object]]) -> str:
    """Which cpustudy measured ``runs`` (``provenance.versions_text``), for the line under a table or a page's
    header: ``measured by cpustudy 0.2.0 (abc123, method 2)``; several where they differ."""
    from cpustudy import provenance

    def value(x: object) -> object:  # a pandas record's NaN is none; its float 2.0 the method 2
        if isinstance(x, float):
            return None if x != x else int(x) if x.is_integer() else x
        return x

    versions = {(value(r.get("cpustudy_version")), value(r.get("cpustudy_commit")), value(r.get("method_version")))
                for r in runs if r.get("study") in (None, "cpustudy")}
    return f"measured by {provenance.versions_text(versions)}" if versions else ""


def basis(r: RunRow) -> str | None:
    """What a run's epoch time rests on: the median of its timed epochs, a projection from capped
    epochs, or (``--epochs 1``) only the warm-up epoch, which includes tracing."""
    if r.get("status") != "ok" or r.get("epoch_time_s") is None:
        return None
    n = r.get("timed_epochs")
    if not n:
        return "warm-up epoch only"
    return f"{'projected from' if r.get('projected') else 'median of'} {n} epoch{'s' if n != 1 else ''}"


def error_rows(store: Store) -> list[dict[str, object]]:
    """Failed runs with their whole error: the reason and the tail of the worker's output."""
    return [{"run_id": r["id"], "workload": r["workload"], "build": r["build"], "vcpus": r.get("vcpus"),
             "device": r.get("device"), "created_at": r.get("created_at"), "error": r.get("error") or ""}
            for r in store.runs() if r["status"] == "failed"]


def epoch_rows(store: Store) -> list[dict[str, object]]:
    return [
        {**{k: e.get(k) for k in EPOCH_COLUMNS}, "warmup": bool(e["warmup"])} for e in store.epochs()
    ]


def cell(value: object) -> str:
    """A value as a table or CSV shows it: empty for None, yes/no, 4 significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def to_csv(rows: Iterable[Mapping[str, object]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
    return buf.getvalue()


def to_json(rows: Iterable[Mapping[str, object]], columns: Sequence[str]) -> str:
    return json.dumps([{k: row.get(k) for k in columns} for row in rows], indent=2, default=str) + "\n"
