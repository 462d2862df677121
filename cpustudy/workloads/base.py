"""What a workload is, and the FLOP-counting convention every workload follows.

A workload module never imports TensorFlow or Keras at import time: the Keras module is handed to
``build`` by the worker, which picks it (Keras 3 or tf.keras 2.x) after pinning its CPUs.

FLOP convention (per training sample, forward + backward):

* matmul and convolution: 2 FLOPs per multiply-add; bias add: 1 FLOP per output element. This is
  exactly what TensorFlow's graph profiler counts for MatMul/Conv2D/BiasAdd, which the tests use as an
  independent check.
* backward of a weight layer: the weight gradient (2 x MACs, plus 1 per output for the bias gradient)
  and the input gradient (2 x MACs), the latter omitted where the layer's input is raw data that needs
  no gradient (the first layer on images, the one-hot characters).
* LSTM: per time step the four gate matmuls on [x, h] plus their biases; backward as above, where the
  gradient with respect to h is always needed (back-propagation through time).
* pooling: 1 FLOP per window element of each output (max) or input element (average), forward
  and backward; activations, dropout, softmax, losses and
  the optimizer update are not counted (they are small next to the matmuls, and per-step not
  per-sample for the optimizer).
* embedding lookups are gathers: 0 FLOPs. Memory-bound workloads say so with ``memory_bound``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

Params = Mapping[str, Any]
Arrays = tuple[np.ndarray, np.ndarray]


@dataclass
class Dataset:
    """Training inputs and targets, plus parameters the data decides (fastText's vocabulary)."""

    x: np.ndarray
    y: np.ndarray
    derived: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.x.shape[0])


def _dataset(out: Any) -> Dataset:
    if isinstance(out, Dataset):
        return out
    x, y, *rest = out
    return Dataset(x, y, dict(rest[0]) if rest else {})


@dataclass(frozen=True)
class Flops:
    """FLOPs per sample."""

    forward: int
    backward: int

    @property
    def train(self) -> int:
        return self.forward + self.backward

    def __add__(self, other: "Flops") -> "Flops":
        return Flops(self.forward + other.forward, self.backward + other.backward)


ZERO = Flops(0, 0)


def dense(n_in: int, n_out: int, *, input_grad: bool = True, bias: bool = True) -> Flops:
    macs = n_in * n_out
    b = n_out if bias else 0
    return Flops(2 * macs + b, 2 * macs + b + (2 * macs if input_grad else 0))


def conv2d(
    h_out: int, w_out: int, k: int, c_in: int, c_out: int, *, input_grad: bool = True
) -> Flops:
    macs = h_out * w_out * k * k * c_in * c_out
    b = h_out * w_out * c_out
    return Flops(2 * macs + b, 2 * macs + b + (2 * macs if input_grad else 0))


def pool(n_in: int) -> Flops:
    """Global average pooling: one add per input element, forward and backward."""
    return Flops(n_in, n_in)


def maxpool2d(h_out: int, w_out: int, channels: int, k: int = 2) -> Flops:
    """One comparison per window element of each output (what TensorFlow's profiler counts)."""
    n = h_out * w_out * channels * k * k
    return Flops(n, n)


def lstm(timesteps: int, n_in: int, units: int, *, input_grad: bool = True) -> Flops:
    x_macs = 4 * units * n_in
    h_macs = 4 * units * units
    b = 4 * units
    fwd = 2 * (x_macs + h_macs) + b
    bwd = 2 * (x_macs + h_macs) + b + 2 * h_macs + (2 * x_macs if input_grad else 0)
    return Flops(timesteps * fwd, timesteps * bwd)


def conv_out(size: int, k: int, padding: str) -> int:
    return size if padding == "same" else size - k + 1


AUGMENT_MODES = ("host", "model", "none")


def augment_where(value: str | bool | None) -> str:
    """Where a workload's augmentation runs: ``host``, ``model`` or ``none``. Runs stored before
    ``host`` existed say True (the layers in the model) or False."""
    if value is True:
        return "model"
    if value is False or value is None:
        return "none"
    if value not in AUGMENT_MODES:
        raise ValueError(f"augment must be one of {', '.join(AUGMENT_MODES)}, got {value!r}")
    return str(value)


#: The fewest steps a capped epoch (or its validation) is projected to a whole one from. Measured on a
#: 2-vCPU Zen 5 VM (mnist_mlp, 1 vCPU, 3 epochs, two rounds): 2 steps projected 6.29 and 6.39 s, 5 steps
#: 2.00 and 1.96 s, 10 steps 1.82 and 1.76 s, 20 steps 1.74 and 2.01 s, 40 steps 1.83 and 2.06 s.
MIN_PROJECTED_STEPS = 10


