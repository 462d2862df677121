"""The report's charts (cpustudy.report.figures): which baseline they say, order and colours like the
study's, then and now, time vs cost with a deadline, the heatmap's legend. Charts are inspected as
ggplot objects, not rendered."""

from __future__ import annotations

import pandas as pd
import pytest
import reportdb

from cpustudy.analysis import summary
from cpustudy.report import figures, theme
from cpustudy.store import Store


def test_figures_say_which_baseline(local_analysis):
    fig = figures.fig_time_relative(local_analysis, "cpustudy", "mnist_mlp")
    assert "relative to cpu1 tf" in fig.labels.title
    assert fig.labels.subtitle.startswith("Fallback baseline (no GPU run of mnist_mlp)")
    cost = figures.fig_cost_relative(local_analysis, "cpustudy", "mnist_mlp")
    assert "Training cost of mnist_mlp" in cost.labels.title and "spot rates" in cost.labels.caption
    cnn = figures.fig_time_relative(local_analysis, "cpustudy", "mnist_cnn")
    assert list(cnn.data["bar"]) == ["cpu1 tf*"] and "projected" in cnn.labels.caption
    assert figures.fig_speedup(local_analysis, "cpustudy").data["workload"].unique().tolist() == ["mnist_mlp"]


def test_then_and_now_when_both_are_in_the_database(tmp_path):
    db = reportdb.make_local_db(tmp_path / "both.sqlite")
    reportdb.import_fixtures(db)
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
    assert figures.fig_time_relative(a, "woolf2017", "mnist_mlp").labels.title.endswith("relative to GPU")


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
    heat = figures.fig_build_heatmap(a, "woolf2017")
    cell = heat.data[(heat.data["workload"] == "mnist_mlp") & (heat.data["vcpus"] == 8)].iloc[0]
    assert cell["build_speedup_vs_stock"] == pytest.approx(21.0 / 14.0)
    sp = figures.fig_speedup(a, "woolf2017")
    assert "ideal" in sp.labels.subtitle and sp is not None


@pytest.mark.parametrize("lim", [0.1, 0.5, 1.0, 1.6, 2.0, 2.2, 3.0])
def test_heatmap_legend_breaks_are_spaced_so_labels_do_not_overlap(lim):
    breaks = figures.log2_breaks(lim)
    assert 0.0 in breaks and all(abs(b) <= lim + 1e-9 for b in breaks)
    assert all(b2 - b1 >= 2 * lim / 7 - 1e-9 for b1, b2 in zip(breaks, breaks[1:]))
    if lim >= 1.0:
        assert len(breaks) >= 3  # a scale wide enough for labels on both sides has them


def test_speedup_labels_sit_beside_their_own_builds_point(tmp_path):
    # tf scales worse than tf-onednn (the stock build is the lower curve), so a label placed by build
    # family alone would sit on the other build's point; labels come from the points' own rows.
    with Store.open(tmp_path / "scale.sqlite") as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 4})
        for build, times in (("tf", (8.0, 6.0, 5.0)), ("tf-onednn", (8.0, 4.4, 2.6)), ("tf-eigen", (8.0, 5.0, 4.0))):
            for vcpus, t in zip((1, 2, 4), times):
                reportdb.add_run(s, m, "mnist_mlp", build, vcpus, [t, t])
    with Store.read(tmp_path / "scale.sqlite") as s:
        a = summary.analyze(s, summary.Options())
    fig = figures.fig_speedup(a, "cpustudy")
    points = fig.data.set_index(["build", "vcpus"])["speedup_vs_fewest_vcpus"]
    texts = [layer for layer in fig.layers if type(layer.geom).__name__ == "geom_text"]
    labels = pd.concat([layer.geom.data for layer in texts])
    assert len(labels) == 6  # 3 builds x the 2 counts past the first
    for r in labels.itertuples():
        point = points[(r.build, r.vcpus)]
        assert r.speedup_vs_fewest_vcpus == point  # the label's anchor is its own build's point
        others = [points[(b, r.vcpus)] for b in ("tf", "tf-onednn", "tf-eigen") if b != r.build]
        if r.va == "bottom":  # above the point: only for the highest point at that x
            assert r.label_y > point and point > max(others)
        elif r.va == "top":  # below the point: only for the lowest
            assert r.label_y < point and point < min(others)
        else:  # between the others: beside its point, to the right
            assert r.label_y == point and min(others) < point < max(others)
    tf4 = labels[(labels["build"] == "tf") & (labels["vcpus"] == 4)].iloc[0]
    assert tf4["va"] == "top" and tf4["eff"] == "40%"  # 8/5 = 1.6x of 4x ideal


