"""Import the per-epoch logs of Max Woolf's 2017 study as a study of its own (``study = 'woolf2017'``).

The study ("Benchmarking TensorFlow on Cloud CPUs: Cheaper Deep Learning than Cloud GPUs", July 2017)
published one CSV per platform and workload::

    logs/gpu/<workload>_tensorflow.csv                          one Tesla K80 (n1-standard-1 + K80)
    logs/cpu-pip/cpu{8,16,32,64}/<workload>_tensorflow.csv      TensorFlow 1.2 from pip, N Skylake vCPUs
    logs/cpu-compiled/cpu{8,16,32,64}/<workload>_tensorflow.csv TensorFlow 1.2 compiled for SSE4.2/AVX/FMA

with the columns ``epoch,elapsed,loss,acc,val_loss,val_acc`` (``text_generator_keras``: only
``epoch,elapsed,loss``; accuracy columns may be empty). Each file becomes one run:

* ``study`` ``woolf2017``, ``status`` ``ok``, ``data`` ``real``, ``tf_version`` ``1.2``;
* CPU runs: ``device`` ``cpu``, ``build`` ``pip`` or ``compiled``, ``vcpus`` 8/16/32/64, on the machine
  "GCE Skylake (2017)" (fingerprint ``woolf2017-gce-skylake``);
* GPU runs: ``device`` ``gpu``, ``build`` ``gpu``, ``vcpus`` 1, on a machine of their own,
  "GCE n1-standard-1 + Tesla K80 (2017)" (fingerprint ``woolf2017-gce-n1-standard-1-k80``), since the GPU
  instance was a different machine from the CPU ones;
* one ``epochs`` row per log line (``epoch`` = the log's epoch + 1, as cpustudy counts from 1;
  ``val_loss`` and ``val_accuracy`` from ``val_loss`` and ``val_acc``, ``metrics`` every value the line logged;
  ``warmup`` 0 for all, since the study summed every epoch); ``epoch_time_s`` = the mean epoch time, so
  ``epoch_time_s x epochs`` = the sum of ``elapsed``, the study's total; the run's ``val_loss`` and
  ``val_accuracy`` are its last epoch's, as a measured run's are.

Run uuids are uuid5 of the file's path relative to the logs folder, so importing the same logs again (from
any copy) adds no run; it only fills in the validation of runs imported before it was kept. Every file is
read and checked before anything is written, and the writes are one transaction: a malformed file is refused
with its path and line, and nothing is half-imported.
"""

from __future__ import annotations

import csv
import json
import math
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cpustudy.errors import UserError
from cpustudy.store.store import Store, now

STUDY = "woolf2017"
SOURCE_URL = "https://minimaxir.com/2017/07/cpu-or-gpu/"
UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "cpustudy:woolf2017")
TF_VERSION = "1.2"

#: The seven workloads the study logged (``text_generator_keras`` is the author's own model; cpustudy
#: does not run it, but it is imported like the others).
WORKLOADS = (
    "mnist_mlp",
    "mnist_cnn",
    "cifar10_cnn",
    "imdb_fasttext",
    "imdb_bidirectional_lstm",
    "lstm_text_generation",
    "text_generator_keras",
)

CPU_MACHINE: dict[str, Any] = {
    "fingerprint": "woolf2017-gce-skylake",
    "name": "GCE Skylake (2017)",
    "cpu_model": "GCE Skylake (2017)",
    "cpu_vendor": "GenuineIntel",
    "arch": "x86_64",
    "description": "Google Compute Engine n1-highcpu-8/16/32/64, preemptible, Intel Skylake, as used by "
                   f"Max Woolf's 2017 study ({SOURCE_URL})",
}
GPU_MACHINE: dict[str, Any] = {
    "fingerprint": "woolf2017-gce-n1-standard-1-k80",
    "name": "GCE n1-standard-1 + Tesla K80 (2017)",
    "cpu_model": "GCE n1-standard-1 + Tesla K80 (2017)",
    "arch": "x86_64",
    "logical_cpus": 1,
    "accelerator": "NVIDIA Tesla K80",
    "description": "Google Compute Engine n1-standard-1 with one NVIDIA Tesla K80, as used by Max Woolf's "
                   f"2017 study ({SOURCE_URL})",
}

