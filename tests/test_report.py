"""`cpustudy report`: summary.csv values, baselines and their fallbacks, charts and the report page.

Databases are written through the store's real API (no TensorFlow) or imported from the invented 2017-style
logs in tests/fixtures/woolf2017/. Charts render at low dpi, PNG only except in one test.
"""

from __future__ import annotations

import csv
import glob
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from cpustudy import cli
from cpustudy.analysis import pricing, summary
from cpustudy.report import figures, findings, theme
from cpustudy.errors import UserError
from cpustudy.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "woolf2017" / "logs"
CPU8 = 0.060 * 1.0607  # the study's preemptible n1-highcpu-8 rate with the Skylake premium
GPU = 0.745  # n1-standard-1 + K80


def read_summary(path: Path) -> dict[tuple, dict[str, str]]:
    with open(path, newline="") as f:
        return {(r["study"], r["workload"], r["label"]): r for r in csv.DictReader(f)}


def add_run(store, machine, workload, build, vcpus, epoch_times, *, device="cpu", study="cpustudy",
            status="ok", projected=False, software=None, uuid=None, repeat=0, **config):
    """One measured run as the runner stores it: a warm-up epoch, timed epochs, their median; ``config``
    adds to its stored settings (e.g. ``build_family``)."""
    run = store.start_run(machine, {
        "workload": workload, "build": build, "vcpus": vcpus, "device": device, "study": study,
        "epochs": len(epoch_times) + 1, "data": "synthetic", "repeat": repeat, "uuid": uuid, **config,
    })
    store.add_epoch(run, {"epoch": 1, "elapsed_s": 99.0, "warmup": True})
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


@pytest.fixture(scope="module")
def woolf_report(tmp_path_factory):
    """The fixtures imported and reported once, into the default folder reports/woolf2017/."""
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
    return db, base / "reports" / "woolf2017"


def test_woolf_report_matches_hand_computed_values(woolf_report):
    _, out = woolf_report
    s = read_summary(out / "summary.csv")
    pip8 = s[("woolf2017", "mnist_mlp", "cpu8pip")]
    assert float(pip8["total_time_s"]) == pytest.approx(21.0)
    assert float(pip8["epoch_time_s"]) == pytest.approx(7.0)
    assert int(pip8["epochs"]) == 3 and int(pip8["n_runs"]) == 1
    assert float(pip8["time_rel_baseline"]) == pytest.approx(3.0)
    assert float(pip8["cost_usd"]) == pytest.approx(21.0 * CPU8 / 3600)
    assert float(pip8["cost_rel_baseline"]) == pytest.approx(21.0 * CPU8 / (7.0 * GPU))
    assert float(pip8["cost_per_epoch_usd"]) == pytest.approx(7.0 * CPU8 / 3600)
    assert pip8["price_kind"] == "spot" and pip8["instance"] == "gcp-2017:n1-highcpu-8"
    assert pip8["baseline"] == "gpu" and pip8["baseline_kind"] == "gpu" and pip8["projected"] == "False"
    cmp16 = s[("woolf2017", "mnist_mlp", "cpu16cmp")]
    assert float(cmp16["time_rel_baseline"]) == pytest.approx(10.0 / 7.0)
    assert float(cmp16["cost_rel_baseline"]) == pytest.approx(10.0 * 2 * CPU8 / (7.0 * GPU))
    assert float(cmp16["speedup_vs_fewest_vcpus"]) == pytest.approx(14.0 / 10.0)
    assert float(cmp16["parallel_efficiency"]) == pytest.approx(14.0 / 10.0 / 2)
    assert float(cmp16["build_speedup_vs_stock"]) == pytest.approx(14.0 / 10.0)
    gpu = s[("woolf2017", "mnist_mlp", "gpu")]
    assert float(gpu["time_rel_baseline"]) == 1.0 and float(gpu["cost_rel_baseline"]) == 1.0
    assert float(gpu["price_usd_per_hour"]) == pytest.approx(GPU) and gpu["price_kind"] == "on-demand"
    assert float(s[("woolf2017", "text_generator_keras", "cpu8cmp")]["time_rel_baseline"]) == pytest.approx(2.5)
    assert float(s[("woolf2017", "lstm_text_generation", "cpu8pip")]["time_rel_baseline"]) == pytest.approx(3.0)
    assert len(s) == 12
    header = next(csv.reader(open(out / "summary.csv")))
    for col in ("workload", "device", "vcpus", "build", "epochs", "total_time_s", "epoch_time_s", "cost_usd",
                "time_rel_baseline", "cost_rel_baseline", "projected", "epoch_time_iqr_s", "n_runs"):
        assert col in header


