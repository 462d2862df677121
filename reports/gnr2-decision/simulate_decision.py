"""The decision loop against a simulated measurer, many trials per truth: how often it chooses a candidate within
5 % of the true best, its regret, and the seeds and trainings' time it spends, against every setting with every
seed (the fixed plan, --max-trainings 0) and, with --old, against the race cpustudy had before (commit b8446cb).

Run from the repository root: python reports/gnr2-decision/simulate_decision.py TRIALS [--old | --trainings-100]
> out.json (--trainings-100: the new rule told the answer serves 100 trainings)
(--old: run in a checkout of b8446cb with cpustudy/measure/execute.py and replay.py of this commit copied in).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path.cwd() / "tests"))  # first: the checkout it runs in (--old: b8446cb's)

import simloop  # noqa: E402

SETTINGS = ["fp32 b64", "fp32 b256", "bf16 b64", "bf16 b256"]
BASE = 1.7e-4


def even(s: int) -> float:
    return 1.0 + 0.8 * simloop.uniform(s)  # 1 or 2 epochs


def slow(s: int) -> float:
    return 1.6 + 0.8 * simloop.uniform(s)  # 2 or 3


def fast(s: int) -> float:
    return 0.5 + 0.4 * simloop.uniform(s)  # 1


def bimodal(s: int) -> float:
    return 0.9 if simloop.uniform(s, 1) < 0.5 else 1.9


TRUTHS = {
    "identical": simloop.Truth({k: BASE for k in SETTINGS}, {k: even for k in SETTINGS}),
    "1.1x faster": simloop.Truth({**{k: BASE for k in SETTINGS}, "bf16 b64": BASE / 1.1}, {k: even for k in SETTINGS}),
    "1.3x faster": simloop.Truth({**{k: BASE for k in SETTINGS}, "bf16 b64": BASE / 1.3}, {k: even for k in SETTINGS}),
    "fewer epochs": simloop.Truth({k: BASE for k in SETTINGS}, {**{k: slow for k in SETTINGS}, "bf16 b256": fast}),
    "bimodal epochs": simloop.Truth({k: BASE for k in SETTINGS}, {k: bimodal for k in SETTINGS}),
}


def old_run(truth: simloop.Truth, db: Path, trial: int):
    """The race of b8446cb (its round 1, its race rounds; its settling is bounded by wall-clock trainings, which a
    simulated run takes none of, so it adds nothing here), measuring through the same simulated worker."""
    from cpustudy.measure import execute as ex
    from cpustudy.measure import replay, settings
    from cpustudy.measure.compare import plan_compare

    sim = replay.Simulated(truth.scenario(), replay.load_stream(simloop.STREAM), seed=trial)
    real = ex.execute
    ex.execute = partial(real, source=sim)
    try:
        sp = settings.plan_settings(simloop.request(db), plan_compare)
        out = settings.measure_settings(sp, say=lambda _: None)
    finally:
        ex.execute = real
    choice = max(out.results, key=lambda r: r.p_cheapest or 0.0).candidate
    return choice, sim.runs, len({(s.seed, s.run_id) for s in out.seeds})


def trial_new(truth, db, trial, max_trainings, trainings=None):
    from cpustudy.rules import Rules

    rules = Rules(trainings=trainings) if trainings else Rules()
    out, _ = simloop.run(truth, db, trial, rules=rules, max_trainings=max_trainings)
    d = out.decision
    choice = d.get("choice") or max(out.results, key=lambda r: r.p_cheapest or 0.0).candidate
    return choice, d["cost"]["seeds"], d["cost"]["trainings"], d["stop"]


def main() -> None:
    trials = int(sys.argv[1])
    old = "--old" in sys.argv
    rows = []
    for name, truth in TRUTHS.items():
        expected = {k: truth.expected_s(k) for k in SETTINGS}
        best = min(expected.values())
        rules = ("old race",) if old else ("new --trainings 100",) if "--trainings-100" in sys.argv else (
            "new", "fixed plan")
        for rule in rules:
            regrets, seeds, spent, stops = [], [], [], {}
            for t in range(trials):
                with tempfile.TemporaryDirectory() as d:
                    db = Path(d) / "c.sqlite"
                    if rule == "old race":
                        choice, _, n = old_run(truth, db, t)
                        cost = None
                        stop = "race"
                    else:
                        choice, n, cost, stop = trial_new(truth, db, t, 0 if rule == "fixed plan" else None,
                                                          100 if rule.endswith("100") else None)
                regrets.append(expected[simloop.setting_of(choice)] / best - 1)
                seeds.append(n)
                if cost is not None:
                    spent.append(cost)
                stops[stop] = stops.get(stop, 0) + 1
            rows.append({"truth": name, "rule": rule, "trials": trials,
                         "within_5pct": sum(r <= 0.05 for r in regrets) / trials,
                         "mean_regret": statistics.mean(regrets), "worst_regret": max(regrets),
                         "seeds_mean": statistics.mean(seeds), "seeds_max": max(seeds),
                         "trainings_mean": statistics.mean(spent) if spent else None, "stops": stops,
                         "truth_relative": {k: round(v / best, 3) for k, v in expected.items()}})
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
