"""Keras example ``imdb_bidirectional_lstm.py`` (Keras 2.0, as run by the 2017 study)."""

from __future__ import annotations

from typing import Any

import numpy as np

import cpustudy.workloads.datasets as datasets
from cpustudy.workloads.base import Flops, Params, Workload, compile_model, dense, lstm


def build(keras: Any, p: Params, *, jit_compile: bool | None = None, **_: Any) -> Any:
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input(shape=(p["maxlen"],)),
            layers.Embedding(p["num_words"], p["embedding"]),
            layers.Bidirectional(layers.LSTM(p["units"])),
            layers.Dropout(0.5),
            layers.Dense(1, activation="sigmoid"),
        ]
    )
    return compile_model(model, keras.optimizers.Adam(), "binary_crossentropy", ["accuracy"], jit_compile)


def flops(p: Params) -> Flops:
    one_direction = lstm(p["maxlen"], p["embedding"], p["units"], input_grad=True)
    return one_direction + one_direction + dense(2 * p["units"], 1)


def synthetic(n: int, p: Params, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    tokens, lengths = datasets.imdb_sequences(n, p["num_words"], rng)
    return datasets.pad_tail(tokens, lengths, p["maxlen"]), rng.integers(0, 2, size=n).astype("float32")


def real(keras: Any, p: Params, split: str = "train") -> tuple:
    train, test = keras.datasets.imdb.load_data(num_words=p["num_words"])
    x, y = train if split == "train" else test
    tokens, lengths = datasets.flatten_sequences(list(x))
    return datasets.pad_tail(tokens, lengths, p["maxlen"]), np.asarray(y, dtype="float32")


WORKLOAD = Workload(
    name="imdb_bidirectional_lstm",
    title="Bidirectional LSTM on IMDb",
    dataset="imdb",
    batch_size=32,
    epochs=4,
    samples_per_epoch=25_000,
    optimizer="Adam(lr=0.001)",
    loss="binary_crossentropy",
    params={"num_words": 20_000, "maxlen": 100, "embedding": 128, "units": 64},
    input_desc="100 int32 ids",
    _build=build,
    _flops=flops,
    _synthetic=synthetic,
    _real=real,
    validation_samples=25_000,  # the example validated on the test set every epoch
    real_files=("imdb.npz",),
)
