"""Keras example ``lstm_text_generation.py`` on Nietzsche (Keras 2.0, as run by the 2017 study).

The study timed the ``fit`` of each of its iterations (one epoch each); the text sampling between
iterations is not training and is not run here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import cpustudy.workloads.datasets as datasets
from cpustudy.workloads.base import Flops, Params, Workload, compile_model, dense, lstm

NIETZSCHE_URL = "https://s3.amazonaws.com/text-datasets/nietzsche.txt"


def build(keras: Any, p: Params, *, jit_compile: bool | None = None, **_: Any) -> Any:
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input(shape=(p["maxlen"], p["chars"])),
            layers.LSTM(p["units"]),
            layers.Dense(p["chars"], activation="softmax"),
        ]
    )
    opt = keras.optimizers.RMSprop(learning_rate=0.01)
    return compile_model(model, opt, "categorical_crossentropy", [], jit_compile)


def flops(p: Params) -> Flops:
    return lstm(p["maxlen"], p["chars"], p["units"], input_grad=False) + dense(p["units"], p["chars"])


def synthetic(n: int, p: Params, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    ids = datasets.char_corpus(n * p["step"] + p["maxlen"] + 1, p["chars"], rng)
    return datasets.char_windows(ids, p["chars"], p["maxlen"], p["step"], n)


def real(keras: Any, p: Params, split: str = "train") -> tuple:
    path = keras.utils.get_file("nietzsche.txt", origin=NIETZSCHE_URL)
    with open(path, encoding="utf-8") as f:
        text = f.read().lower()
    chars = sorted(set(text))  # 57 in the real corpus; the model's width follows the data
    lookup = np.zeros(max(map(ord, chars)) + 1, dtype=np.int64)
    lookup[[ord(c) for c in chars]] = np.arange(len(chars))
    ids = lookup[np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)]
    x, y = datasets.char_windows(ids, len(chars), p["maxlen"], p["step"])
    return x, y, {"chars": len(chars)}


WORKLOAD = Workload(
    name="lstm_text_generation",
    title="LSTM text generation on Nietzsche",
    dataset="nietzsche",
    batch_size=128,
    epochs=10,
    samples_per_epoch=200_285,  # range(0, 600893 - 40, 3)
    optimizer="RMSprop(lr=0.01)",
    loss="categorical_crossentropy",
    params={"maxlen": 40, "step": 3, "chars": 57, "units": 128},
    input_desc="40x57 one-hot bool",
    _build=build,
    _flops=flops,
    _synthetic=synthetic,
    _real=real,
    real_files=("nietzsche.txt",),
)