def test_woolf_fixture_bars_follow_the_studys_formulas(woolf_report):
    """Every CPU bar from the raw CSVs with the study's formulas (sum of elapsed; rates 8/16 vCPUs =
    1x/2x the preemptible n1-highcpu-8 rate; GPU 0.745 USD/h), independently of cpustudy's code."""
    _, out = woolf_report
    s = read_summary(out / "summary.csv")

    def total(path):
        with open(path, newline="") as f:
            return sum(float(r["elapsed"]) for r in csv.DictReader(f))

    checked = 0
    for gpu_log in glob.glob(str(FIXTURES / "gpu" / "*_tensorflow.csv")):
        workload = Path(gpu_log).name[: -len("_tensorflow.csv")]
        for folder, short in (("cpu-pip", "pip"), ("cpu-compiled", "cmp")):
            for v in (8, 16):
                log = FIXTURES / folder / f"cpu{v}" / f"{workload}_tensorflow.csv"
                if not log.exists():
                    continue
                t = total(log) / total(gpu_log)
                c = total(log) * CPU8 * (v // 8) / (total(gpu_log) * GPU)
                row = s[("woolf2017", workload, f"cpu{v}{short}")]
                assert abs(float(row["time_rel_baseline"]) - t) < 1e-9
                assert abs(float(row["cost_rel_baseline"]) - c) < 1e-9
                checked += 1
    assert checked == 9


def test_woolf_report_writes_charts_and_a_self_contained_page(woolf_report):
    _, out = woolf_report
    for w in ("mnist_mlp", "text_generator_keras", "lstm_text_generation"):
        for metric in ("time", "cost"):
            assert (out / f"woolf2017-{w}-{metric}.png").stat().st_size > 1000
    for stem in ("speedup", "build-heatmap", "time-vs-cost"):
        assert (out / f"woolf2017-{stem}.png").is_file()
    assert not (out / "then-vs-now.png").exists()  # only one study in the database
    page = (out / "index.html").read_text()
    assert page.count("data:image/png;base64,") == 9
    assert "<script" not in page and "<link" not in page and not re.search(r"""(src|href)=["']https?:""", page)
    assert "8 vCPUs compiled is the cheapest configuration for mnist_mlp: " in page
    ratio = 14.0 * CPU8 / (7.0 * GPU)
    assert f"{ratio:.2f}× the GPU&#x27;s cost at 2.00× its time" in page
    assert "GCE Skylake (2017)" in page and "GCE n1-standard-1 + Tesla K80 (2017)" in page  # machines
    assert "gcp-2017:n1-highcpu-16" in page  # prices used
    md = (out / "report.md").read_text()
    for image in re.findall(r"\]\(([^)]+\.png)\)", md):
        assert (out / image).is_file()
    assert "## Findings" in md and "| cpu8pip |" in md


def test_local_cpu_only_report_uses_a_labelled_fallback_baseline(run_cli, tmp_path, monkeypatch):
    db = make_local_db(tmp_path / "local.sqlite")
    monkeypatch.chdir(tmp_path)
    r = run_cli("report", "--db", db, "--dpi", "30")  # PNG and SVG
    assert r.code == 0, r.err
    out = tmp_path / "reports" / "local"  # the database's name: not an imported study
    assert "fallback baseline cpu1 tf" in r.err
    s = read_summary(out / "summary.csv")
    base = s[("cpustudy", "mnist_mlp", "cpu1 tf")]
    assert base["baseline"] == "cpu1 tf" and base["baseline_kind"] == "fallback"
    assert "no GPU run" in base["baseline_note"]
    assert float(base["total_time_s"]) == pytest.approx(4.0 * 20)  # epoch time x the default 20 epochs
    tf2 = s[("cpustudy", "mnist_mlp", "cpu2 tf")]
    assert int(tf2["n_runs"]) == 3  # the failed run is not counted
    assert float(tf2["epoch_time_s"]) == pytest.approx(2.5)
    assert float(tf2["epoch_time_iqr_s"]) == pytest.approx(0.5)
    assert float(tf2["time_rel_baseline"]) == pytest.approx(50.0 / 80.0)
    spot = pricing.Catalog.load().instance("gcp:n2-highcpu-2").spot
    assert float(tf2["cost_usd"]) == pytest.approx(50.0 * spot / 3600)
    assert float(tf2["cost_per_million_samples_usd"]) == pytest.approx(spot / 3600 * 1e6 / (60000 / 2.5))
    assert "next larger" in base["price_note"]  # no 1-vCPU n2-highcpu: priced as n2-highcpu-2
    assert float(base["cost_rel_baseline"]) == 1.0
    assert float(s[("cpustudy", "mnist_mlp", "cpu2 tf-eigen")]["build_speedup_vs_stock"]) == pytest.approx(50 / 40)
    cnn = s[("cpustudy", "mnist_cnn", "cpu1 tf")]
    assert cnn["projected"] == "True" and float(cnn["total_time_s"]) == pytest.approx(120.0)
    page = (out / "index.html").read_text()
    assert "Fallback baseline" in page and "projected" in page
    assert (out / "cpustudy-mnist_mlp-time.svg").read_text().lstrip().startswith("<?xml")
    assert (out / "cpustudy-build-heatmap.png").is_file()


@pytest.fixture(scope="module")
def local_analysis(tmp_path_factory):
    db = make_local_db(tmp_path_factory.mktemp("local") / "local.sqlite")
    with Store.read(db) as s:
        return summary.analyze(s, summary.Options())


def test_figures_say_which_baseline(local_analysis):
    fig = figures.fig_time_relative(local_analysis, "cpustudy", "mnist_mlp")
    assert "relative to cpu1 tf" in fig.labels.title
    assert fig.labels.subtitle.startswith("Fallback baseline (no GPU run of mnist_mlp)")
    cost = figures.fig_cost_relative(local_analysis, "cpustudy", "mnist_mlp")
    assert "Training cost of mnist_mlp" in cost.labels.title and "spot rates" in cost.labels.caption
    cnn = figures.fig_time_relative(local_analysis, "cpustudy", "mnist_cnn")
    assert list(cnn.data["bar"]) == ["cpu1 tf*"] and "projected" in cnn.labels.caption
    facts = findings.findings(local_analysis)
    assert ("2 vCPUs tf-eigen is the cheapest configuration for mnist_mlp: 0.50× the cost of 1 vCPU tf (the "
            "fallback baseline, no GPU run of mnist_mlp) at 0.50× its time.") in facts
    assert "Only one configuration of mnist_cnn was measured: 1 vCPU tf (projected)." in facts
    assert figures.fig_speedup(local_analysis, "cpustudy").data["workload"].unique().tolist() == ["mnist_mlp"]


def test_requested_baseline_and_its_fallback(tmp_path):
    db = make_local_db(tmp_path / "local.sqlite")
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options(baseline="tf@2"))
    tf1 = a.summary[(a.summary["workload"] == "mnist_mlp") & (a.summary["label"] == "cpu1 tf")].iloc[0]
    assert tf1["time_rel_baseline"] == pytest.approx(80.0 / 50.0) and tf1["baseline_kind"] == "requested"
    cnn = a.baselines[("cpustudy", "mnist_cnn")]
    assert cnn.kind == "fallback" and "tf@2 not measured" in cnn.note and cnn.label == "cpu1 tf"


