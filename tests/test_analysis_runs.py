"""Stored runs as the analysis reads them (cpustudy.analysis.runs): the reported build name says which
settings differed from the defaults."""

from __future__ import annotations

from cpustudy.analysis.runs import setting_tags


def build_with_setting(run: dict) -> str:
    """The build name plus its setting tags, as a configuration's name begins: ``tf+tfdata``, ``tf+b64``."""
    return "+".join([str(run.get("build")), *setting_tags(run)])


def test_settings_show_in_the_reported_build():
    base = {"study": "cpustudy", "workload": "mnist_mlp", "build": "tf", "vcpus": 2, "intra_threads": 2,
            "inter_threads": 2, "batch_size": 128, "input_pipeline": "numpy", "settings": "{}"}
    assert build_with_setting(base) == "tf"
    assert build_with_setting({**base, "input_pipeline": "tfdata"}) == "tf+tfdata"
    assert build_with_setting({**base, "batch_size": 64, "intra_threads": 1}) == "tf+b64+t1/2"
    assert build_with_setting({**base, "build": "tf-eigen",
                               "settings": '{"env": {"TF_ENABLE_ONEDNN_OPTS": "0"}}'}) == "tf-eigen"
    assert build_with_setting({**base, "settings": '{"env": {"TF_ENABLE_ONEDNN_OPTS": "1"}}'}) == \
        "tf+TF_ENABLE_ONEDNN_OPTS=1"
    assert build_with_setting({**base, "settings": '{"tuning_id": 3}'}) == "tf+tuned"


def test_build_family_is_the_stored_one_else_guessed_from_the_name():
    from cpustudy.analysis.runs import build_family

    assert build_family({"build": "mybuild", "settings": '{"build_family": "jax"}'}) == "jax"
    assert build_family({"build": "tf", "settings": "{}"}) == "pip"  # stored before runs kept their family
    assert build_family({"build": "compiled", "study": "woolf2017", "settings": None}) == "compiled"
    assert build_family({"build": "tf-eigen", "settings": "not JSON"}) == "other"


def test_records_are_to_dicts_records_cell_for_cell_and_type_for_type():
    """``frames.records`` reads a frame a column at a time, not through pandas' ``to_dict("records")`` (which takes
    each column with ``iloc``): the same cells, of the same types, on the runs of a stored database and on every kind
    of column pandas boxes (objects, pandas' own strings and nullable integers, datetimes, missing values)."""
    import math
    from pathlib import Path

    import numpy as np
    import pandas as pd

    from cpustudy.analysis.frames import records
    from cpustudy.analysis.runs import load_runs
    from cpustudy.store import Store

    def same(a: object, b: object) -> bool:
        if a is b:  # None, pd.NA, pd.NaT (which equal nothing)
            return True
        if type(a) is not type(b):
            return False
        if isinstance(a, float) and math.isnan(a):
            return math.isnan(b)  # type: ignore[arg-type]
        return bool(a == b)

    with Store.read(Path(__file__).parents[1] / "reports" / "zen3-later-check" / "later-check.sqlite") as s:
        runs = load_runs(s)
    mixed = pd.DataFrame({
        "i": np.arange(3, dtype="int64"), "f": [1.5, np.nan, 2.0], "b": [True, False, True],
        "o": ["a", None, np.float64(2.5)], "s": pd.array(["x", None, "z"], dtype="string"),
        "n": pd.array([1, None, 3], dtype="Int64"), "t": pd.to_datetime(["2026-11-29", None, "2026-11-30"]),
        "d": pd.to_timedelta([1, 2, None], unit="s"), "u": [np.int32(4), np.bool_(True), pd.NA]})
    for df in (runs, runs.head(2), runs.iloc[:0], mixed, mixed[[]]):
        want, got = df.to_dict("records"), records(df)
        assert len(got) == len(want) and len(want) == len(df)
        for w, g in zip(want, got):
            assert list(g) == list(w) and all(same(w[k], g[k]) for k in w), (w, g)
