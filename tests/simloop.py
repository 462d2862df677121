"""The decision loop run against a simulated measurer (``cpustudy.rehearsal.replay``): a known truth (each
setting's speed and each seed's learning curve), a real plan, the real loop, every run stored through
``execute``'s own bookkeeping. Used by ``tests/test_decision.py`` and by ``reports/*/simulate_decision.py``."""

from __future__ import annotations

import copy
import json
import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from cpustudy import rehearsal
from cpustudy.rehearsal import replay
from cpustudy.measure.compare import CompareRequest
from cpustudy.rules import Rules
from cpustudy.worker.protocol import RunConfig

STREAM = rehearsal.TEMPLATE
#: The rules the loop's tests run under: the default's, except that a race is never refused before measuring (at
#: most 100 % saved a training: the up-front valuation, ``Rules.prior_saving``, is tested on its own).
LOOP = Rules(prior_saving=1.0)
#: The family every simulated comparison is priced in: every size with a spot rate in proportion to its vCPUs, so that
#: a truth's cheapest is the same on every CPU the tests run on (a machine's own family need not be: on a Zen 3 VM the
#: catalog prices 1 and 2 vCPUs alike, as t2d-standard-2).
FAMILY = "gcp:n2-highcpu"
TARGET = 0.5
SLOPE = 0.02  # the metric gained an epoch around the target


def request(db: Path, **over: Any) -> CompareRequest:
    kw: dict[str, Any] = dict(
        workload="mnist_mlp", target=TARGET, target_text=None, candidates="here:2", seeds=3, first_seed=1,
        max_epochs=4, builds="tf", gpu_builds=None, batch_size=None, precision="float32", data="learnable",
        repeats=1, probe_steps=100, convergence_at="here:2", deadline_s=None, budget_usd=None,
        probe_budget_usd=None, spot=True, family=FAMILY, prices=None, probe_plan=None, workdir=None, db=str(db),
        timeout=None, max_trainings=12, precisions="float32,mixed_bfloat16", batch_sizes="64,256", checks=0)
    kw.update(over)
    return CompareRequest(**kw)


def key(cfg: RunConfig) -> str:
    """A setting's key in a truth: ``fp32 b64``."""
    return f"{'bf16' if cfg.precision_policy != 'float32' else 'fp32'} b{cfg.batch_size}"


@dataclass(frozen=True)
class Truth:
    """Per setting key: seconds per training sample (so an epoch's time; per vCPU count alike) and the epoch a
    seed's metric reaches the target (a function of the seed: fractional, the metric crossing in between)."""

    per_sample_s: dict[str, float]
    needs: dict[str, Callable[[int], float]]
    noise: float = 0.06
    startup_s: float = 4.0
    validation_s: float = 0.3

    def scenario(self, shift: float = 0.0) -> replay.Truth:
        def step_s(cfg: RunConfig) -> float:
            return self.per_sample_s[key(cfg)] * int(cfg.batch_size)

        def metric(cfg: RunConfig, epoch: int) -> float:
            return TARGET + SLOPE * (epoch - self.needs[key(cfg)](int(cfg.seed)))

        return replay.Truth(step_s=step_s, metric=metric, noise=self.noise, session_shift=shift,
                               startup_s=self.startup_s, tracing_s=0.2, validation_s=self.validation_s)

    def expected_s(self, setting: str, samples: int = 60000, seeds: int = 400) -> float:
        """A training's expected billed time in ``setting`` (over ``seeds`` seeds; the run's noise is common to
        every setting, so it does not change which is best)."""
        epochs = [max(1, math.ceil(self.needs[setting](s) - 1e-9)) for s in range(1, seeds + 1)]
        per_epoch = samples * self.per_sample_s[setting] + self.validation_s
        return sum(e * per_epoch for e in epochs) / len(epochs) + self.startup_s + 0.2


def uniform(seed: int, salt: int = 0) -> float:
    """A number in [0, 1) fixed by the seed (the same seed, the same learning curve in every setting)."""
    return (zlib.crc32(f"{seed}:{salt}".encode()) % 10_000) / 10_000


_PLANS: dict[str, Any] = {}


def run(truth: Truth, db: Path, trial: int = 0, plan: Any = None, rules: Rules = LOOP, **over: Any) -> tuple[Any, Any]:
    """One comparison to its decision against ``truth``: (its comparison, its plan). ``plan``: a plan made
    before (copied, pointed at ``db``), to save planning each trial."""
    sim = replay.Simulated(truth.scenario(), replay.load_stream(STREAM), seed=trial)
    req = request(db, **over)
    if plan is None:
        known = json.dumps(over, sort_keys=True, default=str)
        if known not in _PLANS:  # planning reads the machine (a second or two): once per request
            _PLANS[known] = rehearsal.plan_simulated(req)
        plan = _PLANS[known]
    plan = copy.deepcopy(plan)
    comparison = rehearsal.measure_into(plan, str(db), sim.measurer(), rules)
    return comparison, plan


def setting_of(candidate: str) -> str:
    """``here:2 bf16 b64`` -> ``bf16 b64``."""
    return candidate.split(" ", 1)[1]


class Busy(replay.Simulated):
    """A simulated measurer whose every run starts while another process keeps the machine busy (90 % of a CPU)."""

    def machine_state(self) -> dict[str, object]:
        return {"loadavg": [2.0, 2.0, 2.0], "cpus": 2,
                "busy_processes": [{"pid": 1, "name": "python", "cpu_percent": 90.0}]}


#: One setting (fp32, batch 64) at 1.7e-4 s a sample, every seed reaching the target in 1.5 epochs, and a request
#: over here:1 and here:2 in it: the busy-machine tests' comparison.
ONE_SETTING = Truth({"fp32 b64": 1.7e-4}, {"fp32 b64": lambda s: 1.5})


def one_setting(db: Path, **over: Any) -> CompareRequest:
    return request(db, **{"candidates": "here:1,here:2", "precisions": None, "batch_sizes": None, "batch_size": 64,
                          **over})