@pytest.mark.parametrize(
    "args,message",
    [
        (["--baseline", "gpu"], "no GPU runs in the results"),
        (["--baseline", "tf@64"], "--baseline tf@64: no such configuration"),
        (["--baseline", "banana"], "write gpu, or BUILD@VCPUS"),
        (["--deadline", "-5"], "must be a positive number"),
        (["--study", "nope"], "no finished runs of study 'nope'"),
        (["--gpu-instance", "gcp:nope"], "no instance 'gcp:nope'"),
    ],
)
def test_bad_report_options_are_one_line_errors(run_cli, tmp_path, args, message):
    db = make_local_db(tmp_path / "local.sqlite")
    r = run_cli("report", "--db", db, "--out", tmp_path / "out", *args)
    assert r.code == 2
    assert r.err.count("\n") == 1 and message in r.err and "Traceback" not in r.err
    assert not (tmp_path / "out" / "index.html").exists()


def test_empty_and_missing_databases(run_cli, tmp_path):
    empty = tmp_path / "empty.sqlite"
    Store.open(empty).close()
    r = run_cli("report", "--db", empty)
    assert r.code == 2 and "no finished runs" in r.err and r.err.count("\n") == 1
    r = run_cli("report", "--db", tmp_path / "absent.sqlite")
    assert r.code == 2 and "no database at" in r.err
    not_ours = tmp_path / "notes.sqlite"
    not_ours.write_text("hello")
    r = run_cli("report", "--db", not_ours)
    assert r.code == 2 and "not a cpustudy database" in r.err


