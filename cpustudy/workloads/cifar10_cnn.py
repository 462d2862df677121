"""Keras example ``cifar10_cnn.py`` (Keras 2.0, as run by the 2017 study).

The study augmented images in real time with ``ImageDataGenerator(width_shift_range=0.1,
height_shift_range=0.1, horizontal_flip=True)``. That class is gone from Keras 3, so the same
augmentation runs here as the model's first layers (``RandomTranslation(0.1, 0.1,
fill_mode="nearest")`` and ``RandomFlip("horizontal")``), active in training only, on both Keras 3
and tf.keras 2.x. Switch it off with the workload option ``augment=False`` (``--no-augment``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cpustudy.workloads import _data
from cpustudy.workloads.base import (
    Arrays,
    Flops,
    Params,
    Workload,
    compile_model,
    conv2d,
    conv_out,
    dense,
    one_hot,
    maxpool2d,
)


def build(
    keras: Any, p: Params, *, augment: bool = True, jit_compile: bool | None = None, **_: Any
) -> Any:
    layers = keras.layers
    s, f1, f2 = p["size"], p["filters1"], p["filters2"]
    stack: list[Any] = [keras.Input(shape=(s, s, 3))]
    if augment:
        stack += [
            layers.RandomTranslation(0.1, 0.1, fill_mode="nearest"),
            layers.RandomFlip("horizontal"),
        ]
    stack += [
        layers.Conv2D(f1, (3, 3), padding="same", activation="relu"),
        layers.Conv2D(f1, (3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Dropout(0.25),
        layers.Conv2D(f2, (3, 3), padding="same", activation="relu"),
        layers.Conv2D(f2, (3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Dropout(0.25),
        layers.Flatten(),
        layers.Dense(p["dense"], activation="relu"),
        layers.Dropout(0.5),
        layers.Dense(p["classes"], activation="softmax"),
    ]
    model = keras.Sequential(stack)
    # Keras 2.0: RMSprop(lr=0.0001, decay=1e-6); the decay (1e-6 per step) is left out: it changes
    # the learning rate by about 3 % over the 20-epoch study and has no effect on speed.
    opt = keras.optimizers.RMSprop(learning_rate=1e-4)
    return compile_model(model, opt, "categorical_crossentropy", ["accuracy"], jit_compile)


def flops(p: Params) -> Flops:
    s, f1, f2 = p["size"], p["filters1"], p["filters2"]
    a = conv_out(s, 3, "same")
    b = conv_out(a, 3, "valid")
    c = b // 2
    d = conv_out(c, 3, "same")
    e = conv_out(d, 3, "valid")
    g = e // 2
    return (
        conv2d(a, a, 3, 3, f1, input_grad=False)
        + conv2d(b, b, 3, f1, f1)
        + maxpool2d(c, c, f1)
        + conv2d(d, d, 3, f1, f2)
        + conv2d(e, e, 3, f2, f2)
        + maxpool2d(g, g, f2)
        + dense(g * g * f2, p["dense"])
        + dense(p["dense"], p["classes"])
    )


def _prepare(images: np.ndarray, y: np.ndarray, p: Params) -> Arrays:
    s = p["size"]
    x = images[:, :s, :s, :].astype("float32") / 255
    return x, one_hot(np.asarray(y).reshape(-1), p["classes"])


def synthetic(n: int, p: Params, seed: int) -> Arrays:
    rng = np.random.default_rng(seed)
    return _prepare(_data.cifar_images(n, rng), _data.labels(n, p["classes"], rng), p)


def real(keras: Any, p: Params) -> Arrays:
    (x, y), _ = keras.datasets.cifar10.load_data()
    return _prepare(x, y, p)


WORKLOAD = Workload(
    name="cifar10_cnn",
    title="Deep CNN on CIFAR-10 (real-time augmentation)",
    dataset="cifar10",
    batch_size=32,
    epochs=20,
    samples_per_epoch=50_000,
    optimizer="RMSprop(lr=1e-4)",
    loss="categorical_crossentropy",
    params={"size": 32, "filters1": 32, "filters2": 64, "dense": 512, "classes": 10},
    input_desc="32x32x3 float32",
    _build=build,
    _flops=flops,
    _synthetic=synthetic,
    _real=real,
    real_files=(
        "cifar-10-batches-py",
        "cifar-10-batches-py.tar.gz",
        "cifar-10-batches-py-target",
        "cifar-10-batches-py-target_archive",
    ),
    options={"augment": True},
    notes="augmentation as in-graph layers (ImageDataGenerator is not in Keras 3)",
)
