"""A statement of certainty is a measurement too: known truths simulated through cpustudy's own statistics.

* ``holdup.compare_samples`` (a report's finding): with no true difference, a finding in at most 5 % of
  comparisons; a true 1.3x at 5 % noise with 3 runs a side found in at least 80 %.
* ``compare.combine`` (``cpustudy compare``): a fresh training (a new seed's epochs, a new run's speed)
  inside the stated interval at its stated level, within 5 points, over several epoch distributions and
  noise levels, and over seeds' trajectories of the metric (their margins past the target, epoch by epoch); P(cheapest) >= 90 % between identical candidates in at most 10 % of comparisons.

Pure NumPy and SciPy: no TensorFlow. The distributions are this file's own; the seams are public so that
others can be tried.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import simsessions as simulate

from cpustudy.analysis import compare, holdup, stats
from cpustudy.analysis.billed import Billed

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _runs(rng: np.random.Generator, n: int, mean: float, noise: float, kind: str = "lognormal") -> list[float]:
    if kind == "lognormal":
        return list(mean * np.exp(rng.normal(0.0, noise, n)))
    if kind == "gamma":  # right-skewed, the same mean and spread
        k = 1 / noise ** 2
        return list(rng.gamma(k, mean / k, n))
    if kind == "outliers":  # a shared machine: now and then a run 1.5-2x slower
        x = mean * np.exp(rng.normal(0.0, noise, n))
        slow = rng.random(n) < 0.1
        return list(np.where(slow, x * rng.uniform(1.5, 2.0, n), x))
    raise ValueError(kind)


@pytest.mark.parametrize("n,noise,kind", [(2, 0.05, "lognormal"), (2, 0.15, "lognormal"), (3, 0.05, "gamma"),
                                          (5, 0.10, "lognormal"), (3, 0.05, "outliers"), (2, 0.005, "lognormal")])
def test_no_difference_is_a_finding_at_most_5_percent_of_the_time(n: int, noise: float, kind: str) -> None:
    rng = np.random.default_rng(1000 + n)
    trials = 2000
    found = sum(holdup.compare_samples(_runs(rng, n, 10.0, noise, kind), _runs(rng, n, 10.0, noise, kind)).holds
                for _ in range(trials))
    assert found / trials <= 0.05, f"{found} of {trials} comparisons of identical configurations stated as findings"


def test_a_true_1_3x_at_5_percent_noise_with_3_runs_a_side_is_found() -> None:
    rng = np.random.default_rng(7)
    trials = 1000
    results = [holdup.compare_samples(_runs(rng, 3, 13.0, 0.05), _runs(rng, 3, 10.0, 0.05)) for _ in range(trials)]
    assert sum(r.holds for r in results) / trials >= 0.80
    assert all(r.ratio > 1 for r in results if r.holds)  # never the wrong way round


def test_the_old_rule_would_have_failed_the_same_check() -> None:
    """The rule this replaced (two or more runs a side: a finding when their min-max ranges do not overlap)
    states a finding in about a third of identical comparisons at 2 runs a side: the check can fail."""
    rng = np.random.default_rng(3)
    trials = 2000
    old = 0
    for _ in range(trials):
        a, b = _runs(rng, 2, 10.0, 0.05), _runs(rng, 2, 10.0, 0.05)
        old += max(a) < min(b) or max(b) < min(a)
    assert old / trials > 0.25


def test_a_difference_under_the_minimum_effect_is_never_a_finding() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        r = holdup.compare_samples(_runs(rng, 10, 10.3, 0.002), _runs(rng, 10, 10.0, 0.002))
        assert not r.significant and not r.holds  # 3 %, however clear: under the 5 % the test is of
    same = stats.compare_samples([10.0, 10.05, 9.98, 10.01], [10.02, 9.99, 10.03, 10.0])
    assert same.equivalent and "the same within 5 %" in same.reason


@pytest.mark.parametrize("runs,noise", [(3, 0.02), (5, 0.03), (10, 0.01)])
def test_a_true_4_percent_is_rarely_stated_as_a_5_percent_finding(runs: int, noise: float) -> None:
    """"At least 5 %" tested as such (a minimum-effect test), not as "not 0" with an observed 5 % on top."""
    rng = np.random.default_rng(runs)
    trials = 2000
    found = sum(stats.compare_samples(_runs(rng, runs, 10.4, noise), _runs(rng, runs, 10.0, noise)).holds
                for _ in range(trials))
    assert found / trials <= 0.05


def test_the_page_correction_controls_the_false_discovery_rate() -> None:
    """Twelve comparisons a page, none different: Benjamini-Hochberg over them states a finding on at most
    5 % of pages (under no difference at all, the false-discovery rate is the family-wise one)."""
    rng = np.random.default_rng(5)
    pages, bad = 300, 0
    for _ in range(pages):
        comps = [stats.compare_samples(_runs(rng, 3, 10.0, 0.05), _runs(rng, 3, 10.0, 0.05)) for _ in range(12)]
        t = stats.bh_threshold(c.p for c in comps)
        bad += any(c.at(t).holds for c in comps)
    assert bad / pages <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / pages)


# -- compare's prediction intervals --------------------------------------------------------------------------

EPOCHS = {
    "always 3": lambda rng, n: np.full(n, 3),
    "2 or 3 (70/30)": lambda rng, n: np.where(rng.random(n) < 0.7, 2, 3),
    "10 + Poisson(4)": lambda rng, n: 10 + rng.poisson(4, n),
    "log-normal around 20": lambda rng, n: np.maximum(1, np.round(20 * np.exp(rng.normal(0, 0.25, n)))),
    "geometric from 1": lambda rng, n: rng.geometric(0.4, n),
}


def _speed(rng: np.random.Generator, n: int, epoch: float, noise: float, run0: int = 0) -> list[compare.SpeedSample]:
    e = epoch * np.exp(rng.normal(0, noise, n))
    start = 4.0 * np.exp(rng.normal(0, noise, n))
    return [compare.SpeedSample(Billed(float(x), 0.5, 0.1 * float(x), float(s)), run0 + i) for i, (x, s) in
            enumerate(zip(e, start))]


def _fresh(rng: np.random.Generator, epochs: float, epoch: float, noise: float) -> float:
    x = epoch * math.exp(rng.normal(0, noise))
    return epochs * (1.1 * x) + 0.5 + 4.0 * math.exp(rng.normal(0, noise))


@pytest.mark.parametrize("dist,seeds,runs,noise", [
    ("always 3", 5, 2, 0.05), ("2 or 3 (70/30)", 3, 2, 0.03), ("2 or 3 (70/30)", 5, 3, 0.10),
    ("10 + Poisson(4)", 5, 3, 0.10), ("log-normal around 20", 5, 5, 0.05), ("geometric from 1", 5, 2, 0.05),
    ("10 + Poisson(4)", 10, 5, 0.02),
])
def test_a_fresh_training_falls_inside_the_stated_interval_at_its_level(dist: str, seeds: int, runs: int,
                                                                         noise: float) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{dist}{seeds}{runs}{noise}".encode()))
    trials, inside, stated = 400, 0, []
    for t in range(trials):
        ep = EPOCHS[dist](rng, seeds + 1)
        results = [compare.SeedResult(i, True, int(e), 100, i) for i, e in enumerate(ep[:-1])]
        cand = compare.CandidateInput("here:2", _speed(rng, runs, 2.0, noise), 0.1, "test")
        r = compare.combine(results, [cand], draws=2000, rng_seed=t)[0]
        assert r.time_low_s is not None and r.time_high_s is not None, r.interval_note
        stated.append(r.level)
        fresh = _fresh(rng, float(ep[-1]), 2.0, noise)
        inside += r.time_low_s <= fresh <= r.time_high_s
    level = float(np.mean(stated))
    assert abs(inside / trials - level) <= 0.05, f"{dist}: {inside / trials:.1%} inside a {level:.0%} interval"


#: Seeds' trajectories of a validation metric (accuracy-like, rising to ``top``): the mean at epoch k is
#: top - drop * exp(-k / pace), each seed moved by its own offset (sd ``seed``) and each epoch by noise (sd
#: ``epoch``); the seed reaches ``target`` at the first epoch at or past it, within ``cap`` epochs.
TRAJECTORIES = {
    # most seeds in 1 epoch, some need a 2nd: the epochs alone (1, 1, 1) hide the chance of a 2nd
    "near the target at epoch 1": dict(top=0.90, drop=0.06, pace=1.5, seed=0.004, epoch=0.004, target=0.865, cap=6),
    "2-4 epochs": dict(top=0.92, drop=0.15, pace=1.5, seed=0.006, epoch=0.004, target=0.89, cap=10),
    "9-12 epochs": dict(top=0.92, drop=0.2, pace=4.0, seed=0.003, epoch=0.002, target=0.90, cap=30),
    "some never reach it": dict(top=0.90, drop=0.1, pace=2.0, seed=0.004, epoch=0.001, target=0.898, cap=15),
}


def _trajectory(rng: np.random.Generator, p: dict, censor: int | None = None) -> tuple[int | None, tuple[float, ...]]:
    """One seed: the epoch it reached the target (None: not within the cap) and its margins to then."""
    u = rng.normal(0.0, p["seed"])
    out = []
    for k in range(1, p["cap"] + 1):
        m = p["top"] - p["drop"] * math.exp(-k / p["pace"]) + u + rng.normal(0.0, p["epoch"]) - p["target"]
        out.append(m)
        if m >= 0:
            return k, tuple(out)
        if censor is not None and k >= censor:
            return None, tuple(out)
    return None, tuple(out)


@pytest.mark.parametrize("name,seeds", [("near the target at epoch 1", 2), ("near the target at epoch 1", 3),
                                        ("near the target at epoch 1", 5), ("2-4 epochs", 3), ("9-12 epochs", 3),
                                        ("9-12 epochs", 5), ("some never reach it", 8)])
def test_seeds_margins_past_the_target_keep_the_interval_at_its_level(name: str, seeds: int) -> None:
    """The epochs drawn from the seeds' margins at each epoch (:func:`cpustudy.analysis.model.epochs_of`): a fresh training inside
    the stated interval at its level, within 5 points, where seeds that all took the same epochs hide how
    close to the target they were (the epochs alone: 77-79 % inside a "90 %" interval with 2-3 seeds near
    the target at epoch 1). Not met with few seeds where many never reach the target (4 seeds, a third
    never reaching: 79 % with margins, 84 % from the epochs alone): the share that reaches is the weak part."""
    p = TRAJECTORIES[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}{seeds}".encode()))
    trials, inside, by_epochs_alone = 300, 0, 0
    for t in range(trials):
        drawn = [_trajectory(rng, p) for _ in range(seeds + 1)]
        results = [compare.SeedResult(i, e is not None, e, p["cap"], i, margins=m) for i, (e, m) in
                   enumerate(drawn[:-1])]
        cand = compare.CandidateInput("here:2", _speed(rng, 3, 2.0, 0.03), 0.1, "test")
        e_fresh = drawn[-1][0]
        fresh = _fresh(rng, float(e_fresh), 2.0, 0.03) if e_fresh is not None else math.inf
        for plain in (False, True):
            use = [compare.SeedResult(r.seed, r.reached, r.epochs, r.max_epochs, r.run_id) for r in results] \
                if plain else results
            if not any(r.reached for r in use):
                continue
            r = compare.combine(use, [cand], draws=2000, rng_seed=t)[0]
            low = r.time_low_s if r.time_low_s is not None else math.inf
            high = r.time_high_s if r.time_high_s is not None else math.inf
            hit = low <= fresh <= high
            if plain:
                by_epochs_alone += hit
            else:
                inside += hit
    assert abs(inside / trials - 0.90) <= 0.05, f"{name}, {seeds} seeds: {inside / trials:.1%} inside a 90 % interval"
    print(f"{name}, {seeds} seeds: margins {inside / trials:.1%}, epochs alone {by_epochs_alone / trials:.1%}")


def test_a_race_stopped_seed_leaves_the_margins_where_it_stopped() -> None:
    """A seed censored by a race counts up to where it stopped: with the margins, no earliest-epoch guess."""
    p = TRAJECTORIES["9-12 epochs"]
    rng = np.random.default_rng(5)
    trials, inside = 300, 0
    for t in range(trials):
        drawn = [_trajectory(rng, p, censor=6 if i == 0 else None) for i in range(5)]
        results = [compare.SeedResult(i, e is not None, e, p["cap"], i, censored_after=6 if (i == 0 and e is None)
                                      else None, margins=m) for i, (e, m) in enumerate(drawn[:-1])]
        cand = compare.CandidateInput("here:2", _speed(rng, 3, 2.0, 0.03), 0.1, "test")
        e_fresh = drawn[-1][0]
        fresh = _fresh(rng, float(e_fresh), 2.0, 0.03) if e_fresh is not None else math.inf
        r = compare.combine(results, [cand], draws=2000, rng_seed=t)[0]
        high = r.time_high_s if r.time_high_s is not None else math.inf
        inside += (r.time_low_s or math.inf) <= fresh <= high
    assert abs(inside / trials - 0.90) <= 0.05, f"{inside / trials:.1%} inside a 90 % interval"


def test_seeds_that_did_not_reach_the_target_count() -> None:
    """A quarter of seeds never reach it: a fresh training's interval is open above (never) as often as
    the truth says, and the stated level still holds."""
    rng = np.random.default_rng(17)
    trials, inside = 400, 0
    for t in range(trials):
        ok = rng.random(9) > 0.25
        ep = 5 + rng.poisson(2, 9)
        results = [compare.SeedResult(i, bool(o), int(e) if o else None, 20, i) for i, (o, e) in
                   enumerate(zip(ok[:-1], ep[:-1]))]
        cand = compare.CandidateInput("here:2", _speed(rng, 3, 2.0, 0.05), 0.1, "test")
        r = compare.combine(results, [cand], draws=2000, rng_seed=t)[0]
        fresh = _fresh(rng, float(ep[-1]), 2.0, 0.05) if ok[-1] else math.inf
        high = r.time_high_s if r.time_high_s is not None else math.inf
        low = r.time_low_s if r.time_low_s is not None else math.inf
        inside += low <= fresh <= high
    assert abs(inside / trials - 0.90) <= 0.05


def test_p_cheapest_between_identical_candidates_is_rarely_confident() -> None:
    rng = np.random.default_rng(23)
    trials, confident = 400, 0
    for t in range(trials):
        ep = EPOCHS["10 + Poisson(4)"](rng, 5)
        results = [compare.SeedResult(i, True, int(e), 100, i) for i, e in enumerate(ep)]
        a = compare.CandidateInput("a", _speed(rng, 2, 2.0, 0.05), 0.1, "test")
        b = compare.CandidateInput("b", _speed(rng, 2, 2.0, 0.05, 10), 0.1, "test")
        ra, rb = compare.combine(results, [a, b], draws=2000, rng_seed=t)
        confident += max(ra.p_cheapest or 0, rb.p_cheapest or 0) >= 0.90
    assert confident / trials <= 0.10


def test_an_interval_the_data_cannot_support_is_not_given() -> None:
    one = [compare.SpeedSample(Billed(2.0, 0.5, 0.2, 4.0), 1)]
    seeds = [compare.SeedResult(1, True, 3, 10, 1), compare.SeedResult(2, True, 4, 10, 2)]
    r = compare.combine(seeds, [compare.CandidateInput("here:2", one, 0.1, "test")])[0]
    assert r.time_to_target_s is not None and r.time_low_s is None and "one speed run" in r.interval_note
    # the machine's known spread (a database's repeats) makes one run enough
    known = stats.Noise(within=0.05, df=20, between=0.02, source="test")
    r = compare.combine(seeds, [compare.CandidateInput("here:2", one, 0.1, "test")], noise=known)[0]
    assert r.time_low_s is not None and r.time_low_s < r.time_to_target_s < r.time_high_s


def test_seeds_that_took_the_same_epochs_do_not_give_a_zero_width_interval() -> None:
    seeds = [compare.SeedResult(i, True, 2, 10, i) for i in range(3)]
    s = [compare.SpeedSample(Billed(8.0, 1.0, 0.5, 3.0), 1), compare.SpeedSample(Billed(8.1, 1.0, 0.5, 3.0), 2)]
    r = compare.combine(seeds, [compare.CandidateInput("here:2", s, 0.1, "test")])[0]
    assert r.time_low_s < r.time_to_target_s < r.time_high_s


# -- what a database tells of its machine's noise ----------------------------------------------------------------


def test_the_noise_between_runs_and_between_sweeps_is_recovered_from_stored_repeats() -> None:
    rng = np.random.default_rng(29)
    groups = []
    for c in range(40):  # 40 configurations, each measured in 4 sweeps of 3 runs
        base = 10.0 * (1 + c)
        groups.append([list(base * math.exp(rng.normal(0, 0.08)) * np.exp(rng.normal(0, 0.05, 3))) for _ in range(4)])
    noise = stats.noise_from_groups(groups, fallback=stats.NO_PRIOR)
    assert 0.045 <= noise.within <= 0.055 and 0.065 <= noise.between <= 0.095
    one = stats.noise_from_groups([g[:1] for g in groups])  # one sweep: between sweeps from the default
    assert one.between == stats.DEFAULT_NOISE.between and "default" in one.source


@pytest.mark.parametrize("interaction", [0.0, 0.06])
def test_the_interaction_is_read_from_configurations_timed_together_in_several_periods(interaction: float) -> None:
    """Three configurations in each of six periods (a shift of 0.2 moving them all, each its own move on top): the
    two-way fit of their period means recovers the interaction, the shift aside, and the components pool it with the
    assumed 3.8 %; one configuration alone, or each in periods of its own, tells none."""
    rng = np.random.default_rng(31)
    estimates = []
    for _ in range(30):
        shifts = rng.normal(0.0, 0.2, 6)
        groups = [{f"p{k}": list(10.0 * (c + 1) * math.exp(s + rng.normal(0.0, interaction) if interaction else s)
                                  * np.exp(rng.normal(0.0, 0.04, 3))) for k, s in enumerate(shifts)} for c in range(3)]
        noise = stats.noise_from_groups(groups, fallback=stats.DEFAULT_NOISE)
        assert noise.interaction_df == 10  # 18 means - 3 configurations - 6 periods + 1
        estimates.append(noise.interaction)
    assert abs(float(np.sqrt(np.mean(np.square(estimates)))) - interaction) < 0.02, estimates
    pooled = stats.Components.of(noise).interaction
    assert (pooled < stats.INTERACTION) if interaction < stats.INTERACTION else (pooled > stats.INTERACTION)
    alone = stats.noise_from_groups([{f"p{k}": [10.0, 10.5] for k in range(4)}])
    apart = stats.noise_from_groups([{"p1": [10.0, 10.5], "p2": [11.0, 11.2]}, {"p3": [5.0, 5.1], "p4": [5.5, 5.4]}])
    assert alone.interaction_df == apart.interaction_df == 0
    assert stats.Components.of(alone).interaction == min(stats.INTERACTION, alone.between)


def test_sweeps_are_told_apart_by_session_and_else_by_a_gap() -> None:
    import json

    import pandas as pd

    runs = pd.DataFrame({
        "settings": [json.dumps({"session": "a"}), json.dumps({"session": "a"}), json.dumps({"session": "b"}),
                     "{}", "{}", "{}"],
        "machine": ["m"] * 6,
        "created_at": ["2026-11-26T08:00:00", "2026-11-26T08:01:00", "2026-11-26T08:02:00",
                       "2026-11-26T08:00:00", "2026-11-26T08:05:00", "2026-11-26T09:30:00"],
        "finished_at": ["2026-11-26T08:00:50", "2026-11-26T08:01:50", "2026-11-26T08:02:50",
                        "2026-11-26T08:04:00", "2026-11-26T08:06:00", "2026-11-26T09:31:00"],
    })
    s = list(holdup.sweeps(runs))
    assert s[0] == s[1] != s[2]  # two sessions
    assert s[3] == s[4] != s[5] and s[3] not in s[:3]  # no session stored: an hour apart is another sweep


# --- Sessions: the report's judge (its default noise), within one session and across two -----------------------

def _session_pair(rng: np.random.Generator, n: int, ratio: float, within: float, shift: float,
                  same: bool) -> tuple[list[float], list[float]]:
    """Two configurations of true ratio ``ratio``, ``n`` runs each: in one session (one shift of log sd ``shift``
    moving both) or in two (each its own shift)."""
    sa = rng.normal(0.0, shift)
    sb = sa if same else rng.normal(0.0, shift)
    a = list(10.0 * ratio * math.exp(sa) * np.exp(rng.normal(0.0, within, n)))
    b = list(10.0 * math.exp(sb) * np.exp(rng.normal(0.0, within, n)))
    return a, b


@pytest.mark.parametrize("shift", [0.05, 0.25])
def test_equal_speeds_in_one_session_are_called_different_at_most_5_percent_of_the_time(shift: float) -> None:
    rng = np.random.default_rng(11)
    trials, n = 1500, 4
    found = 0
    for _ in range(trials):
        a, b = _session_pair(rng, n, 1.0, 0.05, shift, same=True)
        found += holdup.compare_samples(a, b, sessions_a=["s1"] * n, sessions_b=["s1"] * n,
                                        noise=stats.DEFAULT_NOISE).holds
    assert found / trials <= 0.05


def test_equal_speeds_from_two_sessions_are_called_different_at_most_5_percent_of_the_time() -> None:
    """Across sessions the variation between them stays in: a shift of the size the judge assumes (5 %)."""
    rng = np.random.default_rng(12)
    trials, n = 1500, 4
    found = sum(holdup.compare_samples(*_session_pair(rng, n, 1.0, 0.05, stats.DEFAULT_NOISE.between, same=False),
                                       sessions_a=["s1"] * n, sessions_b=["s2"] * n, noise=stats.DEFAULT_NOISE).holds
                for _ in range(trials))
    assert found / trials <= 0.05


def test_a_true_1_3x_within_one_session_is_found_where_across_sessions_it_cannot_be() -> None:
    """Within one period its shift moves both sides alike and only each side's own move in it (the interaction,
    ``stats.INTERACTION``) stays: a true 30 % at 3 % noise, 6 runs a side, is shown to be at least 5 % (a true 15 %,
    rarely: within one period it could be that period's interaction); judged as across two periods with no
    reference, never."""
    rng = np.random.default_rng(13)
    trials, n = 500, 6
    within = across = 0
    for _ in range(trials):
        a, b = _session_pair(rng, n, 1.3, 0.03, 0.20, same=True)
        within += holdup.compare_samples(a, b, sessions_a=["s1"] * n, sessions_b=["s1"] * n,
                                         noise=stats.DEFAULT_NOISE).holds
        across += holdup.compare_samples(a, b, sessions_a=["s1"] * n, sessions_b=["s2"] * n,
                                         noise=stats.DEFAULT_NOISE).holds
    assert within / trials >= 0.80
    assert across / trials <= 0.05


@pytest.mark.parametrize("runs", [3, 10])
def test_equal_configurations_in_one_period_with_a_5_percent_interaction_are_rarely_called_different(runs: int) -> None:
    """Each configuration moves by its own 5 % in a period: more runs measure that period's move better, and never
    make it a finding (before the interaction was counted: 6 % at 3 runs, 18 % at 10)."""
    f = simulate.findings(simulate.Truth(0.15, runs=runs, interaction=0.05), 1.0, same_session=True, trials=1000)
    assert f.share <= 0.05, f.line()


@pytest.mark.parametrize("truth", [simulate.Truth(0.25, runs=3), simulate.Truth(0.25, runs=3, interaction=0.05)],
                         ids=lambda t: t.label())
def test_a_reference_measured_in_both_periods_finds_a_true_1_5x_and_keeps_equal_ones_equal(truth: simulate.Truth) -> None:
    """A third configuration measured in both periods blocks the contrast (a ratio of ratios, free of the shift):
    a true 1.5x across periods is found at least 70 % of the time whatever the shift (without the reference, at a
    shift of 0.25, 17 %), and equal speeds are called different at most 5 %."""
    found = simulate.findings(truth, 1.5, same_session=False, trials=1000, reference=True)
    assert found.share >= 0.70, found.line()
    false = simulate.findings(truth, 1.0, same_session=False, trials=1000, reference=True)
    assert false.share <= 0.05, false.line()


# --- A new session: truths outside the model's family, through the functions production calls ------------------
# (tests/simsessions.py: the anchor's prior, the noise from the database's sessions, combine with each speed
# sample's session, session_note, the report's judge). 1,000 trials each; reports/gnr2-session-calibration/ has the
# whole grid, before and after.

@pytest.mark.parametrize("truth", [
    simulate.Truth(0.05, sessions=3), simulate.Truth(0.15, sessions=3), simulate.Truth(0.25, sessions=3),
    simulate.Truth(0.25, sessions=3, tails="t3"), simulate.Truth(0.25, sessions=5, epochs="1 or 2 (60/40)"),
], ids=lambda t: t.label())
def test_a_training_in_a_new_session_falls_inside_at_85_percent_from_three_sessions(truth: simulate.Truth) -> None:
    c = simulate.coverage(truth, trials=1000)
    assert c.labelled == 0, c.line()
    assert c.share >= 0.85, c.line()


def test_one_session_alone_says_it_covers_that_session_only() -> None:
    """With one session and nothing else the machine has told, a 0.25 shift, above the 0.20 assumed, leaves the
    interval under its 90 % (about 84 % inside): every interval says the shift was assumed."""
    c = simulate.coverage(simulate.Truth(0.25), trials=300)
    assert c.labelled == c.trials, c.line()
    assert c.share < 0.9  # what the note is for


def test_one_session_with_the_anchor_of_earlier_sessions_covers_80_percent() -> None:
    """The anchor seeing the whole shift: 80 % or more inside; the interval still says it covers its session only (the
    anchor can miss what moves a training: reports/gnr2-later-session/)."""
    c = simulate.coverage(simulate.Truth(0.25, history=5), trials=1000)
    assert c.share >= 0.80 and c.labelled == c.trials, c.line()


def test_an_anchor_that_misses_half_the_shift_leaves_intervals_that_say_they_cover_their_session_only() -> None:
    c = simulate.coverage(simulate.Truth(0.25, history=5, anchor_sees=0.5), trials=300)
    assert c.share < 0.9 and c.labelled == c.trials, c.line()


def test_five_sessions_and_a_small_shift_give_an_interval_under_twice_the_truths_range() -> None:
    c = simulate.coverage(simulate.Truth(0.05, sessions=5), trials=1000)
    assert c.width_vs_truth <= 2.0, c.line()


@pytest.mark.parametrize("truth", [
    simulate.Truth(0.05, runs=4), simulate.Truth(0.25, runs=4), simulate.Truth(0.25, runs=4, tails="t3"),
    simulate.Truth(0.25, runs=4, history=5, anchor_sees=0.5), simulate.Truth(0.25, runs=4, others=3),
], ids=lambda t: t.label())
def test_equal_speeds_from_two_sessions_are_rarely_called_different_whatever_the_shift(truth: simulate.Truth) -> None:
    f = simulate.findings(truth, 1.0, same_session=False, trials=1000)
    assert f.share <= 0.05, f.line()


def test_a_true_1_4x_within_one_session_is_found_despite_a_large_shift() -> None:
    f = simulate.findings(simulate.Truth(0.25, runs=3), 1.4, same_session=True, trials=500)
    assert f.share >= 0.9, f.line()


@pytest.mark.parametrize("bias", [-0.10, 0.10])
def test_speed_runs_projected_10_percent_off_still_cover_a_new_session_at_85_percent(bias: float) -> None:
    """The capped-epoch projection's own error enters the interval (cpustudy's default 5 % where the database measured
    no projection against full epochs): three sessions of projected runs, a true bias of 10 % either way."""
    c = simulate.coverage(simulate.Truth(0.05, sessions=3, projection_bias=bias), trials=1000)
    assert c.share >= 0.85, c.line()