def _time_cost(tmp_path, runs):
    with Store.open(tmp_path / "tc.sqlite") as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        for device, build, vcpus, t in runs:
            reportdb.add_run(s, m, "mnist_mlp", build, vcpus, [t, t], device=device)
    with Store.read(tmp_path / "tc.sqlite") as s:
        a = summary.analyze(s, summary.Options(gpu_instance="gcp:a3-highgpu-1g"))  # a checked spot price
    fig = figures.fig_time_cost(a, "cpustudy")
    path = [layer for layer in fig.layers if type(layer.geom).__name__ == "geom_path"][0]
    return fig, path.geom.data


def test_time_cost_draws_a_two_point_pareto_front_and_labels_every_dot(tmp_path):
    # The GPU is faster but dearer than 2 vCPUs, which beat 1 vCPU on both: a front of two points.
    fig, front = _time_cost(tmp_path, [("cpu", "tf", 1, 8.0), ("cpu", "tf", 2, 4.0), ("gpu", "jax-here", 1, 0.5)])
    assert sorted(front["text"]) == ["2", "GPU"]
    assert fig.labels.subtitle.startswith("Numbers: vCPUs; dashed: Pareto front")
    assert sorted(fig.data["text"]) == ["1", "2", "GPU"]  # every dot says its vCPUs (or GPU)
    texts = [layer for layer in fig.layers if type(layer.geom).__name__ == "geom_text"]
    assert texts and texts[0].geom.data is None  # the labels are drawn from the points' own frame
    assert set(fig.data["build_key"]) == {"tf", "gpu"}


def test_time_cost_does_not_promise_a_front_of_one_point(tmp_path):
    # 2 vCPUs are both faster and cheaper than 1 (a 2-vCPU VM is the smallest priced): nothing to draw.
    fig, front = _time_cost(tmp_path, [("cpu", "tf", 1, 8.0), ("cpu", "tf", 2, 3.0)])
    assert front.empty
    assert "no front to draw" in fig.labels.subtitle and "dashed" not in fig.labels.subtitle
    assert sorted(fig.data["text"]) == ["1", "2"]


def test_the_time_vs_cost_charts_labels_do_not_print_over_one_another(tmp_path):
    """Three builds at 2 vCPUs within 2 % of one another (their points all but on top of one another): drawn, no two
    point labels of a panel overlap, and each stays inside its panel (they are set apart once laid out)."""
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from plotnine import theme as p9theme

    db = tmp_path / "close.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        reportdb.add_run(s, m, "mnist_mlp", "tf", 1, [4.0, 4.0])
        for build, t in (("tf", 2.0), ("tf-eigen", 2.02), ("tf-xla", 2.04)):
            reportdb.add_run(s, m, "mnist_mlp", build, 2, [t, t])
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = (figures.fig_time_cost(a, "cpustudy") + p9theme(dpi=80)).draw()
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    labelled = [ax for ax in fig.axes if ax.texts]
    assert labelled
    for ax in labelled:
        panel = ax.get_window_extent(renderer)
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts if t.get_text()]
        for i, (a_text, a_box) in enumerate(boxes):
            assert panel.contains(a_box.x0, a_box.y0) and panel.contains(a_box.x1, a_box.y1), a_text
            for b_text, b_box in boxes[i + 1:]:
                assert not a_box.overlaps(b_box), f"{a_text!r} over {b_text!r}"
