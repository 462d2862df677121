"""One identity for a configuration (cpustudy.identity): the report's summary, compare's stored answer and
recommend group runs through its views, on real databases committed under reports/. No TensorFlow."""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path

import pytest

from cpustudy import identity
from cpustudy.analysis import recommend, summary, totarget
from cpustudy.identity import Configuration
from cpustudy.store import Store

REPORTS = Path(__file__).resolve().parent.parent / "reports"
# A raced comparison of four settings (fp32/bf16 x batch 64/256) of examples/fashion_mnist_cnn.py on a 2-core
# Emerald Rapids VM: seeds trained to 0.86 at 2 vCPUs, capped speed probes at 1 and 2 vCPUs.
EXHAUSTIVE = REPORTS / "emr2-settings" / "exhaustive.sqlite"
DATABASES = [EXHAUSTIVE, REPORTS / "gnr2-decision" / "four-settings.sqlite",
             REPORTS / "emr2-main-job-0.2" / "cpustudy.sqlite", REPORTS / "zen3-calibration" / "cpustudy.sqlite"]


def _copy(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / path.name
    shutil.copy(path, out)
    return out


@pytest.mark.parametrize("db", DATABASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_summary_row_is_a_union_of_identity_groups(db, tmp_path):
    """No two runs of one identity (its ``run`` view: everything but the seed, repeat and target) land in two
    rows of the report's summary: the summary only ever pools whole identity groups."""
    with Store.read(_copy(db, tmp_path)) as store:
        a = summary.analyze(store, summary.Options())
        runs = store.runs(status="ok")
    row_of = {run_id: i for i, ids in zip(a.summary.index, a.summary["run_ids"]) for run_id in ids}
    assert row_of, "the summary names no run"
    split = {k: sorted({row_of[r["id"]] for r in g if r["id"] in row_of})
             for k, g in identity.group(runs, "run").items()}
    assert all(len(rows) <= 1 for rows in split.values()), [k for k, rows in split.items() if len(rows) > 1]
    # and the summary does pool: some row holds more than one identity group (seeds' full epochs beside probes)
    groups_per_row: dict[int, set] = {}
    for k, g in identity.group(runs, "run").items():
        for r in g:
            if r["id"] in row_of:
                groups_per_row.setdefault(row_of[r["id"]], set()).add(k)
    assert max(len(v) for v in groups_per_row.values()) >= 1


def test_compare_recommend_and_the_report_name_the_same_candidates_with_the_same_billed_time(tmp_path):
    from cpustudy.prices import Catalog

    with Store.read(_copy(EXHAUSTIVE, tmp_path)) as store:
        a = summary.analyze(store, summary.Options())
        answer = totarget.stored(store, "fashion_mnist_cnn", 0.86, catalog=Catalog.load(None))
        runs = {r["id"]: r for r in store.runs(status="ok")}
    assert answer is not None
    measured = [r for r in answer.results if r.speed_runs]
    assert len(measured) == 2  # tf at 1 and at 2 vCPUs, speed-probed in the answer's setting
    s = a.summary
    for r in measured:
        # each candidate's runs lie in exactly one summary row, which states compare's billed time
        rows = [i for i, ids in zip(s.index, s["run_ids"]) if set(r.run_ids) & set(ids)]
        assert len(rows) == 1, (r.candidate, rows)
        row = s.loc[rows[0]]
        # what the row leaves out are capped probes of a configuration it has full epochs of (the full epochs are
        # its measurement; compare takes both as speed samples)
        left = set(r.run_ids) - set(row["run_ids"])
        assert all(runs[i]["projected"] and identity.same(runs[i], runs[row["run_ids"][0]], "setting") for i in left)
        assert row["time_to_target_s"] == pytest.approx(r.time_to_target_s)
        assert (row["target_pi_low"], row["target_pi_high"]) == pytest.approx((r.time_low_s, r.time_high_s))
        assert row["target_time_min"] <= row["target_time_max"] or math.isnan(row["target_time_min"])
    # recommend chooses among the summary's rows and states their billed time: compare's where compare answered
    # for the row's setting (with its prediction interval), the runs' own median elsewhere (said in range_is)
    answered = {i: r for r in measured for i in r.run_ids}
    compared = dataclasses.replace(a, summary=s[s["target_basis"].str.startswith("one new training")])
    choices = [c for analysis in (a, compared) for c in recommend.recommend(analysis, "fashion_mnist_cnn",
                                                                               target=0.86).choices]
    assert any(i in answered for c in choices for i in c.run_ids)  # both kinds of row are chosen
    for c in choices:
        (row,) = [row for _, row in s.iterrows() if set(row["run_ids"]) == set(c.run_ids)]
        assert c.time_s == pytest.approx(row["time_to_target_s"])
        mine = {answered[i].candidate for i in c.run_ids if i in answered}
        if mine:
            (r,) = [r for r in measured if r.candidate in mine]
            assert c.time_s == pytest.approx(r.time_to_target_s) and "prediction interval" in c.range_is
            assert (c.low_s, c.high_s) == pytest.approx((r.time_low_s, r.time_high_s))
        else:
            assert c.range_is == "its runs' range"
            assert (c.low_s, c.high_s) == (row["target_time_min"], row["target_time_max"])


def test_compare_pools_seeds_and_speed_runs_through_the_identity_views(tmp_path):
    """The stored answer's seeds are one ``convergence`` group, and every speed run it used is the same as its
    reference configuration in the ``setting`` view."""
    from cpustudy.prices import Catalog

    with Store.read(_copy(EXHAUSTIVE, tmp_path)) as store:
        answer = totarget.stored(store, "fashion_mnist_cnn", 0.86, catalog=Catalog.load(None))
        runs = {r["id"]: r for r in store.runs(status="ok")}
    assert answer is not None
    seeds = [runs[s.run_id] for s in answer.seeds]
    assert len({identity.key(r, "convergence") for r in seeds}) == 1
    ref = Configuration.from_row(seeds[0])
    used = [runs[i] for r in answer.results for i in r.run_ids]
    assert used and all(identity.same(r, ref.columns(), "setting") for r in used)
    # the other three settings were trained to the target too, and are said to be left out, by what differs
    assert sum("left out of this answer" in n for n in answer.notes) == 3


def test_the_views_tell_apart_what_they_should():
    base = {"study": "cpustudy", "workload": "w", "batch_size": 64, "precision_policy": None, "vcpus": 2,
            "intra_threads": 2, "inter_threads": 2, "build": "tf", "machine": "m", "epochs": 6, "data": "real",
            "options": '{"augment": "host"}', "input_pipeline": None, "settings": '{"input_default": "tfdata"}'}
    probe = {**base, "epochs": 2, "steps_per_epoch": 20, "vcpus": 1, "intra_threads": None, "inter_threads": None}
    assert identity.same(base, probe, "setting")  # default threads at any vCPUs; epochs and caps are no setting
    assert not identity.same(base, probe, "speed") and not identity.same(base, probe, "run")
    assert identity.values(base, "setting")["precision"] == "float32"
    assert identity.values(base, "setting")["input_pipeline"] == "tfdata"  # the default it took then
    assert identity.same(base, {**base, "options": {"augment": "host"}}, "run")  # stored text or a mapping alike
    assert not identity.same(base, {**base, "intra_threads": 1}, "setting")
    assert not identity.same(base, {**base, "data": "synthetic"}, "convergence")
    assert identity.same(base, {**base, "data": "synthetic"}, "setting")  # same shapes: same epoch time
    assert identity.differences(base, {**base, "batch_size": 256}, "convergence") == {"batch_size": (64, 256)}
    # a report's frame renames workload and build to display names and keeps the stored ones
    assert identity.same(base, {**base, "workload": "w (learnable data)", "workload_base": "w",
                                "build": "tf+b64", "recipe": "tf"}, "speed")
    with pytest.raises(ValueError, match="no identity view 'sped'"):
        identity.key(base, "sped")


def test_a_configuration_is_read_back_from_its_stored_row_the_same():
    c = Configuration(workload="w", vcpus=2, batch_size=64, epochs=6, data="real", options={"augment": "host"},
                      validation="study", input_pipeline="tfdata")
    row = {**c.columns(), "machine": "m"}
    back = Configuration.from_row(row)
    assert back.identity() == c.identity()
    assert identity.same(row, back.columns(), "setting")
