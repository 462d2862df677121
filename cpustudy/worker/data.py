"""The training and validation data of a run and ``fit``'s input arguments: the study's arrays, cached
synthetic data, host augmentation, and the ``tf.data`` input path. Standard library only at import.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from cpustudy.cache import cache_dir
from cpustudy.worker.protocol import RunConfig


HOST_PIPELINE_THREADS = 2  # ImageDataGenerator's fit_generator ran one producer thread beside training


def host_pipeline_threads(config: RunConfig) -> int:
    """Threads of the host's augmentation pipeline. On the CPUs the run's own cores train, so the study's
    pipeline (:data:`HOST_PIPELINE_THREADS`) stays beside them; on a GPU the host's cores have nothing else
    to do, so the pipeline takes every pinned core but the one that drives the training loop (at least the
    study's two): a GPU fed by two threads measures the host, not the GPU."""
    if config.device != "gpu":
        return HOST_PIPELINE_THREADS
    return max(HOST_PIPELINE_THREADS, int(config.vcpus) - 1)


@dataclass
class Prepared:
    """The training data (capped to the epoch's steps) and the validation data, and what they make of
    an epoch."""

    data: Any
    cached: bool
    params: dict[str, Any]  # the run's workload parameters, with what the data derived
    steps: int  # per epoch
    samples_per_epoch: int
    val: Any  # None: no validation
    val_steps: int | None
    seconds: float  # generating or loading both


def prepare_data(config: RunConfig, workload: Any, keras: Any) -> Prepared:
    """Training and validation data, timed together."""
    params = dict(config.params)
    batch = config.batch_size
    steps_cap = config.steps_per_epoch
    t0 = time.perf_counter()
    data, cached = training_data(config, workload, keras, params)
    params.update(data.derived)
    steps = int(steps_cap) if steps_cap else -(-len(data) // batch)
    samples_per_epoch = min(len(data), steps * batch)
    val, val_steps = validation_data(config, workload, keras, params)
    return Prepared(data, cached, params, steps, samples_per_epoch, val, val_steps, time.perf_counter() - t0)


def training_data(config: RunConfig, workload: Any, keras: Any, params: dict[str, Any]) -> tuple[Any, bool]:
    """The training data and whether it came from the cache."""
    batch = config.batch_size
    steps_cap = config.steps_per_epoch
    cached = False
    if config.data == "real" or config.model_file:  # a model file's data is its own (load_data)
        data = workload.real(keras, params)
    else:
        n = workload.samples_per_epoch if steps_cap is None else int(steps_cap) * batch
        data, cached = synthetic_cached(workload, n, params, config.seed)
    if config.data == "learnable" and not config.model_file:
        data = planted(data)
    if steps_cap and len(data) > int(steps_cap) * batch:
        # Exactly the capped number of batches per epoch, as with synthetic data (Keras would
        # otherwise carry one iterator across epochs and cut the last one short).
        data = type(data)(data.x[: int(steps_cap) * batch], data.y[: int(steps_cap) * batch], data.derived)
    return data, cached


def validation_data(config: RunConfig, workload: Any, keras: Any, params: dict[str, Any]) -> tuple[Any, int | None]:
    """The example's validation after every epoch (its test set; a capped epoch validates on the same
    share of it), timed apart from training; ``(None, steps asked)`` without validation."""
    batch = config.batch_size
    val_steps = config.validation_steps
    if not val_steps:
        return None, val_steps
    n_val = min(val_steps * batch, workload.validation_samples)
    if config.data == "real" or config.model_file:
        val = workload.real(keras, params, split="test")
    else:
        val, _ = synthetic_cached(workload, n_val, params, config.seed + 1)
        if config.data == "learnable":
            val = planted(val)
    val = type(val)(val.x[:n_val], val.y[:n_val], val.derived)
    return val, -(-len(val) // batch)


def augmentation(config_options: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The workload's build options, with ``augment`` resolved to where it runs, and that place."""
    options = dict(config_options)
    augment = "none"
    if "augment" in options:
        from cpustudy.workloads.base import augment_where

        augment = augment_where(options["augment"])
        options["augment"] = augment
    return options, augment


def augment_description(augment: str, device: str, pipeline: str, threads: int = HOST_PIPELINE_THREADS) -> str:
    return {
        "none": "none",
        "model": f"in the model (Keras preprocessing layers, on the {device})",
        "host": ("on the host: tf.data map on its thread pool" if pipeline == "tfdata" else
                 f"on the host: NumPy in a Python data pipeline ({threads} threads)"),
    }[augment]


def data_event(config: RunConfig, prepared: Prepared, augment: str, drains: bool) -> dict[str, Any]:
    """The fields of the ``DATA`` event."""
    data, val = prepared.data, prepared.val
    return dict(source=config.data, samples=len(data), seconds=prepared.seconds, derived=data.derived,
                step_timing="until the epoch's training end (asynchronous dispatch)" if drains
                else "between step starts",
                from_cache=config.data != "real" and prepared.cached,
                x_shape=list(data.x.shape), x_dtype=str(data.x.dtype), augment=augment,
                augment_where=augment_description(augment, config.device, config.input_pipeline,
                                                  host_pipeline_threads(config)),
                host_threads=host_pipeline_threads(config) if augment == "host" and config.input_pipeline != "tfdata"
                else 0,
                validation_samples=len(val) if val is not None else 0,
                validation_steps=prepared.val_steps)


def fit_inputs(config: RunConfig, keras: Any, workload: Any, prepared: Prepared, augment: str) -> dict[str, Any]:
    """``model.fit``'s input arguments for the run's input pipeline and augmentation.

    ``tfdata``: one ``tf.data`` pipeline whose iterator lives across epochs (the dataset repeats and
    ``fit`` is given the steps of an epoch). ``numpy``: the study's arrays into ``fit``; Keras 3 then
    makes a new ``tf.data`` iterator every epoch, and dropping the old one waits on its autotuning
    thread's sleep (an idle stall of up to tens of seconds that grows with the iterator's age).
    """
    data, steps = prepared.data, prepared.steps
    batch, seed, pipeline, steps_cap = config.batch_size, config.seed, config.input_pipeline, config.steps_per_epoch
    if pipeline == "tfdata":
        aug = workload.augment_batch_tf if augment == "host" else None
        return {"x": tf_dataset(data.x, data.y, batch, seed, aug), "steps_per_epoch": steps}
    if augment == "host":
        threads = host_pipeline_threads(config)
        inputs: dict[str, Any] = {"x": host_augmented(keras, workload, data, batch, steps, seed, threads)}
        if not hasattr(keras.utils, "PyDataset"):  # tf.keras 2.x: fit runs a Sequence's threads
            inputs.update(workers=threads, use_multiprocessing=False)
        return inputs
    return {"x": data.x, "y": data.y, "batch_size": batch, "shuffle": True,
            "steps_per_epoch": int(steps_cap) if steps_cap else None}


def validation_inputs(config: RunConfig, prepared: Prepared) -> dict[str, Any]:
    """``model.fit``'s validation arguments: the test split after every epoch, through the run's input
    pipeline. Keras 3's ``evaluate`` resets its iterator every time, so ``fit`` drops the validation
    iterator after every epoch whatever the dataset: with tf.data's autotuning on, that drop waits on the
    autotuning thread's sleep (measured: mnist_cnn, 20-step epochs, 1 vCPU on a Zen 4 VM, 2.1-2.25 s idle
    every epoch, outside the training steps). ``tfdata`` validates through a pipeline with autotuning
    off and a fixed prefetch: nothing to wait on."""
    val = prepared.val
    if val is None:
        return {}
    if config.input_pipeline == "tfdata":
        return {"validation_data": tf_dataset(val.x, val.y, config.batch_size, config.seed, shuffle=False,
                                              autotune=False),
                "validation_steps": prepared.val_steps}
    return {"validation_data": (val.x, val.y), "validation_batch_size": config.batch_size,
            "validation_steps": prepared.val_steps}


def host_augmented(keras: Any, workload: Any, data: Any, batch: int, steps: int, seed: int,
                   threads: int = HOST_PIPELINE_THREADS) -> Any:
    """Batches shuffled and augmented on the host by background threads (Keras 3 ``PyDataset``, or a
    ``Sequence`` under tf.keras 2.x): what ImageDataGenerator.flow with fit_generator did."""
    import numpy as np

    base = getattr(keras.utils, "PyDataset", None) or keras.utils.Sequence
    augment = workload.augment_batch

    class Batches(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            if base is not keras.utils.Sequence:
                super().__init__(workers=threads, use_multiprocessing=False)
            self.epoch = 0
            self.order = np.random.default_rng((seed, 0)).permutation(len(data.x))

        def __len__(self) -> int:
            return steps

        def __getitem__(self, i: int) -> Any:
            idx = np.sort(self.order[i * batch:(i + 1) * batch])
            rng = np.random.default_rng((seed, self.epoch, i))
            return augment(data.x[idx], rng), data.y[idx]

        def on_epoch_end(self) -> None:
            self.epoch += 1
            self.order = np.random.default_rng((seed, self.epoch)).permutation(len(data.x))

    return Batches()


def planted(data: Any) -> Any:
    """``--data learnable``: the same synthetic inputs, labels from the planted rule."""
    from cpustudy.workloads.datasets import plant

    return type(data)(*plant(data.x, data.y), data.derived)


def synthetic_cached(workload: Any, n: int, params: dict[str, Any], seed: int) -> tuple[Any, bool]:
    """Synthetic data, generated once per shape and seed and kept in the user cache for later
    workers (``CPUSTUDY_CACHE``); set ``CPUSTUDY_NO_DATA_CACHE=1`` to generate afresh every time."""
    import hashlib

    import numpy as np

    from cpustudy import __version__
    from cpustudy.workloads.base import Dataset

    if os.environ.get("CPUSTUDY_NO_DATA_CACHE") == "1":
        return workload.synthetic(n, params, seed), False
    key = json.dumps([__version__, workload.name, n, sorted(workload.resolved_params(params).items()), seed],
                     default=str)
    path = os.path.join(cache_dir(), "data", hashlib.sha256(key.encode()).hexdigest()[:24] + ".npz")
    try:
        with np.load(path) as f:
            return Dataset(f["x"], f["y"], json.loads(str(f["derived"]))), True
    except (OSError, KeyError, ValueError):
        pass
    data = workload.synthetic(n, params, seed)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp.npz"
        np.savez(tmp, x=data.x, y=data.y, derived=json.dumps(data.derived))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs time
    return data, False


def tf_dataset(x: Any, y: Any, batch: int, seed: int, augment: Callable[[Any], Any] | None = None,
               shuffle: bool = True, autotune: bool = True) -> Any:
    """Cached, shuffled each epoch, batched (augmented in a parallel map), repeated and prefetched: the
    tf.data input path. Batched before it repeats, so every epoch has the NumPy path's batches (the last
    one short where the samples do not divide); ``fit`` gets the steps of an epoch and keeps one
    iterator for the whole run. ``autotune=False``: a fixed prefetch of 2 batches and tf.data's autotuning
    off, for an iterator Keras drops and makes again (validation), whose drop would wait on the
    autotuning thread."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache()
    if shuffle:
        ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch)
    if augment is not None:
        ds = ds.map(lambda u, v: (augment(u), v), num_parallel_calls=tf.data.AUTOTUNE)
    if not autotune:
        options = tf.data.Options()
        options.autotune.enabled = False
        return ds.repeat().prefetch(2).with_options(options)
    return ds.repeat().prefetch(tf.data.AUTOTUNE)