def test_then_and_now_when_both_are_in_the_database(tmp_path):
    db = make_local_db(tmp_path / "both.sqlite")
    import_fixtures(db)
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    assert a.studies == ["woolf2017", "cpustudy"]
    fig = figures.fig_then_now(a)
    assert fig is not None
    d = fig.data
    assert set(d["workload"]) == {"mnist_mlp"}  # the one workload in both
    assert set(d["series"]) == {"2017 GPU", "2017 best CPU", "now best CPU"}
    best_2017 = d[d["series"] == "2017 best CPU"].iloc[0]
    assert best_2017["label"] == "cpu16cmp" and best_2017["total_time_s"] == pytest.approx(10.0)
    assert d[d["series"] == "now best CPU"].iloc[0]["label"] == "cpu2 tf-eigen"
    # each study keeps its own baseline: the 2017 GPU there, the fallback here
    assert a.baselines[("woolf2017", "mnist_mlp")].kind == "gpu"
    assert a.baselines[("cpustudy", "mnist_mlp")].kind == "fallback"
    facts = findings.findings(a)
    assert any(f.startswith("Woolf (2017): ") for f in facts) and any(f.startswith("cpustudy: ") for f in facts)
    assert figures.fig_time_relative(a, "woolf2017", "mnist_mlp").labels.title.endswith("relative to GPU")


