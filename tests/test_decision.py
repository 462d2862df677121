"""How ``compare`` decides (``cpustudy.decision``): the expected cost and its regret, the stops, the next
measurement, and the whole loop run against a simulated measurer (``tests/simloop.py``: a known truth, a real
plan, every run stored through ``execute``). One real comparison per path stays in test_compare*.py."""

from __future__ import annotations

import json
from dataclasses import replace
import math

import numpy as np
import pytest

from cpustudy.analysis.billed import Billed
from cpustudy.analysis.model import Group
from cpustudy.analysis import compare as combo
from cpustudy.analysis.stats import DEFAULT_NOISE
from cpustudy.decision import policy
from cpustudy.decision.words import decision_lines
from cpustudy.rules import RULES, Rules


def _seeds(*epochs: int, base: int = 100, margin: float = 0.01) -> list[combo.SeedResult]:
    return [combo.SeedResult(i + 1, True, e, 6, base + i, margins=tuple(margin * (k + 1 - e) + margin / 3
                                                                        for k in range(e)))
            for i, e in enumerate(epochs)]


def _cand(name: str, per_epoch: float, runs: int, rng: np.random.Generator, noise: float = 0.06,
          usd: float | None = 0.1) -> combo.CandidateInput:
    return combo.CandidateInput(name, [combo.SpeedSample(Billed(per_epoch * math.exp(noise * rng.standard_normal()),
                                                                0.5, 0.5, 4.0), i) for i in range(runs)], usd, "")


def _next(st: policy.Standing, **kw) -> policy.Step:
    names = set(st.regret)
    args = dict(measurable=names, seed_cost_s={g: 25.0 for g in st.seeds}, probe_cost_s={c: 8.0 for c in names},
                seeds_left={g: 2 for g in st.seeds})
    args.update(kw)
    return policy.next_step(st, **args)


def test_what_is_known_of_each_mean_ranks_a_clearly_cheaper_candidate_and_p_lowest_sums_to_one():
    rng = np.random.default_rng(0)
    groups = [Group("fp32", _seeds(2, 2, 2), [_cand("a fp32", 10.0, 4, rng)]),
              Group("bf16", _seeds(2, 2, 2, base=200), [_cand("a bf16", 7.0, 4, rng)])]
    st = policy.standing(groups, noise=DEFAULT_NOISE)
    assert st is not None and st.unit == "USD" and policy.leader(st) == "a bf16"
    assert sum(st.p_best.values()) == pytest.approx(1.0) and st.p_best["a bf16"] > 0.95
    assert st.regret["a bf16"] < RULES.regret < st.regret["a fp32"]
    assert st.low["a bf16"] < st.expected["a bf16"] < st.high["a bf16"]
    assert _next(st).kind == "decided"
    # One candidate: nothing to choose between.
    assert policy.standing(groups[:1], noise=DEFAULT_NOISE) is None


def test_the_same_seeds_and_speeds_give_the_same_expected_cost_whatever_the_setting_is_called():
    rng = np.random.default_rng(1)
    a = _cand("x", 10.0, 3, rng)
    same = combo.CandidateInput("y", list(a.samples), a.usd_per_hour, "")
    st = policy.standing([Group("g1", _seeds(1, 2, 2), [a]), policy.Group("g2", _seeds(1, 2, 2, base=9), [same])],
                         noise=DEFAULT_NOISE)
    assert st is not None and st.expected["x"] == pytest.approx(st.expected["y"], rel=0.03)


def test_a_less_known_setting_is_not_read_as_a_costlier_one():
    rng = np.random.default_rng(2)
    many = Group("many", _seeds(2, 2, 2, 2, 2), [_cand("m", 10.0, 3, rng, noise=0.0)])
    one = Group("one", _seeds(2, base=50), [_cand("o", 10.0, 3, rng, noise=0.0)])
    st = policy.standing([many, one], noise=DEFAULT_NOISE)
    assert st is not None and st.expected["o"] == pytest.approx(st.expected["m"], rel=0.1)
    assert st.epoch_var["one"] > st.epoch_var["many"]  # but its mean is less known


def test_near_equal_candidates_stop_as_not_worth_measuring_for_few_trainings_and_measure_for_many():
    rng = np.random.default_rng(3)
    groups = [Group(g, _seeds(1, 2, base=10 * i), [_cand(f"c {g}", 10.0, 2, rng)])
              for i, g in enumerate(("a", "b", "c", "d"))]
    st = policy.standing(groups, noise=DEFAULT_NOISE)
    assert st is not None and st.regret[str(policy.leader(st))] > RULES.regret
    few = _next(st, rules=Rules(trainings=1))
    assert few.kind in ("not worth it", "same") and few.stops
    many = _next(st, rules=Rules(trainings=1000))
    assert many.kind in ("seed", "speed") and not many.stops and "removes" not in many.why
    assert "expected to save" in many.why
    # Nothing measurable here (cloud candidates waiting for their probes): stuck, said so.
    assert _next(st, measurable=set(), seeds_left={}, rules=Rules(trainings=1000)).kind == "stuck"


def test_where_settings_differ_in_epochs_a_seed_is_worth_more_than_a_speed_run():
    rng = np.random.default_rng(4)
    wide = Group("wide", [*_seeds(1, base=1), *_seeds(3, base=2)], [_cand("w", 10.0, 6, rng, noise=0.01)])
    tight = Group("tight", _seeds(2, base=3), [_cand("t", 10.0, 6, rng, noise=0.01)])
    st = policy.standing([wide, tight], noise=DEFAULT_NOISE)
    assert st is not None
    step = _next(st, rules=Rules(trainings=1000))
    assert step.kind == "seed", step


