"""The plain side of ``cpustudy bench overhead``: ``python -m cpustudy.worker.plain CONFIG_JSON`` trains the run's
workload as a plain script does, ``model.fit`` with no callback of cpustudy's, and prints one JSON line: its
steady-state epoch (the mean of its epochs after the first, which traces), each epoch's seconds, and what it fed
``fit``.

It is pinned and sized as the worker is (``frameworks.pin_and_size``, before TensorFlow) and timed by a stopwatch
with the epoch hooks only (Keras calls them with or without it). A workload trains its model on its data through
the run's input pipeline, one ``fit`` of the run's epochs. A user's training script runs under plain Python with
the run's epochs, step cap and validation applied to its first fit as cpustudy applies them (``script.applied``:
only fit's arguments), and ends after that fit, as under cpustudy. Standard library only at import.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
import time
from types import SimpleNamespace
from typing import Any


def stopwatch(keras: Any) -> Any:
    """A callback that times each epoch, and nothing else."""

    class Stopwatch(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []

        def on_epoch_begin(self, epoch: int, logs: object = None) -> None:
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: object = None) -> None:
            self.times.append(time.perf_counter() - self.t0)

    return Stopwatch()


def say(times: list[float], fed: str) -> None:
    """The one line the parent reads (``measure.overhead.plain_epochs``)."""
    steady = sum(times[1:]) / (len(times) - 1)  # the first epoch traces: a warm-up, as cpustudy's
    print(json.dumps({"epoch_time_s": steady, "epochs_s": times, "fed": fed}), flush=True)


def fit_workload(cfg: dict[str, Any], tf: Any) -> None:
    keras = tf.keras if os.environ.get("TF_USE_LEGACY_KERAS") == "1" else importlib.import_module("keras")
    from cpustudy.workloads import ALL

    w = ALL[cfg["workload"]]
    keras.utils.set_random_seed(cfg["seed"])
    steps = cfg["steps_per_epoch"]
    n = w.samples_per_epoch if steps is None else steps * cfg["batch_size"]
    data = w.synthetic(n, cfg.get("params") or {}, cfg["seed"])
    params = dict(cfg.get("params") or {})
    params.update(data.derived)
    model = w.build(keras, params, jit_compile=cfg.get("jit_compile"), **(cfg.get("options") or {}))
    if cfg.get("input_pipeline") == "tfdata":  # the same tf.data pipeline, one iterator per fit
        from cpustudy.worker.data import tf_dataset

        inputs = dict(x=tf_dataset(data.x, data.y, cfg["batch_size"], cfg["seed"]),
                      steps_per_epoch=steps or -(-n // cfg["batch_size"]), verbose=0)
        fed = "tfdata"
    else:
        inputs = dict(x=data.x, y=data.y, batch_size=cfg["batch_size"], steps_per_epoch=steps, shuffle=True,
                      verbose=0)
        fed = "arrays"
    watch = stopwatch(keras)
    model.fit(epochs=cfg["epochs"], callbacks=[watch], **inputs)
    say(watch.times, fed)


def fit_script(cfg: dict[str, Any]) -> None:
    import keras

    from cpustudy.worker import script

    keras.utils.set_random_seed(cfg["seed"])
    original = keras.Model.fit

    def fit(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = inspect.signature(original).bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = {k: v for k, v in bound.arguments.items() if k != "self"}
        run = script.applied(script.describe_fit(values, keras, None), SimpleNamespace(**cfg), keras)
        watch = stopwatch(keras)
        run["callbacks"] = [*(run.get("callbacks") or []), watch]
        original(self, **run)
        say(watch.times, "the script's own input")
        os._exit(0)

    keras.Model.fit = fit
    script.run_path(cfg["model_file"])
    sys.exit("the script never called fit")


def main(config_json: str) -> None:
    cfg = json.loads(config_json)
    from cpustudy.worker.frameworks import pin_and_size  # the same pinning and thread sizing, before TensorFlow

    pin_and_size(cfg["cpus"], cfg["intra_threads"], cfg["inter_threads"])
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(cfg["intra_threads"])
    tf.config.threading.set_inter_op_parallelism_threads(cfg["inter_threads"])
    if cfg.get("script"):
        fit_script(cfg)
    else:
        fit_workload(cfg, tf)


if __name__ == "__main__":
    main(sys.argv[1])
