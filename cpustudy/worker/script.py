"""A user's training script run as it is, inside the pinned worker: ``cpustudy run train.py``.

The worker has pinned its CPUs, set the threads and imported the framework; it sets the seed and the precision
policy, then runs the script (``runpy``, as ``python train.py`` would: ``__name__ == "__main__"``, its folder
first on ``sys.path``) with ``keras.Model.fit`` wrapped. The script's **first** ``fit`` is the measured
training: its own data (arrays, ``tf.data``, ``PyDataset``, a generator), ``validation_split`` or
``validation_data``, callbacks and arguments pass through; cpustudy adds its epoch timer (after the script's
callbacks), the run's epochs, the step cap and the target stop, and where the run says so another batch size
(arrays only). When that ``fit`` returns, the script is stopped there: what follows it (an ``evaluate``, a
save, a second ``fit`` such as fine-tuning) does not run and is not measured. A script that ends without
calling ``fit`` is an error.

The check (``check``, run once per file content by :mod:`cpustudy.workloads.userfile` as
``python -m cpustudy.worker.script FILE SHA256``, which prints one JSON line) runs the script up to its first ``fit``, trains one step there, and
reports what the run stores: the model's parameters, layers and shapes, FLOPs by TensorFlow's cost analysis,
the data's kind and size, the ``fit`` arguments and callbacks, and the files beside it the script imported.
Standard library only at import.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import math
import os
import runpy
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from cpustudy.worker.usermodel import ModelFileError, line_in, answer, file_sha256

#: How ``fit`` is fed, as stored.
KINDS = ("arrays", "tf.data", "PyDataset", "generator")
#: Exception names and messages that mean the script tried to download something with no network.
_NETWORK = ("URLError", "gaierror", "ConnectionError", "ConnectionRefusedError", "HTTPError", "RemoteDisconnected",
            "URL fetch failure", "Name or service not known", "Temporary failure in name resolution",
            "Network is unreachable")


class Stop(BaseException):
    """Raised by the wrapped ``fit`` once the measured training (or the check) is done: the script ends there.
    A ``BaseException``, so that a script's own ``except Exception`` does not swallow it."""


@dataclass
class Fit:
    """What the script's first ``fit`` call is given, bound to ``fit``'s parameters, and what that is."""

    args: dict[str, Any]
    kind: str  # KINDS
    samples: int | None  # training samples per epoch (batches x batch size for batched input)
    batch_size: int | None
    steps: int | None  # training steps of a whole epoch
    validation: str  # none | validation_split | validation_data
    validation_samples: int
    validation_steps: int | None  # batches of a whole validation
    line: int | None  # where the script calls fit
    notes: list[str] = field(default_factory=list)


def _first_array(x: Any) -> Any:
    """The first array of an input that may be a list, tuple or dict of arrays."""
    if isinstance(x, dict):
        return next(iter(x.values()), None)
    if isinstance(x, (list, tuple)):
        return x[0] if x else None
    return x


def _length(x: Any) -> int | None:
    a = _first_array(x)
    shape = getattr(a, "shape", None)
    if shape is not None and len(shape):
        return int(shape[0])
    return None


def _slice(x: Any, start: int, end: int) -> Any:
    """Samples ``start:end`` of an array, or of each array of a list, tuple or dict."""
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: _slice(v, start, end) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_slice(v, start, end) for v in x)
    return x[start:end]


def kind_of(x: Any, keras: Any) -> str:
    """How ``fit`` is fed: ``arrays`` (NumPy or tensors), ``tf.data``, ``PyDataset`` (or a tf.keras
    ``Sequence``) or ``generator`` (any other iterator)."""
    if type(x).__module__.startswith("tensorflow") and hasattr(x, "element_spec"):
        return "tf.data"
    base = getattr(keras.utils, "PyDataset", None) or getattr(keras.utils, "Sequence", None)
    if base is not None and isinstance(x, base):
        return "PyDataset"
    if _length(x) is not None:
        return "arrays"
    return "generator"