def test_every_candidate_within_the_indifference_zone_is_the_same_and_the_default_is_kept():
    st = policy.Standing("USD", expected={"a": 1.0, "b": 1.01}, low={"a": 0.9, "b": 0.9}, high={"a": 1.1, "b": 1.1},
                         p_best={"a": 0.55, "b": 0.45}, regret={"a": 0.03, "b": 0.04}, time_s={"a": 10, "b": 10},
                         group_of={"a": "g", "b": "g"}, seeds={"g": 3}, p_within={"a": 0.97, "b": 0.96})
    step = _next(st)
    assert step.kind == "same" and "a, b are the same within 5%" in step.why
    assert "the default is b" in _next(st, default="b").why
    # The leader surely within the zone and the other expected to cost over 5 % more: decided, not "the same".
    apart = replace(st, regret={"a": 0.03, "b": 0.08})
    assert _next(apart).kind == "decided" and "within 5% of the lowest expected cost with probability 97%" in \
        _next(apart).why
    # The leader not surely within (and its expected regret over 2 %): measuring goes on, or stops as not worth it.
    assert _next(replace(st, p_within={"a": 0.9, "b": 0.8})).kind not in ("same", "decided")


def test_not_worth_measuring_keeps_the_default_where_it_is_within_the_indifference_zone():
    """A stop as not worth it named the leader as the answer even where the default was among those within
    ``indifference``: as for "the same", there is then no reason to move, and the choice and the words say so."""
    st = policy.Standing("USD", expected={"a": 1.0, "b": 1.01, "c": 1.3}, low={"a": 0.9, "b": 0.9, "c": 1.2},
                         high={"a": 1.1, "b": 1.1, "c": 1.4}, p_best={"a": 0.55, "b": 0.45, "c": 0.0},
                         regret={"a": 0.03, "b": 0.04, "c": 0.3}, time_s={"a": 10, "b": 10, "c": 13},
                         group_of={"a": "g", "b": "g", "c": "g"}, seeds={"g": 3},
                         p_within={"a": 0.9, "b": 0.8, "c": 0.0})
    rules = Rules(trainings=1)
    kept = _next(st, default="b", rules=rules)
    assert kept.kind == policy.NOT_WORTH_IT and "within 5% of it: b" in kept.why
    assert "the default b is among them: keep it" in kept.why
    d = policy.decision(st, kept, "b", [], rules, combo.DecisionCost(1.0, 10.0, 1, 0))
    assert (d.choice, d.leader, d.saves_per_training) == ("b", "a", None)
    assert "the default b is the choice: keep it" in decision_lines(d)
    # A default outside the zone: the leader is the answer, as before.
    moved = _next(st, default="c", rules=rules)
    assert moved.kind == policy.NOT_WORTH_IT and "keep it" not in moved.why
    assert policy.choice(st, moved, "c", rules=rules) == "a"


def test_rules_are_checked_in_one_line_naming_the_flag_and_said_in_words():
    assert Rules().check() is None
    assert "--regret" in (Rules(regret=0).check() or "")
    assert "--indifference" in (Rules(indifference=1.5).check() or "")
    assert "--trainings" in (Rules(trainings=0).check() or "")
    assert "busy_runs 0 (at least 1)" in (Rules(busy_runs=0).check() or "")  # every threshold, not the flags alone
    assert "level 1.2 (a share" in (Rules(level=1.2).check() or "") and Rules(prior_saving=1.0).check() is None
    assert "prior_saving 1.5 (a share between 0 and 1)" in (Rules(prior_saving=1.5).check() or "")
    assert "2%" in RULES.words() and json.loads(json.dumps(RULES.as_dict()))["trainings"] == RULES.trainings
    assert "pay for itself over 10 trainings (" in RULES.words()
    assert "pay for itself over 1 training (" in Rules(trainings=1).words()


def test_a_decision_in_words_says_its_stop_choice_cost_saving_and_rules():
    d = combo.Decision("decided", "x", RULES, combo.DecisionCost(4.2, 80.0, 4, 4), default="here:2 fp32",
                       choice="here:2 bf16", expected_regret=0.01, unit="USD", same=["here:2 bf16", "here:2 fp32"],
                       saves_per_training=2e-4, saves_share=0.3, pays_after_trainings=5.5)
    lines = decision_lines(d)
    assert lines[0] == "decided: x" and "choose here:2 bf16" in lines[1] and "here:2 fp32" in lines[1]
    assert "4.2 trainings" in lines[2] and "pays for itself after 5.5 trainings" in lines[3]
    assert lines[-1].startswith("rules: stopped once")


# --- the whole loop against a simulated measurer -----------------------------------------------------------

SETTINGS = ["fp32 b64", "fp32 b256", "bf16 b64", "bf16 b256"]


def _truths():
    import simloop

    base = 1.7e-4
    even = lambda s: 1.0 + 0.8 * simloop.uniform(s)  # noqa: E731  1 or 2 epochs
    return {
        "identical": simloop.Truth({k: base for k in SETTINGS}, {k: even for k in SETTINGS}),
        "1.3x": simloop.Truth({**{k: base for k in SETTINGS}, "bf16 b64": base / 1.3}, {k: even for k in SETTINGS}),
        "fewer epochs": simloop.Truth({k: base for k in SETTINGS}, {
            **{k: (lambda s: 1.6 + 0.8 * simloop.uniform(s)) for k in SETTINGS},
            "bf16 b256": lambda s: 0.5 + 0.4 * simloop.uniform(s)}),
        "bimodal": simloop.Truth({k: base for k in SETTINGS},
                                 {k: (lambda s: 0.9 if simloop.uniform(s, 1) < 0.5 else 1.9) for k in SETTINGS}),
    }


