"""A user's model file inside a worker: imported after the CPUs are pinned, checked, summarised, and
its training step's FLOPs counted by TensorFlow's own cost analysis.

``python -m cpustudy.worker.usermodel FILE SHA256 BATCH`` is the check the parent runs once per file
content (``cpustudy.workloads.userfile``: the parent never imports TensorFlow): it calls the file's
``load_data`` and ``build_model`` and prints one JSON line, the summary or ``{"error": ...}``. A worker
measuring the file builds its workload with :func:`workload_for`. Standard library only at import.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import traceback
from typing import Any

from cpustudy.targets import accuracy_metric

#: Ops whose body TensorFlow's cost analysis does not look into (a loop's body is a function of its own).
UNCOUNTED_OPS = ("While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf")


class ModelFileError(Exception):
    """The file breaks the contract: the message names what (the file and line are added)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def import_file(path: str) -> Any:
    """The file as a module (named after its hash, so that two files never share a module)."""
    name = "cpustudy_model_" + file_sha256(path)[:16]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelFileError("cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def line_in(path: str, exc: BaseException) -> int | None:
    """The last line of ``path`` in the exception's traceback (where the user's code failed).

    The traceback is walked frame by frame, not through ``traceback.extract_tb``, which obeys
    ``sys.tracebacklimit``: SkyPilot's ``print_exception_no_traceback()`` sets it to 0 and, when the code inside
    it raises, never sets it back, so in a process that met such an error every extracted traceback is empty."""
    frames = [(frame.f_code.co_filename, line) for frame, line in traceback.walk_tb(exc.__traceback__)]
    real = os.path.realpath(path)
    same = [line for name, line in frames if os.path.realpath(name) == real]
    if not same:  # a code object compiled under another path of the same file (a copy, a link)
        same = [line for name, line in frames if os.path.basename(name) == os.path.basename(path)]
    return same[-1] if same else None


def call(path: str, what: str, fn: Any) -> Any:
    """``fn()``, with an exception raised in it turned into a ``ModelFileError`` naming the line."""
    try:
        return fn()
    except ModelFileError:
        raise
    except Exception as exc:  # the user's code: anything can fail there
        message = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ModelFileError(f"{what} failed: {message}", line_in(path, exc)) from exc


def checked_data(out: Any) -> tuple[Any, Any, Any, Any]:
    """``load_data()``'s value as ``(x_train, y_train, x_test, y_test)``: two pairs of NumPy arrays of
    matching lengths, training and test inputs of the same shape per sample, neither empty."""
    import numpy as np

    shape = "load_data() must return ((x_train, y_train), (x_test, y_test))"
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise ModelFileError(f"{shape}, got {_describe(out)}")
    arrays = []
    for split, pair in zip(("train", "test"), out):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ModelFileError(f"{shape}: its {split} part is {_describe(pair)}, not a pair (x, y)")
        x, y = pair
        for label, a in (("x", x), ("y", y)):
            if not isinstance(a, np.ndarray):
                raise ModelFileError(f"{shape} as NumPy arrays: {label}_{split} is {_describe(a)}")
        if len(x) != len(y):
            raise ModelFileError(f"load_data(): x_{split} has {len(x)} samples but y_{split} has {len(y)}")
        if len(x) == 0:
            raise ModelFileError(f"load_data(): the {split} split is empty")
        arrays += [x, y]
    if arrays[0].shape[1:] != arrays[2].shape[1:]:
        raise ModelFileError(f"load_data(): x_train's samples are {list(arrays[0].shape[1:])} but x_test's are "
                             f"{list(arrays[2].shape[1:])}")
    return arrays[0], arrays[1], arrays[2], arrays[3]


def _describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def checked_model(model: Any) -> Any:
    """``build_model()``'s value: a Keras model, compiled (an optimizer and a loss)."""
    if not (hasattr(model, "fit") and hasattr(model, "count_params")):
        raise ModelFileError(f"build_model() must return a compiled Keras model, got {_describe(model)}")
    compiled = getattr(model, "compiled", None)
    if compiled is None:  # tf.keras 2.x
        compiled = getattr(model, "_is_compiled", False)
    if not compiled or getattr(model, "optimizer", None) is None:
        raise ModelFileError("build_model() returned a model that is not compiled: call model.compile(optimizer=..., "
                             "loss=..., metrics=['accuracy']) before returning it")
    return model


def model_summary(model: Any, x: Any, y: Any, x_test: Any) -> dict[str, Any]:
    """What the run stores about the model: parameters, layers, input and output shapes, optimizer, loss."""
    def shapes(tensors: Any) -> list[list[int | None]]:
        return [list(t.shape) for t in (tensors or [])]

    layers = [type(layer).__name__ for layer in model.layers]
    loss = getattr(model, "loss", None)
    return {
        "parameters": int(model.count_params()),
        "layers": len(layers),
        "layer_types": layers,
        "input_shapes": shapes(getattr(model, "inputs", None)),
        "output_shapes": shapes(getattr(model, "outputs", None)),
        "optimizer": type(model.optimizer).__name__,
        "loss": loss if isinstance(loss, str) else type(loss).__name__,
        "x_train": [list(x.shape), str(x.dtype)],
        "y_train": [list(y.shape), str(y.dtype)],
        "samples": int(len(x)),
        "validation_samples": int(len(x_test)),
    }


def count_flops(model: Any, x: Any, y: Any, batch: int) -> dict[str, Any]:
    """FLOPs per sample of the forward pass and of the training step (the loss and its gradients with
    respect to the trainable weights; the optimizer's update, per step rather than per sample, is left
    out as in the study's analytic counts), as TensorFlow's cost analysis counts every op of the traced
    graph. ``flops_note`` instead where it cannot (another backend, or ops it does not look into)."""
    import keras

    backend = keras.backend.backend() if hasattr(keras.backend, "backend") else "tensorflow"
    if backend != "tensorflow":
        return {"flops_note": f"not counted: Keras on {backend} has no TensorFlow graph to analyse"}
    import tensorflow as tf

    x_spec = tf.TensorSpec((batch, *x.shape[1:]), tf.as_dtype(x.dtype))
    y_spec = tf.TensorSpec((batch, *y.shape[1:]), tf.as_dtype(y.dtype))

    def step(xb: Any, yb: Any) -> Any:
        with tf.GradientTape() as tape:
            pred = model(xb, training=True)
            loss = model.compute_loss(x=xb, y=yb, y_pred=pred)
        return tape.gradient(loss, model.trainable_variables)

    out: dict[str, Any] = {}
    for key, fn, specs in (("flops_forward", lambda xb: model(xb, training=False), (x_spec,)),
                           ("flops_train", step, (x_spec, y_spec))):
        graph = tf.function(fn).get_concrete_function(*specs).graph
        nested = sorted({n.op for n in graph.as_graph_def().node if n.op in UNCOUNTED_OPS})
        if nested:
            return {"flops_note": f"not counted: the step has {', '.join(nested)} ops (a loop such as an RNN's time "
                                  "steps, or a nested function), whose bodies TensorFlow's cost analysis does not count"}
        opts = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
        opts["output"] = "none"
        out[key] = round(tf.compat.v1.profiler.profile(graph=graph, options=opts).total_float_ops / batch)
    return out


def check(path: str, batch: int) -> dict[str, Any]:
    """Import the file, load its data, build its model, train one batch (metrics and optimizer built),
    and return what the run stores about it."""
    module = call(path, "importing the file", lambda: import_file(path))
    for fn in ("build_model", "load_data"):
        if not callable(getattr(module, fn, None)):
            raise ModelFileError(f"defines no function {fn}()")
    x, y, x_test, y_test = checked_data(call(path, "load_data()", module.load_data))
    model = checked_model(call(path, "build_model()", module.build_model))
    n = min(batch, len(x))
    logs = call(path, "training one batch", lambda: model.train_on_batch(x[:n], y[:n], return_dict=True))
    info = model_summary(model, x, y, x_test)
    info["metrics"] = sorted(logs)
    info["accuracy_metric"] = accuracy_metric(logs)  # under any of Keras' names for it
    import keras

    info["keras"] = getattr(keras, "__version__", None)
    info.update(call(path, "counting FLOPs", lambda: count_flops(model, x, y, n)))
    return info


def workload_for(config: Any) -> Any:
    """The workload a worker measures: one of the study's, or the config's model file (imported here,
    after the CPUs were pinned and the framework imported; its hash checked against the planned one)."""
    from cpustudy.workloads import ALL

    if not getattr(config, "model_file", None):
        return ALL[config.workload]
    from cpustudy.workloads.base import ZERO, Workload

    path = str(config.model_file)
    if file_sha256(path) != config.model_hash:
        raise RuntimeError(f"{path} changed after the run was planned (its content hash differs): run it again")
    module = import_file(path)
    loaded: dict[str, Any] = {}

    def data(keras: Any, p: Any, split: str = "train") -> Any:
        if not loaded:
            x, y, xt, yt = checked_data(module.load_data())
            loaded.update(train=(x, y), test=(xt, yt))
        return loaded[split]

    def build(keras: Any, p: Any, *, jit_compile: bool | None = None, **_: Any) -> Any:
        model = checked_model(module.build_model())
        if jit_compile is not None:
            model.jit_compile = jit_compile  # the build's switch (tf-xla), as compile(jit_compile=...) sets it
        return model

    return Workload(name=config.workload, title=path, dataset=config.workload, batch_size=config.batch_size,
                    epochs=config.epochs, samples_per_epoch=config.samples_per_epoch, optimizer="", loss="", params={},
                    _build=build, _flops=lambda p: ZERO, _synthetic=lambda n, p, s: None, _real=data, real_files=(),
                    validation_samples=int((config.model_summary or {}).get("validation_samples") or 0))


def answer(path: str, sha: str, run_check: Any) -> int:
    """A check's entry point: ``run_check()`` on a file still of content ``sha``, printed as one
    ``CPUSTUDY-MODEL`` JSON line (its findings, or ``{"error", "line"}``)."""
    try:
        if file_sha256(path) != sha:
            raise ModelFileError("changed while it was being checked: run the command again")
        out = run_check()
    except ModelFileError as exc:
        out = {"error": str(exc), "line": exc.line}
    print("CPUSTUDY-MODEL " + json.dumps(out, default=str), flush=True)
    return 0


def main(argv: list[str]) -> int:
    path, sha, batch = argv[0], argv[1], int(argv[2])
    return answer(path, sha, lambda: check(path, batch))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
