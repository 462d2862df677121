"""Workload definitions: analytic FLOPs, and synthetic data faithful to the real datasets."""

from __future__ import annotations

import numpy as np
import pytest

from cpustudy.workloads import WORKLOADS, base, datasets

TINY = {
    "mnist_mlp": {"input_dim": 20, "hidden": 8, "classes": 3},
    "mnist_cnn": {"size": 10, "filters1": 2, "filters2": 3, "dense": 5, "classes": 3},
    "cifar10_cnn": {"size": 12, "filters1": 2, "filters2": 3, "dense": 5, "classes": 3},
}


def tf_forward_flops(model, input_shape) -> int:
    """FLOPs of one forward pass as TensorFlow's graph profiler counts them (MatMul, Conv2D, BiasAdd,
    MaxPool: one per input element)."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    fn = tf.function(lambda x: model(x, training=False))
    concrete = fn.get_concrete_function(tf.TensorSpec((1, *input_shape), tf.float32))
    graph = convert_variables_to_constants_v2(concrete).graph
    opts = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    opts["output"] = "none"
    opts["account_type_regexes"] = ["MatMul", "Conv2D", "BiasAdd", "MaxPool"]  # softmax: not counted
    return tf.compat.v1.profiler.profile(graph=graph, options=opts).total_float_ops


@pytest.mark.tensorflow
@pytest.mark.parametrize("name", sorted(TINY))
def test_forward_flops_match_tensorflow_profiler(name):
    import keras

    w = WORKLOADS[name]
    params = TINY[name]
    model = w.build(keras, params, **({"augment": False} if name == "cifar10_cnn" else {}))
    shape = tuple(model.inputs[0].shape[1:])
    assert w.flops(params).forward == tf_forward_flops(model, shape)


@pytest.mark.parametrize(
    "name,params",
    [
        ("imdb_bidirectional_lstm", {"num_words": 50, "maxlen": 7, "embedding": 6, "units": 4}),
        ("lstm_text_generation", {"maxlen": 5, "step": 3, "chars": 9, "units": 4}),
    ],
)
@pytest.mark.tensorflow
def test_recurrent_flops_follow_the_weights(name, params):
    """Per time step an LSTM does one multiply-add per gate weight: forward = 2 x (weights) + biases."""
    import keras

    w = WORKLOADS[name]
    model = w.build(keras, params)
    lstms = [l for l in model.layers if "LSTM" in type(l).__name__ or "Bidirectional" in type(l).__name__]
    recurrent = lstms[0]
    kernels = sum(int(np.prod(v.shape)) for v in recurrent.weights if len(v.shape) == 2)
    biases = sum(int(np.prod(v.shape)) for v in recurrent.weights if len(v.shape) == 1)
    dense = model.layers[-1]
    dense_w = int(np.prod(dense.weights[0].shape))
    expected = params["maxlen"] * (2 * kernels + biases) + 2 * dense_w + dense.weights[1].shape[0]
    assert w.flops(params).forward == expected
    # Backward costs at least as much as forward (weight gradients alone match it).
    assert w.flops(params).backward >= w.flops(params).forward


def test_fasttext_flops_are_tiny_and_memory_bound():
    w = WORKLOADS["imdb_fasttext"]
    assert w.memory_bound
    assert w.flops().forward == 400 * 50 + 2 * 50 + 1


def test_full_size_flops_by_hand():
    # mnist_mlp: 784-512-512-10, input gradient of the first layer skipped.
    macs = 784 * 512 + 512 * 512 + 512 * 10
    fwd = 2 * macs + 512 + 512 + 10
    bwd = 2 * macs + 512 + 512 + 10 + 2 * (512 * 512 + 512 * 10)
    f = WORKLOADS["mnist_mlp"].flops()
    assert (f.forward, f.backward) == (fwd, bwd)


def test_mnist_synthetic_statistics():
    d = WORKLOADS["mnist_mlp"].synthetic(4000, seed=3)
    assert d.x.shape == (4000, 784) and d.x.dtype == np.float32 and d.y.shape == (4000, 10)
    assert 0.0 <= d.x.min() and d.x.max() <= 1.0
    assert abs(float((d.x > 0).mean()) - datasets.MNIST_NONZERO) < 0.01
    assert abs(float(d.x.mean()) - datasets.MNIST_MEAN) < 0.01
    assert abs(float(d.x.std()) - datasets.MNIST_STD) < 0.01
    assert np.allclose(d.y.sum(axis=1), 1)


def test_cifar_synthetic_statistics():
    d = WORKLOADS["cifar10_cnn"].synthetic(500, seed=1)
    assert d.x.shape == (500, 32, 32, 3) and d.x.dtype == np.float32
    means = d.x.reshape(-1, 3).mean(axis=0) * 255
    assert np.allclose(means, datasets.CIFAR_MEAN, atol=2.0)


def test_imdb_synthetic_lengths_and_vocabulary():
    rng = np.random.default_rng(0)
    tokens, lengths = datasets.imdb_sequences(25_000, 20_000, rng)
    assert abs(np.median(lengths) - datasets.IMDB_MEDIAN_LEN) < 8
    assert abs(lengths.mean() - datasets.IMDB_MEAN_LEN) < 10
    assert tokens.min() >= 1 and tokens.max() < 20_000
    assert 0.01 < float((tokens == 2).mean()) < 0.06  # out-of-vocabulary share, as on real IMDb
    _, _, vocab = datasets.add_bigrams(tokens, lengths, 20_000)
    assert 1.0e6 < len(vocab) < 1.45e6  # the study's fastText vocabulary is ~1.2 M


def test_bigrams_match_the_keras_example_loop():
    rng = np.random.default_rng(1)
    tokens, lengths = datasets.imdb_sequences(40, 20_000, rng)
    out, new_lengths, vocab = datasets.add_bigrams(tokens, lengths, 20_000)
    seqs = np.split(tokens, np.cumsum(lengths)[:-1])
    # The example: create_ngram_set over the training set, then add_ngram to each review.
    ngrams = set()
    for s in seqs:
        ngrams.update(zip(s[:-1].tolist(), s[1:].tolist()))
    index = {g: 20_001 + i for i, g in enumerate(sorted(ngrams))}
    expected = [s.tolist() + [index[g] for g in zip(s[:-1].tolist(), s[1:].tolist())] for s in seqs]
    got = [s.tolist() for s in np.split(out, np.cumsum(new_lengths)[:-1])]
    assert got == expected
    assert len(vocab) == len(index)


@pytest.mark.tensorflow
def test_pad_tail_matches_keras_pad_sequences():
    import keras

    seqs = [[1, 2, 3], [4, 5, 6, 7, 8, 9], [], [10]]
    tokens, lengths = datasets.flatten_sequences(seqs)
    got = datasets.pad_tail(tokens, lengths, 4)
    assert got.tolist() == keras.utils.pad_sequences(seqs, maxlen=4).tolist()


def test_char_windows_match_the_example():
    ids = np.array([0, 1, 2, 3, 1, 2, 0, 3, 2, 1, 0])
    x, y = datasets.char_windows(ids, 4, maxlen=3, step=2)
    starts = list(range(0, len(ids) - 3, 2))
    assert x.shape == (len(starts), 3, 4) and y.shape == (len(starts), 4)
    for i, s in enumerate(starts):
        assert x[i].argmax(axis=1).tolist() == ids[s : s + 3].tolist()
        assert x[i].sum() == 3
        assert y[i].argmax() == ids[s + 3]


def test_fasttext_synthetic_derives_the_vocabulary_from_all_reviews():
    d = WORKLOADS["imdb_fasttext"].synthetic(64, {"reviews": 2_000}, seed=0)
    assert d.x.shape == (64, 400) and d.y.shape == (64,)
    assert d.derived["vocab"] > 20_001 + 50_000  # bigrams of 2,000 reviews, not of 64
    assert d.x.max() < d.derived["vocab"]


def test_unknown_parameter_is_refused():
    with pytest.raises(KeyError):
        WORKLOADS["mnist_mlp"].flops({"hiden": 3})


def test_flops_add():
    assert (base.Flops(1, 2) + base.Flops(3, 4)).train == 10


@pytest.mark.tensorflow
def test_lazy_adam_variant_updates_only_the_rows_a_batch_touches():
    """Step 1: lazy and dense Adam agree (moments start at zero). Step 2 on other rows: dense Adam
    still moves the rows of step 1 (their momentum), lazy Adam leaves them alone."""
    import keras

    from cpustudy.workloads import VARIANTS, imdb_fasttext

    params = {"num_words": 10, "maxlen": 3, "embedding": 4, "reviews": 1, "vocab": 30}
    # No id twice in a batch: with duplicates, Keras' dense Adam squares the per-occurrence gradients
    # before summing them, whereas lazy Adam (like Adam on the summed gradient) sums first.
    x1 = np.array([[1, 2, 3], [4, 5, 6]], dtype="int32")
    x2 = np.array([[7, 8, 9], [10, 11, 12]], dtype="int32")
    y = np.array([1.0, 0.0], dtype="float32")

    def train(workload):
        keras.utils.set_random_seed(0)
        model = workload.build(keras, params)
        w0 = model.layers[0].get_weights()[0].copy()
        model.train_on_batch(x1, y)
        w1 = model.layers[0].get_weights()[0].copy()
        model.train_on_batch(x2, y)
        return w0, w1, model.layers[0].get_weights()[0]

    d0, d1, d2 = train(imdb_fasttext.WORKLOAD)
    l0, l1, l2 = train(VARIANTS["imdb_fasttext_lazy"])
    assert np.array_equal(d0, l0)
    assert np.allclose(d1, l1, atol=1e-6)  # the same first step
    touched1, touched2, never = [1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12], [0, 13, 20, 29]
    assert not np.allclose(l1[touched1], l0[touched1])
    assert np.array_equal(l1[touched2 + never], l0[touched2 + never])
    assert not np.allclose(d2[touched1], d1[touched1])  # dense Adam: momentum moves them again
    assert np.array_equal(l2[touched1], l1[touched1])  # lazy Adam: untouched in step 2, unchanged
    assert not np.allclose(l2[touched2], l1[touched2])
