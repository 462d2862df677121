"""One identity for what a stored run measured, and a named view of it for each purpose.

A stored run (a row of ``Store.runs``, or a ``Configuration``'s :meth:`columns`) is read field by field
through :data:`FIELDS`, each normalized once (a missing precision is float32, default threads are
``None``, a missing input pipeline is the one the run took by default, mappings are canonical JSON). A
*view* is a named subset of those fields; two runs are the same for a purpose when their :func:`key` for
its view is equal. What decides which runs are pooled goes through these views (compare's seeds and speed
samples, the noise estimate, the projection check, the peak table, the backtest's held-out answers):

* ``run`` (every field): what a run measured, replicates aside (seed, repeat and the target a run
  stopped at). The finest grouping: every other grouping is a union of its groups.
* ``convergence``: what sets how many epochs a seed needs to reach a target (the model and its
  version or file content, workload switches and hyper-parameters, data, batch size, precision,
  validation). ``compare`` pools the seeds of one such group; ``recommend`` answers for one.
* ``setting``: what sets one epoch's time and what it bills, wherever it ran (the convergence's model
  and batch size, precision, validation; threads, XLA, the input pipeline, the tuning applied); with a
  candidate's device, build, vCPUs and place it is a speed sample's identity (``compare``).
* ``speed``: ``setting`` plus the device, build, vCPUs, place (machine and instance) and the worker's
  variables: one epoch's time on one platform. A capped run's projection is held against full epochs
  of the same ``speed`` group (``analysis.projection``).
* ``noise``: ``speed`` plus the epochs a run trained (a run's total is its own epochs', never pooled).
* ``peak``: a measured matmul peak's identity (device, build, vCPUs, precision, machine).
* ``place``: where a run measured, as a stored candidate of ``compare`` and a statement name it (device, vCPUs,
  machine, and the build on a CPU: a GPU's builds are one place; instances of one machine fingerprint are one,
  as ``compare`` pools them). A statement is joined to later trainings by it, never by the place's name in words.

A report's frame of runs (``analysis.runs.load_runs``) renames ``workload`` and ``build`` to their display
names and keeps the stored ones in ``workload_base`` and ``recipe``: the fields read those where present.

The report's summary names a configuration by its derived columns (``analysis.runs.CONFIG_KEYS``);
those are functions of the ``run`` view, so each summary row is a union of ``run`` groups (tested).
Standard library and ``cpustudy.precision`` only (the worker imports it too).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Mapping

from cpustudy import precision


def _json(value: Any) -> str:
    """A mapping as canonical JSON text (stored text or a mapping alike; missing: ``{}``)."""
    if value is None or value == "":
        return "{}"
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(dict(value), sort_keys=True, default=str)


def _settings(run: Mapping[str, Any]) -> dict[str, Any]:
    raw = run.get("settings")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


def _get(run: Mapping[str, Any], name: str) -> Any:
    """The run's value of ``name``; None where it is missing (None, NaN or pandas' NA)."""
    value = run.get(name)
    if value is None:
        return None
    try:
        return None if value != value else value  # NaN is not equal to itself
    except (TypeError, ValueError):  # pandas' NA has no truth value
        return None


def _int(value: Any, default: int | None = None) -> int | None:
    if value is None:
        return default
    try:
        if value != value:
            return default
    except (TypeError, ValueError):
        return default
    return int(value)


def threads(run: Mapping[str, Any]) -> str | None:
    """The run's thread pools, ``"intra/inter"``; None at the default (one per vCPU, or unset)."""
    intra, inter, vcpus = _int(_get(run, "intra_threads")), _int(_get(run, "inter_threads")), _int(_get(run, "vcpus"))
    return None if (intra, inter) in ((None, None), (vcpus, vcpus)) else f"{intra}/{inter}"


def input_pipeline(run: Mapping[str, Any]) -> str:
    """The input pipeline the run fed its model with; a run that stored none took its build's default then
    (``input_default`` in its settings: ``tfdata`` on TensorFlow since that became the default, else ``numpy``)."""
    stored = _get(run, "input_pipeline")
    if stored:
        return str(stored)
    return str(_settings(run).get("input_default") or "numpy")


