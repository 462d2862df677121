"""Keras example ``mnist_mlp.py`` (Keras 2.0, as run by the 2017 study)."""

from __future__ import annotations

from typing import Any

import numpy as np

import cpustudy.workloads.datasets as datasets
from cpustudy.workloads.base import Arrays, Flops, Params, Workload, compile_model, dense, one_hot


def build(keras: Any, p: Params, *, jit_compile: bool | None = None, **_: Any) -> Any:
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input(shape=(p["input_dim"],)),
            layers.Dense(p["hidden"], activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(p["hidden"], activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(p["classes"], activation="softmax"),
        ]
    )
    return compile_model(
        model, keras.optimizers.RMSprop(), "categorical_crossentropy", ["accuracy"], jit_compile
    )


def flops(p: Params) -> Flops:
    return (
        dense(p["input_dim"], p["hidden"], input_grad=False)
        + dense(p["hidden"], p["hidden"])
        + dense(p["hidden"], p["classes"])
    )


def _prepare(images: np.ndarray, y: np.ndarray, p: Params) -> Arrays:
    x = images.reshape(len(images), -1)[:, : p["input_dim"]].astype("float32") / 255
    return x, one_hot(y, p["classes"])


def synthetic(n: int, p: Params, seed: int) -> Arrays:
    rng = np.random.default_rng(seed)
    return _prepare(datasets.mnist_images(n, rng), datasets.labels(n, p["classes"], rng), p)


def real(keras: Any, p: Params, split: str = "train") -> Arrays:
    train, test = keras.datasets.mnist.load_data()
    x, y = train if split == "train" else test
    return _prepare(x, y, p)


WORKLOAD = Workload(
    name="mnist_mlp",
    title="MLP on MNIST",
    dataset="mnist",
    batch_size=128,
    epochs=20,
    samples_per_epoch=60_000,
    optimizer="RMSprop(lr=0.001)",
    loss="categorical_crossentropy",
    params={"input_dim": 784, "hidden": 512, "classes": 10},
    input_desc="784 float32",
    _build=build,
    _flops=flops,
    _synthetic=synthetic,
    _real=real,
    validation_samples=10_000,  # the example validated on the test set every epoch
    real_files=("mnist.npz",),
)
