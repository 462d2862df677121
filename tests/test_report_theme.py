"""The look (cpustudy.report.theme): the plotnine theme every chart wears, and colours by build family."""

from __future__ import annotations

import reportdb

from cpustudy.analysis import summary
from cpustudy.report import figures, theme
from cpustudy.store import Store


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
    db = reportdb.make_local_db(tmp_path / "families.sqlite")  # tf and tf-eigen stored no family: guessed by name
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-local"})
        reportdb.add_run(s, m, "mnist_mlp", "mybuild", 1, [3.0], build_family="jax")
        reportdb.add_run(s, m, "mnist_mlp", "mybuild", 2, [2.0], build_family="jax")
        reportdb.add_run(s, m, "mnist_mlp", "compiled-x", 2, [2.2], build_family="torch")  # the stored family wins
        reportdb.add_run(s, m, "mnist_mlp", "mybuild", 2, [1.0], device="gpu", build_family="jax",
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