@pytest.mark.parametrize("scenario", ["identical", "1.3x", "fewer epochs", "bimodal"])
def test_the_loop_chooses_within_the_indifference_zone_of_the_best_in_fewer_seeds_than_every_setting_every_seed(
        scenario, tmp_path):
    """Four settings, ``--seeds 3`` (every setting with every seed: 12 trainings), the default budget of 8
    trainings' time: the loop ends with a choice within 5 % of the true best, having trained fewer seeds."""
    import simloop

    truth = _truths()[scenario]
    expected = {k: truth.expected_s(k) for k in SETTINGS}
    best = min(expected.values())
    for trial in range(2):
        out, _ = simloop.run(truth, tmp_path / f"{trial}.sqlite", trial, max_trainings=8)
        d = out.decision.as_dict()
        choice = simloop.setting_of(d["choice"])
        assert expected[choice] / best - 1 <= 0.05, (scenario, trial, choice, out.steps)
        assert d["cost"]["seeds"] <= 9 and d["stop"] in ("decided", "same", "not worth it", "limit")
        assert out.steps[-1].startswith("the race trained") and any(s.startswith("stopped") for s in out.steps)
        assert sum(r.p_best for r in out.results if r.p_best is not None) == pytest.approx(1.0)


def test_check_trains_the_choice_with_fresh_seeds_held_against_the_interval_stated_before(tmp_path):
    import simloop

    truth = _truths()["1.3x"]
    out, _ = simloop.run(truth, tmp_path / "c.sqlite", 0, checks=2)
    assert [c["seed"] for c in out.checks] == [10_001, 10_002]
    for c in out.checks:
        r = next(x for x in out.results if x.candidate == c["candidate"])
        assert (c["low_s"], c["high_s"]) == (r.time_low_s, r.time_high_s)
        assert c["inside"] == (c["low_s"] <= c["billed_s"] <= c["high_s"])
    from cpustudy.cli.commands.compare import check_lines

    assert check_lines(out)[-1].endswith("inside the stated interval")


def test_checks_are_stored_with_their_interval_never_counted_in_it_and_only_a_later_period_counts_as_later(tmp_path):
    import simloop

    from cpustudy.analysis import totarget
    from cpustudy.store import Store

    truth = _truths()["1.3x"]
    db = tmp_path / "c.sqlite"
    first, _ = simloop.run(truth, db, 0, checks=2)
    lead = first.checks[0]["candidate"]
    runs_behind = next(r for r in first.results if r.candidate == lead).run_ids
    assert not {c["run_id"] for c in first.checks} & set(runs_behind)  # a check is no part of its interval
    assert any(n.startswith("the shift to a later period is assumed") for n in first.notes)
    assert any(n.startswith("backtest on this machine: 2 of 2 fresh training(s)") for n in first.notes), first.notes
    with Store.read(db) as store:
        stored = store.checks()
    assert [(c["run_id"], bool(c["inside"]), c["low_s"]) for c in stored] == [
        (c["run_id"], c["inside"], c["low_s"]) for c in first.checks]
    assert not any(c["later_session"] for c in stored)  # stated and checked in the same session
    # Again, one more check: the two reused (not stored twice), the third trained in a later session than every
    # run behind its interval (nothing else needed measuring), but seconds later: the same period, not counted later.
    again, _ = simloop.run(truth, db, 1, checks=3)
    with Store.read(db) as store:
        stored = store.checks()
        bt = totarget.backtest(store)
    assert len(stored) == 3 and bool(stored[-1]["later_session"]) and bt is not None
    assert (bt.n, bt.later_n, bt.periods) == (3, 0, 1) and 0 <= bt.low <= bt.inside / bt.n <= bt.high <= 1
    assert bt.n_eff < 3 and "effective n" in bt.line and "none yet (all 3 trained in the same period as runs behind their interval)" in bt.line
    assert next(r for r in again.results if r.candidate == lead).run_ids == runs_behind


def test_the_answer_page_opens_with_the_decision_and_draws_p_lowest_expected_cost(tmp_path):
    from cpustudy.analysis.totarget import Comparison
    from cpustudy.report.answer import answer_page, frame
    from cpustudy.report.page import to_markdown

    def result(name: str, t: float, p: float, best: float, regret: float) -> combo.CandidateResult:
        return combo.CandidateResult(name, t, 0.8 * t, 1.2 * t, t / 1e4, 0.8e-4 * t, 1.2e-4 * t, p, None, None, 1.0, 3,
                                     0.1, "", [], [1], seeds=2, p_best=best, regret=regret, expected=t / 1e4)

    results = [result("here:2 fp32", 20.0, 0.2, 0.1, 0.4), result("here:2 bf16", 11.0, 0.8, 0.9, 0.01)]
    d = combo.Decision("decided", "x", RULES, combo.DecisionCost(4.0, 60.0, 4, 2), default="here:2 fp32",
                       choice="here:2 bf16", expected_regret=0.01, unit="USD", same=["here:2 bf16"])
    md = to_markdown(answer_page(Comparison("w", 0.86, results, [], decision=d), chart=False))
    answer = md.split("## The answer", 1)[1].split("\n- ", 2)[1]
    assert answer.startswith("Choose here:2 bf16: expected regret 1.0%, P(lowest expected cost) 0.90 (decided")
    assert "## The decision" in md and "| P(lowest expected cost) | expected regret |" in md
    assert list(frame(results)["label"]) == ["here:2 fp32  P=0.20  E=0.10", "here:2 bf16  P=0.80  E=0.90"]