def test_gpu_runs_are_the_baseline_and_priced_by_their_accelerator(tmp_path):
    db = make_local_db(tmp_path / "gpu.sqlite")
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-gpu", "cpu_model": "Host CPU", "logical_cpus": 16})
        add_run(s, m, "mnist_mlp", "tf", 8, [1.0, 1.0], device="gpu",
                software={"tf_version": "2.21.0", "gpus": ["NVIDIA H100 80GB HBM3"]})
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options(on_demand=True))
        gpu = a.summary[(a.summary["device"] == "gpu")].iloc[0]
        assert gpu["label"] == "gpu" and gpu["instance"] == "gcp:a3-highgpu-1g" and gpu["price_kind"] == "on-demand"
        b = a.baselines[("cpustudy", "mnist_mlp")]
        assert b.kind == "gpu" and b.total_time_s == pytest.approx(20.0)
        tf2 = a.summary[a.summary["label"] == "cpu2 tf"].iloc[0]
        assert tf2["time_rel_baseline"] == pytest.approx(50.0 / 20.0)
        n2 = pricing.Catalog.load().instance("gcp:n2-highcpu-2").on_demand
        h100 = pricing.Catalog.load().instance("gcp:a3-highgpu-1g").on_demand
        assert tf2["cost_rel_baseline"] == pytest.approx(50.0 * n2 / (20.0 * h100))
        assert a.baselines[("cpustudy", "mnist_cnn")].kind == "fallback"  # no GPU run of mnist_cnn
        facts = findings.findings(a)
        assert any("is the cheapest configuration for mnist_mlp: " in f and "the GPU's cost" in f for f in facts)
        # One cost basis: an instance without a spot price is not priced on the (default) spot basis ...
        a = summary.analyze(s, summary.Options(gpu_instance="aws:g6.xlarge"))
        gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
        assert "no spot price for aws:g6.xlarge" in gpu["price_note"] and gpu["cost_usd"] != gpu["cost_usd"]
        # ... and is on-demand, like every other row, with --on-demand
        a = summary.analyze(s, summary.Options(gpu_instance="aws:g6.xlarge", on_demand=True))
        gpu = a.summary[a.summary["device"] == "gpu"].iloc[0]
        assert gpu["instance"] == "aws:g6.xlarge" and gpu["price_kind"] == "on-demand"
        assert set(a.summary["price_kind"].dropna()) == {"on-demand"}
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-gpu"})
        add_run(s, m, "mnist_cnn", "tf", 8, [1.0], device="gpu")  # nothing says which GPU
    with Store.read(db) as s, pytest.raises(UserError, match="pass --gpu-instance"):
        summary.analyze(s, summary.Options())


def test_bars_are_ordered_and_coloured_like_the_study(woolf_report):
    db, _ = woolf_report
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options(deadline=45))
    fig = figures.fig_time_relative(a, "woolf2017", "mnist_mlp")
    # coord_flip draws the last level on top: gpu first, then 16 vCPUs, pip before compiled
    assert list(fig.data["bar"].cat.categories)[::-1] == ["gpu", "cpu16pip", "cpu16cmp", "cpu8pip", "cpu8cmp"]
    hline = [l for l in fig.layers if type(l.geom).__name__ == "geom_hline"]
    assert hline and hline[0].geom.aes_params["linetype"] == "dashed"
    colours = theme.colour_map(a.summary[a.summary["workload"] == "mnist_mlp"])
    assert colours["gpu"] in theme.FAMILIES["gpu"]
    assert colours["cpu8pip"] == theme.FAMILIES["pip"][1] and colours["cpu16pip"] == theme.FAMILIES["pip"][3]
    assert colours["cpu16cmp"] == theme.FAMILIES["compiled"][3]
    # the deadline: 45 s of training -> the cheapest configuration that finishes in time
    tc = figures.fig_time_cost(a, "woolf2017", 45)
    picks = tc.data[tc.data["pick"]]
    assert set(zip(picks["workload"], picks["label"])) == {
        ("mnist_mlp", "cpu8cmp"), ("text_generator_keras", "cpu16cmp"), ("lstm_text_generation", "gpu")}
    facts = findings.findings(a)
    assert "Within the 45 s deadline, 8 vCPUs compiled is the cheapest configuration for mnist_mlp: 14 s" in \
        " ".join(facts)
    assert "No configuration trains" not in " ".join(facts)
    with Store.read(db) as s:
        tight = findings.findings(summary.analyze(s, summary.Options(deadline=5)))
    assert "No configuration trains mnist_mlp within the 5 s deadline; the fastest, the GPU, takes 7 s." in tight
    heat = figures.fig_build_heatmap(a, "woolf2017")
    cell = heat.data[(heat.data["workload"] == "mnist_mlp") & (heat.data["vcpus"] == 8)].iloc[0]
    assert cell["build_speedup_vs_stock"] == pytest.approx(21.0 / 14.0)
    sp = figures.fig_speedup(a, "woolf2017")
    assert "ideal" in sp.labels.subtitle and sp is not None


