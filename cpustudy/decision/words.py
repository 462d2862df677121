"""A comparison's decision (``Comparison.decision``) in words, for the command's output and the answer page alike."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from cpustudy.rules import Rules


def decision_lines(d: Mapping[str, Any]) -> list[str]:
    """A comparison's ``decision`` in words: how it ended, what to choose, what deciding cost and what the
    choice saves against the default, and the rules it was reached under."""
    if not d:
        return []
    out = [f"{d['stop']}: {d['why']}"]
    if d.get("choice"):
        same = [c for c in d.get("same", []) if c != d["choice"]]
        regret = f"expected regret {d['expected_regret']:.1%}" if "expected_regret" in d else "none other to weigh"
        out.append(f"choose {d['choice']} ({regret})"
                   + (f"; the same within {d['rules']['indifference']:.0%}: {', '.join(same)}" if same else ""))
    cost = d["cost"]
    out.append(f"deciding cost {cost['trainings']:.1f} trainings' time here ({cost['seconds']:.0f} s: "
               f"{cost['seeds']} seed(s), {cost['speed_runs']} speed run(s))")
    if d.get("saves_per_training") is not None:
        unit = d["unit"]
        saves = f"{d['saves_per_training']:.3g} {unit}" if unit == "USD" else f"{d['saves_per_training']:.0f} s"
        pays = d.get("pays_after_trainings")
        share = f" ({d['saves_share']:.0%})" if d.get("saves_share") is not None else ""
        out.append(f"against the default {d['default']}: saves {saves} per training{share}"
                   + (f"; deciding pays for itself after {pays:.1f} trainings" if pays else ""))
    elif d.get("default") and d.get("choice") == d.get("default"):
        out.append(f"the default {d['default']} is the choice: keep it")
    out.append("rules: " + Rules(**{k: v for k, v in d["rules"].items() if k in Rules.__dataclass_fields__}).words())
    return out


__all__: Sequence[str] = ("decision_lines",)
