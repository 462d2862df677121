"""The one model of a comparison's measurements (``cpustudy.analysis.model``): what it says of a setting's mean
epochs, of contrasts within and across periods, and that the interval and the decision read the same draws. Known
truths are simulated through the model itself; the production loop's rehearsal (``compare --simulate``) is in
test_decision.py."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from cpustudy.analysis import compare as combo
from cpustudy.analysis.billed import Billed
from cpustudy.analysis.model import Group, Model, epochs_of
from cpustudy.analysis.stats import INTERACTION, Components
from cpustudy.analysis.stats import DEFAULT_NOISE, Noise
from cpustudy.decision import policy


def _seeds(margins: list[tuple[float, ...]], base: int = 100) -> list[combo.SeedResult]:
    """Seeds from their margins past the target at each epoch (reached at the first margin >= 0)."""
    out = []
    for i, m in enumerate(margins):
        hit = next((k + 1 for k, v in enumerate(m) if v >= 0), None)
        out.append(combo.SeedResult(i + 1, hit is not None, hit, 6, base + i, margins=m[:hit] if hit else m))
    return out


def _samples(per_epoch: float, sessions: list[str], rng: np.random.Generator, noise: float = 0.05,
             shift: dict[str, float] | None = None) -> list[combo.SpeedSample]:
    return [combo.SpeedSample(_billed(per_epoch, noise * rng.standard_normal() + (shift or {}).get(s, 0.0)), i,
                              session=s) for i, s in enumerate(sessions)]


def _billed(per_epoch: float, log_factor: float) -> Billed:
    """A run whose every part moved by ``log_factor`` (a slow spell slows its epochs and its start-up alike)."""
    f = math.exp(log_factor)
    return Billed(per_epoch * f, 0.5 * f, 0.5 * f, 4.0 * f)


def test_two_agreeing_seeds_leave_a_setting_s_mean_epochs_less_known_than_six():
    # Seeds that all reached 0.86 in one epoch, by a hair: a new seed may need two, and two seeds say less of how
    # often than six do (the old model spread the mean by the seeds' sd over sqrt(seeds), near nothing here).
    rng = np.random.default_rng(0)
    two = epochs_of(_seeds([(0.002,), (0.005,)]), 8000, rng)
    six = epochs_of(_seeds([(0.002,), (0.005,), (0.013,), (0.004,), (0.003,), (0.009,)]), 8000, rng)
    assert two is not None and six is not None
    assert two.log_var > 2 * six.log_var > 0
    assert 1.0 <= float(np.mean(six.mean)) < float(np.mean(two.mean)) < 2.5
    # A new seed's epochs are whole, and some need a second epoch.
    assert set(np.unique(two.new)) <= {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, math.inf} and (two.new > 1).mean() > 0.05


def test_the_same_runs_draw_alike_whatever_their_periods_are_named():
    # A period is named after a random session id: the same database read in another process (or a rehearsal played
    # again) must give the same draws, and two periods never the same shift.
    noise = Noise(within=0.05, df=10, between=0.15, source="test")
    seeds = _seeds([(0.01,), (0.02,), (0.015,)])

    def model(names: tuple[str, str]) -> Model:
        rng = np.random.default_rng(2)
        a = _samples(10.0, [names[0]] * 3, rng)
        b = [replace(s, run_id=s.run_id + 10) for s in _samples(11.0, [names[1]] * 3, rng)]
        return Model([Group("", seeds, [combo.CandidateInput("a", a, None, ""), combo.CandidateInput("b", b, None, "")])],
                     noise=noise, draws=2000)

    one, other = model(("period 4f1c", "period 9a2e")), model(("period e07b", "period 13d5"))
    assert np.array_equal(one.mean_cost()["b"], other.mean_cost()["b"])
    cost = one.mean_cost()
    assert float(np.std(np.log(cost["a"] / cost["b"]))) > 0.1  # two periods' shifts drawn apart, not alike


def test_the_same_runs_draw_alike_whatever_their_candidates_are_called_or_in_what_order():
    # compare names a candidate here:1; a database's answer (recommend, the report) names the same runs "1 vCPU tf on
    # ...", in another order: the same runs must give the same figures, as the same billed time everywhere.
    noise = Noise(within=0.05, df=10, between=0.15, source="test")
    seeds = _seeds([(0.01,), (0.02,), (0.015,)])
    rng = np.random.default_rng(3)
    a = _samples(10.0, ["p1"] * 3, rng)
    b = [replace(s, run_id=s.run_id + 10) for s in _samples(11.0, ["p1"] * 3, rng)]

    def model(names: tuple[str, str], flip: bool) -> Model:
        given = [combo.CandidateInput(names[0], a, None, ""), combo.CandidateInput(names[1], b, None, "")]
        return Model([Group("", seeds, given[::-1] if flip else given)], noise=noise, draws=2000)

    one, other = model(("here:1", "here:2"), False), model(("1 vCPU tf on X", "2 vCPUs tf on X"), True)
    for x, y in (("here:1", "1 vCPU tf on X"), ("here:2", "2 vCPUs tf on X")):
        assert np.array_equal(one.fitted[x].new_s, other.fitted[y].new_s)


def test_a_contrast_across_periods_pays_the_shift_and_one_within_a_period_does_not():
    rng = np.random.default_rng(1)
    noise = Noise(within=0.05, df=10, between=0.15, source="test")
    seeds = _seeds([(0.01,), (0.02,), (0.015,)])
    a = _samples(10.0, ["p1"] * 4, rng, noise=0.0)
    b_same = combo.CandidateInput("b", _samples(10.0, ["p1"] * 4, rng, noise=0.0), None, "")
    b_apart = combo.CandidateInput("b", _samples(10.0, ["p2"] * 4, rng, noise=0.0), None, "")
    together = Model([Group("", seeds, [combo.CandidateInput("a", a, None, ""), b_same])], noise=noise, draws=8000)
    apart = Model([Group("", seeds, [combo.CandidateInput("a", a, None, ""), b_apart])], noise=noise, draws=8000)

    def sd(m: Model) -> float:
        c = m.mean_cost()
        return float(np.std(np.log(c["a"] / c["b"])))

    assert sd(apart) > 2.5 * sd(together)
    assert Components.of(noise).shift > Components.of(noise).interaction
    # Within one period what stays unknown is the runs' noise and each one's own move (interaction), not the shift.
    comps = Components.of(noise)
    assert sd(together) < math.sqrt(2 * (comps.within ** 2 / 4 + comps.interaction ** 2)) * 1.3


def test_the_interval_and_the_decision_read_the_same_model():
    rng = np.random.default_rng(2)
    seeds = _seeds([(0.01,), (-0.01, 0.02), (0.005,)])
    inputs = [combo.CandidateInput("fast", _samples(8.0, ["p"] * 3, rng), 0.2, ""),
              combo.CandidateInput("slow", _samples(10.0, ["p"] * 3, rng), 0.2, "")]
    results = {r.candidate: r for r in combo.combine(seeds, inputs, noise=DEFAULT_NOISE)}
    st = policy.standing([Group("", seeds, inputs)], noise=DEFAULT_NOISE)
    assert st is not None
    # The expected time of one training (the decision's) lies inside the interval of one new training (the answer's)
    # for each, and both rank the candidates alike.
    for name, r in results.items():
        assert r.time_low_s is not None and r.time_high_s is not None
        assert r.time_low_s < st.time_s[name] < r.time_high_s
    assert policy.leader(st) == "fast" and (results["fast"].p_cheapest or 0) > 0.5
    # A recalibration factor moves the interval and every probability read from the same draws.
    wide = {r.candidate: r for r in combo.combine(seeds, inputs, noise=DEFAULT_NOISE, factor=2.0)}
    assert (wide["fast"].time_high_s or 0) / (wide["fast"].time_low_s or 1) > \
        1.1 * (results["fast"].time_high_s or 0) / (results["fast"].time_low_s or 1)
    assert (wide["fast"].p_cheapest or 0) < (results["fast"].p_cheapest or 0)
    st_wide = policy.standing([Group("", seeds, inputs)], noise=DEFAULT_NOISE, factor=2.0)
    assert st_wide is not None and st_wide.p_best["fast"] < st.p_best["fast"]


def test_a_fresh_training_in_a_new_period_falls_inside_the_model_s_interval_at_its_level():
    # Truth: run noise 0.06, a period shift 0.10 and an interaction 0.02 (what the model assumes); 4 runs measured
    # in one period; the fresh training in another. 300 trials.
    noise = Noise(within=0.06, df=20, between=math.hypot(0.10, 0.02), source="test", between_df=20,
                  between_basis="repeats")  # measured: no assumed shift on top
    inside = 0
    trials = 300
    rng = np.random.default_rng(3)
    seeds = _seeds([(0.20,), (0.25,), (0.22,)])  # every new seed one epoch, as the truth's
    for t in range(trials):
        shift = {"then": rng.normal(0, 0.10) + rng.normal(0, 0.02)}
        runs = _samples(10.0, ["then"] * 4, rng, noise=0.06, shift=shift)
        (r,) = combo.combine(seeds, [combo.CandidateInput("c", runs, None, "")], noise=noise, draws=4000, rng_seed=t)
        fresh = _billed(10.0, rng.normal(0, 0.10) + rng.normal(0, 0.02) + rng.normal(0, 0.06)).seconds(1)
        inside += bool(r.time_low_s is not None and r.time_high_s is not None and r.time_low_s <= fresh <= r.time_high_s)
    assert 0.85 <= inside / trials <= 0.96


def test_seeds_without_margins_that_agree_leave_their_mean_epochs_open_and_unbiased():
    # Two seeds that both took 2 epochs (no metric stored per epoch): a new seed may need 1 or 3; more seeds that
    # agree narrow the mean, and a less known setting is not read as a costlier one.
    rng = np.random.default_rng(4)
    two = epochs_of([combo.SeedResult(i, True, 2, 6, i) for i in range(2)], 8000, rng)
    eight = epochs_of([combo.SeedResult(i, True, 2, 6, i) for i in range(8)], 8000, rng)
    assert two is not None and eight is not None
    assert float(np.mean(two.mean)) == float(np.mean(eight.mean)) == 2.0 or \
        abs(float(np.mean(two.mean)) - 2.0) < 0.02 and abs(float(np.mean(eight.mean)) - 2.0) < 0.02
    assert float(np.std(two.mean)) > 1.5 * float(np.std(eight.mean)) > 0.05


def test_seeds_whose_margins_agree_to_rounding_leave_their_mean_epochs_as_open_as_seeds_without_margins():
    # Three seeds that each missed by 0.05 and passed by 0.05 a step later: their margins agree, and the mean of
    # three equal floats can differ from them in the last bit. That rounding is no spread to read as certainty.
    rng = np.random.default_rng(5)
    margins = [(0.1 * -0.5, 0.1 * 0.5)] * 3
    assert sum((m[0] - sum(x[0] for x in margins) / 3) ** 2 for m in margins) > 0  # the rounding is there
    agreeing = epochs_of(_seeds(margins), 8000, rng)
    bare = epochs_of([combo.SeedResult(i, True, 2, 6, i) for i in range(3)], 8000, rng)
    assert agreeing is not None and bare is not None
    assert float(np.std(agreeing.mean)) > 0.5 * float(np.std(bare.mean)) > 0.02


def test_a_reference_timed_in_both_periods_blocks_a_contrast_across_them():
    # B (measured in the later period only) and C (the earlier only) are equally fast; every run of the later period
    # is 30 % slower (the machine's shift). A, timed in both periods, tells the shift: B and C come out the same,
    # surely so; without A's later runs the shift is read as B being 1.35x slower.
    rng = np.random.default_rng(5)
    noise = Noise(within=0.03, df=20, between=0.15, source="test")
    seeds = _seeds([(0.20,), (0.25,), (0.22,)])
    late = {"late": 0.3}
    a_early = _samples(12.0, ["early"] * 3, rng, noise=0.03)
    a_late = _samples(12.0, ["late"] * 3, rng, noise=0.03, shift=late)
    b = combo.CandidateInput("b", _samples(10.0, ["late"] * 3, rng, noise=0.03, shift=late), None, "")
    c = combo.CandidateInput("c", _samples(10.0, ["early"] * 3, rng, noise=0.03), None, "")

    def ratio(a: list[combo.SpeedSample]) -> tuple[float, float]:
        m = Model([Group("", seeds, [combo.CandidateInput("a", a, None, ""), b, c])], noise=noise, draws=8000)
        r = np.log(m.mean_cost()["b"] / m.mean_cost()["c"])
        return float(np.mean(r)), float(np.std(r))

    blocked, unblocked = ratio(a_early + a_late), ratio(a_early)
    # a ratio of ratios pays four interactions (b's, c's and a's in each period): 2 x INTERACTION, and the runs
    assert abs(blocked[0]) < 0.06 and blocked[1] < 2 * INTERACTION + 0.02
    assert unblocked[0] > 0.2 and unblocked[1] > 1.5 * blocked[1]