def _first_batch(kind: str, x: Any, read_generator: bool = False) -> Any:
    """The first batch of a batched input (a ``tf.data`` pipeline, a ``PyDataset``; a generator only where
    ``read_generator``: its first batch is then lost to the script), or None."""
    try:
        if kind == "tf.data":
            return next(iter(x.take(1)))
        if kind == "PyDataset":
            return x[0]
        if kind == "generator" and read_generator:
            return next(x)
    except Exception:  # an empty or failing input: fit will say so itself
        return None
    return None


def _batch_of(kind: str, x: Any) -> int | None:
    """The batch size of a batched input, from its first batch (a generator is not read)."""
    first = _first_batch(kind, x)
    if first is None:
        return None
    return _length(first[0] if isinstance(first, (list, tuple)) else first)


def _split_at(n: int, split: float) -> int:
    """Where Keras splits ``n`` samples for ``validation_split``: the last share validates."""
    return int(math.floor(n * (1.0 - split)))


def training_shape(args: dict[str, Any], kind: str, batch: int | None = None) -> tuple[int | None, int | None,
                                                                                           int | None]:
    """Samples, batch size and steps of an epoch of ``fit``'s training input as ``args`` give it: arrays by their
    length (less a ``validation_split``), ``batch_size`` and ``steps_per_epoch``; a batched input by its batches
    (``steps_per_epoch``, else its length) x ``batch`` (read from its first batch where not given)."""
    x: Any = args.get("x")
    steps_given = args.get("steps_per_epoch")
    steps: int | None
    if kind == "arrays":
        n = _length(x) or 0
        split = float(args.get("validation_split") or 0.0)
        if split and args.get("validation_data") is None:
            n = _split_at(n, split)
        batch = int(args.get("batch_size") or 32)
        steps = int(steps_given) if steps_given else -(-n // batch)
        return min(n, steps * batch), batch, steps
    batch = batch or _batch_of(kind, x)
    full = _cardinality(x) if kind == "tf.data" else len(x) if kind == "PyDataset" else None
    steps = int(steps_given) if steps_given else full
    return (steps * batch if steps is not None and batch else None), batch, steps


def _cardinality(ds: Any) -> int | None:
    """Batches in a ``tf.data`` pipeline; None where infinite or unknown."""
    try:
        n = int(ds.cardinality())
    except Exception:
        return None
    return n if n >= 0 else None


def describe_fit(args: dict[str, Any], keras: Any, line: int | None) -> Fit:
    """The first ``fit`` call's data: its kind, samples, batch size and steps, and its validation."""
    kind = kind_of(args.get("x"), keras)
    split = float(args.get("validation_split") or 0.0)
    val = args.get("validation_data")
    samples, batch, steps = training_shape(args, kind)
    notes = [] if kind == "arrays" or samples is None else ["samples per epoch counted as batches x the first "
                                                            "batch's size"]
    val_samples = 0
    if kind == "arrays" and split and val is None:
        n = _length(args.get("x")) or 0
        val_samples = n - _split_at(n, split)
    validation, val_steps = "none", None
    if val is not None:
        validation = "validation_data"
        vx = val[0] if isinstance(val, (tuple, list)) else val
        vkind = kind_of(vx, keras) if not isinstance(val, (tuple, list)) else "arrays"
        if vkind == "arrays":
            val_samples = _length(vx) or 0
            vb = int(args.get("validation_batch_size") or batch or 32)
            val_steps = -(-val_samples // vb)
        else:
            vb = _batch_of(vkind, vx) or 0
            val_steps = _cardinality(vx) if vkind == "tf.data" else len(vx) if vkind == "PyDataset" else None
            val_steps = int(args.get("validation_steps") or 0) or val_steps
            val_samples = (val_steps or 0) * vb
    elif split:
        validation = "validation_split"
        val_steps = -(-val_samples // int(args.get("validation_batch_size") or batch or 32))
    return Fit(args, kind, samples, batch, steps, validation, val_samples, val_steps, line, notes)


def applied(fit: Fit, config: Any, keras: Any) -> dict[str, Any]:
    """``fit``'s arguments with the run's settings applied: its epochs, its batch size (arrays), the step
    cap and the validation's (projected as for every workload). A setting the input cannot take raises:
    the parent refuses those before running, from the check's findings."""
    args = dict(fit.args)
    args["epochs"] = int(args.get("initial_epoch") or 0) + int(config.epochs)
    cap = config.steps_per_epoch
    if fit.kind == "arrays":
        batch = int(config.batch_size)
        if batch != (args.get("batch_size") or 32):
            args["batch_size"] = batch
        split = float(args.get("validation_split") or 0.0)
        if cap and split and args.get("validation_data") is None:  # split as Keras would, then cap the training part
            n = _length(args["x"]) or 0
            at = _split_at(n, split)
            args["validation_data"] = tuple(v for v in (_slice(args["x"], at, n), _slice(args.get("y"), at, n),
                                                        _slice(args.get("sample_weight"), at, n)) if v is not None)
            args["validation_split"] = 0.0
            for k in ("x", "y", "sample_weight"):
                args[k] = _slice(args.get(k), 0, at)
        if cap:
            for k in ("x", "y", "sample_weight"):
                args[k] = _slice(args.get(k), 0, int(cap) * batch)
            args["steps_per_epoch"] = None
    elif cap:
        if fit.kind != "tf.data":
            raise RuntimeError(f"--steps-per-epoch cannot cap a {fit.kind} input (refused before running)")
        if args.get("steps_per_epoch"):
            args["steps_per_epoch"] = min(int(args["steps_per_epoch"]), int(cap))
        else:
            args["x"] = args["x"].take(int(cap))  # each epoch: the pipeline's first cap batches, reshuffled as it says
    if cap and config.validation_steps and fit.validation_steps and config.validation_steps < fit.validation_steps:
        args["validation_steps"] = int(config.validation_steps)
    if config.validation == "none":
        args.update(validation_data=None, validation_split=0.0, validation_steps=None)
    return args


def network_error(exc: BaseException) -> str | None:
    """What to say where the script failed for want of a network (a download): the data is not here."""
    seen: BaseException | None = exc
    while seen is not None:
        text = f"{type(seen).__name__}: {seen}"
        url_missing = isinstance(seen, OSError) and ("http://" in text or "https://" in text)  # NumPy's DataSource
        if url_missing or any(word in text for word in _NETWORK):
            origin = next((w for w in str(seen).split() if w.startswith(("http://", "https://"))), None)
            where = f" ({origin.rstrip(':,')})" if origin else ""
            keras_cache = " (Keras' datasets: ~/.keras/datasets)" if origin and "tf-keras-datasets" in origin else ""
            return (f"the script downloads its data{where} and there is no network here: the data is not here. "
                    f"Put it where the script reads it{keras_cache}, then run again")
        seen = seen.__cause__ or seen.__context__
    return None


@contextlib.contextmanager
def fit_wrapped(keras: Any, on_fit: Callable[[Any, Callable[..., Any], dict[str, Any], int | None], Any],
                path: str) -> Iterator[None]:
    """``keras.Model.fit`` (and tf.keras's, where it is another class) replaced by one that hands its first call
    to ``on_fit(model, fit, arguments, line)``, for the time of the ``with``."""
    classes = [keras.Model]
    try:
        import tensorflow as tf

        tk = getattr(tf, "keras", None)
        if tk is not None and getattr(tk, "Model", None) is not None and tk.Model is not keras.Model:
            classes.append(tk.Model)
    except ImportError:
        pass
    originals = [(cls, cls.__dict__.get("fit"), cls.fit) for cls in classes]
    real = os.path.realpath(path)

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)

        def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            values = dict(bound.arguments)
            values.pop("self", None)
            extra = values.pop("kwargs", None)  # tf.keras 2's **kwargs
            if extra:
                values.update(extra)
            caller = next((f for f in inspect.stack()[1:] if os.path.realpath(f.filename) == real), None)
            return on_fit(self, lambda **kw: original(self, **kw), values, caller.lineno if caller else None)

        return fit

    try:
        for cls, _, original in originals:
            cls.fit = make(original)
        yield
    finally:
        for cls, own, _ in originals:
            if own is not None:
                cls.fit = own
            else:
                with contextlib.suppress(AttributeError):
                    del cls.fit


def run_path(path: str) -> None:
    """The script as ``python path`` runs it: ``__main__``, ``sys.argv`` its name, its folder first on the path."""
    folder = os.path.dirname(os.path.abspath(path))
    argv, sys_path = sys.argv[:], sys.path[:]
    sys.argv = [path]
    sys.path.insert(0, folder)
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv, sys.path[:] = argv, sys_path


def imported_beside(path: str) -> dict[str, str]:
    """The files in the script's folder (and below) that it imported, with their content's SHA-256."""
    folder = os.path.dirname(os.path.realpath(path)) + os.sep
    out: dict[str, str] = {}
    for module in list(sys.modules.values()):
        f = getattr(module, "__file__", None)
        if f and f.endswith(".py") and os.path.realpath(f).startswith(folder) and os.path.realpath(f) != \
                os.path.realpath(path):
            with contextlib.suppress(OSError):
                out[os.path.relpath(os.path.realpath(f), folder)] = file_sha256(f)
    return dict(sorted(out.items()))


def _failed(path: str, exc: BaseException, what: str) -> ModelFileError:
    net = network_error(exc)
    if net:
        return ModelFileError(net, line_in(path, exc))
    message = " ".join(f"{type(exc).__name__}: {exc}".split())
    return ModelFileError(f"{what} failed: {message}", line_in(path, exc))


@contextlib.contextmanager
def seed_kept(keras: Any) -> Iterator[list[str]]:
    """The run's seed wins over the script's own: while the script runs, ``keras.utils.set_random_seed``,
    ``tf.random.set_seed`` (and tf.keras's), ``numpy.random.seed`` and ``random.seed`` do nothing but
    record that they were called (where, with what), so that every seed cpustudy gives is its own training
    (a keras.io example's ``keras.utils.set_random_seed(1337)`` would make every "seed" the same one).
    Generators a script makes itself (``np.random.default_rng(1337)``) are its own and kept."""
    import random

    import numpy as np

    calls: list[str] = []
    targets: list[tuple[Any, str]] = [(keras.utils, "set_random_seed"), (np.random, "seed"), (random, "seed")]
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        targets.append((tf.random, "set_seed"))
        tfk = getattr(getattr(tf, "keras", None), "utils", None)
        if tfk is not None and tfk is not keras.utils:
            targets.append((tfk, "set_random_seed"))
    saved = []
    for owner, name in targets:
        original = getattr(owner, name, None)
        if original is None:
            continue
        label = f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"

        def ignored(*args: Any, _label: str = label, **kwargs: Any) -> None:
            caller = getattr(inspect.currentframe(), "f_back", None)  # the script's line that called it
            where = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}" if caller else "a line not known"
            value = args[0] if args else kwargs.get("seed")
            calls.append(f"{_label}({value!r}) at {where}")

        with contextlib.suppress(AttributeError, TypeError):
            setattr(owner, name, ignored)
            saved.append((owner, name, original))
    try:
        yield calls
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def run_until_fit(path: str, keras: Any, on_fit: Callable[..., Any]) -> Any:
    """Run the script with ``fit`` wrapped; ``on_fit``'s value once it has stopped the script (``Stop``).
    A script that fails is a ``ModelFileError`` naming its line; one that ends without ``fit``, too."""
    result: dict[str, Any] = {}

    def first(model: Any, fit: Callable[..., Any], args: dict[str, Any], line: int | None) -> Any:
        result["value"] = on_fit(model, fit, args, line)
        raise Stop

    with fit_wrapped(keras, first, path):
        try:
            run_path(path)
        except Stop:
            return result.get("value")
        except SystemExit as exc:
            if "value" in result:
                return result["value"]
            raise ModelFileError(f"the script exited (code {exc.code}) before calling model.fit()") from None
        except ModelFileError:
            raise
        except Exception as exc:  # the user's code: anything can fail there
            what = "model.fit()" if "value" in result else "running the script"
            raise _failed(path, exc, what) from exc
    raise ModelFileError("the script ran to its end without calling model.fit(): cpustudy measures its first fit")


# -- the check (parent, once per file content) ---------------------------------------------------------


def check(path: str) -> dict[str, Any]:
    """Run the script up to its first ``fit``, train one step there, and return what the run stores."""
    import keras

    from cpustudy.targets import accuracy_metric
    from cpustudy.worker.usermodel import count_flops

    def on_fit(model: Any, fit: Callable[..., Any], args: dict[str, Any], line: int | None) -> dict[str, Any]:
        d = describe_fit(args, keras, line)
        xb, yb = _one_batch(d, args)
        if d.kind == "generator" and xb is not None:  # its batch size, read only here
            d.batch_size = len(xb)
            d.samples = d.steps * d.batch_size if d.steps else None
            d.notes.append("samples per epoch counted as steps x the first batch's size")
        history = fit(**{**args, "epochs": 1, "initial_epoch": 0, "steps_per_epoch": 1, "verbose": 0,
                         "callbacks": None, "validation_split": 0.0, "validation_data": None,
                         **({"x": xb, "y": yb, "batch_size": len(xb)} if d.kind == "generator" else {})})
        logs = sorted(getattr(history, "history", {}) or {})
        info = _summary(model, d, logs)
        info["accuracy_metric"] = accuracy_metric(logs) if d.validation != "none" else None
        try:
            flops = count_flops(model, xb, yb, len(xb)) if xb is not None else {
                "flops_note": "not counted: no batch of the input to trace the step with"}
        except Exception as exc:  # multi-input models, custom train steps...: say why
            flops = {"flops_note": f"not counted: TensorFlow's cost analysis could not trace the step "
                                   f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"}
        info.update(flops)
        return info

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        info = run_until_fit(path, keras, on_fit)
    info["keras"] = getattr(keras, "__version__", None)
    info["imports"] = imported_beside(path)
    return dict(info)


def _one_batch(d: Fit, args: dict[str, Any]) -> tuple[Any, Any]:
    """One batch of the input as arrays (for tracing the step's FLOPs); the generator's first batch (a
    generator is read only here, in the check)."""
    import numpy as np

    x: Any = args.get("x")
    y: Any = args.get("y")
    try:
        if d.kind == "arrays":
            n = min(int(d.batch_size or 32), _length(x) or 0)
            return np.asarray(_first_array(_slice(x, 0, n))), np.asarray(_slice(y, 0, n)) if y is not None else None
        first = _first_batch(d.kind, x, read_generator=True)
        if first is None:
            return None, None
        return np.asarray(_first_array(first[0])), np.asarray(first[1])
    except Exception:
        return None, None


def _summary(model: Any, d: Fit, logs: list[str]) -> dict[str, Any]:
    """The model and the data as stored: parameters, layers, shapes, optimizer, loss, fit's data and callbacks."""
    def shapes(tensors: Any) -> list[list[int | None]]:
        return [list(t.shape) for t in (tensors or [])]

    callbacks = d.args.get("callbacks") or []
    loss = getattr(model, "loss", None)
    x = _first_array(d.args.get("x")) if d.kind == "arrays" else None
    inputs = shapes(getattr(model, "inputs", None))
    return {
        "script": True,
        "parameters": int(model.count_params()),
        "layers": len(model.layers),
        "layer_types": [type(layer).__name__ for layer in model.layers],
        "input_shapes": inputs,
        "output_shapes": shapes(getattr(model, "outputs", None)),
        "optimizer": type(model.optimizer).__name__,
        "loss": loss if isinstance(loss, str) else type(loss).__name__,
        "x_train": [list(getattr(x, "shape", [None, *(inputs[0][1:] if inputs else [])])),
                    str(getattr(x, "dtype", ""))],
        "samples": d.samples,
        "validation_samples": d.validation_samples,
        "metrics": logs,
        "fit": {"input": d.kind, "batch_size": d.batch_size, "epochs": int(d.args.get("epochs") or 1),
                "steps_per_epoch": d.steps, "validation": d.validation, "validation_steps": d.validation_steps,
                "callbacks": [type(c).__name__ for c in callbacks], "line": d.line, "notes": d.notes,
                "steps_given": d.args.get("steps_per_epoch") is not None},
    }


# -- the measured run (worker) -------------------------------------------------------------------------


def train_script(config: Any, keras: Any, emit: Callable[..., None],
                 make_timer: Callable[[int, int], Any]) -> None:
    """Run the config's script with its first ``fit`` measured: ``DATA`` and ``MODEL`` there, then each epoch
    through the epoch timer ``make_timer(steps, samples_per_epoch)`` gives."""
    from cpustudy.worker import protocol
    from cpustudy.worker.frameworks import xla_state

    path = str(config.model_file)
    if file_sha256(path) != config.model_hash:
        raise RuntimeError(f"{path} changed after the run was planned (its content hash differs): run it again")
    started = time.perf_counter()

    def on_fit(model: Any, fit: Callable[..., Any], args: dict[str, Any], line: int | None) -> None:
        d = describe_fit(args, keras, line)
        run_args = applied(d, config, keras)
        # The epoch as run: the same reckoning as the check's, on the arguments with the run's settings applied
        # (a batched input's batch size is not read again; a generator's is the one its check read).
        found, batch_or_none, steps_or_none = training_shape(run_args, d.kind, d.batch_size or int(config.batch_size))
        batch = int(batch_or_none or config.batch_size)
        steps = int(steps_or_none or config.steps_per_epoch or d.steps or 0)
        samples = int(found if found is not None else steps * batch)
        x = _first_array(run_args.get("x")) if d.kind == "arrays" else None
        emit(protocol.DATA, source=config.data, samples=samples, derived={},
             seconds=time.perf_counter() - started, from_cache=False, input=d.kind, fit_line=line,
             step_timing="between step starts", x_shape=list(getattr(x, "shape", []) or []),
             x_dtype=str(getattr(x, "dtype", "")), augment="none", augment_where="the script's own",
             validation=d.validation if config.validation != "none" else "none",
             validation_samples=d.validation_samples if config.validation != "none" else 0,
             validation_steps=run_args.get("validation_steps") or d.validation_steps,
             callbacks=[type(c).__name__ for c in (args.get("callbacks") or [])],
             seed_overridden=list(overridden))
        emit(protocol.MODEL, parameters=int(model.count_params()), seconds=None, xla=xla_state(model), params={},
             precision_policy=str(keras.mixed_precision.global_policy().name))
        callbacks = list(run_args.get("callbacks") or [])
        run_args["callbacks"] = [*callbacks, make_timer(steps, samples)]  # timed after the script's own hooks
        fit(**run_args)

    with seed_kept(keras) as overridden:
        run_until_fit(path, keras, on_fit)


def main(argv: list[str]) -> int:
    """``python -m cpustudy.worker.script FILE SHA256``: the check, as one ``CPUSTUDY-MODEL`` JSON line."""
    path, sha = argv[0], argv[1]
    return answer(path, sha, lambda: check(path))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