BUILDS = {"cpu-pip": "pip", "cpu-compiled": "compiled"}
_FILE_RE = re.compile(r"^([a-z0-9_]+)_tensorflow\.csv$")
_CPU_DIR_RE = re.compile(r"^cpu(\d+)$")


@dataclass
class LogFile:
    path: Path
    rel: str  # path relative to the logs folder, "/"-separated
    workload: str
    device: str
    build: str
    vcpus: int
    epochs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def uuid(self) -> str:
        return uuid.uuid5(UUID_NAMESPACE, f"{STUDY}/{self.rel}").hex


@dataclass
class ImportResult:
    logs_dir: Path
    added: int
    present: int
    epochs: int
    skipped: list[str]
    workloads: list[str]
    filled: int = 0  # runs imported before their validation was kept, now given it


def resolve_logs_dir(path: str | Path) -> Path:
    root = Path(path)
    if not root.exists():
        raise UserError(f"{root}: no such folder: give the study's logs/ folder (with gpu/, cpu-pip/, cpu-compiled/)")
    if not root.is_dir():
        raise UserError(f"{root} is a file: give the study's logs/ folder (with gpu/, cpu-pip/, cpu-compiled/)")
    platforms = ("gpu", "cpu-pip", "cpu-compiled")
    if not any((root / p).is_dir() for p in platforms) and (root / "logs").is_dir():
        root = root / "logs"
    if not any((root / p).is_dir() for p in platforms):
        raise UserError(
            f"{root} does not look like the study's logs folder: it has none of gpu/, cpu-pip/, cpu-compiled/"
        )
    return root


def discover(root: Path) -> tuple[list[LogFile], list[str]]:
    """The study's log files under ``root``, and what was skipped (and why)."""
    files: list[LogFile] = []
    skipped: list[str] = []

    def add(path: Path, device: str, build: str, vcpus: int) -> None:
        m = _FILE_RE.match(path.name)
        rel = path.relative_to(root).as_posix()
        if not m:
            if path.suffix.lower() == ".csv":
                skipped.append(f"{rel} (not named <workload>_tensorflow.csv)")
            return
        files.append(LogFile(path, rel, m.group(1), device, build, vcpus))

    gpu = root / "gpu"
    if gpu.is_dir():
        for p in sorted(gpu.iterdir()):
            if p.is_file():
                add(p, "gpu", "gpu", 1)
    for folder, build in BUILDS.items():
        d = root / folder
        if not d.is_dir():
            continue
        for sub in sorted(d.iterdir()):
            m = _CPU_DIR_RE.match(sub.name)
            if not sub.is_dir() or not m or int(m.group(1)) <= 0:
                if sub.is_dir():
                    skipped.append(f"{sub.relative_to(root).as_posix()}/ (not named cpuN)")
                continue
            for p in sorted(sub.iterdir()):
                if p.is_file():
                    add(p, "cpu", build, int(m.group(1)))
    return files, skipped


def _float(path: str, line: int, column: str, text: str, *, required: bool) -> float | None:
    text = text.strip()
    if not text:
        if required:
            raise UserError(f"{path}:{line}: {column} is empty")
        return None
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{path}:{line}: {column} {text!r} is not a number") from None
    if not math.isfinite(value):
        if required:
            raise UserError(f"{path}:{line}: {column} {text!r} is not a finite number")
        return None  # a diverged loss (nan) is data, not a malformed log
    return value