def test_the_page_the_json_and_check_name_the_decisions_choice_where_p_cheapest_leads_another(tmp_path):
    """One comparison where P(cheapest in one training) and the decision disagree: fp32 b64 always needs 2 epochs,
    bf16 b64 one in most seeds and four in the rest (cheapest in more single trainings, dearer on average; b256
    slower). The page's headline and its decision, the JSON's choice and what ``--check`` trains name one
    candidate, the decision's; the page says why P(cheapest) does not settle it."""
    import simloop

    from cpustudy.report.answer import answer_page
    from cpustudy.report.page import to_markdown

    base = 1.7e-4
    truth = simloop.Truth({"fp32 b64": base, "bf16 b64": base, "fp32 b256": 2 * base, "bf16 b256": 2 * base},
                          {"fp32 b64": lambda s: 1.5, "fp32 b256": lambda s: 1.5, "bf16 b256": lambda s: 1.5,
                           "bf16 b64": lambda s: 0.9 if simloop.uniform(s, 1) < 0.6 else 3.9})
    out, _ = simloop.run(truth, tmp_path / "d.sqlite", 3, seeds=6, max_epochs=6, max_trainings=8, checks=1)
    choice = json.loads(out.as_json())["decision"]["choice"]
    luckiest = max(out.results, key=lambda r: r.p_cheapest or 0.0).candidate
    assert choice and luckiest != choice, (choice, luckiest)  # the case: P(cheapest) leads another candidate
    assert [c["candidate"] for c in out.checks] == [choice]
    md = to_markdown(answer_page(out, chart=False))
    head = [line for line in md.split("## The answer", 1)[1].split("\n## ", 1)[0].splitlines() if line.startswith("- ")]
    assert head[0].startswith(f"- Choose {choice}: expected regret") and "P(lowest expected cost)" in head[0]
    assert not any(luckiest in line and "cheapest" in line for line in head), head
    assert f"choose {choice} (expected regret" in md.split("## The decision", 1)[1].split("\n## ", 1)[0]
    assert "so it does not settle which is cheaper on average" in md.split("## The candidates", 1)[1]


def test_what_compare_stated_is_stored_and_later_trainings_are_held_against_it_as_stated(tmp_path):
    """A comparison (the loop against a simulated measurer) stores each local candidate's interval; `cpustudy
    backtest` then holds a later training of that configuration against the stored statement, even after the
    statement's numbers are changed behind its back (as a later cpustudy computing otherwise would)."""
    import sqlite3

    import simloop

    from cpustudy.analysis import backtest
    from cpustudy.prices import Catalog
    from cpustudy.store import Store

    truth = _truths()["1.3x"]
    db = tmp_path / "c.sqlite"
    out, _ = simloop.run(truth, db, 0)
    with Store.read(db) as store:
        said = store.statements()
    with_interval = [r for r in out.results if r.time_low_s is not None]
    assert len(said) == len(with_interval) >= 2
    for s in said:
        r = next(x for x in out.results if x.candidate == s["candidate"])
        assert (s["low_s"], s["high_s"], s["level"]) == (r.time_low_s, r.time_high_s, r.level)
        assert s["data_sessions"] and s["convergence"] and s["place"] and s["cpustudy"]
    # a later session's training: the compare again with a check (its seeds fresh, a session of its own)
    simloop.run(truth, db, 1, checks=1)
    with sqlite3.connect(db) as conn:  # what cpustudy would compute today no longer matters: the statement does
        conn.execute("UPDATE statements SET low_s = low_s * 0.5, high_s = high_s * 2")
        conn.execute("DELETE FROM checks")
    added = backtest.run_backtest(db, catalog=Catalog.load(None)).added
    held = [c for c in added if c["stated_session"]]
    assert held, added
    with Store.read(db) as store:
        said = store.statements()
    for c in held:
        s = next(s for s in said if s["session"] == c["stated_session"] and c["candidate"].startswith(s["candidate"] + " "))
        assert (c["low_s"], c["high_s"]) == (s["low_s"], s["high_s"])  # as stated: halved and doubled


def test_nothing_is_decided_while_a_candidate_is_unmeasured():
    decided = policy.Step("decided", "here:1: choosing it is expected to cost 0.1% more than the best")
    same = policy.Step("same", "these 2 are the same within 5%")
    first = policy.unmeasured_step(decided, ["here:2"], {"here:1", "here:2"})
    assert (first.kind, first.candidates) == ("speed", ("here:2",)) and not first.stops
    for step in (decided, same):
        out = policy.unmeasured_step(step, ["gcp:c4d-highcpu-8"], {"here:1"})
        assert out.kind == "stuck" and out.stops and "gcp:c4d-highcpu-8 unmeasured" in out.why
        assert step.why in out.why  # what the measured alone say is kept, and said as such
    seed = policy.Step("seed", "a seed more", setting="bf16")
    assert policy.unmeasured_step(seed, ["gcp:c4d-highcpu-8"], {"here:1"}) is seed  # measuring goes on
    assert policy.unmeasured_step(decided, [], {"here:1"}) is decided


def test_the_rules_level_is_the_level_of_the_intervals_a_comparison_states_and_stores(tmp_path):
    """The same measurements (the same simulated trial) compared under ``Rules(level=0.8)`` and the default 0.9:
    every interval is stated at its rules' level, the 80 % ones are narrower, and each stored statement carries
    its level and the rules it was stated under."""
    import simloop

    from cpustudy.store import Store

    truth = _truths()["1.3x"]
    wide, _ = simloop.run(truth, tmp_path / "90.sqlite", 0)
    narrow, _ = simloop.run(truth, tmp_path / "80.sqlite", 0, rules=Rules(level=0.8, prior_saving=1))
    assert narrow.decision.rules.level == 0.8 and wide.decision.rules.level == RULES.level == 0.9
    both = [(w, next(n for n in narrow.results if n.candidate == w.candidate)) for w in wide.results
            if w.time_low_s is not None]
    assert both and all(n.time_low_s is not None for _, n in both)
    for w, n in both:
        assert (w.level, n.level) == (0.9, 0.8)
        assert n.time_high_s / n.time_low_s < w.time_high_s / w.time_low_s, (w, n)
    assert any("each interval is a 80% prediction interval" in a for a in narrow.assumptions), narrow.assumptions
    for db, rules in ((tmp_path / "90.sqlite", simloop.LOOP), (tmp_path / "80.sqlite", Rules(level=0.8, prior_saving=1))):
        with Store.read(db) as store:
            said = store.statements()
        assert len(said) == len(both) and all((s["level"], s["rules"]) == (rules.level, rules.as_dict()) for s in said)