@dataclass(frozen=True)
class ModelFile:
    """A user's model file (``cpustudy run ./my_model.py``): where it is, its content's hash (part of the
    configuration's identity: an edited file never pools with its earlier runs), what its check found
    (parameters, layers, input shapes, FLOPs) and the data its ``load_data`` returns (``DATA``, "real"
    unless the file says otherwise)."""

    path: str
    sha256: str
    summary: Mapping[str, Any]
    data: str = "real"
    flops_note: str = ""  # why TensorFlow's cost analysis could not count the step's FLOPs, if it could not
    kind: str = "model"  # model (build_model/load_data) | script (a training script run as it is)


@dataclass(frozen=True)
class Workload:
    """One model of the study, faithful to the Keras example it used."""

    name: str
    title: str
    dataset: str  # mnist | cifar10 | imdb | nietzsche
    batch_size: int
    epochs: int
    samples_per_epoch: int
    optimizer: str
    loss: str
    params: Mapping[str, Any]
    _build: Callable[..., Any]
    _flops: Callable[[Params], Flops]
    _synthetic: Callable[[int, Params, int], Any]  # returns (x, y) or (x, y, derived params)
    _real: Callable[..., Any]  # (keras, params, split="train"|"test")
    real_files: tuple[str, ...]  # names in the Keras dataset cache, any of which means "cached"
    # Samples the example validated on after every epoch (its test set); 0 = it did not validate.
    validation_samples: int = 0
    # Host-side augmentation of one batch, (x, rng) -> x, and the same in TensorFlow ops for a tf.data
    # map: how the example augmented (cifar10_cnn's ImageDataGenerator), None where it did not.
    augment_batch: Callable[[np.ndarray, np.random.Generator], np.ndarray] | None = None
    augment_batch_tf: Callable[[Any], Any] | None = None
    input_desc: str = ""  # the model's input per sample, e.g. "28x28x1 float32"
    memory_bound: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)  # workload switches and defaults
    notes: str = ""
    #: Raised whenever the model, its data generator or its FLOPs change: runs of another version are a
    #: different configuration (never resumed into, never pooled with).
    version: int = 1
    model: ModelFile | None = None  # a user's model file, not one of the study's workloads

    def resolved_params(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        p = dict(self.params)
        for k, v in (overrides or {}).items():
            if k not in p:
                raise KeyError(f"{self.name} has no parameter {k!r} (it has {', '.join(p)})")
            p[k] = v
        return p

    def build(self, keras: Any, params: Params | None = None, **options: Any) -> Any:
        """A compiled Keras model. ``keras`` is the Keras module to use (Keras 3 or tf.keras)."""
        opts = {**self.options, **options}
        return self._build(keras, self.resolved_params(params), **opts)

    def flops(self, params: Params | None = None) -> Flops:
        return self._flops(self.resolved_params(params))

    def synthetic(self, n: int, params: Params | None = None, seed: int = 0) -> Dataset:
        """``n`` samples of synthetic data with the real data's shapes and statistics."""
        return _dataset(self._synthetic(n, self.resolved_params(params), seed))

    def real(self, keras: Any, params: Params | None = None, split: str = "train") -> Dataset:
        """The real training (or test) set through Keras' loaders (and their cache)."""
        return _dataset(self._real(keras, self.resolved_params(params), split=split))

    def validation_steps(self, batch_size: int, train_steps: int | None = None) -> int:
        """Validation batches per epoch: the whole test set, or with ``train_steps`` capped below a full
        epoch, the same share of it, but at least ``MIN_PROJECTED_STEPS`` batches (fewer are too few to
        project the whole test set's time from)."""
        if not self.validation_samples:
            return 0
        full = -(-self.validation_samples // batch_size)
        if train_steps is None or train_steps >= self.steps_for(batch_size):
            return full
        share = -(-train_steps * self.validation_samples // self.samples_per_epoch)
        return min(full, max(MIN_PROJECTED_STEPS, share))

    def steps_for(self, batch_size: int) -> int:
        return -(-self.samples_per_epoch // batch_size)

    @property
    def steps_per_epoch(self) -> int:
        return -(-self.samples_per_epoch // self.batch_size)


def one_hot(labels: np.ndarray, classes: int) -> np.ndarray:
    out = np.zeros((labels.shape[0], classes), dtype=np.float32)
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out


def compile_model(
    model: Any, optimizer: Any, loss: str, metrics: list[str], jit_compile: bool | None = None
) -> Any:
    """Compile the same way on Keras 3 and tf.keras 2.x.

    ``jit_compile=None`` keeps the framework's default (Keras 3 on TensorFlow: XLA off on a CPU-only
    machine; on JAX: always XLA), ``True``/``False`` force it.
    """
    kwargs: dict[str, Any] = {} if jit_compile is None else {"jit_compile": jit_compile}
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
    return model
