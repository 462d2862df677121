"""The grid behind reports/session-calibration/README.md: known truths through cpustudy's statements of certainty
(cpustudy.analysis.simulate), before and after the combination read each speed sample's session and contrasts across
known sessions assumed the largest variation between them seen where theirs is not measured.

    python reports/session-calibration/simulate.py > reports/session-calibration/results.md
"""

from __future__ import annotations

import sys
import time

from cpustudy.analysis import simulate as sim

T = sim.Truth
TRIALS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000


def main() -> None:
    start = time.time()
    print(f"# Simulated: {TRIALS} trials per row\n")
    print("## A fresh training in a new session against the interval `compare` states\n")
    print("before: every speed sample pooled as one session (and a projected run's error not counted); after: each "
          "sample's session read (random effects), a projected run's own error added (cpustudy's default 5 %: the "
          "simulated database measured no projection against full epochs).\n")
    print("| truth | inside, before | inside, after | said 'this session only' | width before | width after "
          "| after / truth's 90 % range |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for shift in (0.05, 0.15, 0.25):
        rows += [T(shift), T(shift, history=5), T(shift, history=5, anchor_sees=0.5)]
        rows += [T(shift, sessions=3), T(shift, sessions=3, tails="t3"), T(shift, sessions=5)]
    rows += [T(0.02, sessions=5), T(0.02, sessions=5, seeds=5), T(0.25, sessions=3, epochs="1 or 2 (60/40)"),
             T(0.25, sessions=5, epochs="10 + Poisson(4)")]
    for bias in (-0.10, 0.10):  # speed runs projected from capped epochs, off by 10 % (the fresh training is not)
        rows += [T(0.05, projection_bias=bias, history=5), T(0.05, sessions=3, projection_bias=bias),
                 T(0.15, sessions=3, projection_bias=bias)]
    for truth in rows:
        old = sim.coverage(truth, TRIALS, by_session=False, projection_error=False)
        new = sim.coverage(truth, TRIALS)
        print(f"| {truth.label()} | {old.share:.1%} | {new.share:.1%} | {new.labelled / new.trials:.0%} "
              f"| {old.width:.2f}x | {new.width:.2f}x | {new.width_vs_truth:.2f} |", flush=True)
    print("\n## Findings: how often two configurations are called different\n")
    print("before: the variation between sessions assumed at cpustudy's default (5 %) for every contrast across "
          "sessions; after: sessions known apart, the largest seen (25 %) where the configurations' own runs do not "
          "measure it.\n")
    print("| true ratio | sessions | truth | called different, before | after |")
    print("| --- | --- | --- | --- | --- |")
    cases = []
    for shift in (0.05, 0.15, 0.25):
        cases += [(T(shift, runs=4), 1.0, False), (T(shift, runs=4, tails="t3"), 1.0, False),
                  (T(shift, runs=4, history=5), 1.0, False), (T(shift, runs=4, history=5, anchor_sees=0.5), 1.0, False),
                  (T(shift, runs=4, others=3), 1.0, False), (T(shift, runs=4), 1.0, True)]
    cases += [(T(0.25, runs=3), 1.25, True), (T(0.25, runs=4), 1.1, True), (T(0.05, runs=4), 1.25, False),
              (T(0.05, runs=4), 2.0, False), (T(0.25, runs=4), 2.0, False)]
    for truth, ratio, same in cases:
        old = sim.findings(truth, ratio, same, TRIALS, sessions_known=False)
        new = sim.findings(truth, ratio, same, TRIALS)
        print(f"| {ratio:.2f} | {'one' if same else 'two'} | {truth.label()} | {old.share:.1%} | {new.share:.1%} |",
              flush=True)
    print(f"\n({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
