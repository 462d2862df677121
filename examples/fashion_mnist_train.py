"""An ordinary Keras training script: a small CNN on Fashion-MNIST, fed by tf.data, with callbacks.

Runs as it is both ways:

    python examples/fashion_mnist_train.py
    cpustudy run examples/fashion_mnist_train.py --target val_sparse_categorical_accuracy=0.88 --max-epochs 10

Nothing in it is for cpustudy: cpustudy runs it in its pinned worker and measures its first `model.fit`
(its tf.data input, validation and callbacks as written); the code after that fit does not run there.

The data: Keras' `fashion_mnist.load_data()` reads its cache (~/.keras/datasets/fashion-mnist/). Debian's
package `dataset-fashion-mnist` has the same four files; they are copied into the cache when it lacks them.
"""

import os
import shutil

import keras
import tensorflow as tf
from keras import layers

BATCH_SIZE = 128
EPOCHS = 10
DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"


def ensure_cached():
    """Copy Debian's Fashion-MNIST into Keras' cache where it is missing (Keras would download it)."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    cache = os.path.join(home, "datasets", "fashion-mnist")
    for name in ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                 "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"):
        if not os.path.exists(os.path.join(cache, name)) and os.path.exists(os.path.join(DEBIAN_DIR, name)):
            os.makedirs(cache, exist_ok=True)
            shutil.copyfile(os.path.join(DEBIAN_DIR, name), os.path.join(cache, name))


ensure_cached()
(x_train, y_train), (x_test, y_test) = keras.datasets.fashion_mnist.load_data()
x_train = (x_train / 255.0).astype("float32")[..., None]
x_test = (x_test / 255.0).astype("float32")[..., None]

train_ds = (tf.data.Dataset.from_tensor_slices((x_train, y_train))
            .shuffle(10_000, seed=1).batch(BATCH_SIZE).prefetch(tf.data.AUTOTUNE))
test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(BATCH_SIZE).prefetch(tf.data.AUTOTUNE)

model = keras.Sequential([
    keras.Input(shape=(28, 28, 1)),
    layers.Conv2D(32, 3, activation="relu"),
    layers.MaxPooling2D(),
    layers.Conv2D(64, 3, activation="relu"),
    layers.MaxPooling2D(),
    layers.Flatten(),
    layers.Dropout(0.3),
    layers.Dense(128, activation="relu"),
    layers.Dense(10, activation="softmax"),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
              metrics=[keras.metrics.SparseCategoricalAccuracy()])


def schedule(epoch, lr):
    """The learning rate: 1e-3 for two epochs, then halved every epoch."""
    return lr if epoch < 2 else lr * 0.5


callbacks = [
    keras.callbacks.LearningRateScheduler(schedule),
    keras.callbacks.EarlyStopping(monitor="val_sparse_categorical_accuracy", patience=2, restore_best_weights=True),
]
history = model.fit(train_ds, validation_data=test_ds, epochs=EPOCHS, callbacks=callbacks, verbose=2)

loss, accuracy = model.evaluate(test_ds, verbose=0)
print(f"test accuracy {accuracy:.4f}, loss {loss:.4f}")
