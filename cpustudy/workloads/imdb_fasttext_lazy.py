"""``imdb_fasttext`` with lazy Adam updates: a named variant, never a silent substitute.

The study's fastText model has a ~1.2 M x 50 embedding. Keras' Adam updates every row of it, and of
its two moment tables, at every step, although a batch of 32 reviews touches at most 12,800 rows:
the workload is bound by memory traffic, not arithmetic. Lazy Adam (as in TF-Addons' ``LazyAdam``
and TF 1's ``LazyAdamOptimizer``) updates the moments and weights only for the rows in the batch.
For rows that are touched it is Adam; rows not touched keep stale moments instead of decaying them,
which changes the optimisation slightly, so this is a different workload with its own name.
Model, data, batch size and epochs are those of ``imdb_fasttext``. TensorFlow backend (Keras 3) only.
"""

from __future__ import annotations

from typing import Any

import cpustudy.workloads.imdb_fasttext as imdb_fasttext
from cpustudy.workloads.base import Params, Workload, compile_model


def lazy_adam(keras: Any, learning_rate: float = 0.001) -> Any:
    """Keras 3 Adam whose update of a sparse (``tf.IndexedSlices``) gradient touches only its rows."""
    import tensorflow as tf

    major = int(str(getattr(keras, "__version__", "0")).split(".")[0])
    if major < 3 or keras.backend.backend() != "tensorflow":
        raise RuntimeError("imdb_fasttext_lazy needs Keras 3 on the TensorFlow backend")

    class LazyAdam(keras.optimizers.Adam):
        def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> Any:
            if not isinstance(gradient, tf.IndexedSlices):
                return super().update_step(gradient, variable, learning_rate)
            dtype = variable.dtype
            step = tf.cast(self.iterations + 1, dtype)
            b1 = tf.cast(self.beta_1, dtype)
            b2 = tf.cast(self.beta_2, dtype)
            alpha = tf.cast(learning_rate, dtype) * tf.sqrt(1 - b2**step) / (1 - b1**step)
            rows, pos = tf.unique(gradient.indices)
            grad = tf.math.unsorted_segment_sum(tf.cast(gradient.values, dtype), pos, tf.shape(rows)[0])
            m = self._momentums[self._get_variable_index(variable)]
            v = self._velocities[self._get_variable_index(variable)]
            m_rows = b1 * tf.gather(m.value, rows) + (1 - b1) * grad
            v_rows = b2 * tf.gather(v.value, rows) + (1 - b2) * tf.square(grad)
            self.assign(m, tf.IndexedSlices(m_rows, rows))
            self.assign(v, tf.IndexedSlices(v_rows, rows))
            step_rows = alpha * m_rows / (tf.sqrt(v_rows) + self.epsilon)
            self.assign_sub(variable, tf.IndexedSlices(step_rows, rows))

    return LazyAdam(learning_rate=learning_rate)


def build(keras: Any, p: Params, *, jit_compile: bool | None = None, **_: Any) -> Any:
    model = imdb_fasttext.build(keras, p, jit_compile=jit_compile)
    return compile_model(model, lazy_adam(keras), "binary_crossentropy", ["accuracy"], jit_compile)


WORKLOAD = Workload(
    name="imdb_fasttext_lazy",
    title="fastText (bigrams) on IMDb, lazy Adam (variant)",
    dataset="imdb",
    batch_size=32,
    epochs=5,
    samples_per_epoch=25_000,
    optimizer="LazyAdam(lr=0.001): Adam on the batch's rows only",
    loss="binary_crossentropy",
    params=dict(imdb_fasttext.WORKLOAD.params),
    input_desc=imdb_fasttext.WORKLOAD.input_desc,
    _build=build,
    _flops=imdb_fasttext.flops,
    _synthetic=imdb_fasttext.synthetic,
    _real=imdb_fasttext.real,
    real_files=imdb_fasttext.WORKLOAD.real_files,
    validation_samples=imdb_fasttext.WORKLOAD.validation_samples,
    memory_bound=True,
    notes="variant of imdb_fasttext: lazy (sparse) Adam updates",
)
