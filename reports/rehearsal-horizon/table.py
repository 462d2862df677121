"""The horizon table of reports/rehearsal-horizon/README.md from its JSON (run from the repository root)."""
import json
from pathlib import Path

here = Path("reports/rehearsal-horizon")
names = ["identical", "x1.1", "x0.9", "x0.7", "settings-2", "settings-4"]
print("| family | the decision: measuring + regret | the fixed plan: measuring + regret | the default unmeasured: regret |"
      " the decision's stops |")
print("| --- | --- | --- | --- | --- |")
sums = {"decision": [], "fixed": [], "default": []}
for name in names:
    got = {}
    for plan in ("decision", "fixed"):
        f = here / f"{name}.{plan}.json"
        if f.is_file() and f.stat().st_size:
            got[plan] = json.loads(f.read_text())["summary"]
    if len(got) < 2:
        continue
    d, x = got["decision"], got["fixed"]
    sums["decision"].append(d["horizon_measured"])
    sums["fixed"].append(x["horizon_measured"])
    sums["default"].append(d["horizon_default"])
    stops = ", ".join(f"{k} {v}" for k, v in d["stops"].items())
    print(f"| {name} | {d['horizon_measured']:.2f} | {x['horizon_measured']:.2f} | {d['horizon_default']:.2f} | {stops} |")
if sums["decision"]:
    n = len(sums["decision"])
    print(f"| mean of {n} | {sum(sums['decision']) / n:.2f} | {sum(sums['fixed']) / n:.2f} | "
          f"{sum(sums['default']) / n:.2f} | |")
