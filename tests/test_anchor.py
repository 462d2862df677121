"""The anchor every run times (cpustudy.worker.anchor) and what a database learns from it of its machine's drift
between sessions (cpustudy.analysis.anchor). The real anchor is asserted in test_measure_execute's software test."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cpustudy.analysis import anchor, stats
from cpustudy.worker.anchor import VERSION, anchor_s


def _run(seconds: float, session: str, machine: str = "m", version: int = VERSION) -> dict:
    return {"machine": machine, "settings": json.dumps({"session": session}),
            "software": json.dumps({"anchor": {"seconds": seconds, "version": version}})}


def test_the_anchor_is_a_few_milliseconds_of_fixed_work():
    t = anchor_s()
    assert t > 0 and math.isfinite(t)


def test_a_drifting_machine_raises_the_variation_between_sessions_a_quiet_one_leaves_the_default():
    rng = np.random.default_rng(5)
    drifting, quiet = [], []
    for s in range(6):
        shift = rng.normal(0.0, 0.25)  # 25 % between sessions, as seen on shared VMs
        for _ in range(4):
            drifting.append(_run(0.06 * math.exp(shift + rng.normal(0.0, 0.01)), f"s{s}"))
            quiet.append(_run(0.06 * math.exp(rng.normal(0.0, 0.01)), f"s{s}"))
    d = anchor.drift(drifting)
    assert d is not None and d.between_df == 5 and 0.10 < d.between < 0.45
    raised = anchor.prior(drifting)
    assert raised.between == pytest.approx(d.between) and "anchor" in raised.source
    assert raised.within == stats.DEFAULT_NOISE.within  # the within-session spread stays the default's
    assert anchor.prior(quiet) == stats.DEFAULT_NOISE  # never lowered below the default


def test_too_few_sessions_or_another_version_tell_nothing():
    two = [_run(0.06, "a"), _run(0.07, "b"), _run(0.065, "b")]
    assert anchor.drift(two) is None and anchor.prior(two) == stats.DEFAULT_NOISE
    other = [_run(0.06 * (1 + s), f"s{s}", version=VERSION + 1) for s in range(5)]
    assert anchor.drift(other) is None
    assert anchor.anchor_of({"software": "{}"}) is None and anchor.anchor_of({"software": None}) is None
