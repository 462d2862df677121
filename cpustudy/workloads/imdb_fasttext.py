"""Keras example ``imdb_fasttext.py`` with bigrams (Keras 2.0, as run by the 2017 study).

The bigram vocabulary is derived from the whole training set, as in the example, but vectorized
(the example's Python loop over 25,000 reviews takes minutes). On real IMDb it grows the vocabulary
from 20,000 to about 1.2 M ids, so the embedding has ~60 M parameters that Adam updates densely every
step: the workload is memory-bound, not FLOP-bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cpustudy.workloads import _data
from cpustudy.workloads.base import Flops, Params, Workload, compile_model, dense, pool


def build(keras: Any, p: Params, *, jit_compile: bool | None = None, **_: Any) -> Any:
    if not p.get("vocab"):
        raise ValueError("imdb_fasttext needs the vocabulary size derived from its data")
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input(shape=(p["maxlen"],)),
            layers.Embedding(p["vocab"], p["embedding"]),
            layers.GlobalAveragePooling1D(),
            layers.Dense(1, activation="sigmoid"),
        ]
    )
    return compile_model(model, keras.optimizers.Adam(), "binary_crossentropy", ["accuracy"], jit_compile)


def flops(p: Params) -> Flops:
    # The embedding lookup is a gather (0 FLOPs); averaging adds maxlen x embedding values.
    return pool(p["maxlen"] * p["embedding"]) + dense(p["embedding"], 1)


def _prepare(tokens: np.ndarray, lengths: np.ndarray, y: np.ndarray, n: int, p: Params) -> tuple:
    tokens, lengths, vocab = _data.add_bigrams(tokens, lengths, p["num_words"])
    x = _data.pad_tail(tokens, lengths, p["maxlen"])[:n]
    return x, np.asarray(y[:n], dtype="float32"), {"vocab": p["num_words"] + 1 + len(vocab)}


def synthetic(n: int, p: Params, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    # The vocabulary comes from the whole training set even when fewer samples are trained on.
    reviews = max(n, p["reviews"])
    tokens, lengths = _data.imdb_sequences(reviews, p["num_words"], rng)
    return _prepare(tokens, lengths, rng.integers(0, 2, size=reviews), n, p)


def real(keras: Any, p: Params) -> tuple:
    (x, y), _ = keras.datasets.imdb.load_data(num_words=p["num_words"])
    tokens, lengths = _data.flatten_sequences(list(x))
    return _prepare(tokens, lengths, np.asarray(y), len(x), p)


WORKLOAD = Workload(
    name="imdb_fasttext",
    title="fastText (bigrams) on IMDb",
    dataset="imdb",
    batch_size=32,
    epochs=5,
    samples_per_epoch=25_000,
    optimizer="Adam(lr=0.001)",
    loss="binary_crossentropy",
    params={"num_words": 20_000, "maxlen": 400, "embedding": 50, "reviews": 25_000, "vocab": None},
    input_desc="400 int32 ids (words + bigrams)",
    _build=build,
    _flops=flops,
    _synthetic=synthetic,
    _real=real,
    real_files=("imdb.npz",),
    memory_bound=True,
)
