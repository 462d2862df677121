"""A comparison's decision (``Comparison.decision``, a :class:`~cpustudy.analysis.compare.Decision`) in words, for the command's output and the answer page alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # the command imports this module before parsing: nothing heavy at import (--help)
    from cpustudy.analysis.compare import Decision


def decision_lines(d: Decision | None) -> list[str]:
    """A comparison's decision in words: how it ended, what to choose, what deciding cost and what the choice saves
    against the default, and the rules it was reached under."""
    if d is None:
        return []
    out = [f"{d.stop}: {d.why}"]
    if d.choice:
        same = [c for c in d.same if c != d.choice]
        regret = f"expected regret {d.expected_regret:.1%}" if d.expected_regret is not None else "none other to weigh"
        out.append(f"choose {d.choice} ({regret})"
                   + (f"; the same within {d.rules.indifference:.0%}: {', '.join(same)}" if same else ""))
    cost = d.cost
    from cpustudy.decision.policy import SETTLED  # here, not at import: the command imports this module before parsing

    alone = d.stop == SETTLED  # one candidate: nothing was decided, its interval measured
    out.append(f"{'measuring' if alone else 'deciding'} cost {cost.trainings:.1f} trainings' time here "
               f"({cost.seconds:.0f} s: {cost.seeds} seed(s), {cost.speed_runs} speed run(s))")
    if d.saves_per_training is not None:
        saves = f"{d.saves_per_training:.3g} {d.unit}" if d.unit == "USD" else f"{d.saves_per_training:.0f} s"
        share = f" ({d.saves_share:.0%})" if d.saves_share is not None else ""
        out.append(f"against the default {d.default}: saves {saves} per training{share}"
                   + (f"; deciding pays for itself after {d.pays_after_trainings:.1f} trainings"
                      if d.pays_after_trainings else ""))
    elif d.default and d.choice == d.default:
        out.append(f"the default {d.default} is the choice: keep it")
    out.append("rules: " + (f"{d.rules.level:.0%} prediction intervals; one candidate settled once its interval is "
                            f"within {d.rules.narrow:g}x or its planned seeds gave it" if alone else d.rules.words()))
    return out


__all__: Sequence[str] = ("decision_lines",)