def parse_log(log: LogFile) -> None:
    """Read and check one log into ``log.epochs``; a problem is a ``UserError`` naming path and line."""
    label = str(log.path)
    try:
        text = log.path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{label}: not a text (UTF-8) CSV file") from None
    except OSError as exc:
        raise UserError(f"{label}: cannot read it ({exc.strerror})") from None
    reader = csv.reader(text.splitlines())
    header: list[str] | None = None
    epochs: list[dict[str, Any]] = []
    try:
        for fields in reader:
            line = reader.line_num
            if not fields or all(not f.strip() for f in fields):
                continue
            if header is None:
                header = [f.strip() for f in fields]
                if header[:2] != ["epoch", "elapsed"]:
                    raise UserError(
                        f"{label}:{line}: header {','.join(header)!r} does not start with epoch,elapsed"
                    )
                continue
            if len(fields) != len(header):
                raise UserError(f"{label}:{line}: {len(fields)} fields where the header has {len(header)}")
            row = dict(zip(header, fields))
            try:
                epoch = int(row["epoch"].strip())
            except ValueError:
                raise UserError(f"{label}:{line}: epoch {row['epoch'].strip()!r} is not a whole number") from None
            if epoch != len(epochs):
                raise UserError(f"{label}:{line}: epoch {epoch} where epoch {len(epochs)} was expected")
            elapsed = _float(label, line, "elapsed", row["elapsed"], required=True)
            assert elapsed is not None
            if elapsed <= 0:
                raise UserError(f"{label}:{line}: elapsed {row['elapsed'].strip()!r} must be greater than zero")
            loss = _float(label, line, "loss", row["loss"], required=False) if "loss" in row else None
            acc = _float(label, line, "acc", row["acc"], required=False) if "acc" in row else None
            val_loss = _float(label, line, "val_loss", row["val_loss"], required=False) if "val_loss" in row else None
            val_acc = _float(label, line, "val_acc", row["val_acc"], required=False) if "val_acc" in row else None
            # every metric the log gives, under the names it logged them (as a run's epochs keep fit's logs)
            logged = {"loss": loss, "acc": acc, "val_loss": val_loss, "val_acc": val_acc}
            epochs.append({"epoch": epoch + 1, "elapsed_s": elapsed, "loss": loss, "accuracy": acc,
                           "val_loss": val_loss, "val_accuracy": val_acc,
                           "metrics": {k: v for k, v in logged.items() if v is not None} or None})
    except csv.Error as exc:
        raise UserError(f"{label}:{reader.line_num}: not valid CSV ({exc})") from None
    if header is None:
        raise UserError(f"{label}:1: empty file: expected a header epoch,elapsed,... and one line per epoch")
    if not epochs:
        raise UserError(f"{label}:2: no epochs after the header")
    log.epochs = epochs


def _metrics_json(metrics: dict[str, float] | None) -> str | None:
    return json.dumps(metrics, sort_keys=True) if metrics else None


def _machine_row(machine: dict[str, Any]) -> dict[str, Any]:
    return {
        "fingerprint": machine["fingerprint"],
        "hostname": None,
        "cpu_model": machine.get("cpu_model"),
        "cpu_vendor": machine.get("cpu_vendor"),
        "arch": machine.get("arch"),
        "flags": "",
        "isa": json.dumps({}),
        "logical_cpus": machine.get("logical_cpus"),
        "info": json.dumps(machine, sort_keys=True),
        "created_at": now(),
    }


def _run_row(machine_id: int, log: LogFile) -> dict[str, Any]:
    n = len(log.epochs)
    total = math.fsum(e["elapsed_s"] for e in log.epochs)
    mean = total / n
    settings = {
        "source": STUDY,
        "source_url": SOURCE_URL,
        "log": log.rel,
        "workload": log.workload,
        "device": log.device,
        "build": log.build,
        "vcpus": log.vcpus,
        "epochs": n,
        "total_time_s": total,
        "epoch_time": "mean of all logged epochs (the study summed every epoch)",
    }
    if log.device == "gpu":
        platform = "GCE n1-standard-1 + NVIDIA Tesla K80, TensorFlow 1.2 (GPU)"
    elif log.build == "pip":
        platform = f"GCE {log.vcpus} Skylake vCPUs, TensorFlow 1.2 from pip"
    else:
        platform = f"GCE {log.vcpus} Skylake vCPUs, TensorFlow 1.2 compiled with SSE4.2/AVX/FMA"
    software = {"tf_version": TF_VERSION, "keras_backend": "tensorflow", "platform": platform,
                "source": SOURCE_URL,
                # What the study says its compiled build added; TF 1.2 itself was not probed.
                "compiled_for_per_study": "SSE4.2 AVX FMA" if log.build == "compiled" else None}
    stamp = now()
    return {
        "uuid": log.uuid, "machine_id": machine_id, "study": STUDY, "status": "ok", "exit_code": 0,
        "workload": log.workload, "device": log.device, "build": log.build, "vcpus": log.vcpus,
        "epochs": n, "timed_epochs": n, "data": "real", "repeat": 0, "projected": 0,
        "settings": json.dumps(settings, sort_keys=True), "software": json.dumps(software, sort_keys=True),
        "tf_version": TF_VERSION, "keras_backend": "tensorflow", "tf_missing_isa": None,
        "epoch_time_s": mean, "measured_epoch_time_s": mean,  # the mean: x epochs = the study's total
        # the validation the last epoch reached, as a measured run's (the study validated after every epoch)
        "val_loss": log.epochs[-1]["val_loss"], "val_accuracy": log.epochs[-1]["val_accuracy"],
        "created_at": stamp, "finished_at": stamp,
    }


