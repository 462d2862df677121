"""The summary table of reports/rehearsal-baseline/README.md from the families' JSON (run from the repository root)."""
import json
import sys
from pathlib import Path

here = Path(sys.argv[1] if len(sys.argv) > 1 else "reports/rehearsal-baseline")
names = ["identical", "x1.1", "x0.9", "x1.3", "x1.5", "one-period-x1.1", "interaction-5pc", "interaction-5pc-x1.1", "projected-10pc-off",
         "resumed-shift0.15-x1.1", "resumed-shift0.25-x1.1", "resumed-shift0.25-identical", "settings-2", "settings-4", "settings-4-t100", "settings-4-drawn", "one-candidate"]


def pct(x):
    return "-" if x is None else f"{100 * x:.1f} %"


print("| family | trials | how they ended | named the same | stated regret (mean) | realised regret (mean) | realised / stated | "
      "decided with realised > 2x threshold | choice within 5 % of the best | P(lowest expected cost) of the choice "
      "(mean) | choice truly best | deciding (s, mean) | fresh training in a later period inside the 90 % "
      "interval |")
print("|" + " --- |" * 13)
for name in names:
    f = here / f"{name}.json"
    if not f.is_file() or not f.stat().st_size:
        continue
    s = json.loads(f.read_text())["summary"]
    ratio = (s["mean_realised_regret"] / s["mean_stated_regret"]) if s["mean_stated_regret"] else None
    stops = ", ".join(f"{k} {v}" for k, v in s["stops"].items())
    print(f"| {name} | {s['trials']} | {stops} | {pct(s.get('said_same'))} | {pct(s['mean_stated_regret'])} | {pct(s['mean_realised_regret'])} | "
          f"{'-' if ratio is None else f'{ratio:.2f}'} | {pct(s['decided_over_twice_regret'])} | "
          f"{pct(s['within_indifference'])} | {pct(s['mean_p_best_of_choice'])} | {pct(s['choice_truly_best'])} | "
          f"{s['mean_deciding_s']:.0f} | {pct(s['fresh_inside'])} of {s['fresh_checked']} |")


# Pooled over every family's choices: the stated P(lowest expected cost) against how often the choice was truly
# best, a tie shared (1/k to each of k tied candidates, as the summary's own bins score it since f157ea7).
chosen = []
for name in names:
    f = here / f"{name}.json"
    if f.is_file() and f.stat().st_size:
        for t in json.loads(f.read_text())["trials"]:
            if t.get("p_best") is not None and t.get("choice") is not None:
                tied = t["truly_best"]
                chosen.append((name, t["p_best"], 1.0 / len(tied) if t["choice"] in tied else 0.0))
if chosen:
    print()
    print("| stated P(lowest expected cost) | choices | mean stated | truly best (a tie shared) |")
    print("| --- | --- | --- | --- |")
    for lo, hi in ((0.0, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01)):
        xs = [(p, b) for _, p, b in chosen if lo <= p < hi]
        if xs:
            print(f"| {lo:.1f}-{min(hi, 1.0):.1f} | {len(xs)} | {sum(p for p, _ in xs) / len(xs):.2f} | "
                  f"{sum(b for _, b in xs) / len(xs):.2f} |")
