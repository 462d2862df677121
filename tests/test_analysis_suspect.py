"""A GPU baseline that cannot be right is marked suspect and no finding rests on it; % of peak only
against the peak of the device a run trained on. Databases are written through the store's API."""

from __future__ import annotations

from pathlib import Path

from reportdb import add_run

from cpustudy import report
from cpustudy.analysis import summary, suspect
from cpustudy.report import findings
from cpustudy.store import Store


def _db(path: Path, *, gpu_epoch: float, gpu_util: float | None, gpu_peak_device: str | None) -> Path:
    with Store.open(path) as s:
        m = s.machine_id({"fingerprint": "fp-h100", "cpu_model": "Xeon SPR", "logical_cpus": 16})
        add_run(s, m, "cifar10_cnn", "tf", 1, [100.0, 100.0])
        add_run(s, m, "cifar10_cnn", "tf", 16, [20.0, 20.0])
        run = add_run(s, m, "cifar10_cnn", "jax-here", 16, [gpu_epoch, gpu_epoch], device="gpu",
                      software={"gpus": ["NVIDIA H100 80GB HBM3"]})
        s.finish_run(run, "ok", {"epoch_time_s": gpu_epoch, "samples_per_s": 60000 / gpu_epoch,
                                 "timed_epochs": 2, "gpu_utilization": gpu_util, "peak_gflops": 1000.0,
                                 "peak_device": gpu_peak_device})
        s.conn.execute("UPDATE runs SET flops_per_sample = 1000000")
    return path


def test_a_gpu_slower_than_one_vcpu_is_suspect_and_no_finding_compares_with_it(tmp_path):
    db = _db(tmp_path / "a.sqlite", gpu_epoch=230.0, gpu_util=None, gpu_peak_device=None)
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
        (suspicion,) = suspect.gpu_suspicions(s.runs()).values()
    base = a.baselines[("cpustudy", "cifar10_cnn")]
    assert base.is_gpu and "slower than one vCPU" in base.suspect
    assert "slower than one vCPU" in suspicion
    facts = findings.findings(a)
    assert not any("faster than the GPU" in f for f in facts)
    assert any(f.startswith("Withheld for cifar10_cnn") for f in facts)
    # a GPU peak measured on the CPUs (stored before peaks named their device) gives no % of peak
    gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
    assert gpu["pct_of_peak"] != gpu["pct_of_peak"]  # NaN
    out = tmp_path / "rep"
    report.write_report(a, out, dpi=30, formats=("png",))
    md = (out / "report.md").read_text()
    assert "cifar10_cnn, gpu is suspect (the baseline" in md  # beside the baseline, in words
    assert "| suspect: slower than one vCPU" in md  # and in its row of the summary table


def test_an_idle_gpu_that_beats_every_cpu_is_believed_with_a_caveat(tmp_path):
    """An H100 at 12 % on a small model is what training it there is like, not a broken run."""
    db = _db(tmp_path / "b.sqlite", gpu_epoch=5.0, gpu_util=12.0, gpu_peak_device="gpu")
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
        assert suspect.gpu_suspicions(s.runs()) == {}
    assert a.baselines[("cpustudy", "cifar10_cnn")].suspect == ""
    gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
    assert gpu["gpu_caveat"].startswith("GPU busy only 12 % of its training time")
    assert any("GPU busy only 12 %" in n and "larger batch" in n for n in findings.suspect_notes(a))
    assert not any(f.startswith("Withheld") for f in findings.findings(a))


def test_an_idle_gpu_that_loses_to_cpus_is_suspect(tmp_path):
    db = _db(tmp_path / "d.sqlite", gpu_epoch=40.0, gpu_util=12.0, gpu_peak_device="gpu")
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
        (suspicion,) = suspect.gpu_suspicions(s.runs()).values()
    assert "trained faster while the GPU was busy only 12 %" in a.baselines[("cpustudy", "cifar10_cnn")].suspect
    assert "busy only 12 %" in suspicion
    assert not any("CPUs trained faster than the GPU" in f for f in findings.findings(a))


def test_a_busy_gpu_that_loses_to_cpus_is_a_finding(tmp_path):
    """With its utilisation recorded and faster than one vCPU, a GPU slower than 16 vCPUs is believed."""
    db = _db(tmp_path / "c.sqlite", gpu_epoch=40.0, gpu_util=85.0, gpu_peak_device="gpu")
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    assert a.baselines[("cpustudy", "cifar10_cnn")].suspect == ""
    assert any("CPUs trained faster than the GPU for: cifar10_cnn" in f for f in findings.findings(a))
    gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
    assert gpu["pct_of_peak"] == 100 * (60000 / 40.0) * 1e6 / 1e9 / 1000.0  # against the GPU's own peak
