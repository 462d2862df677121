"""Keras example ``imdb_fasttext.py`` with bigrams (Keras 2.0, as run by the 2017 study).

The bigram vocabulary is derived from the whole training set, as in the example, but vectorized
(the example's Python loop over 25,000 reviews takes minutes). On real IMDb it grows the vocabulary
from 20,000 to about 1.2 M ids, so the embedding has ~60 M parameters that Adam updates densely every
step: the workload is memory-bound, not FLOP-bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import cpustudy.workloads.datasets as datasets
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


def _prepare(tokens: np.ndarray, lengths: np.ndarray, y: np.ndarray, n: int, p: Params,
             train_vocab: np.ndarray | None = None) -> tuple:
    tokens, lengths, vocab = datasets.add_bigrams(tokens, lengths, p["num_words"], train_vocab)
    x = datasets.pad_tail(tokens, lengths, p["maxlen"])[:n]
    return x, np.asarray(y[:n], dtype="float32"), {"vocab": p["num_words"] + 1 + len(vocab)}


def synthetic(n: int, p: Params, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    # The vocabulary comes from the whole training set even when fewer samples are trained on.
    reviews = max(n, p["reviews"])
    tokens, lengths = datasets.imdb_sequences(reviews, p["num_words"], rng)
    x, y, derived = _prepare(tokens, lengths, rng.integers(0, 2, size=reviews), n, p)
    if p.get("vocab"):
        # Validation data for a model whose vocabulary came from other (training) reviews: bigrams
        # ranked in this set's own vocabulary are folded into the model's range (the test set of the
        # example keeps only the bigrams seen in training; synthetic ids only need the same spread).
        x = np.where(x >= p["vocab"], p["num_words"] + 1 + (x - p["num_words"] - 1) % (p["vocab"] - p["num_words"] - 1), x)
        return x.astype(np.int32), y, {}
    return x, y, derived


def real(keras: Any, p: Params, split: str = "train") -> tuple:
    (x, y), (x_test, y_test) = keras.datasets.imdb.load_data(num_words=p["num_words"])
    tokens, lengths = datasets.flatten_sequences(list(x))
    train = _prepare(tokens, lengths, np.asarray(y), len(x), p)
    if split == "train":
        return train
    # The example adds to the test reviews only the bigrams seen in the training set.
    _, _, vocab = datasets.add_bigrams(tokens, lengths, p["num_words"])
    tokens, lengths = datasets.flatten_sequences(list(x_test))
    x_t, y_t, _ = _prepare(tokens, lengths, np.asarray(y_test), len(x_test), p, vocab)
    return x_t, y_t, {}


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
    validation_samples=25_000,  # the example validated on the test set every epoch
    real_files=("imdb.npz",),
    memory_bound=True,
)
