"""Synthetic datasets with the shapes, dtypes and statistics of the real ones, and vectorized text
preprocessing shared by the real and synthetic paths.

The numbers below are the published statistics of the real datasets (as loaded by Keras):

* MNIST: 28x28 uint8, 19.1 % of pixels non-zero, mean 0.1307 and std 0.3081 after /255.
* CIFAR-10: 32x32x3 uint8, per-channel means (125.3, 123.0, 113.9) and stds (63.0, 62.1, 66.7).
* IMDb (``num_words=20000``): 25,000 reviews, lengths roughly log-normal (median 174, mean 239 words,
  min 10, max 2,494), Zipf-like word frequencies over ~88,600 distinct words; ids >= num_words
  become the out-of-vocabulary id 2, id 1 starts every review, words start at id 4.
* Nietzsche (lower-cased): 600,893 characters, 57 distinct, Zipf-like frequencies (space ~16 %).
"""

from __future__ import annotations

import numpy as np

MNIST_NONZERO = 0.191
MNIST_MEAN = 0.1307
MNIST_STD = 0.3081

CIFAR_MEAN = (125.3, 123.0, 113.9)
CIFAR_STD = (63.0, 62.1, 66.7)

IMDB_REVIEWS = 25_000
IMDB_MEDIAN_LEN = 174.0
IMDB_MEAN_LEN = 238.7
IMDB_MIN_LEN, IMDB_MAX_LEN = 10, 2_494
IMDB_DISTINCT_WORDS = 88_584
# Zipf-Mandelbrot exponent and offset for English word frequencies; with these the bigram vocabulary
# derived from 25,000 synthetic reviews comes out near the ~1.2 M the study's fastText model saw.
ZIPF_A = 1.28
ZIPF_B = 2.7

NIETZSCHE_CHARS = 600_893
NIETZSCHE_VOCAB = 57


def mnist_images(n: int, rng: np.random.Generator) -> np.ndarray:
    """uint8 images (n, 28, 28) with MNIST's sparsity, mean and standard deviation."""
    # Non-zero pixels follow a Beta law whose mean and variance give the overall mean and std above.
    m = MNIST_MEAN / MNIST_NONZERO
    second = (MNIST_STD**2 + MNIST_MEAN**2) / MNIST_NONZERO
    v = second - m * m
    s = m * (1 - m) / v - 1
    values = rng.beta(m * s, (1 - m) * s, size=(n, 28, 28))
    mask = rng.random((n, 28, 28)) < MNIST_NONZERO
    return np.where(mask, np.clip(np.rint(values * 255), 1, 255), 0).astype(np.uint8)


def cifar_images(n: int, rng: np.random.Generator) -> np.ndarray:
    """uint8 images (n, 32, 32, 3) with CIFAR-10's per-channel means and standard deviations."""
    x = rng.normal(CIFAR_MEAN, CIFAR_STD, size=(n, 32, 32, 3))
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def labels(n: int, classes: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, classes, size=n)


def zipf_probabilities(size: int, a: float = ZIPF_A, b: float = ZIPF_B) -> np.ndarray:
    p = 1.0 / (np.arange(1, size + 1) + b) ** a
    return p / p.sum()


