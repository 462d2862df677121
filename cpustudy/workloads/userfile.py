"""A user's model file or training script as a workload: ``cpustudy run ./my_model.py``, ``cpustudy run train.py``.

A file that defines neither ``build_model`` nor ``load_data`` and calls ``.fit(...)`` is a training script,
run as it is (:mod:`cpustudy.worker.script`: its first ``fit`` is measured; its batch size and epochs are
that call's). ``NAME`` and ``DATA`` below apply to scripts too.

The contract: the file defines ``build_model()``, returning a compiled Keras model, and ``load_data()``,
returning ``((x_train, y_train), (x_test, y_test))`` as NumPy arrays; optionally ``NAME`` (default: the
file's name), ``BATCH_SIZE`` (default 32, Keras' own), ``EPOCHS`` (default 3) and ``DATA`` (what
``load_data`` returns, recorded with every run: ``real`` by default, ``synthetic`` (random labels: no
target accuracy) or ``learnable`` (generated, labels from a rule: reported apart, as cpustudy's own)).

Checked in two steps before anything is stored: here, without TensorFlow (the file exists, parses, defines
both functions, its constants are literals of the right kind), then by running the file once in a
subprocess under TensorFlow (``cpustudy.worker.usermodel``: the data's shapes, a compiled model, its
summary and FLOPs), cached per file content. Each problem is one ``UserError`` naming the file and line.
Standard library only: the parent never imports TensorFlow.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection

from cpustudy.cache import read_json, write_json
from cpustudy.errors import UserError, process_ended

DEFAULT_BATCH_SIZE = 32
DEFAULT_EPOCHS = 3
DATA_KINDS = ("real", "synthetic", "learnable")
REQUIRED = ("build_model", "load_data")


def looks_like_file(text: str) -> bool:
    """A workload given as a path (``./my_model.py``, ``models/a.py``) rather than a name."""
    return text.endswith(".py") or os.sep in text


@dataclass(frozen=True)
class Source:
    """What the file says without running it."""

    path: str  # absolute
    sha256: str
    name: str
    batch_size: int
    epochs: int
    data: str
    kind: str = "model"  # model: build_model() and load_data(); script: a training script run as it is


def read_source(text: str, reserved: Collection[str] = ()) -> Source:
    """The file at ``text``, checked without running it (one ``UserError`` for each problem); ``reserved``:
    names it may not take (cpustudy's own workloads)."""
    path = Path(text).expanduser()
    if not path.is_file():
        raise UserError(f"{text}: no such model file (give the path of a .py file: a training script that calls "
                        "fit, or a model file defining build_model() and load_data())")
    if path.suffix != ".py":
        raise UserError(f"{text}: a model file is a Python file ending in .py")
    raw = path.read_bytes()
    try:
        tree = ast.parse(raw, filename=str(path))
    except SyntaxError as exc:
        raise UserError(f"{text}:{exc.lineno or '?'}: syntax error: {exc.msg}") from None
    except ValueError as exc:  # null bytes
        raise UserError(f"{text}: not Python source: {exc}") from None
    defined, constants = _top_level(tree)
    missing = [f"{fn}()" for fn in REQUIRED if fn not in defined]
    kind = "script" if len(missing) == len(REQUIRED) else "model"
    if kind == "script" and not any(isinstance(n, ast.Attribute) and n.attr == "fit" for n in ast.walk(tree)):
        raise UserError(f"{text}: neither a training script (it calls no .fit(...)) nor a model file (it defines no "
                        "build_model() and load_data())")
    if missing and kind == "model":
        raise UserError(f"{text}: defines no {' and no '.join(missing)} (a model file defines build_model(), "
                        "returning a compiled Keras model, and load_data(), returning ((x_train, y_train), "
                        "(x_test, y_test)))")
    name = _constant(text, constants, "NAME", str, path.stem)
    if not name.replace("_", "").replace("-", "").isalnum():
        raise UserError(f"{text}:{constants['NAME'][1]}: NAME {name!r}: use letters, digits, _ and - only")
    if name in reserved:
        raise UserError(f"{text}: its name {name!r} is one of cpustudy's own workloads: set NAME = \"my_{name}\" in "
                        "the file")
    batch = _constant(text, constants, "BATCH_SIZE", int, DEFAULT_BATCH_SIZE)
    epochs = _constant(text, constants, "EPOCHS", int, DEFAULT_EPOCHS)
    for key, value in (("BATCH_SIZE", batch), ("EPOCHS", epochs)):
        if value <= 0:
            raise UserError(f"{text}:{constants[key][1]}: {key} must be a positive whole number, got {value}")
    data = _constant(text, constants, "DATA", str, "real")
    if data not in DATA_KINDS:
        raise UserError(f"{text}:{constants['DATA'][1]}: DATA {data!r}: say \"real\", \"synthetic\" (random labels) "
                        "or \"learnable\" (generated, labels from a rule)")
    return Source(str(path.resolve()), hashlib.sha256(raw).hexdigest(), name, batch, epochs, data, kind)


def _top_level(tree: ast.Module) -> tuple[set[str], dict[str, tuple[ast.expr, int]]]:
    """Names the module defines at its top level (functions, classes, assignments, imports), and its
    simple assignments ``NAME = value`` with their lines."""
    defined: set[str] = set()
    constants: dict[str, tuple[ast.expr, int]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    defined.add(t.id)
                    if node.value is not None:
                        constants[t.id] = (node.value, node.lineno)
    return defined, constants


def _constant(text: str, constants: dict[str, tuple[ast.expr, int]], key: str, kind: type, default: Any) -> Any:
    if key not in constants:
        return default
    node, line = constants[key]
    try:
        value = ast.literal_eval(node)
    except ValueError:
        value = None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise UserError(f"{text}:{line}: {key} must be a literal {kind.__name__} (e.g. {key} = "
                        f"{json.dumps(default)})")
    return value


def companions(text: str) -> list[str]:
    """The files beside a script (paths relative to its folder) that travel with it to a VM: those it imported
    from its folder (its check records them) and those its string literals name (``"data/train.csv"``)."""
    src = read_source(text)
    if src.kind != "script":
        return []
    folder = Path(src.path).parent
    named = {n.value for n in ast.walk(ast.parse(Path(src.path).read_bytes())) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and 0 < len(n.value) < 300 and "\n" not in n.value}
    out = {rel for rel in named if not os.path.isabs(rel) and ".." not in Path(rel).parts
           and (folder / rel).is_file() and (folder / rel).resolve() != Path(src.path)}
    out.update((load(text).model.summary.get("imports") or {}).keys())
    return sorted(out)


_LOADED: dict[tuple[str, str], Any] = {}


def load(text: str, reserved: Collection[str] = ()) -> Any:
    """The model file or script at ``text`` as a ``Workload`` (checked, summarised; once per process and path)."""
    from cpustudy.workloads.base import ZERO, Flops, ModelFile, Workload

    src = read_source(text, reserved)
    key = (src.path, src.sha256)
    if key in _LOADED:
        return _LOADED[key]
    info = probe(text, src)
    batch, epochs = src.batch_size, src.epochs
    if src.kind == "script":
        fit = info.get("fit") or {}
        if not info.get("samples") or not fit.get("batch_size"):
            raise UserError(f"{text}:{fit.get('line') or '?'}: cpustudy cannot tell how many samples an epoch of "
                            f"this fit has (a {fit.get('input')} input): give fit steps_per_epoch=..., or feed it "
                            "arrays, a tf.data pipeline or a PyDataset")
        batch, epochs = int(fit["batch_size"]), int(fit.get("epochs") or 1)
    train, forward = info.get("flops_train"), info.get("flops_forward")
    counted = train is not None and forward is not None
    flops = Flops(int(forward or 0), int(train or 0) - int(forward or 0)) if counted else ZERO
    model = ModelFile(path=src.path, sha256=src.sha256, summary=info, data=src.data,
                      flops_note="" if counted else str(info.get("flops_note") or "not counted"), kind=src.kind)

    def unavailable(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a model file's model and data are made in a worker, never in the parent")

    w = Workload(
        name=src.name, title=f"{'script' if src.kind == 'script' else 'model file'} {Path(src.path).name}",
        dataset=src.name, batch_size=batch, epochs=epochs, samples_per_epoch=int(info["samples"]), optimizer=str(info.get("optimizer", "")),
        loss=str(info.get("loss", "")), params={}, _build=unavailable, _flops=lambda p: flops,
        _synthetic=unavailable, _real=unavailable, real_files=(), validation_samples=int(info["validation_samples"]),
        input_desc=" x ".join(str(d) for d in (info.get("x_train") or [[None]])[0][1:]), model=model)
    _LOADED[key] = w
    return w


def probe_path(src: Source) -> Path:
    """Where a file's check is cached: per content, batch size and kind, this cpustudy (version, commit, method)
    and Python, the interpreter and the installed TensorFlow, Keras and their kin (an upgrade checks again)."""
    from cpustudy import provenance
    from cpustudy.cache import cache_dir

    key = json.dumps([provenance.code_key(), provenance.framework_versions(), sys.executable, src.sha256,
                      src.batch_size, src.kind])
    return cache_dir() / "models" / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".json")


def probe(text: str, src: Source) -> dict[str, Any]:
    """The file's check under TensorFlow in a subprocess (``cpustudy.worker.usermodel``), cached per
    content: its summary and FLOPs, or a ``UserError`` naming the problem (and the line)."""
    cached = probe_path(src)
    known = read_json(cached)
    if known is not None:
        return known
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"}
    command = (["cpustudy.worker.script", src.path, src.sha256] if src.kind == "script" else
               ["cpustudy.worker.usermodel", src.path, src.sha256, str(src.batch_size)])
    proc = subprocess.run([sys.executable, "-m", *command], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("CPUSTUDY-MODEL ")]
    if not lines:
        raise UserError(f"{text}: checking it under TensorFlow failed: {process_ended(proc.returncode, proc.stderr)}")
    info = json.loads(lines[-1].split(" ", 1)[1])
    if "error" in info:
        where = f"{text}:{info['line']}" if info.get("line") else text
        raise UserError(f"{where}: {info['error']}")
    write_json(cached, info)  # a read-only cache only costs time
    return dict(info)
