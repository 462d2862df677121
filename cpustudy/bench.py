"""``cpustudy bench overhead``: does measuring with cpustudy change what is measured?

In one interleaved run, the same model, data, CPUs and threads are trained (a) by cpustudy's worker
and (b) by a plain script that calls ``model.fit`` with no callback and times it with a stopwatch.
Both run in fresh processes pinned the same way, alternating which goes first. The figure is the
ratio of steady-state epoch times, cpustudy / plain (1.00 = no overhead), with its spread over the
rounds. The plain script times one ``fit`` of E epochs after a one-epoch warm-up ``fit`` (so its
figure carries one ``fit`` call's set-up cost spread over E epochs, a bias in cpustudy's favour of
well under 1 % at epochs of a second or more).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from cpustudy.runner import _worker_env, execute

PLAIN = r"""
import json, os, sys, time  # noqa: F401
cfg = json.loads(sys.argv[1])
from cpustudy.worker import pin_and_size  # the same pinning and thread sizing, before TensorFlow
pin_and_size(cfg["cpus"], cfg["intra_threads"], cfg["inter_threads"])
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(cfg["intra_threads"])
tf.config.threading.set_inter_op_parallelism_threads(cfg["inter_threads"])
if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    keras = tf.keras
else:
    import keras
from cpustudy.workloads import ALL
w = ALL[cfg["workload"]]
keras.utils.set_random_seed(cfg["seed"])
steps = cfg["steps_per_epoch"]
n = w.samples_per_epoch if steps is None else steps * cfg["batch_size"]
data = w.synthetic(n, cfg.get("params") or {}, cfg["seed"])
params = dict(cfg.get("params") or {}); params.update(data.derived)
model = w.build(keras, params, jit_compile=cfg.get("jit_compile"), **(cfg.get("options") or {}))
fit = dict(batch_size=cfg["batch_size"], steps_per_epoch=steps, shuffle=True, verbose=0)
model.fit(data.x, data.y, epochs=1, **fit)
t0 = time.perf_counter()
model.fit(data.x, data.y, epochs=cfg["epochs"] - 1, **fit)
print(json.dumps({"epoch_time_s": (time.perf_counter() - t0) / (cfg["epochs"] - 1)}))
"""


@dataclass
class OverheadResult:
    workload: str
    vcpus: int
    cpustudy_s: list[float]
    plain_s: list[float]

    @property
    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.cpustudy_s, self.plain_s)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)


def plain_epoch_time(config: dict[str, Any], timeout_s: float | None = None) -> float:
    env = _worker_env(config.get("env"))
    env["CUDA_VISIBLE_DEVICES"] = "-1"
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "plain_fit.py"
        script.write_text(PLAIN)
        proc = subprocess.run([config["python"], str(script), json.dumps(config)], capture_output=True,
                              text=True, env=env, timeout=timeout_s)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"plain Keras run failed: {tail}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["epoch_time_s"])


def overhead(
    store: Any, machine_id: int, config: dict[str, Any], rounds: int,
    progress: Callable[[str], None] = lambda s: None,
) -> OverheadResult:
    """Alternate cpustudy and plain runs ``rounds`` times each; cpustudy's runs are stored."""
    ours: list[float] = []
    plain: list[float] = []
    for r in range(rounds):
        order = ("cpustudy", "plain") if r % 2 == 0 else ("plain", "cpustudy")
        for who in order:
            if who == "cpustudy":
                outcome = execute(store, machine_id, {**config, "repeat": r})
                if outcome.status != "ok":
                    raise RuntimeError(f"cpustudy run failed: {outcome.error}")
                timed = [e["elapsed_s"] for e in store.epochs([outcome.run_id]) if not e["warmup"]]
                ours.append(statistics.fmean(timed))  # a mean, like the plain stopwatch
                progress(f"round {r + 1}/{rounds} cpustudy: {ours[-1]:.3f} s/epoch")
            else:
                plain.append(plain_epoch_time(config))
                progress(f"round {r + 1}/{rounds} plain keras: {plain[-1]:.3f} s/epoch")
    return OverheadResult(config["workload"], config["vcpus"], ours, plain)