def imdb_sequences(
    n: int, num_words: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Reviews as Keras' ``imdb.load_data(num_words=...)`` returns them, flattened.

    Returns ``(tokens, lengths)``: all reviews' word ids concatenated, and each review's length.
    """
    sigma = np.sqrt(2 * np.log(IMDB_MEAN_LEN / IMDB_MEDIAN_LEN))
    lengths = rng.lognormal(np.log(IMDB_MEDIAN_LEN), sigma, size=n)
    lengths = np.clip(np.rint(lengths), IMDB_MIN_LEN, IMDB_MAX_LEN).astype(np.int64)
    words = rng.choice(
        IMDB_DISTINCT_WORDS, size=int(lengths.sum()), p=zipf_probabilities(IMDB_DISTINCT_WORDS)
    )
    tokens = words + 4  # index_from=3, ids 0..3 are padding, start, oov, unused
    tokens[tokens >= num_words] = 2  # out of vocabulary
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    tokens[starts] = 1  # start_char
    return tokens.astype(np.int64), lengths


def flatten_sequences(seqs: list) -> tuple[np.ndarray, np.ndarray]:
    """A list of id lists (as the real loaders return) to ``(tokens, lengths)``."""
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    tokens = np.fromiter((t for s in seqs for t in s), dtype=np.int64, count=int(lengths.sum()))
    return tokens, lengths


def pad_tail(tokens: np.ndarray, lengths: np.ndarray, maxlen: int) -> np.ndarray:
    """``keras.utils.pad_sequences(seqs, maxlen)`` with its defaults (pre-padding with 0 and
    pre-truncation: keep the last ``maxlen`` ids), vectorized."""
    ends = np.cumsum(lengths)
    j = np.arange(maxlen)
    idx = ends[:, None] - maxlen + j[None, :]  # flat index of each output cell
    valid = idx >= (ends - lengths)[:, None]
    out = np.where(valid, tokens[np.clip(idx, 0, max(len(tokens) - 1, 0))], 0)
    return out.astype(np.int32)


def add_bigrams(
    tokens: np.ndarray, lengths: np.ndarray, num_words: int, vocab: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fastText example's ``create_ngram_set`` + ``add_ngram`` for bigrams, vectorized.

    Every pair of adjacent ids in a review gets an id ``num_words + 1 + rank`` in the sorted set of
    pairs seen in ``vocab`` (the training set's pairs; derived from ``tokens`` when None) and is
    appended, in order, after the review's words. Returns ``(tokens, lengths, vocab)`` of the
    augmented reviews; the model's vocabulary is ``num_words + 1 + len(vocab)``.
    """
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    # Pair (i, i+1) is inside a review unless i is the review's last id.
    within = np.ones(len(tokens), dtype=bool)
    within[np.cumsum(lengths) - 1] = False
    first = np.nonzero(within[:-1])[0] if len(tokens) > 1 else np.zeros(0, dtype=np.int64)
    codes = tokens[first] * np.int64(num_words) + tokens[first + 1]
    if vocab is None:
        vocab, pos = np.unique(codes, return_inverse=True)
        known = np.ones(len(codes), dtype=bool)
    else:
        pos = np.minimum(np.searchsorted(vocab, codes), max(len(vocab) - 1, 0))
        known = vocab[pos] == codes if len(vocab) else np.zeros(len(codes), dtype=bool)
    bigram_ids = num_words + 1 + pos
    pair_review = np.searchsorted(starts, first, side="right") - 1
    kept_review = pair_review[known]
    added = np.bincount(kept_review, minlength=len(lengths))
    new_lengths = lengths + added
    new_starts = np.concatenate([[0], np.cumsum(new_lengths)[:-1]])
    out = np.empty(int(new_lengths.sum()), dtype=np.int64)
    word_review = np.repeat(np.arange(len(lengths)), lengths)
    word_offset = np.arange(len(tokens)) - starts[word_review]
    out[new_starts[word_review] + word_offset] = tokens
    kept_rank = np.arange(len(kept_review)) - np.concatenate([[0], np.cumsum(added)[:-1]])[kept_review]
    out[new_starts[kept_review] + lengths[kept_review] + kept_rank] = bigram_ids[known]
    return out, new_lengths, vocab


def char_corpus(n_chars: int, vocab: int, rng: np.random.Generator) -> np.ndarray:
    """A character stream (ids) with a Zipf-like frequency over ``vocab`` characters."""
    return rng.choice(vocab, size=n_chars, p=zipf_probabilities(vocab, a=1.4, b=1.5)).astype(np.int64)


def char_windows(
    ids: np.ndarray, vocab: int, maxlen: int, step: int, n: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The text-generation example's windows: x (n, maxlen, vocab) and y (n, vocab), one-hot bool."""
    starts = np.arange(0, len(ids) - maxlen, step)
    if n is not None:
        starts = starts[:n]
    window = ids[starts[:, None] + np.arange(maxlen)[None, :]]
    x = np.zeros((len(starts), maxlen, vocab), dtype=bool)
    np.put_along_axis(x, window[..., None], True, axis=2)
    y = np.zeros((len(starts), vocab), dtype=bool)
    y[np.arange(len(starts)), ids[starts + maxlen]] = True
    return x, y


#: The planted rule of ``--data learnable`` is drawn from this seed, never from the run's: every run,
#: and the validation set, follow the same rule.
PLANTED_SEED = 2017


def plant(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and labels that follow a fixed rule, so that accuracy rises with training (``--data
    learnable``; synthetic labels are random, accuracy on them means nothing). ``x`` and ``y`` keep
    their shapes, dtypes and formats. The rule, the same for every run and for the validation set:

    * images (float inputs): each class owns a fixed random set of 2 % of the input values; an example
      of class c has its set raised by one standard deviation (the class is where the input is
      brightest: a pattern an MLP learns to 0.9 validation accuracy in its first epoch); labels stay the random ones;
    * reviews (token inputs): positive when more tokens are even ids than odd (a bag-of-words rule);
    * text (one-hot sequences): the next character's class is the last character's id plus a fixed
      shift.
    """
    n = len(x)
    onehot = y.ndim == 2 and y.shape[1] > 1
    classes = y.shape[1] if onehot else 2
    if np.issubdtype(x.dtype, np.integer):
        tokens = x.reshape(n, -1)
        used = tokens > 0
        even = ((tokens % 2 == 0) & used).sum(axis=1)
        label = (even > used.sum(axis=1) - even).astype(np.int64)
    elif x.ndim == 3 and x.dtype == np.bool_:
        label = (np.argmax(x[:, -1, :], axis=1) + 7) % classes
    else:
        label = np.argmax(y, axis=1) if onehot else (y.reshape(n) > 0.5).astype(np.int64)
        flat = x.reshape(n, -1).copy()
        d = flat.shape[1]
        rng = np.random.default_rng(PLANTED_SEED)
        sets = np.stack([rng.choice(d, size=max(4, d // 50), replace=False) for _ in range(classes)])
        flat[np.arange(n)[:, None], sets[label]] += 1.0 * float(flat.std() or 1.0)
        x = flat.reshape(x.shape).astype(x.dtype)
    if onehot:
        out = np.zeros_like(y)
        out[np.arange(n), label] = 1
        return x, out
    return x, label.astype(y.dtype).reshape(y.shape)
