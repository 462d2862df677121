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
    assert len(answer.groups) == 4 and len(measured) == 8  # tf at 1 and at 2 vCPUs, speed-probed in each setting
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
    # four settings (batch size x precision) trained to the target: each one group of its own seeds, one
    # ``convergence`` key each, and every speed run a candidate of that setting used the same as its seeds in the
    # ``setting`` view; none left out (they differ in batch size or precision alone)
    assert len(answer.groups) == 4 and not any("left out of this answer" in n for n in answer.notes)
    keys = set()
    for label, seeds, inputs in answer.groups:
        rows = [runs[s.run_id] for s in seeds]
        assert len({identity.key(r, "convergence") for r in rows}) == 1 and all(s.setting == label for s in seeds)
        keys.add(identity.key(rows[0], "convergence"))
        ref = Configuration.from_row(rows[0])
        used = [runs[x.run_id] for i in inputs for x in i.samples]
        assert used and all(identity.same(r, ref.columns(), "setting") for r in used)
        assert all(i.candidate.endswith(" " + label) for i in inputs)
    assert len(keys) == 4


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


# A comparison (session 1) and twelve fresh trainings to its target, each in a later session of its own (runs 6-17).
TWO_SESSIONS = REPORTS / "zen4-two-sessions-backtest" / "zen4-two-sessions-2026-11-27.sqlite"