#: Each identity field, read from a stored run (or a configuration's columns) and normalized.
FIELDS: dict[str, Callable[[Mapping[str, Any]], Hashable]] = {
    "study": lambda r: _get(r, "study") or "cpustudy",
    "workload": lambda r: str(_get(r, "workload_base") or _get(r, "workload")),
    "workload_version": lambda r: _int(_get(r, "workload_version"), 1),
    "model_hash": lambda r: _get(r, "model_hash") or None,
    "options": lambda r: _json(_get(r, "options")),
    "params": lambda r: _json(_get(r, "params")),
    "data": lambda r: _get(r, "data") or None,
    "batch_size": lambda r: _int(_get(r, "batch_size")),
    "precision": lambda r: _get(r, "precision_policy") or precision.DEFAULT,
    "validation": lambda r: _get(r, "validation") or "none",
    "device": lambda r: _get(r, "device") or "cpu",
    "build": lambda r: str(_get(r, "recipe") or _get(r, "build")),
    "vcpus": lambda r: _int(_get(r, "vcpus")),
    "threads": threads,
    "jit_compile": lambda r: bool(_get(r, "jit_compile")) or None,
    "input_pipeline": input_pipeline,
    "env": lambda r: _json(_get(r, "env")),
    "tuning_id": lambda r: _int(_get(r, "tuning_id")),
    "machine": lambda r: _get(r, "machine") or None,
    "instance": lambda r: _get(r, "instance") or None,
    "epochs": lambda r: _int(_get(r, "epochs")),
    "steps_per_epoch": lambda r: _int(_get(r, "steps_per_epoch")),
    "cpu_build": lambda r: str(_get(r, "recipe") or _get(r, "build")) if (_get(r, "device") or "cpu") == "cpu" else None,
}

_CONVERGENCE = ("study", "workload", "workload_version", "model_hash", "options", "params", "data", "batch_size",
                "precision", "validation")
_SETTING = ("study", "workload", "workload_version", "model_hash", "options", "params", "batch_size", "precision",
            "validation", "threads", "jit_compile", "input_pipeline", "tuning_id")
_PLACE = ("device", "build", "vcpus", "machine", "instance")

#: The named views: which fields make two runs the same for each purpose (see the module's docstring).
VIEWS: dict[str, tuple[str, ...]] = {
    "run": tuple(FIELDS),
    "convergence": _CONVERGENCE,
    "setting": _SETTING,
    "speed": _SETTING + _PLACE + ("env",),
    "noise": _SETTING + _PLACE + ("env", "epochs"),
    "peak": ("device", "build", "vcpus", "precision", "machine"),
    "place": ("device", "cpu_build", "vcpus", "machine"),
}


def values(run: Mapping[str, Any], view: str = "run") -> dict[str, Hashable]:
    """The view's fields of ``run``, by name, normalized."""
    try:
        names = VIEWS[view]
    except KeyError:
        raise ValueError(f"no identity view {view!r}; the views are {', '.join(VIEWS)}") from None
    return {name: FIELDS[name](run) for name in names}


def key(run: Mapping[str, Any], view: str = "run") -> tuple[Hashable, ...]:
    """The run's identity in ``view``, as a hashable tuple (equal keys: the same for that purpose)."""
    return tuple(values(run, view).values())


def same(a: Mapping[str, Any], b: Mapping[str, Any], view: str) -> bool:
    """Whether two runs (or a run and a configuration's columns) are the same in ``view``."""
    return key(a, view) == key(b, view)


def differences(a: Mapping[str, Any], b: Mapping[str, Any], view: str) -> dict[str, tuple[Hashable, Hashable]]:
    """The fields of ``view`` in which two runs differ: ``{field: (a's, b's)}``."""
    va, vb = values(a, view), values(b, view)
    return {k: (va[k], vb[k]) for k in va if va[k] != vb[k]}


def group(items: Iterable[Any], view: str = "run",
          on: Callable[[Any], Mapping[str, Any]] | None = None) -> dict[tuple[Hashable, ...], list[Any]]:
    """Items grouped by their run's key in ``view``, in first-seen order (``on``: an item's run, where the
    items are not the runs themselves)."""
    out: dict[tuple[Hashable, ...], list[Any]] = {}
    for item in items:
        out.setdefault(key(on(item) if on else item, view), []).append(item)
    return out


# --- The configuration ------------------------------------------------------------------------------------
# ``Configuration`` is the identity of a measurement as ``measure`` plans it (workload and its version,
# device, the build's recipe, vCPUs, batch size, precision policy, threads, XLA, input pipeline, workload
# switches such as augmentation, the worker's environment, the tuning applied, validation, data, epochs and
# their cap, seed, repeat, warm-up steps, target, a model file's content hash) and the platform it ran on
# (the priced instance as the price catalog names it, ``gcp:n2-highcpu-8``, and the CPU model).
#
# * ``measure`` makes one from a planned ``RunConfig`` (:meth:`Configuration.of`); a tuning is applied to
#   the request with ``dataclasses.replace`` before planning, never by rebuilding it by hand.
# * The sweep's cell key is :meth:`Configuration.key`: a hash of :meth:`Configuration.identity` and the
#   machine's fingerprint. Fields added after the first databases (precision, target, workload version)
#   join the hash only when they differ from what every earlier run had, so earlier databases keep their keys.
# * ``store`` persists it as columns mapped by name (:meth:`Configuration.columns`), which the views above
#   read like a stored run: ``same(run, config.columns(), "setting")``.


