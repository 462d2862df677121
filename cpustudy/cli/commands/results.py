"""``cpustudy results``: stored measurements, one row per run (or per epoch), for people (a table) and programs
(CSV, JSON), every run as stored (failed ones too), GPU runs marked as the report would mark them. Standard library
(and rich for the table) only: no pandas."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from cpustudy.cli.args import add_db, add_format
from cpustudy.cli.args import Subparsers

if TYPE_CHECKING:
    from cpustudy.store import Store
    from cpustudy.store.rows import RunRow


def register(sub: Subparsers) -> None:
    p = sub.add_parser("results", help="stored measurements, one row per run (or per epoch)")
    p.add_argument("--per-epoch", action="store_true", help="one row per epoch")
    p.add_argument("--errors", action="store_true",
                   help="failed runs with their whole error: the reason and the tail of the worker's output "
                   "(a run interrupted from outside is marked so: not a failed measurement)")
    add_format(p)
    add_db(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cpustudy.cli.output import cell, emit_rows, print_errors
    from cpustudy.provenance import measured_by
    from cpustudy.store import Store

    with Store.read(args.db) as store:
        if args.errors:
            # a run stopped from outside (Ctrl-C, SIGTERM, its process killed) is stored as failed with an error
            # that says interrupted: marked so, since a sweep does not count it as a failed measurement
            failed = [{**r, "interrupted": str(r["error"]).startswith("interrupted")} for r in error_rows(store)]
        elif args.per_epoch:
            rows, columns, title = epoch_rows(store), list(EPOCH_COLUMNS), "epochs"
        else:
            rows, columns, title = run_rows(store), list(RUN_COLUMNS), "runs"
    if args.errors:
        return print_errors(args, failed)
    note = None
    if args.format == "table" and not args.per_epoch:
        columns = list(TABLE_COLUMNS)
        # A projected epoch time is marked in its own cell: at 80 columns a `projected` column beside it did
        # not fit, and the time was shown as if measured.
        rows = [{**r, "epoch_time_s": cell(r["epoch_time_s"]) + "*"}
                if r.get("projected") and r.get("epoch_time_s") is not None else r for r in rows]
        if any(r.get("projected") for r in rows):
            note = "* projected to a full epoch from the steps run (basis: from what)"
        by = measured_by(rows)
        note = "; ".join(x for x in (note, by) if x) or None
    return emit_rows(args, rows, columns, f"{title} in {args.db or 'the database'}", note=note)


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
    from cpustudy.analysis.peakshare import isa_share, peak_share
    from cpustudy.analysis.suspect import gpu_suspicions

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