def test_the_theme_is_a_plotnine_theme_and_every_chart_wears_it(local_analysis):
    from plotnine import theme_minimal

    assert issubclass(theme.theme_cpustudy, theme_minimal)
    big = theme.theme_cpustudy(base_size=20)
    assert big.T["plot_title"].properties["size"] == 25  # scaled from the base size, as plotnine's themes do
    fig = figures.fig_time_relative(local_analysis, "cpustudy", "mnist_mlp")
    assert isinstance(fig.theme, theme.theme_cpustudy)
    t, plain = fig.theme, theme_minimal()
    # what the cpustudy theme sets, and plotnine's theme_minimal does not
    assert t.T["plot_title"].properties["weight"] == "bold" and t.T["plot_title"].properties["ha"] == "left"
    assert t.T["strip_background"].properties["facecolor"] == "#f2f2f2"
    assert not plain.T["strip_background"].properties["visible"]
    assert not t.T["panel_grid_minor"].properties["visible"] and plain.T["panel_grid_minor"].properties["visible"]
    assert t.getp("legend_position") == "bottom" != plain.getp("legend_position")
    # ... and what the chart adds to it: bars without horizontal grid lines
    assert not t.T["panel_grid_major_y"].properties["visible"]


def test_colours_follow_the_stored_build_family(tmp_path):
    db = make_local_db(tmp_path / "families.sqlite")  # tf and tf-eigen stored no family: guessed by name
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-local"})
        add_run(s, m, "mnist_mlp", "mybuild", 1, [3.0], build_family="jax")
        add_run(s, m, "mnist_mlp", "mybuild", 2, [2.0], build_family="jax")
        add_run(s, m, "mnist_mlp", "compiled-x", 2, [2.2], build_family="torch")  # the stored family wins
        add_run(s, m, "mnist_mlp", "mybuild", 2, [1.0], device="gpu", build_family="jax",
                software={"gpus": ["NVIDIA L4"]})
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    mlp = a.summary[a.summary["workload"] == "mnist_mlp"]
    family = dict(zip(mlp["label"], mlp["build_family"]))
    assert family == {"gpu": "jax", "cpu2 tf": "pip", "cpu2 tf-eigen": "other", "cpu2 mybuild": "jax",
                      "cpu2 compiled-x": "torch", "cpu1 tf": "pip", "cpu1 tf-eigen": "other", "cpu1 mybuild": "jax"}
    colours = theme.colour_map(mlp)  # bars: the family's ramp, darker for more vCPUs
    jax, torch, pip = theme.FAMILIES["jax"], theme.FAMILIES["torch"], theme.FAMILIES["pip"]
    assert colours["cpu1 mybuild"] == jax[1] and colours["cpu2 mybuild"] == jax[3]
    assert colours["cpu2 compiled-x"] == torch[2]
    assert colours["cpu1 tf"] == pip[1] and colours["cpu2 tf"] == pip[3]
    assert colours["gpu"] in theme.FAMILIES["gpu"]  # a GPU result is drawn as one, whatever its build
    assert colours["cpu1 tf-eigen"] not in jax + torch + pip + theme.FAMILIES["gpu"]  # no known family
    legend = theme.build_colours(mlp[mlp["device"] != "gpu"])  # lines and points: one colour per build
    assert legend["mybuild"] == jax[2] and legend["compiled-x"] == torch[2] and legend["tf"] == pip[2]
    assert len(set(legend.values())) == len(legend)
    assert figures.fig_speedup(a, "cpustudy") is not None
    assert "build_family" in summary.SUMMARY_COLUMNS  # and in summary.csv