def test_the_budget_is_the_rules_and_max_trainings_overrides_it(tmp_path):
    """Without ``--max-trainings`` the loop may spend the rules' budget (8 trainings' time, 2 more for each
    setting past the first); ``--max-trainings`` overrides it."""
    from dataclasses import replace

    import simloop

    req = simloop.request(tmp_path / "x.sqlite", max_trainings=None)
    own = Rules(budget_trainings=1.0, budget_per_setting=0.5, prior_saving=1.0)
    assert (req.budget(1, RULES), req.budget(4, RULES), req.budget(4, own)) == (8.0, 14.0, 2.5)
    assert replace(req, max_trainings=3).budget(4, own) == 3.0
    # the race's first round (a seed of each of four settings) already spends more than 2.5 trainings' time
    out, _ = simloop.run(_truths()["1.3x"], tmp_path / "a.sqlite", 0, rules=own, max_trainings=None)
    assert out.decision.stop == "limit" and "the limit of 2.5 trainings" in out.decision.why, out.steps
    more, _ = simloop.run(_truths()["1.3x"], tmp_path / "b.sqlite", 0, rules=own, max_trainings=6)
    assert "the limit of 2.5 trainings" not in " ".join(more.steps)
    assert more.decision.cost.seeds > out.decision.cost.seeds, (out.steps, more.steps)


def test_the_backtest_holds_a_training_against_the_level_it_was_stated_at_and_says_which_it_counts(tmp_path):
    """A comparison under ``Rules(level=0.8)`` stores 80 % statements; a later session's training is held against
    them at 80 %, and the machine's backtest counts the checks of one level, saying which it left out."""
    import sqlite3

    import simloop

    from cpustudy.analysis import backtest, totarget
    from cpustudy.prices import Catalog
    from cpustudy.store import Store

    truth = _truths()["1.3x"]
    db = tmp_path / "c.sqlite"
    simloop.run(truth, db, 0, rules=Rules(level=0.8, prior_saving=1))
    simloop.run(truth, db, 1, checks=1)  # a later session, at the default 90 %: its check trains a fresh seed
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM checks")  # so that the backtest holds that training out
    out = backtest.run_backtest(db, catalog=Catalog.load(None))
    with Store.read(db) as store:
        said = {s["session"]: s for s in store.statements()}
    held = [c for c in out.added if c["stated_session"]]
    assert all(c["level"] == said[c["stated_session"]]["level"] for c in held), out.added
    at80 = [c for c in held if said[c["stated_session"]]["rules"]["level"] == 0.8]
    assert at80 and all(c["level"] == 0.8 for c in at80)
    (_, bt, inf), = out.machines  # the latest check: the fresh training of the later session, held at 80 %
    assert bt is not None and bt.level == inf.level == 0.8 and "stated 80% intervals" in bt.line
    n90 = sum(c["level"] == 0.9 for c in out.added)  # the first session's, where stated in the same second as the
    with Store.open(db) as store:  # second's statements (a statement's time is to the second)
        store.add_check({**held[0], "level": 0.9, "stated_session": None})
        at_80 = totarget.backtest(store, level=0.8)
        latest = totarget.backtest(store)
    assert at_80 is not None and at_80.n == bt.n == len(out.added) - n90
    assert f"left out: {n90 + 1} check(s) of 90% intervals" in at_80.line
    assert latest is not None and (latest.level, latest.n) == (0.9, n90 + 1) and "of 80% intervals" in latest.line


# --- compare --simulate: the real loop rehearsed against a scenario ---------------------------------------------


def simloop_family() -> str:
    import simloop

    return simloop.FAMILY


def _scenario(tmp_path, second_sample_s: float, **extra) -> str:
    f = tmp_path / "scenario.json"
    f.write_text(json.dumps({"noise": 0.06, "period_shift": 0.1, **extra,
                             "candidates": {"here:1": {"sample_s": 2e-4}, "here:2": {"sample_s": second_sample_s}},
                             "settings": {"": {"epochs": {"1": 0.6, "2": 0.4}}}}))
    return str(f)


def _rehearse(run_cli, tmp_path, scenario: str, *more: str):
    """A rehearsal priced in one family whose every size has a spot rate in proportion to its vCPUs (not this
    machine's own: on a Zen 3 VM 1 and 2 vCPUs are priced at the same t2d-standard-2), so that the truths do not
    depend on the CPU the tests run on."""
    db = tmp_path / "never.sqlite"
    r = run_cli("compare", "mnist_mlp", "--target-accuracy", "0.5", "--data", "learnable", "--candidates",
                "here:1,here:2", "--seeds", "2", "--max-epochs", "4", "--db", db, "--family", simloop_family(),
                "--simulate", scenario, *more)
    assert not db.exists()  # a rehearsal stores nothing where the user's results are
    return r


