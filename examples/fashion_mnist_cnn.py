"""A simple CNN on Fashion-MNIST: a model file for `cpustudy run examples/fashion_mnist_cnn.py`.

The contract cpustudy needs: `build_model()` returns a compiled Keras model and `load_data()` returns
`((x_train, y_train), (x_test, y_test))` as NumPy arrays; `NAME`, `BATCH_SIZE` and `EPOCHS` are optional.
TensorFlow and Keras are imported inside the functions, so the worker imports them after pinning its CPUs
(importing them at the top works too: cpustudy imports the file only in the pinned worker).

The data: Keras' `fashion_mnist.load_data()` reads its cache ($KERAS_HOME/datasets/fashion-mnist/, else
~/.keras/datasets/fashion-mnist/). Debian's package `dataset-fashion-mnist` provides the same four files
(`apt-get install dataset-fashion-mnist`): they are copied into the cache when it lacks them; with neither,
load_data says so (nothing is downloaded while measuring).
"""

import os
import shutil

NAME = "fashion_mnist_cnn"
BATCH_SIZE = 128
EPOCHS = 10

DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"
FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
         "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")


def keras_cache() -> str:
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, "datasets", "fashion-mnist")


def ensure_cached() -> None:
    """Copy Debian's Fashion-MNIST files into Keras' cache where they are missing; with neither, say how."""
    cache = keras_cache()
    missing = [f for f in FILES if not os.path.exists(os.path.join(cache, f))]
    if not missing:
        return
    if not all(os.path.exists(os.path.join(DEBIAN_DIR, f)) for f in missing):
        raise FileNotFoundError(f"Fashion-MNIST is not in Keras' cache ({cache}) and {DEBIAN_DIR} does not have it: "
                                "apt-get install dataset-fashion-mnist, or put its four .gz files in the cache")
    os.makedirs(cache, exist_ok=True)
    for f in missing:
        shutil.copyfile(os.path.join(DEBIAN_DIR, f), os.path.join(cache, f))


def load_data():
    import keras

    ensure_cached()
    (x_train, y_train), (x_test, y_test) = keras.datasets.fashion_mnist.load_data()
    prepare = lambda x: (x.reshape(-1, 28, 28, 1) / 255.0).astype("float32")  # noqa: E731
    return (prepare(x_train), y_train.astype("int32")), (prepare(x_test), y_test.astype("int32"))


def build_model():
    import keras
    from keras import layers

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
                  metrics=["accuracy"])
    return model
