"""Keras example ``cifar10_cnn.py`` (Keras 2.0, as run by the 2017 study).

The study augmented images in real time with ``ImageDataGenerator(width_shift_range=0.1,
height_shift_range=0.1, horizontal_flip=True)``: on the host, in the input pipeline, while the device
trained. That class is gone from Keras 3; the workload option ``augment`` says where the same
augmentation runs:

* ``host`` (default, the study's way): each batch is shifted and flipped on the host in the input
  pipeline (:func:`augment_batch`, vectorized NumPy: a Python data pipeline of background threads, as
  ImageDataGenerator's ``fit_generator`` was; or :func:`augment_batch_tf` in a parallel ``tf.data``
  map with ``--input tfdata``). Keras 2.0's ImageDataGenerator sampled a shift uniformly in +-10 % of
  the side and resampled with ``order=0`` (nearest neighbour) and ``fill_mode="nearest"``: a whole-
  pixel shift of -3..3 with the edge pixels repeated, exactly what these functions do.
* ``model``: as the model's first layers (``RandomTranslation(0.1, 0.1, fill_mode="nearest")`` and
  ``RandomFlip("horizontal")``), on the training device. On a GPU with JAX or PyTorch these layers
  ran 25-60x slower than the model itself (measured on an H100): kept only to measure that.
* ``none``: no augmentation (``--no-augment``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import cpustudy.workloads.datasets as datasets
from cpustudy.workloads.base import (
    Arrays,
    Flops,
    Params,
    Workload,
    augment_where,
    compile_model,
    conv2d,
    conv_out,
    dense,
    maxpool2d,
    one_hot,
)

SHIFT = 0.1  # width_shift_range = height_shift_range


def augment_batch(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1, horizontal_flip=True) on a
    batch (N, H, W, C): per image a whole-pixel shift (nearest-neighbour resampling, edges repeated)
    and a horizontal flip with probability 1/2."""
    b, h, w = x.shape[:3]
    dy = np.rint(rng.uniform(-SHIFT, SHIFT, b) * h).astype(np.int64)
    dx = np.rint(rng.uniform(-SHIFT, SHIFT, b) * w).astype(np.int64)
    rows = np.clip(np.arange(h)[None, :] - dy[:, None], 0, h - 1)
    cols = np.clip(np.arange(w)[None, :] - dx[:, None], 0, w - 1)
    flip = np.asarray(rng.random(b)) < 0.5
    cols = np.where(flip[:, None], cols[:, ::-1], cols)
    return x[np.arange(b)[:, None, None], rows[:, :, None], cols[:, None, :]]


def augment_batch_tf(x: Any) -> Any:
    """:func:`augment_batch` in TensorFlow ops, for a ``tf.data`` map on host threads."""
    import tensorflow as tf

    b = tf.shape(x)[0]
    h, w = int(x.shape[1]), int(x.shape[2])
    dy = tf.cast(tf.round(tf.random.uniform([b], -SHIFT, SHIFT) * h), tf.int32)
    dx = tf.cast(tf.round(tf.random.uniform([b], -SHIFT, SHIFT) * w), tf.int32)
    rows = tf.clip_by_value(tf.range(h)[None, :] - dy[:, None], 0, h - 1)
    cols = tf.clip_by_value(tf.range(w)[None, :] - dx[:, None], 0, w - 1)
    cols = tf.where((tf.random.uniform([b]) < 0.5)[:, None], tf.reverse(cols, [1]), cols)
    x = tf.gather(x, rows, axis=1, batch_dims=1)
    return tf.gather(x, cols, axis=2, batch_dims=1)


def build(
    keras: Any, p: Params, *, augment: str | bool = "host", jit_compile: bool | None = None, **_: Any
) -> Any:
    layers = keras.layers
    s, f1, f2 = p["size"], p["filters1"], p["filters2"]
    stack: list[Any] = [keras.Input(shape=(s, s, 3))]
    if augment_where(augment) == "model":
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
    return _prepare(datasets.cifar_images(n, rng), datasets.labels(n, p["classes"], rng), p)


def real(keras: Any, p: Params, split: str = "train") -> Arrays:
    train, test = keras.datasets.cifar10.load_data()
    x, y = train if split == "train" else test
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
    validation_samples=10_000,  # the example validated on the test set every epoch
    real_files=(
        "cifar-10-batches-py",
        "cifar-10-batches-py.tar.gz",
        "cifar-10-batches-py-target",
        "cifar-10-batches-py-target_archive",
    ),
    augment_batch=augment_batch,
    augment_batch_tf=augment_batch_tf,
    options={"augment": "host"},
    notes="augmentation on the host in the input pipeline, as ImageDataGenerator did (--augment)",
)
