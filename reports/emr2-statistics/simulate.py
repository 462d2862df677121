"""The old and the new statistics side by side on simulated truths (run from the repository root:
``.venv/bin/python reports/emr2-statistics/simulate.py > reports/emr2-statistics/simulation.md``).

* Findings: two configurations' per-run times, lognormal (or skewed, or with slow outliers) around a true
  ratio; the old rule (two or more runs a side: a finding when the min-max ranges do not overlap) against
  the new one (``holdup.compare_samples``: Welch on log times, 5 % minimum effect, alone on its page).
* compare's interval: seeds' epochs from a known distribution, speed runs lognormal; a fresh training (a new
  seed, a new run) inside the interval? The old rule (5th-95th percentiles of resampled (seed, speed run)
  pairs) against the new one (``compare.combine``'s 90 % prediction interval).
"""

import math
import sys

import numpy as np

sys.path.insert(0, "tests")
from test_stats_calibration import EPOCHS, _fresh, _runs, _speed  # noqa: E402

from cpustudy.analysis import compare, holdup  # noqa: E402


def old_interval(seeds, samples, rng):
    ep = np.array([s.epochs for s in seeds], float)
    d = ep[rng.integers(0, len(ep), 4000)]
    per = np.array([s.epoch_s + s.validation_s for s in samples])
    fixed = np.array([s.tracing_s + s.startup_s for s in samples])
    k = rng.integers(0, len(samples), 4000)
    return np.percentile(d * per[k] + fixed[k], [5, 95])


def coverage(dist, seeds, runs, noise, trials=400):
    rng = np.random.default_rng(2)
    new = old = 0
    wn, wo = [], []
    for t in range(trials):
        ep = EPOCHS[dist](rng, seeds + 1)
        res = [compare.SeedResult(i, True, int(e), 100, i) for i, e in enumerate(ep[:-1])]
        sp = _speed(rng, runs, 2.0, noise)
        r = compare.combine(res, [compare.CandidateInput("c", sp, 0.1, "t")], draws=2000, rng_seed=t)[0]
        lo, hi = old_interval(res, sp, rng)
        fresh = _fresh(rng, float(ep[-1]), 2.0, noise)
        new += r.time_low_s <= fresh <= r.time_high_s
        old += lo <= fresh <= hi
        wn.append(r.time_high_s / r.time_low_s)
        wo.append(hi / lo)
    return old / trials, new / trials, float(np.median(wo)), float(np.median(wn))


def findings(n, ratio, noise, kind="lognormal", trials=2000):
    rng = np.random.default_rng(5)
    old = new = 0
    for _ in range(trials):
        a, b = _runs(rng, n, 10 * ratio, noise, kind), _runs(rng, n, 10, noise, kind)
        old += max(a) < min(b) or max(b) < min(a)
        new += holdup.compare_samples(a, b).holds
    return old / trials, new / trials


def main():
    print("## Findings: share of comparisons stated as a finding (2,000 simulated comparisons each)\n")
    print("| runs a side | true ratio | noise (sd of log time) | runs | old rule | new rule |")
    print("| --- | --- | --- | --- | --- | --- |")
    for args in [(2, 1.0, 0.05), (3, 1.0, 0.05), (2, 1.0, 0.15), (3, 1.0, 0.05, "outliers"), (3, 1.0, 0.05, "gamma"),
                 (2, 1.02, 0.005), (3, 1.1, 0.05), (2, 1.3, 0.05), (3, 1.3, 0.05), (2, 1.4, 0.05)]:
        old, new = findings(*args)
        kind = args[3] if len(args) > 3 else "lognormal"
        print(f"| {args[0]} | {args[1]} | {args[2]} | {kind} | {old:.1%} | {new:.1%} |")
    print("\nWith no true difference (ratio 1.0) a finding is a false one; at 1.02 the old rule's findings are "
          "real but under any minimum effect.\n")
    print("## compare: a fresh training inside the stated 90 % interval (400 simulated comparisons each)\n")
    print("| seeds' epochs | seeds | speed runs | noise | old: inside | new: inside | old width (high/low) | "
          "new width |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for args in [("always 3", 5, 2, 0.05), ("2 or 3 (70/30)", 3, 2, 0.03), ("2 or 3 (70/30)", 5, 2, 0.05),
                 ("2 or 3 (70/30)", 5, 3, 0.10), ("10 + Poisson(4)", 5, 2, 0.05), ("10 + Poisson(4)", 5, 3, 0.10),
                 ("log-normal around 20", 5, 5, 0.05), ("geometric from 1", 5, 2, 0.05),
                 ("10 + Poisson(4)", 10, 5, 0.02), ("10 + Poisson(4)", 3, 2, 0.20)]:
        o, n, wo, wn = coverage(*args)
        print(f"| {args[0]} | {args[1]} | {args[2]} | {args[3]} | {o:.1%} | {n:.1%} | {wo:.2f} | {wn:.2f} |")


if __name__ == "__main__":
    main()
