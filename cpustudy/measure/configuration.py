"""A configuration: what makes two measurements comparable, as one frozen type.

``Configuration`` is the identity of a measurement (workload and its version, device, the build's
recipe, vCPUs, batch size, precision policy, threads, XLA, input pipeline, workload switches such as
augmentation, the worker's environment, the tuning applied, validation, data, epochs and their cap,
seed, repeat, warm-up steps, target accuracy or target, a model file's content hash) and the platform it ran on (the priced instance as the
price catalog names it, ``gcp:n2-highcpu-8``, and the CPU model). Standard library only.

* ``measure`` makes one from a planned ``RunConfig`` (:meth:`Configuration.of`); a tuning is
  applied to the request with ``dataclasses.replace`` before planning, never by rebuilding it by hand.
* The sweep's cell key is :meth:`Configuration.key`: a hash of the identity and the machine's
  fingerprint. Fields added after the first databases (precision, target, workload version) join the
  hash only when they differ from what every earlier run had, so earlier databases keep their keys.
* ``store`` persists it as columns mapped by name (:meth:`Configuration.columns`); ``analysis`` groups
  on the columns; only ``report`` turns a configuration into words.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from cpustudy import precision
from cpustudy.worker.protocol import plain

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
