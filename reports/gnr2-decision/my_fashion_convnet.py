"""A small Fashion-MNIST convnet as a new user would write one (not one of cpustudy's examples): the model file
behind reports/gnr2-decision/. Real data from Debian's dataset-fashion-mnist, copied into Keras' cache."""

import os
import shutil

NAME = "my_fashion_convnet"
BATCH_SIZE = 128
EPOCHS = 6

SRC = "/usr/share/datasets/fashion-mnist"
FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz")


def load_data():
    import keras

    cache = os.path.join(os.environ.get("KERAS_HOME") or os.path.expanduser("~/.keras"), "datasets", "fashion-mnist")
    os.makedirs(cache, exist_ok=True)
    for f in FILES:
        if not os.path.exists(os.path.join(cache, f)):
            shutil.copyfile(os.path.join(SRC, f), os.path.join(cache, f))
    (x, y), (xt, yt) = keras.datasets.fashion_mnist.load_data()
    return ((x[..., None] / 255.0).astype("float32"), y.astype("int32")), ((xt[..., None] / 255.0).astype("float32"),
                                                                           yt.astype("int32"))


def build_model():
    import keras
    from keras import layers

    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