def plain(value: Any) -> Any:
    """A value JSON can write: mappings as dicts, sequences and sets as lists, anything else as text."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    return str(value)


#: The identity fields that made the cell key of the first databases, in their order.
FIRST_KEY_FIELDS = (
    "workload", "device", "build", "vcpus", "repeat", "epochs", "steps_per_epoch", "batch_size",
    "data", "seed", "intra_threads", "inter_threads", "jit_compile", "options", "params",
    "input_pipeline", "env", "warmup_steps", "tuning_id", "validation",
)
#: Identity fields added later, with the value every run had before them: they join the key only when a
#: configuration differs from it.
LATER_KEY_FIELDS: Mapping[str, Any] = {"precision_policy": precision.DEFAULT, "target_accuracy": None,
                                       "workload_version": 1, "model_hash": None, "target": None}
#: Fields stored as JSON text in their column.
JSON_FIELDS = ("options", "params", "env")


@dataclass(frozen=True)
class Configuration:
    """The identity of one measurement and the platform it ran on."""

    workload: str
    vcpus: int
    batch_size: int
    epochs: int
    data: str  # real | synthetic | learnable, as resolved
    workload_version: int = 1  # a workload's model or data generator changed: never pooled with older runs
    model_hash: str | None = None  # a user's model file: its content's SHA-256 (edited: never pooled)
    device: str = "cpu"
    build: str = "tf"  # the recipe's name (``builds/``)
    precision_policy: str = precision.DEFAULT
    intra_threads: int | None = None
    inter_threads: int | None = None
    jit_compile: bool | None = None
    input_pipeline: str = "numpy"
    options: Mapping[str, Any] = field(default_factory=dict)  # workload switches (augment)
    params: Mapping[str, Any] = field(default_factory=dict)  # workload hyper-parameters
    env: Mapping[str, str] = field(default_factory=dict)  # every variable set for the worker
    tuning_id: int | None = None  # the stored tuning applied (``sweep --tuned``)
    validation: str = "study"
    steps_per_epoch: int | None = None  # a cap below a full epoch (projected), else None
    seed: int = 0
    repeat: int = 0
    warmup_steps: int = 0
    target_accuracy: float | None = None
    target: str | None = None  # a target on another metric, as its text (``val_loss<=0.3``)
    # The platform:
    instance: str | None = None  # the priced instance, ``CLOUD:INSTANCE_TYPE`` (cloud runs), else None
    cpu_model: str | None = None

    @classmethod
    def from_fields(cls, values: Mapping[str, Any]) -> "Configuration":
        """From any record that names its fields (a ``RunConfig``'s dict, a stored row); missing
        optional fields take their defaults, unknown ones are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names and v is not None or k in _REQUIRED})

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Configuration":
        """A stored run's configuration: its JSON columns parsed, and what it left unstored read as the
        identity's fields read it (no validation: ``none``; no input pipeline: the one it took by default)."""
        values = {k: v for k, v in row.items() if _get(row, k) is not None}
        for k in JSON_FIELDS:
            v = values.get(k)
            values[k] = json.loads(v) if isinstance(v, str) and v else dict(v or {})
        values["validation"] = FIELDS["validation"](row)
        values["input_pipeline"] = input_pipeline(row)
        values["precision_policy"] = FIELDS["precision"](row)
        return cls.from_fields({**{k: row.get(k) for k in _REQUIRED}, **values})

    @classmethod
    def of(cls, config: Any, cpu_model: str | None = None) -> "Configuration":
        """A planned ``RunConfig``'s configuration; a cloud job's runs name the instance they ran on."""
        values = config.as_dict()
        where = values.get("cloud") or {}
        instance = f"{where['cloud']}:{where['instance_type']}" if where.get("instance_type") else None
        return cls.from_fields({**values, "instance": instance, "cpu_model": cpu_model})

    def identity(self) -> dict[str, Any]:
        """The fields that make it a different measurement, as plain JSON values."""
        values = _plain_dict(self)
        out = {k: values[k] for k in FIRST_KEY_FIELDS}
        for k, default in LATER_KEY_FIELDS.items():
            if values[k] != default:
                out[k] = values[k]
        return out

    def key(self, machine_fingerprint: str) -> str:
        """The sweep cell's key: a hash of :meth:`identity` and the machine (20 hex digits)."""
        key = {**self.identity(), "machine": machine_fingerprint}
        return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]

    def columns(self) -> dict[str, Any]:
        """Every field as the value its database column holds (mappings as JSON text, booleans as 0/1)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in JSON_FIELDS:
                value = json.dumps(dict(value), sort_keys=True, default=str)
            elif isinstance(value, bool):
                value = int(value)
            out[f.name] = value
        return out


_REQUIRED = tuple(f.name for f in dataclasses.fields(Configuration)
                  if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)


def _plain_dict(c: Configuration) -> dict[str, Any]:
    values = {f.name: getattr(c, f.name) for f in dataclasses.fields(c)}
    return json.loads(json.dumps(values, sort_keys=True, default=plain))
