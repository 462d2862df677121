"""Keras example ``mnist_cnn.py`` (Keras 2.0, as run by the 2017 study)."""

from __future__ import annotations

from typing import Any

import numpy as np

import cpustudy.workloads.datasets as datasets
from cpustudy.workloads.base import (
    Arrays,
    Flops,
    Params,
    Workload,
    compile_model,
    conv2d,
    dense,
    maxpool2d,
    one_hot,
)


def build(keras: Any, p: Params, *, jit_compile: bool | None = None, **_: Any) -> Any:
    layers = keras.layers
    s = p["size"]
    model = keras.Sequential(
        [
            keras.Input(shape=(s, s, 1)),
            layers.Conv2D(p["filters1"], (3, 3), activation="relu"),
            layers.Conv2D(p["filters2"], (3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Dropout(0.25),
            layers.Flatten(),
            layers.Dense(p["dense"], activation="relu"),
            layers.Dropout(0.5),
            layers.Dense(p["classes"], activation="softmax"),
        ]
    )
    # Keras 2.0's Adadelta defaults: lr=1.0, rho=0.95, epsilon=1e-8 (Keras 3's default lr is 0.001).
    opt = keras.optimizers.Adadelta(learning_rate=1.0, rho=0.95, epsilon=1e-8)
    return compile_model(model, opt, "categorical_crossentropy", ["accuracy"], jit_compile)


def flops(p: Params) -> Flops:
    s1 = p["size"] - 2
    s2 = s1 - 2
    s3 = s2 // 2
    return (
        conv2d(s1, s1, 3, 1, p["filters1"], input_grad=False)
        + conv2d(s2, s2, 3, p["filters1"], p["filters2"])
        + maxpool2d(s3, s3, p["filters2"])
        + dense(s3 * s3 * p["filters2"], p["dense"])
        + dense(p["dense"], p["classes"])
    )


def _prepare(images: np.ndarray, y: np.ndarray, p: Params) -> Arrays:
    s = p["size"]
    x = images[:, :s, :s].reshape(len(images), s, s, 1).astype("float32") / 255
    return x, one_hot(y, p["classes"])


def synthetic(n: int, p: Params, seed: int) -> Arrays:
    rng = np.random.default_rng(seed)
    return _prepare(datasets.mnist_images(n, rng), datasets.labels(n, p["classes"], rng), p)


def real(keras: Any, p: Params, split: str = "train") -> Arrays:
    train, test = keras.datasets.mnist.load_data()
    x, y = train if split == "train" else test
    return _prepare(x, y, p)


WORKLOAD = Workload(
    name="mnist_cnn",
    title="CNN on MNIST",
    dataset="mnist",
    batch_size=128,
    epochs=12,
    samples_per_epoch=60_000,
    optimizer="Adadelta(lr=1.0, rho=0.95)",
    loss="categorical_crossentropy",
    params={"size": 28, "filters1": 32, "filters2": 64, "dense": 128, "classes": 10},
    input_desc="28x28x1 float32",
    _build=build,
    _flops=flops,
    _synthetic=synthetic,
    _real=real,
    validation_samples=10_000,  # the example validated on the test set every epoch
    real_files=("mnist.npz",),
)
