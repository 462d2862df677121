"""``cpustudy bench overhead``: does measuring with cpustudy change what is measured?

In one interleaved run, the same model, data, input pipeline, CPUs and threads are trained (a) by cpustudy's worker
and (b) by a plain script that calls ``model.fit`` with no callback and times it with a stopwatch
(``cpustudy.worker.plain``; a user's training script is run by plain Python with a stopwatch added to its first
fit). Both run in fresh processes pinned the same way, alternating which goes first. The figure is the
ratio of steady-state epoch times, cpustudy / plain (1.00 = no overhead): the median over the rounds
with a 95 % bootstrap interval.

The plain script's steady-state epoch is the mean of its epochs after the first (which traces),
timed by a callback with only the epoch hooks, around one ``fit`` of E epochs: like cpustudy's, which
also means its timed epochs. An earlier version timed whole ``fit`` calls, ``(T(fit of E epochs) -
T(fit of 1 epoch)) / (E - 1)``, to cancel each call's set-up; with one ``tf.data`` iterator per call
that difference also carried the idle stall of dropping the iterator at the end of each call, which
grows with the iterator's age (measured: the plain side read 2x slow).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from functools import partial
from typing import Callable

from cpustudy.environment import machine
from cpustudy.errors import UserError
from cpustudy.measure.execute import execute, worker_env
from cpustudy.measure.session import measuring
from cpustudy.measure.spec import Host, RunSpec, plan
from cpustudy.store import Store
from cpustudy.workloads import parse_list
from cpustudy.worker.protocol import RunConfig


def bootstrap_interval(values: list[float], level: float = 0.95, resamples: int = 4000,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the median of ``values`` (deterministic for a seed)."""
    import random

    if len(values) < 2:
        return (values[0], values[0]) if values else (float("nan"), float("nan"))
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    lo = medians[int((1 - level) / 2 * (resamples - 1))]
    hi = medians[int((1 + level) / 2 * (resamples - 1))]
    return lo, hi


def plain_epochs(config: RunConfig, timeout_s: float | None = None) -> tuple[float, float, str]:
    """The plain side's steady-state epoch (the mean of its epochs after the first), its fastest timed one, and
    what it fed ``fit``, as it said."""
    proc = subprocess.run([config.python or sys.executable, "-m", "cpustudy.worker.plain", config.to_json()],
                          capture_output=True, text=True, env=worker_env(config.env, device="cpu"), timeout=timeout_s)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"plain Keras run failed: {tail}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    steady = float(result["epoch_time_s"])
    if steady <= 0:
        raise RuntimeError("the plain run's epochs were too short to tell apart from fit's set-up time: "
                           "use more --steps-per-epoch or --epochs")
    return steady, min(float(t) for t in result["epochs_s"][1:]), str(result.get("fed") or "")


def overhead(
    store: Store, machine_id: int, config: RunConfig, rounds: int,
    progress: Callable[[str], None] = lambda s: None, plain_side: str = "same",
) -> dict[str, object]:
    """Alternate cpustudy and plain runs ``rounds`` times each (cpustudy's runs are stored): one workload's line of
    ``cpustudy bench overhead``. ``plain_side``: ``same``, the plain fit through cpustudy's input pipeline;
    ``arrays``, the same arrays into ``fit`` (Keras' own path, as a user's script feeds it). Each round's figure is
    the mean of its timed epochs; ``ratio_fastest_epoch`` is the median over rounds of the fastest timed epoch's
    ratio (a host's slow spell in one epoch of a run moves the mean, not the fastest)."""
    plain_config = config.with_(input_pipeline="numpy") if plain_side == "arrays" else config
    ours: list[float] = []
    plain: list[float] = []
    ours_fastest: list[float] = []
    plain_fastest: list[float] = []
    fed: set[str] = set()
    for r in range(rounds):
        order = ("cpustudy", "plain") if r % 2 == 0 else ("plain", "cpustudy")
        for who in order:
            if who == "cpustudy":
                outcome = execute(store, machine_id, config.with_(repeat=r))
                if outcome.status != "ok":
                    raise RuntimeError(f"cpustudy run failed: {outcome.error}")
                timed = [e["elapsed_s"] for e in store.epochs([outcome.run_id]) if not e["warmup"]]
                ours.append(statistics.fmean(timed))  # a mean, like the plain stopwatch
                ours_fastest.append(min(timed))
                progress(f"round {r + 1}/{rounds} cpustudy: {ours[-1]:.3f} s/epoch")
            else:
                mean, fastest, what = plain_epochs(plain_config)
                fed.add(what)
                plain.append(mean)
                plain_fastest.append(fastest)
                progress(f"round {r + 1}/{rounds} plain keras: {plain[-1]:.3f} s/epoch")
    ratios = [a / b for a, b in zip(ours, plain)]
    fastest_ratios = [a / b for a, b in zip(ours_fastest, plain_fastest)]
    low, high = bootstrap_interval(ratios)
    return {"workload": config.workload, "vcpus": config.vcpus, "input": config.input_pipeline,
            "plain_fed": ", ".join(sorted(fed)), "cpustudy_epoch_s": statistics.median(ours),
            "plain_keras_epoch_s": statistics.median(plain), "ratio": statistics.median(ratios), "ci95_low": low,
            "ci95_high": high, "ratio_min": min(ratios), "ratio_max": max(ratios),
            "ratio_fastest_epoch": statistics.median(fastest_ratios) if fastest_ratios else None, "rounds": rounds}


def measure_overhead(workloads_text: str, *, vcpus: int | None, build: str, epochs: int, steps_per_epoch: int,
                     rounds: int, db: str | None, input_pipeline: str = "auto", plain: str = "same",
                     progress: Callable[[str, str], None] = lambda w, s: None) -> list[dict[str, object]]:
    """``cpustudy bench overhead``: each workload's rounds, stored as study ``bench-overhead``."""
    wls = parse_list(workloads_text)
    for w in wls:
        if w.model is not None and w.model.kind != "script":
            raise UserError(f"bench overhead measures cpustudy's own workloads and scripts; {w.model.path} is a model "
                            "file: measure it with `cpustudy run` or `sweep`")
    if epochs < 2:
        raise UserError("--epochs must be 2 or more: the first epoch is a warm-up, the rest are timed")
    topo = machine.read_topology()
    configs = [plan(RunSpec(workload=w, vcpus=vcpus or topo.logical, build=build, epochs=epochs,
                            steps_per_epoch=steps_per_epoch if steps_per_epoch < w.steps_per_epoch else None,
                            data="synthetic", measure_peak=False, input_pipeline=input_pipeline,
                            # like for like: the plain fit neither validates nor augments on the host
                            validation="none", options={"augment": "none"} if w.model is None else {}), Host(topo)).with_(study="bench-overhead")
               for w in wls]
    rows = []
    with measuring(db) as session:
        for config in configs:
            try:
                rows.append(overhead(session.store, session.machine_id, config, rounds,
                                     progress=partial(progress, config.workload), plain_side=plain))
            except RuntimeError as exc:
                raise UserError(f"{config.workload}: {exc}") from None
    return rows
