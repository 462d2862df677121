"""This machine's drift between measuring sessions, from the anchor every run times after its epochs
(:mod:`cpustudy.worker.anchor`: about 10 ms of fixed work on one core, the same in every run).

A database learns from it how far this machine moves from one session (a ``sweep``, ``run`` or ``compare`` call)
to the next without the user's model measured in two sessions: the anchor's seconds grouped per machine and
session go through the same estimate as a configuration's repeats (:func:`cpustudy.analysis.stats.noise_from_groups`).
From three sessions on, its variation between sessions is the prior for every configuration not yet measured in
as many (:func:`prior`): it raises cpustudy's default where this machine drifts more, never lowers it (a 10 ms
kernel on one core may miss what moves a training: memory bandwidth under load, more cores).
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

from cpustudy.analysis import stats
from cpustudy.analysis.runs import periods, session_of, settings_of
from cpustudy.store.rows import RunRow

#: The anchor version this analysis reads (``cpustudy.worker.anchor.VERSION``).
VERSION = 1
#: Sessions of the anchor needed before it informs the variation between sessions.
MIN_SESSIONS = 3


def anchor_of(run: RunRow) -> float | None:
    """The anchor's seconds a run stored (None: an older run, or another anchor version)."""
    found = settings_of(run.get("software")).get("anchor")
    if not isinstance(found, dict) or found.get("version") != VERSION:
        return None
    seconds = found.get("seconds")
    return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else None


def drift(runs: Iterable[RunRow]) -> stats.Noise | None:
    """The anchor's variation within and between sessions over the runs that timed it, per machine pooled; None
    where fewer than ``MIN_SESSIONS`` periods of sessions (:func:`cpustudy.analysis.runs.periods`: sessions less
    than an hour apart are one) of one machine timed it."""
    by: dict[str, dict[str, list[float]]] = {}
    runs = list(runs)
    period = periods(runs)  # sessions within an hour of each other: one draw of the machine's shift
    for r in runs:
        seconds, session = anchor_of(r), session_of(r)
        if seconds is not None and session:
            by.setdefault(str(r.get("machine")), {}).setdefault(period.get(session, session), []).append(seconds)
    if not by or max(len(s) for s in by.values()) < MIN_SESSIONS:
        return None
    groups = [list(sessions.values()) for sessions in by.values()]
    sessions = sum(len(s) for s in by.values())
    return stats.noise_from_groups(groups, fallback=stats.NO_PRIOR,
                                   source=f"the anchor timed in every run: {sessions} periods of sessions")


def prior(runs: Iterable[RunRow], default: stats.Noise = stats.DEFAULT_NOISE) -> stats.Noise:
    """The prior for a configuration's noise on this database's machines: cpustudy's default, its variation between
    sessions raised to the anchor's where the anchor measured more in ``MIN_SESSIONS`` sessions or more."""
    measured = drift(runs)
    if measured is None or not measured.between_df or measured.between <= default.between:
        return default
    return dataclasses.replace(default, between=measured.between, between_df=measured.between_df, between_basis="anchor",
                               source=f"cpustudy's default, between sessions {measured.source} "
                                      f"({measured.between:.1%})")
