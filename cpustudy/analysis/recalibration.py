"""Intervals recalibrated by the backtest: how far each stored check fell from its interval, and how much wider
later intervals must be for their level to hold (split conformal; see :mod:`cpustudy.analysis.backtest`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence

from cpustudy.analysis import compare as combo
from cpustudy.rules import RULES


#: Checks needed before intervals are widened by the backtest.
MIN_CHECKS = 10


def score(billed_s: float, low_s: float, high_s: float, median_s: float | None = None) -> float:
    """How far ``billed_s`` lies from the interval's middle, in half-widths on a log scale (<= 1: inside). The middle
    is ``median_s`` where stored, else the interval's geometric middle; each side is scaled by its own half-width."""
    mid = median_s if median_s and low_s <= median_s <= high_s else math.sqrt(low_s * high_s)
    x, m = math.log(billed_s), math.log(mid)
    half = (m - math.log(low_s)) if x < m else (math.log(high_s) - m)
    if half <= 0:
        return 0.0 if x == m else math.inf
    return abs(x - m) / half


@dataclass(frozen=True)
class Inflation:
    """What the checks say about the intervals: ``factor`` (the split-conformal quantile of their scores; None
    below ``MIN_CHECKS``), over ``n`` checks of which ``inside`` fell inside, at ``level``."""

    factor: float | None
    n: int
    inside: int
    level: float

    @property
    def applies(self) -> bool:
        return self.factor is not None and self.factor > 1.0

    @property
    def line(self) -> str:
        if self.factor is None:
            return (f"intervals not recalibrated: {self.n} fresh training(s) backtested on this machine, "
                    f"{MIN_CHECKS} needed (`cpustudy backtest` holds out the stored ones)")
        if self.applies:
            return (f"intervals widened {self.factor:.2f}x (on a log scale about their middle): of {self.n} fresh "
                    f"trainings backtested on this machine only {self.inside} fell inside their stated "
                    f"{self.level:.0%} intervals, and {self.factor:.2f}x is what {self.level:.0%} of them needed "
                    "(split conformal)")
        return (f"intervals kept as stated: {self.inside} of {self.n} fresh trainings backtested on this machine fell "
                f"inside their {self.level:.0%} intervals ({self.factor:.2f}x of their width would have held "
                f"{self.level:.0%}; the tool never narrows on the backtest)")


def inflation(checks: Sequence[dict[str, Any]], level: float = RULES.level) -> Inflation:
    """The recalibration the stored checks call for (see the module's docstring)."""
    scores = sorted(score(c["billed_s"], c["low_s"], c["high_s"], c.get("median_s")) for c in checks
                    if c.get("billed_s") and c.get("low_s") and c.get("high_s")
                    and round(float(c.get("level", level)), 6) == round(level, 6))  # a score is in its own level's half-widths
    n = len(scores)
    inside = sum(s <= 1.0 for s in scores)
    if n < MIN_CHECKS:
        return Inflation(None, n, inside, level)
    rank = math.ceil((n + 1) * level)
    return Inflation(scores[rank - 1] if rank <= n else math.inf, n, inside, level)


def widen(results: Sequence[combo.CandidateResult], factor: float) -> list[combo.CandidateResult]:
    """Each result's time and cost intervals widened ``factor``-fold on a log scale about their middle (the
    median); a result without an interval is left as it is."""
    def side(mid: float | None, bound: float | None) -> float | None:
        if mid is None or bound is None or mid <= 0 or bound <= 0 or not math.isfinite(bound):
            return bound
        return mid * (bound / mid) ** factor

    return [dataclasses.replace(r, time_low_s=side(r.time_to_target_s, r.time_low_s),
                                time_high_s=side(r.time_to_target_s, r.time_high_s),
                                cost_low_usd=side(r.cost_usd, r.cost_low_usd),
                                cost_high_usd=side(r.cost_usd, r.cost_high_usd)) for r in results]


def recalibrated(results: Sequence[combo.CandidateResult], store: Any,
                 fingerprint: str) -> tuple[list[combo.CandidateResult], list[str]]:
    """``results`` with the recalibration the stored checks of the machine ``fingerprint`` call for applied, and the
    line saying so (none where the machine has no check)."""
    machine_id = next((m["id"] for m in store.machines() if m.get("fingerprint") == fingerprint), None)
    if machine_id is None:
        return list(results), []
    level = next((r.level for r in results), RULES.level)
    inf = inflation(store.checks(machine_id), level)
    if inf.n == 0:
        return list(results), []
    return (widen(results, inf.factor) if inf.applies and inf.factor is not None else list(results)), [inf.line]