def test_a_rehearsal_runs_the_real_loop_and_sets_each_answer_beside_its_truth(run_cli, tmp_path):
    # here:2 twice as slow per sample as here:1 and priced at twice the rate: here:1 is clearly the cheapest
    r = _rehearse(run_cli, tmp_path, _scenario(tmp_path, 4e-4), "--trials", "6", "--format", "json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert len(out["trials"]) == 6 and out["summary"]["trials"] == 6
    for t in out["trials"]:
        assert t["truly_best"] == ["here:1"] and t["choice"] == "here:1" and t["realised_regret"] == 0.0
        assert t["stop"] in ("decided", "not worth it") and t["deciding_s"] > 0
        assert t["fresh_s"] > 0 and isinstance(t["inside"], bool)  # a fresh training held against the interval
    assert out["summary"]["choice_truly_best"] == 1.0 and out["summary"]["fresh_checked"] == 6


def test_a_rehearsal_of_near_equal_candidates_states_what_deciding_cost_and_its_regret(run_cli, tmp_path):
    # at the same cost per sample (twice the rate, half the time) only start-up tells them apart
    r = _rehearse(run_cli, tmp_path, _scenario(tmp_path, 1e-4, interaction=0.05), "--trials", "4")
    assert r.code == 0, r.err
    lines = [x for x in r.out.splitlines() if x.startswith("rehearsal: ")]
    assert lines[0].startswith("rehearsal: 4 trials; how they ended:")
    assert any("realised" in x for x in lines) and any("inside its stated interval" in x for x in lines)
    assert any("over 10 trainings, measuring and the choice's regret cost" in x for x in lines)
    assert len([x for x in r.out.splitlines() if x.startswith("trial ")]) == 4


def test_a_rehearsal_over_drawn_worlds_draws_each_trial_s_truth_and_scores_p_lowest_by_bins(run_cli, tmp_path):
    # here:2 at half the time a sample for twice the rate: near equal at the scenario's centre; each drawn 0.7 (log
    # sd) about it every trial, which one is truly cheapest changes from trial to trial, and the summary sets the
    # stated P(lowest) beside it by bins
    r = _rehearse(run_cli, tmp_path, _scenario(tmp_path, 1e-4, draw={"speed": 0.7, "epochs": True}), "--trials", "12",
                  "--format", "json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert len({tuple(t["truly_best"]) for t in out["trials"]}) == 2
    bins = out["summary"]["p_best_bins"]
    assert sum(b["trials"] for b in bins) == len([t for t in out["trials"] if t.get("p_best") is not None]) > 0
    assert all(0 <= b["low"] <= b["stated"] <= b["high"] and 0 <= b["truly_best"] <= 1 for b in bins)
    bad = _rehearse(run_cli, tmp_path, _scenario(tmp_path, 2e-4, draw={"sped": 0.5}))
    assert bad.code == 2 and '"draw" takes "speed"' in bad.err and len(bad.err.strip().splitlines()) == 1


def test_a_comparison_resumed_in_a_later_period_times_its_reference_again_and_blocks_the_shift(run_cli, tmp_path):
    # here:1 measured alone first; two hours later (a new period, every run 0.3 sd slower or faster) here:2, 1.6x the
    # rate for 0.8x the time a sample, joins. Re-timed in the later period, here:1 tells the shift apart from here:2's
    # speed: here:1, truly cheaper, is chosen each time.
    f = tmp_path / "resumed.json"
    f.write_text(json.dumps({"noise": 0.04, "period_shift": 0.3, "earlier": ["here:1"],
                             "candidates": {"here:1": {"sample_s": 2e-4}, "here:2": {"sample_s": 1.6e-4}},
                             "settings": {"": {"epochs": {"1": 0.6, "2": 0.4}}}}))
    r = _rehearse(run_cli, tmp_path, str(f), "--trials", "4", "--format", "json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert [t["choice"] for t in out["trials"]] == ["here:1"] * 4
    assert all(t["truly_best"] == ["here:1"] and t["stop"] != "stuck" for t in out["trials"])


def test_the_reference_is_timed_again_in_a_later_period_and_only_there(tmp_path):
    """A comparison of here:1 alone, then two hours later (a new period) of here:1 and here:2: the later session
    times here:1 once more, its reference, beside here:2's probes; run again in that period, it does not."""
    import simloop

    from cpustudy.store import Store
    from cpustudy.store import store as store_mod

    truth = simloop.Truth({"fp32 b128": 2e-4}, {"fp32 b128": lambda s: 1.5})
    db = tmp_path / "resumed.sqlite"
    one = dict(precisions=None, batch_sizes=None, convergence_at="here:1", max_trainings=0)
    simloop.run(truth, db, 0, candidates="here:1", **one)

    def probes_at_1() -> int:
        with Store.read(db) as store:
            return sum(1 for r in store.runs(status="ok") if r["vcpus"] == 1 and r.get("steps_per_epoch"))

    before = probes_at_1()
    store_mod.CLOCK_OFFSET_S = 2 * 3600.0
    try:
        simloop.run(truth, db, 1, candidates="here:1,here:2", **one)
        assert probes_at_1() == before + 1
        simloop.run(truth, db, 2, candidates="here:1,here:2", **one)  # the same period: timed there already
        assert probes_at_1() == before + 1
    finally:
        store_mod.CLOCK_OFFSET_S = 0.0


@pytest.mark.parametrize("scenario, says", [
    ({"candidates": {}}, "no \"candidates\""),
    ({"candidates": {"here:1": {"sample_s": 2e-4}}}, "the scenario has no here:2"),
    ({"candidates": {"here:1": {"sample_s": 2e-4}, "here:2": {"sample_s": -1}}}, "positive \"sample_s\""),
    ({"candidates": {"here:1": {"sample_s": 2e-4}, "here:2": {"sample_s": 1e-4}}, "settings": {"": {"epochs": {}}}},
     "needs \"epochs\""),
    ("{not json", "JSONDecodeError"),
    ({"candidates": {"here:1": {"sample_s": 2e-4}, "here:2": {"sample_s": 1e-4}}, "earlier": ["here:9"]},
     "\"earlier\" names here:9"),
    ({"candidates": {"here:1": {"sample_s": 2e-4}, "here:2": {"sample_s": 1e-4}}, "earlier": "here:1"},
     "\"earlier\" is a list"),
    ({"candidates": {"here:1": {"sample_s": 2e-4}, "here:2": {"sample_s": 1e-4}, "here:3 tf": {"sample_s": 1e-4}}},
     "candidate(s) here:3 tf are not among the comparison's (here:1, here:2"),
])
def test_a_bad_scenario_is_one_line_and_exit_2(run_cli, tmp_path, scenario, says):
    f = tmp_path / "bad.json"
    f.write_text(scenario if isinstance(scenario, str) else json.dumps(scenario))
    r = _rehearse(run_cli, tmp_path, str(f))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and says in r.err, r.err


def test_trials_without_simulate_and_a_real_comparison_s_options_with_it_are_refused_before_anything_runs(
        run_cli, tmp_path):
    # before, --trials alone was ignored and a real comparison trained; --check, --out... were ignored by a rehearsal
    db = tmp_path / "never.sqlite"
    base = ("compare", "mnist_mlp", "--target-accuracy", "0.5", "--data", "learnable", "--candidates", "here:1",
            "--db", db)
    r = run_cli(*base, "--trials", "3")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "--trials rehearses a scenario: give --simulate SCENARIO.json too" in r.err
    scenario = _scenario(tmp_path, 4e-4)
    r = run_cli(*base, "--simulate", scenario, "--check", "2")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "--simulate rehearses without measuring: --check is for a real comparison only" in r.err
    r = run_cli(*base, "--simulate", scenario, "--out", tmp_path / "o", "--timeout", "5", "--deadline", "1h")
    assert r.code == 2 and "--out, --timeout, --deadline are for a real comparison only" in r.err, r.err
    assert not db.exists() and not (tmp_path / "o").exists()


def test_a_rehearsal_scores_a_tie_shared_as_p_lowest_shares_it():
    # two identical candidates: either choice is one of two truly best; P(lowest) states about 0.5 for it, and the
    # truth it is scored against must also sum to 1 over the candidates (counted whole, 0.5 would read as 1.0)
    from cpustudy import rehearsal
    from cpustudy.rules import RULES

    tie = {"trial": 0, "stop": "not worth it", "choice": "a", "stated_regret": 0.03, "unit": "s", "deciding_s": 1.0,
           "same": ["a"], "deciding_trainings": 1.0, "truly_best": ["a", "b"], "realised_regret": 0.0, "p_best": 0.55}
    alone = {**tie, "trial": 1, "choice": "b", "truly_best": ["b"], "p_best": 0.5}
    wrong = {**tie, "trial": 2, "truly_best": ["b"], "realised_regret": 0.1}
    assert [rehearsal.best_share(t) for t in (tie, alone, wrong)] == [0.5, 1.0, 0.0]
    s = rehearsal.summary([tie, alone, wrong], RULES)
    assert s["choice_truly_best"] == 0.5
    assert [(b["trials"], b["truly_best"]) for b in s["p_best_bins"]] == [(3, 0.5)]


@pytest.mark.parametrize("change, named", [
    ({"noise": -1}, "noise is -1"), ({"period_shift": "x"}, "period_shift is 'x'"), ({"nosie": 0.1}, "'nosie'"),
    ({"startup_s": -5}, "startup_s is -5"), ({"candidates": {"here:1": {"sample_s": "x"}}}, "positive \"sample_s\""),
    ({"candidates": {"here:1": {"sample_s": 2e-4, "projection_bias": "a"}}}, "'projection_bias' is 'a'"),
    ({"candidates": {"here:1": {"sample_s": 2e-4, "start_s": 1}}}, "'start_s'"),
    ({"candidates": {"here:1": {"sampel_s": 2e-4}}}, "candidate 'here:1': unknown key(s) 'sampel_s'"),
    ({"settings": {"": {"epochs": {"1": 0.3}}}}, "summing to 1"),
    ({"settings": {"": {"epochs": {"1": 1.0}, "speed": -1}}}, "'speed' is -1"),
    ({"settings": {"": {"epochs": {"1": 1.0}, "sped": 1}}}, "'sped'"),
    # finite but absurd numbers hung a rehearsal (1e308 flooded overflow warnings for 10 minutes): bounded, the
    # range named
    ({"candidates": {"here:1": {"sample_s": 1e308}}}, "'sample_s' is 1e+308: give a number above 0 and at most 10"),
    ({"candidates": {"here:1": {"sample_s": float("inf")}}}, "'sample_s' is inf"),
    ({"candidates": {"here:1": {"sample_s": 2e-4, "startup_s": 4000}}}, "'startup_s' is 4000: give a number at "
     "least 0 and at most 3600"),
    ({"candidates": {"here:1": {"sample_s": 2e-4, "projection_bias": -1}}}, "'projection_bias' is -1: give a number "
     "at least -0.9 and at most 0.9"),
    ({"noise": 1.5}, "noise is 1.5: give a number at least 0 and at most 1"),
    ({"interaction": 2}, "interaction is 2"), ({"period_shift": float("nan")}, "period_shift is nan"),
    ({"startup_s": 1e9}, "startup_s is 1000000000"), ({"validation_s": 1e300}, "validation_s is 1e+300"),
    ({"settings": {"": {"epochs": {"1": 1.0}, "speed": 1e300}}}, "'speed' is 1e+300"),
    ({"draw": {"speed": 1e300}}, "a log sd from 0 to 1")])
def test_a_scenario_with_a_wrong_value_is_refused_in_one_line_naming_it(tmp_path, change, named):
    # before, a negative noise or a string reached numpy as a traceback, and a misspelt key silently took the default
    from cpustudy.errors import UserError
    from cpustudy.rehearsal import Scenario

    f = tmp_path / "s.json"
    f.write_text(json.dumps({"candidates": {"here:1": {"sample_s": 2e-4}}, "settings": {"": {"epochs": {"1": 1.0}}},
                             **change}))
    with pytest.raises(UserError) as err:
        Scenario.load(str(f))
    assert named in str(err.value) and "\n" not in str(err.value)


def test_a_rehearsal_trial_where_every_seed_misses_is_counted_and_the_others_run(run_cli, tmp_path):
    # seeds need 1 or 9 epochs, half each, against --max-epochs 4: in some trials every seed misses. Before, that
    # trial's "no seed reached" ended the whole rehearsal (exit 2, and a false "what was measured is stored").
    f = tmp_path / "half.json"
    f.write_text(json.dumps({"noise": 0.06, "candidates": {"here:1": {"sample_s": 2e-4}, "here:2": {"sample_s": 2.1e-4}},
                             "settings": {"": {"epochs": {"1": 0.5, "9": 0.5}}}}))
    r = _rehearse(run_cli, tmp_path, str(f), "--trials", "8", "--format", "json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    missed = [t for t in out["trials"] if t["stop"] == "no seed reached"]
    assert len(out["trials"]) == 8 and 0 < len(missed) < 8
    assert all(t["choice"] is None and t["stated_regret"] is None for t in missed)
    assert out["summary"]["stops"]["no seed reached"] == len(missed)
    text = _rehearse(run_cli, tmp_path, str(f), "--trials", "8")
    assert text.code == 0 and any(x.endswith(": no seed reached") for x in text.out.splitlines())


def test_measuring_on_a_busy_machine_stops_after_two_busy_runs_and_says_why(tmp_path):
    # Every run starts while another process keeps the machine busy: each is stored but left out of every speed
    # figure. Before, the loop asked for speed run after speed run (each left out) until the whole budget was
    # spent, and said only "no usable speed run yet". Now each run's line says it was left out and why, and
    # measuring stops after two in a row, saying to measure when nothing else runs.
    import simloop

    from cpustudy import rehearsal
    from cpustudy.measure import race
    from cpustudy.rehearsal import replay

    req = simloop.one_setting(tmp_path / "busy.sqlite")
    busy = simloop.Busy(simloop.ONE_SETTING.scenario(), replay.load_stream(simloop.STREAM))
    said: list[str] = []
    out = race.measure(rehearsal.plan_simulated(req), say=said.append, measurer=busy.measurer(), rules=simloop.LOOP)
    assert out.decision is not None and out.decision.stop == "stuck"
    assert "busy machine (busy: other processes used 90 % of a CPU" in out.decision.why
    assert "measure again when nothing else runs" in out.decision.why
    assert not [s for s in out.steps if s.startswith("added")]  # nothing measured past round 1
    ran = [s for s in said if s.startswith("  ")]
    assert ran and all("left out of every speed figure: measured on a busy machine" in s for s in ran)


def test_a_rehearsal_holds_a_fresh_training_that_never_reaches_the_target_against_an_interval_that_runs_to_never(
        run_cli, tmp_path):
    # Seeds need 1 epoch or 9 (past --max-epochs 4: never). Before, a trial whose interval ran to "never" was left
    # out of the coverage, and a fresh training that never reached it was billed its 9 epochs, outside every
    # interval: the coverage was biased both ways.
    f = tmp_path / "miss.json"
    f.write_text(json.dumps({"noise": 0.06, "candidates": {"here:1": {"sample_s": 2e-4}, "here:2": {"sample_s": 2.1e-4}},
                             "settings": {"": {"epochs": {"1": 0.6, "9": 0.4}}}}))
    r = _rehearse(run_cli, tmp_path, str(f), "--trials", "12", "--format", "json")
    assert r.code == 0, r.err
    checked = [t for t in json.loads(r.out)["trials"] if "inside" in t]
    never = [t for t in checked if t["fresh_s"] is None]
    assert never and all(t["fresh_s"] is None or t["fresh_s"] < 4 * 60000 * 2.1e-4 + 60 for t in checked)
    assert all(isinstance(t["inside"], bool) for t in checked)


def test_the_reference_re_timed_on_a_busy_machine_takes_a_new_repeat_each_time_and_says_why(tmp_path):
    # A comparison measured on a quiet machine, resumed two hours later (a new period, a seed more each time) while
    # the machine is busy: its reference's probe there is left out, so the next resumption re-times it again.
    # Before, every such probe was stored as the same repeat (three runs all named r3), and the line said only "last
    # timed N h ago". Run again with nothing left to measure, it measures nothing (before: a probe every time).
    import simloop

    from cpustudy import rehearsal
    from cpustudy.measure import race
    from cpustudy.rehearsal import replay
    from cpustudy.store import Store

    truth, db = simloop.ONE_SETTING, tmp_path / "r.sqlite"
    stream = replay.load_stream(simloop.STREAM)
    race.measure(rehearsal.plan_simulated(simloop.one_setting(db, max_trainings=0)), say=lambda _: None,
                 measurer=replay.Simulated(truth.scenario(), stream).measurer(), rules=simloop.LOOP)
    said: list[str] = []
    with rehearsal._later(2 * 3600.0):
        for seeds in (4, 5, 5):
            race.measure(rehearsal.plan_simulated(simloop.one_setting(db, max_trainings=0, seeds=seeds)),
                         say=said.append, measurer=simloop.Busy(truth.scenario(), stream).measurer(),
                         rules=simloop.LOOP)
    with Store.read(db) as store:
        probes = [(r["vcpus"], r["repeat"]) for r in store.runs() if r["steps_per_epoch"]]
        seeds_run = sorted(r["seed"] for r in store.runs() if not r["steps_per_epoch"])
    assert len(probes) == len(set(probes))  # no repeat stored twice
    assert seeds_run == [1, 2, 3, 4, 5]  # the third call had nothing to measure, and measured nothing
    retimed = [s for s in said if "was last timed" in s]
    assert len(retimed) == 2 and "left out" not in retimed[0]
    assert "its 1 probe(s) since were taken on a busy machine and left out" in retimed[1]