@dataclass
class Logs:
    root: Path
    files: list[LogFile]
    skipped: list[str]


def read_logs(logs_dir: str | Path) -> Logs:
    """Find, read and check every log under ``logs_dir`` (nothing is written)."""
    root = resolve_logs_dir(logs_dir)
    files, skipped = discover(root)
    if not files:
        raise UserError(
            f"{root}: no study logs found: expected gpu/<workload>_tensorflow.csv and "
            "cpu-pip|cpu-compiled/cpuN/<workload>_tensorflow.csv"
        )
    for log in files:
        parse_log(log)
    return Logs(root, files, skipped)


def write_logs(store: Store, logs: Logs) -> ImportResult:
    """Store checked logs in one transaction; runs already imported (same uuid) are left alone."""
    added = present = epochs = filled = 0
    with store.transaction():
        machines: dict[str, int] = {}
        for log in logs.files:
            if store.has_run(log.uuid):
                present += 1
                filled += _fill_validation(store, store.run_id_of(log.uuid), log)
                continue
            machine = GPU_MACHINE if log.device == "gpu" else CPU_MACHINE
            fp = machine["fingerprint"]
            if fp not in machines:
                known = store.find_machine(fp)
                machines[fp] = known if known is not None else store.insert_machine_row(_machine_row(machine))
            run_id = store.insert_run_row(_run_row(machines[fp], log))
            epochs += store.insert_epoch_rows(run_id, ({**e, "warmup": 0, "metrics": _metrics_json(e["metrics"])}
                                                       for e in log.epochs))
            added += 1
    return ImportResult(logs.root, added, present, epochs, logs.skipped, sorted({l.workload for l in logs.files}),
                        filled)


def _fill_validation(store: Store, run_id: int, log: LogFile) -> int:
    """Fill in the validation of a run imported before it was kept (its epochs' ``val_loss``, ``val_accuracy``
    and ``metrics``, and the run's last), where none of it is stored; returns 1 when a validation value was
    filled in, else 0 (a log without one, as text_generator_keras's, gets only its ``metrics``). Nothing stored
    is replaced."""
    conn = store.conn
    has = conn.execute("""SELECT (SELECT COUNT(*) FROM epochs WHERE run_id = ? AND (val_loss IS NOT NULL OR
        val_accuracy IS NOT NULL OR metrics IS NOT NULL)) + (SELECT COUNT(*) FROM runs WHERE id = ? AND
        (val_loss IS NOT NULL OR val_accuracy IS NOT NULL))""", (run_id, run_id)).fetchone()[0]
    if has or not any(e["val_loss"] is not None or e["val_accuracy"] is not None or e["metrics"] for e in log.epochs):
        return 0
    for e in log.epochs:
        conn.execute("UPDATE epochs SET val_loss = ?, val_accuracy = ?, metrics = ? WHERE run_id = ? AND epoch = ?",
                     (e["val_loss"], e["val_accuracy"], _metrics_json(e["metrics"]), run_id, e["epoch"]))
    last = log.epochs[-1]
    conn.execute("UPDATE runs SET val_loss = ?, val_accuracy = ? WHERE id = ?",
                 (last["val_loss"], last["val_accuracy"], run_id))
    return int(any(e["val_loss"] is not None or e["val_accuracy"] is not None for e in log.epochs))
