"""Intervals recalibrated by the backtest: how far each stored check fell from its interval, and how much wider
later intervals must be for their level to hold (split conformal; see :mod:`cpustudy.analysis.backtest`). The factor
multiplies the model's drawn deviations (:mod:`cpustudy.analysis.model`), not the stated bounds alone."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from cpustudy.rules import RULES

if TYPE_CHECKING:
    from cpustudy.store import Readable
    from cpustudy.store.rows import CheckRow


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
            # "only" where fewer than the level fell inside; at or above it, split conformal still widens them to
            # hold its rank of the checks (all 12 of 12 at 90 %), more than the level's share of these few
            share, held = self.inside / self.n, min(math.ceil((self.n + 1) * self.level), self.n)
            return (f"intervals widened {self.factor:.2f}x (every drawn deviation of log time, so the probabilities "
                    f"moved with them): {'only ' if share < self.level else ''}{self.inside} of {self.n} fresh "
                    f"trainings backtested on this machine ({share:.0%}) fell inside their stated {self.level:.0%} "
                    f"intervals; split conformal widens them by what would have held {held} of these {self.n}, so "
                    f"that {self.level:.0%} of later ones fall inside")
        return (f"intervals kept as stated: {self.inside} of {self.n} fresh trainings backtested on this machine fell "
                f"inside their {self.level:.0%} intervals ({self.factor:.2f}x of their width would have held "
                f"{self.level:.0%}; the tool never narrows on the backtest)")


def inflation(checks: Sequence[CheckRow], level: float = RULES.level) -> Inflation:
    """The recalibration the stored checks call for (see the module's docstring)."""
    # against the model's raw interval: a stated interval's half-widths were its factor times the raw ones
    scores = sorted(score(billed, low, high, c.get("median_s")) * float(c.get("factor") or 1.0)
                    for c in checks
                    if (billed := c.get("billed_s")) and (low := c.get("low_s")) and (high := c.get("high_s"))
                    and round(float(c.get("level", level)), 6) == round(level, 6))  # a score is in its own level's half-widths
    n = len(scores)
    inside = sum(s <= 1.0 for s in scores)
    if n < MIN_CHECKS:
        return Inflation(None, n, inside, level)
    rank = math.ceil((n + 1) * level)
    return Inflation(scores[rank - 1] if rank <= n else math.inf, n, inside, level)


def factor(store: Readable, fingerprint: str, level: float = RULES.level) -> tuple[float, list[str]]:
    """The recalibration the stored checks of the machine ``fingerprint`` call for (1.0: none), and the line saying so
    (none where the machine has no check). It is applied to the model's draws (:class:`cpustudy.analysis.model.Model`:
    every drawn deviation of log time, so the interval and every probability read from the draws move together)."""
    machine_id = next((m["id"] for m in store.machines() if m.get("fingerprint") == fingerprint), None)
    if machine_id is None:
        return 1.0, []
    inf = inflation(store.checks(machine_id), level)
    if inf.n == 0:
        return 1.0, []
    return (float(inf.factor) if inf.applies and inf.factor is not None else 1.0), [inf.line]
