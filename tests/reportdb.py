"""Databases for the analysis and report tests, written through the store's real API (no TensorFlow) or
imported from the invented 2017-style logs in tests/fixtures/woolf2017/; and the reports and analyses
several test modules share, built once per test session."""

from __future__ import annotations

import csv
import os
import statistics
from pathlib import Path
from typing import Any

from cpustudy import cli
from cpustudy.analysis import summary
from cpustudy.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "woolf2017" / "logs"
CPU8 = 0.060 * 1.0607  # the study's preemptible n1-highcpu-8 rate with the Skylake premium
GPU = 0.745  # n1-standard-1 + K80


def read_summary(path: Path) -> dict[tuple, dict[str, str]]:
    with open(path, newline="") as f:
        return {(r["study"], r["workload"], r["label"]): r for r in csv.DictReader(f)}


def add_run(store, machine, workload, build, vcpus, epoch_times, *, device="cpu", study="cpustudy",
            status="ok", projected=False, software=None, uuid=None, repeat=0, warmup_s=None, **config):
    """One measured run as the runner stores it: a warm-up epoch (``warmup_s``; default: as long as the first
    timed epoch, no tracing), timed epochs, their median; ``config`` adds to its stored settings (e.g.
    ``build_family``)."""
    run = store.start_run(machine, {
        "workload": workload, "build": build, "vcpus": vcpus, "device": device, "study": study,
        "epochs": len(epoch_times) + 1, "data": "synthetic", "repeat": repeat, "uuid": uuid, **config,
    })
    store.add_epoch(run, {"epoch": 1, "elapsed_s": epoch_times[0] if warmup_s is None else warmup_s, "warmup": True})
    for i, t in enumerate(epoch_times):
        store.add_epoch(run, {"epoch": i + 2, "elapsed_s": t, "samples_per_s": 60000 / t})
    if software:
        store.set_software(run, software)
    median = statistics.median(epoch_times)
    store.finish_run(run, status, {"epoch_time_s": median, "measured_epoch_time_s": median,
                                   "samples_per_s": 60000 / median, "timed_epochs": len(epoch_times),
                                   "projected": projected})
    return run


def make_local_db(path: Path) -> Path:
    """CPU-only results of this project's own kind (builds tf and tf-eigen at 1 and 2 vCPUs)."""
    with Store.open(path) as s:
        m = s.machine_id({"fingerprint": "fp-local", "cpu_model": "Test CPU @ 2.0GHz", "logical_cpus": 2,
                          "hostname": "testbox"})
        add_run(s, m, "mnist_mlp", "tf", 1, [4.0, 4.0])
        for rep, t in enumerate((2.5, 3.0, 2.0)):  # three repeats: median 2.5, IQR 0.5
            add_run(s, m, "mnist_mlp", "tf", 2, [t, t], repeat=rep)
        add_run(s, m, "mnist_mlp", "tf-eigen", 1, [3.2])
        add_run(s, m, "mnist_mlp", "tf-eigen", 2, [2.0])
        add_run(s, m, "mnist_mlp", "tf", 2, [0.1], status="failed")  # never used
        add_run(s, m, "mnist_cnn", "tf", 1, [10.0], projected=True)
    return path


def import_fixtures(db: Path) -> None:
    assert cli.main(["import", "woolf2017", str(FIXTURES), "--db", str(db)]) == 0


_shared: dict[str, Any] = {}


def woolf_report(tmp_path_factory) -> tuple[Path, Path]:
    """The fixtures imported and reported once, into the default folder reports/woolf2017/: (database,
    report folder)."""
    if "woolf" not in _shared:
        base = tmp_path_factory.mktemp("woolf")
        db = base / "study.sqlite"
        import_fixtures(db)
        cwd = os.getcwd()
        os.chdir(base)
        try:
            code = cli.main(["report", "--db", str(db), "--no-svg", "--dpi", "40"])
        finally:
            os.chdir(cwd)
        assert code == 0
        _shared["woolf"] = (db, base / "reports" / "woolf2017")
    return _shared["woolf"]


def local_analysis(tmp_path_factory) -> summary.Analysis:
    """The analysis of make_local_db's results, with the default options."""
    if "local" not in _shared:
        db = make_local_db(tmp_path_factory.mktemp("local") / "local.sqlite")
        with Store.read(db) as s:
            _shared["local"] = summary.analyze(s, summary.Options())
    return _shared["local"]