def test_one_run_bills_the_same_seconds_in_the_backtest_compare_the_summary_and_the_ledger(tmp_path):
    """One billed time: a fresh training's billed seconds in the backtest are what compare's speed sample of that
    run bills at its epochs, and what the report's summary and a comparison's ledger say it billed. Runs 6-11 stalled
    0.8 s between epochs (stored apart, outside their epochs' time): what compare bills and a reading of the wall
    clock's epochs alone would not."""
    import sqlite3

    from cpustudy.analysis import backtest
    from cpustudy.analysis import compare as combo
    from cpustudy.measure.compare import run_seconds
    from cpustudy.measure.execute import RunOutcome
    from cpustudy.prices import Catalog

    db = _copy(TWO_SESSIONS, tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET stall_s = 0.8 WHERE id BETWEEN 6 AND 11")
    out = backtest.run_backtest(db, catalog=Catalog.load(None))
    assert sorted(c["run_id"] for c in out.added) == list(range(6, 18))
    with Store.read(db) as store:
        runs = {r["id"]: r for r in store.runs(status="ok")}
        sample = {i: combo.speed_sample(runs[i], store.epochs([i])) for i in runs}
        billed = {i: s.billed.seconds(runs[i]["epochs_to_target"]) for i, s in sample.items()
                  if s is not None and runs[i].get("target_reached")}
        ledger = {i: run_seconds(store, RunOutcome(i, "ok", runs[i]), runs[i])[1] for i in billed}
        a = summary.analyze(store, summary.Options())
    assert billed[6] > runs[6]["startup_s"] + runs[6]["time_to_target_s"] + 2 * runs[6]["validation_time_s"]  # stalls
    for c in out.added:
        assert c["billed_s"] == pytest.approx(billed[c["run_id"]]), c["run_id"]
    assert ledger == pytest.approx(billed)
    # the report's summary: each configuration's trainings to the target, at the same seconds
    said = {i: t for ids, times in zip(a.summary["run_ids"], a.summary["target_times"])
            for i, t in zip([i for i in ids if i in billed], times)}
    assert said and said == pytest.approx({i: billed[i] for i in said})


def test_a_run_stored_without_a_validation_time_bills_none_and_one_with_it_bills_it_everywhere(tmp_path):
    """The one rule for validation: a run bills its stored validation time after every epoch, whatever its
    ``validation`` column says; a run stored without one bills none, in compare and in the summary alike."""
    import sqlite3

    from cpustudy.analysis import compare as combo

    db = _copy(TWO_SESSIONS, tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET validation_time_s = NULL WHERE id = 7")
        conn.execute("UPDATE runs SET validation = NULL WHERE id = 8")
    with Store.read(db) as store:
        runs = {r["id"]: r for r in store.runs(status="ok")}
        lacking, unsaid = (combo.speed_sample(runs[i], store.epochs([i])) for i in (7, 8))
        a = summary.analyze(store, summary.Options())
    assert lacking is not None and lacking.billed.validation_s == 0.0
    assert lacking.billed.seconds(1) == pytest.approx(runs[7]["epoch_time_s"] + runs[7]["startup_s"])
    assert unsaid is not None and unsaid.billed.validation_s == runs[8]["validation_time_s"] > 0
    times = {i: t for ids, ts in zip(a.summary["run_ids"], a.summary["target_times"])
             for i, t in zip([i for i in ids if runs[i].get("target_reached")], ts)}
    assert times[7] == pytest.approx(lacking.billed.seconds(1))
    assert times[8] == pytest.approx(unsaid.billed.seconds(runs[8]["epochs_to_target"]))


# An H200 machine's 16 cores: a comparison whose seeds trained full epochs on 60,000 learnable samples generated
# afresh (runs 1 and 4) beside capped probes that loaded 12,800 from the cache (runs 3, 5, 6).
H200_LATER = REPORTS / "h200-gpu" / "h200-2026-11-28-later.sqlite"


def test_a_run_bills_the_start_up_of_a_full_training_not_the_tools_data_generation(tmp_path):
    """Generating synthetic data is the tool's cost, not the training's: a full run that generated its samples bills
    its start-up less the generation; a capped run that loaded its capped samples from the cache bills that loading
    scaled to a full epoch's samples; and each is what its speed sample bills once."""
    import json

    from cpustudy.analysis import billed as bill
    from cpustudy.analysis import compare as combo

    with Store.read(_copy(H200_LATER, tmp_path)) as store:
        runs = {r["id"]: r for r in store.runs(status="ok")}
        prep = {i: json.loads(runs[i]["software"])["data_prep"] for i in (1, 5)}
        samples = {i: combo.speed_sample(runs[i], store.epochs([i])) for i in (1, 5)}
    assert not prep[1]["from_cache"] and prep[1]["samples"] == 60000 and prep[1]["seconds"] > 1.0
    assert bill.startup_s(runs[1]) == pytest.approx(runs[1]["startup_s"] - prep[1]["seconds"])
    assert prep[5]["from_cache"] and prep[5]["samples"] == 12800
    full = runs[5]["full_steps_per_epoch"] * runs[5]["batch_size"]
    assert bill.startup_s(runs[5]) == pytest.approx(runs[5]["startup_s"] + prep[5]["seconds"] * (full / 12800 - 1))
    for i, s in samples.items():
        assert s is not None and s.billed.startup_s == pytest.approx(bill.startup_s(runs[i])), i
    # a run without a software report, or with real data, bills its start-up as measured
    assert bill.startup_s({**runs[1], "software": None}) == runs[1]["startup_s"]
    real = json.dumps({"data_prep": {**prep[1], "source": "real"}})
    assert bill.startup_s({**runs[1], "software": real}) == runs[1]["startup_s"]


def test_a_summary_row_of_learnable_data_carries_compares_figures(tmp_path):
    """The summary names a workload trained on learnable data "mnist_mlp (learnable data)"; compare's stored answer
    is looked up by the workload as stored, so the row its seeds lie in gets compare's interval (it got the runs'
    own median while the display name was the key). A comparison of 1 and 2 vCPUs on this 2-core VM, seeds at 2."""
    db = REPORTS / "gnr2-later-check" / "later-check.sqlite"
    with Store.read(_copy(db, tmp_path)) as store:
        s = summary.analyze(store, summary.Options()).summary
    assert set(s["workload"]) == {"mnist_mlp (learnable data)"}
    two = s[s["vcpus"] == 2].iloc[0]
    assert two["target_basis"].startswith("one new training, as compare gives it")
    assert two["target_pi_low"] < two["time_to_target_s"] < two["target_pi_high"]


def _twin(db: Path, tmp_path: Path) -> Path:
    """``db`` with a second machine of the same CPU model (another fingerprint) that ran each 1-vCPU run of the first
    again at half the speed: the case of two VMs of one type merged into one database."""
    import sqlite3

    out = _copy(db, tmp_path)
    with sqlite3.connect(out) as c:
        cols = [r[1] for r in c.execute("PRAGMA table_info(machines)")]
        row = list(c.execute("SELECT * FROM machines WHERE id = 1").fetchone())
        row[0], row[cols.index("fingerprint")] = 2, "twin0000beef"
        c.execute(f"INSERT INTO machines VALUES ({','.join('?' * len(row))})", row)
        rcols = [r[1] for r in c.execute("PRAGMA table_info(runs)")]
        ecols = [r[1] for r in c.execute("PRAGMA table_info(epochs)")]
        for run in [list(r) for r in c.execute("SELECT * FROM runs WHERE vcpus = 1 AND status = 'ok'")]:
            old = run[0]
            run[0], run[rcols.index("machine_id")] = old + 1000, 2
            for k in ("cell_key", "uuid"):
                run[rcols.index(k)] = f"{run[rcols.index(k)]}-twin" if run[rcols.index(k)] else None
            for k in ("epoch_time_s", "measured_epoch_time_s"):
                run[rcols.index(k)] = run[rcols.index(k)] and 2 * run[rcols.index(k)]
            c.execute(f"INSERT INTO runs VALUES ({','.join('?' * len(run))})", run)
            for e in [list(e) for e in c.execute("SELECT * FROM epochs WHERE run_id = ?", (old,))]:
                e[0], e[ecols.index("run_id")], e[ecols.index("elapsed_s")] = None, old + 1000, 2 * e[ecols.index("elapsed_s")]
                c.execute(f"INSERT INTO epochs VALUES ({','.join('?' * len(e))})", e)
    return out


def test_two_machines_of_one_cpu_model_are_two_candidates_and_each_is_held_to_its_own(tmp_path):
    """Two machines whose runs would bear one name (the same CPU model) stay two stored candidates, apart by their
    fingerprints, each with its own runs; and the backtest holds each machine's trainings against its own
    candidate (a name joined them: one machine's runs stood for the other's)."""
    from cpustudy.analysis import backtest
    from cpustudy.prices import Catalog

    db = _twin(REPORTS / "gnr2-later-check" / "later-check.sqlite", tmp_path)
    with Store.read(db) as store:
        answer = totarget.stored(store, "mnist_mlp", 0.9, catalog=Catalog.load(None))
        machine = {r["id"]: r["machine"] for r in store.runs()}
    assert answer is not None
    ones = [r for r in answer.results if r.candidate.startswith("1 vCPU")]
    assert len(ones) == 2 and len({r.candidate for r in ones}) == 2, [r.candidate for r in ones]
    for r in ones:
        assert len({machine[i] for i in r.run_ids}) == 1 and machine[r.run_ids[0]][:8] in r.candidate
    slow = next(r for r in ones if "twin" in r.candidate)
    fast = next(r for r in ones if "twin" not in r.candidate)
    assert slow.time_to_target_s > fast.time_to_target_s
    import sqlite3

    with sqlite3.connect(db) as c:
        c.execute("DELETE FROM checks WHERE kind = 'held out'")
    added = backtest.run_backtest(db, catalog=Catalog.load(None)).added
    twins = [a for a in added if a["run_id"] > 1000]
    assert twins and all(a["candidate"] == slow.candidate for a in twins), twins


# --- the views' invariants, tried on generated runs (hypothesis) --------------------------------------------------

#: Each pair (finer, coarser): two runs the same in the finer view are the same in the coarser one, whatever else
#: they are. A field added to or dropped from one view only breaks one of these.
REFINES = [("run", "noise"), ("noise", "speed"), ("speed", "setting"), ("run", "convergence"), ("run", "peak"),
           ("speed", "place")]


#: A few values of each stored field a view reads: two runs often share them.
FIELD_VALUES: dict[str, tuple] = {
    "study": ("cpustudy", None), "workload": ("mnist_mlp", "mnist_cnn"), "workload_version": (None, 1, 2),
    "model_hash": (None, "abc"), "options": (None, "", "{}", '{"augment": "host"}', {"augment": "host"}),
    "params": (None, '{"lr": 0.1}'), "data": ("real", "synthetic", None), "batch_size": (64, 128),
    "precision_policy": (None, "float32", "mixed_bfloat16"), "validation": (None, "none", "study"),
    "device": (None, "cpu", "gpu"), "build": ("tf", "jax-here"), "vcpus": (1, 2), "intra_threads": (None, 1, 2),
    "inter_threads": (None, 1, 2), "jit_compile": (None, 0, 1), "input_pipeline": (None, "numpy", "tfdata"),
    "settings": (None, '{"input_default": "tfdata"}'), "env": (None, "{}", '{"TF_ENABLE_ONEDNN_OPTS": "0"}'),
    "tuning_id": (None, 3), "machine": ("m1", "m2"), "instance": (None, "gcp:n2-highcpu-8"), "epochs": (2, 6),
    "steps_per_epoch": (None, 20),
}


def test_the_views_refine_one_another_and_read_a_run_alone():
    """On generated pairs of runs: every view is a coarsening of ``run`` along :data:`REFINES` (a key changed in one
    view only fails here); a key reads the run alone (the same with others grouped beside it); stored text and a
    mapping, a missing precision and float32, default threads and one per vCPU are the same."""
    from hypothesis import given, settings

    from hypothesis import strategies as st

    runs = st.fixed_dictionaries({k: st.sampled_from(v) for k, v in FIELD_VALUES.items()})
    # a pair: a run, and the same run with one or two of its fields drawn again (two runs apart in a field or two,
    # where views part; two runs drawn apart whole are seldom the same in any view)
    pairs = st.tuples(runs, runs, st.sets(st.sampled_from(sorted(FIELD_VALUES)), min_size=1, max_size=2)).map(
        lambda t: (t[0], {**t[0], **{k: t[1][k] for k in t[2]}}))

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(pairs)
    def check(pair: tuple[dict, dict]) -> None:
        a, b = pair
        for fine, coarse in REFINES:
            if identity.same(a, b, fine):
                assert identity.same(a, b, coarse), (fine, coarse, identity.differences(a, b, coarse))
        grouped = identity.group([a, b, {**a, "machine": "m3"}], "speed")
        assert all(identity.key(r, "speed") == k for k, rs in grouped.items() for r in rs)
        same_a = {**a, "precision_policy": a["precision_policy"] or "float32",
                  "intra_threads": a["intra_threads"] if a["intra_threads"] is not None or a["inter_threads"] is not None
                  else a["vcpus"],
                  "inter_threads": a["inter_threads"] if a["intra_threads"] is not None or a["inter_threads"] is not None
                  else a["vcpus"]}
        assert identity.key(same_a, "run") == identity.key(a, "run")

    check()
    # ... and what each view adds to another, stated once: a field added to or dropped from one view only breaks one
    v = {name: set(fields) for name, fields in identity.VIEWS.items()}
    assert v["setting"] == v["convergence"] - {"data"} | {"threads", "jit_compile", "input_pipeline", "tuning_id"}
    assert v["speed"] == v["setting"] | {"device", "build", "vcpus", "machine", "instance", "env"}
    assert v["noise"] == v["speed"] | {"epochs"} and v["run"] == set(identity.FIELDS)
    assert v["peak"] == {"device", "build", "vcpus", "precision", "machine"} <= v["speed"]
    assert v["place"] == v["speed"] - v["setting"] - {"env", "build", "instance"} | {"cpu_build"}


@pytest.mark.parametrize("db", [REPORTS / "gnr2-two-sessions" / "gnr2-two-sessions.sqlite",
                                REPORTS / "zen4-two-sessions-backtest" / "zen4-two-sessions-2026-11-27.sqlite"],
                         ids=lambda p: p.parent.name)
def test_the_reports_target_finding_names_compares_choice(db, tmp_path):
    """Real comparisons of 1 and 2 vCPUs to a target, on two VMs: the report's finding at that target names the
    configuration whose runs are compare's leader (``policy.leader_of``, the one rule ``recommend`` names too)."""
    from cpustudy.decision import policy
    from cpustudy.prices import Catalog
    from cpustudy.names import config_name
    from cpustudy.report import findings

    with Store.read(_copy(db, tmp_path)) as store:
        a = summary.analyze(store, summary.Options())
        answer = totarget.stored(store, "fashion_mnist_cnn", 0.86, catalog=Catalog.load(None))
    assert answer is not None
    name, p_best = policy.leader_of(answer)
    ids = set(next(r.run_ids for r in answer.results if r.candidate == name))
    s = a.summary
    (row,) = [r for _, r in s.iterrows() if ids & set(r["run_ids"])]
    (said,) = [f for f in findings.target_findings(a) if "to reach validation accuracy 0.86" in f]
    named = config_name(row["device"], row["vcpus"], row["build"])
    assert said.removeprefix("Inconclusive: ").startswith(f"{named} is the cheapest"), (named, said)
    assert p_best is not None and 0 <= p_best <= 1


def test_a_gpu_fed_by_two_vcpu_counts_is_two_places_each_with_its_own_runs(tmp_path):
    """A database's GPU runs at 16 vCPUs (the H200 VM's) and one more at 8: the identity's place view tells them
    apart, and so do the candidates a database's answer makes (each its own speed runs, named with the vCPUs that
    fed it); before, both were 'the GPU on ...' and the one candidate left pooled all three runs."""
    import sqlite3

    from cpustudy.prices import Catalog

    db = _copy(REPORTS / "h200-gpu" / "h200-2026-11-28-later.sqlite", tmp_path)
    conn = sqlite3.connect(db)
    cols = [c[1] for c in conn.execute("PRAGMA table_info(runs)") if c[1] not in ("id", "uuid")]
    row = dict(zip(cols, conn.execute(f"SELECT {', '.join(cols)} FROM runs WHERE id = 5").fetchone()))
    row.update(vcpus=8, intra_threads=8, inter_threads=8, cpu_list="0-7", cell_key="fed-by-8")
    new = conn.execute(f"INSERT INTO runs (uuid, {', '.join(row)}) VALUES (?, {', '.join('?' * len(row))})",
                       ("fed-by-8", *row.values())).lastrowid
    ecols = [c[1] for c in conn.execute("PRAGMA table_info(epochs)") if c[1] != "id"]
    for e in conn.execute(f"SELECT {', '.join(ecols)} FROM epochs WHERE run_id = 5").fetchall():
        values = {**dict(zip(ecols, e)), "run_id": new}
        conn.execute(f"INSERT INTO epochs ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})",
                     tuple(values.values()))
    conn.commit()
    conn.close()
    with Store.read(db) as store:
        answer = totarget.stored(store, "mnist_mlp", 0.9, catalog=Catalog.load(None))
    assert answer is not None
    gpus = {r.candidate: r.run_ids for r in answer.results if r.candidate.startswith("the GPU")}
    assert gpus == {"the GPU (16 vCPUs feeding it) on Intel(R) Xeon(R) Processor": [3, 5],
                    "the GPU (8 vCPUs feeding it) on Intel(R) Xeon(R) Processor": [new]}, gpus