def test_builds_of_one_family_are_told_apart_in_a_legend():
    import pandas as pd

    df = pd.DataFrame({"build": ["tf", "tf-eigen", "tf-onednn", "gpu"], "device": ["cpu", "cpu", "cpu", "gpu"],
                       "build_family": ["pip", "pip", "pip", "other"]})
    pip = theme.FAMILIES["pip"]
    assert theme.build_colours(df) == {"tf": pip[2], "tf-eigen": pip[3], "tf-onednn": pip[1],
                                       "gpu": theme.FAMILIES["gpu"][2]}


def test_pareto_front_and_cheapest():
    import pandas as pd

    df = pd.DataFrame({
        "total_time_s": [10, 20, 30, 15, 40],
        "cost_usd": [5.0, 2.0, 1.0, 6.0, 3.0],
    })
    assert list(summary.pareto_front(df)) == [True, True, True, False, False]
    assert summary.cheapest(df) == 2
    assert summary.cheapest(df, deadline=25) == 1
    assert summary.cheapest(df, deadline=5) is None


def test_cli_report_does_not_import_heavy_modules():
    code = (
        "import sys; from cpustudy import cli; cli.build_parser(); "
        "print(sorted(m for m in ('pandas', 'plotnine', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("lim", [0.1, 0.5, 1.0, 1.6, 2.0, 2.2, 3.0])
def test_heatmap_legend_breaks_are_spaced_so_labels_do_not_overlap(lim):
    breaks = figures.log2_breaks(lim)
    assert 0.0 in breaks and all(abs(b) <= lim + 1e-9 for b in breaks)
    assert all(b2 - b1 >= 2 * lim / 7 - 1e-9 for b1, b2 in zip(breaks, breaks[1:]))
    if lim >= 1.0:
        assert len(breaks) >= 3  # a scale wide enough for labels on both sides has them


def test_html_and_markdown_render_one_page_model_in_the_same_order(tmp_path):
    from cpustudy.report import page as P

    (tmp_path / "a.png").write_bytes(b"\x89PNG")
    page = P.Page(title="T <1>", doc_title="doc", meta=["db x", "studies y"],
                  callouts=[P.Callout("fallback", "Careful.", "a | b"), P.Callout("note", "", "n.")],
                  sections=[P.Section("Findings", [P.Bullets(["f1", "f2"])]),
                            P.Section("Charts", [P.Charts([P.Chart("a", "alt a")])]),
                            P.Section("Tables", [P.Paragraph(["see ", P.Link("s.csv", "s.csv"), "."]),
                                                 P.Table(["h1", "h2"], [["1", "x|y"]], wide=True)])])
    md = P.to_markdown(page)
    page_html = P.to_html(page, tmp_path)
    assert re.findall(r"^## (.*)$", md, flags=re.M) == re.findall(r"<h2>(.*?)</h2>", page_html) == \
        ["Findings", "Charts", "Tables"]
    assert md.startswith("# T <1>\n\n- db x\n- studies y\n\n> **Careful.** a | b\n\n> n.\n\n## Findings\n\n- f1\n- f2\n")
    assert "![alt a](a.png)" in md and "see [s.csv](s.csv)." in md and "| 1 | x\\|y |" in md
    assert "<h1>T &lt;1&gt;</h1>" in page_html and '<p class="fallback"><strong>Careful.</strong> a | b</p>' in page_html
    assert '<p class="note">n.</p>' in page_html and "<li>f1</li><li>f2</li>" in page_html
    assert 'src="data:image/png;base64,' in page_html and 'see <a href="s.csv">s.csv</a>.' in page_html
    assert '<table class="wide">' in page_html and "<td>x|y</td>" in page_html
