"""When a comparison between two configurations holds up, and why not when it does not.

A finding is stated only when the comparison behind it holds up:

* **a quiet machine**: no run of either side was measured while other processes used the CPUs
  (``busy_reason``: other processes using ``BUSY_CPU_PERCENT`` % of a CPU or more in the sample each
  run stores before it starts). The load average is not used: on a small machine it still counts the
  sweep's own previous worker;
* **a spread that excludes "no difference"**: with two or more runs on each side, their ranges of full
  training time must not overlap; with a single run on either side, the two must differ by more than
  ``SINGLE_RUN_MARGIN`` x, the spread of one setting between fresh processes on a shared machine
  (measured here: up to 2x at worst, 10-30 % typically; ``--repeats 3`` gives a real spread).

The 2017 study's imported logs are one run per configuration on machines cpustudy did not watch:
their comparisons are reported as that study's (its published figures), not re-judged here.
Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from cpustudy.analysis.studies import study
from cpustudy.environment import state

#: A summary row: a record, or the pandas row it came from.
Row = Mapping[str, Any] | pd.Series

BUSY_CPU_PERCENT = state.BUSY_CPU_PERCENT  # other processes' CPU use, in % of one CPU, that makes a machine busy
SINGLE_RUN_MARGIN = 1.5


def busy_reason(machine_state: str | Mapping[str, Any] | None) -> str:
    """Why a run's machine was busy when it started (empty when quiet or not recorded)."""
    parsed = state.parsed(machine_state)
    busy = state.busy_share(parsed)
    if busy is None:
        return ""
    load = parsed.get("loadavg") or [math.nan]
    return f"busy: other processes used {busy[0]:.0f} % of a CPU ({busy[1]}; load average {load[0]:.1f})"


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


#: Per measure a comparison can be about: the summary columns of its (low, middle, high) over runs,
#: how many runs those are, and the cost column a cost comparison scales them to.
MEASURES = {
    "time": (("time_low", "total_time_s", "time_high"), "n_runs", "cost_usd"),
    "target": (("target_time_low", "time_to_target_s", "target_time_high"), "target_reached_runs",
               "cost_to_target_usd"),
}


def _range(r: Row, metric: str) -> tuple[float, float, float]:
    """(low, middle, high) of a configuration's time (full training, or to the target accuracy with
    ``target`` metrics), or of its cost (the same runs priced at one rate: the time's range scaled)."""
    columns, _, cost = MEASURES["target" if metric.startswith("target") else "time"]
    low, mid, high = (_num(r.get(c)) for c in columns)
    if metric.endswith("cost"):
        scale = _num(r.get(cost)) / mid if mid > 0 else math.nan
        return low * scale, mid * scale, high * scale
    return low, mid, high


@dataclass(frozen=True)
class Reason:
    """Why a comparison is inconclusive; false (empty) when it holds up. ``busy``: a side ran on a busy
    machine (the report counts those apart). Reads as its text."""

    text: str = ""
    busy: bool = False
    same: bool = False  # the two sides are one program under two names (:func:`same_program`)

    def __bool__(self) -> bool:
        return bool(self.text)

    def __str__(self) -> str:
        return self.text


#: The comparison holds up.
HOLDS = Reason()


def same_program(a: Row, b: Row) -> Reason | None:
    """Two builds that resolved to the same program on this machine (``resolved``: versions, oneDNN, XLA,
    interpreter and environment alike) are one configuration under two names: not a comparison."""
    ra, rb = str(a.get("resolved") or ""), str(b.get("resolved") or "")
    if ra and ra == rb and a.get("recipe") != b.get("recipe"):
        return Reason(f"{a.get('recipe')} and {b.get('recipe')} resolve to the same switches on this machine "
                      "(same TensorFlow, oneDNN, XLA and environment): the same configuration, not compared",
                      same=True)
    return None


def verdict(a: Row, b: Row, metric: str = "time") -> Reason:
    """Whether the comparison of configurations ``a`` and ``b`` (summary rows) by ``metric`` (time,
    cost, target_time or target_cost: to a target accuracy, over the runs that reached it) holds up:
    :data:`HOLDS`, or the :class:`Reason` it is inconclusive."""
    same = same_program(a, b)
    if same:
        return same
    busy = [str(r.get("busy") or "") for r in (a, b) if r.get("busy")]
    if busy:
        return Reason(busy[0], busy=True)
    if not study(a.get("study")).judged and not study(b.get("study")).judged:
        return HOLDS  # an imported study's single logged runs, as it published them
    (alo, x, ahi), (blo, y, bhi) = _range(a, metric), _range(b, metric)
    if not (x > 0 and y > 0):
        return Reason("not measured on both sides")
    runs = MEASURES["target" if metric.startswith("target") else "time"][1]
    na, nb = int(_num(a.get(runs)) or 1), int(_num(b.get(runs)) or 1)
    if na >= 2 and nb >= 2:
        if ahi < blo or bhi < alo:
            return HOLDS
        return Reason(f"their repeats overlap ({na} and {nb} runs)")
    ratio = max(x, y) / min(x, y)
    if ratio > SINGLE_RUN_MARGIN:
        return HOLDS
    return Reason(f"one run {'each' if na == nb == 1 else 'on one side'} and a difference of only {ratio:.2f}x, "
                  f"within the {SINGLE_RUN_MARGIN:g}x that fresh processes vary (measure with --repeats 3)")
