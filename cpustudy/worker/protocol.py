"""What passes between the parent and a worker: a ``RunConfig`` in, events out.

The parent (``cpustudy.measure``) plans a ``RunConfig``, starts ``python -m cpustudy.worker
CONFIG_JSON EVENTS_FD`` under the build's interpreter, and reads one JSON object per line from the
pipe: ``{"type": <event name>, ...fields}``. Both sides use the names below; nothing else is shared.
Standard library only: the worker imports this before pinning its CPUs and importing TensorFlow.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Mapping, TypedDict

from cpustudy import precision
from cpustudy.identity import plain

# -- events, in the order a worker sends them ----------------------------------------------------
SOFTWARE = "software"  # versions, backend, oneDNN/XLA, ISA report, GPUs, float32 precision
DATA = "data"  # where the data came from, its shapes, how long preparing it took, augmentation
MODEL = "model"  # parameters, build time, whether XLA compiles it
GPU_MONITOR = "gpu_monitor"  # how the GPU's utilisation is sampled (NVML or nvidia-smi)
WARMUP = "warmup"  # untimed --warmup-steps
TRAIN_START = "train_start"  # wall clock of the first epoch's start (start-up ends here)
EPOCH = "epoch"  # one epoch: its times, loss, accuracy, validation, GPU utilisation
PEAK = "peak"  # the device's measured peak GFLOP/s and memory bandwidth
DONE = "done"
ERROR = "error"  # the worker failed: message

EVENTS = (SOFTWARE, DATA, MODEL, GPU_MONITOR, WARMUP, TRAIN_START, EPOCH, PEAK, DONE, ERROR)


def encode(kind: str, fields: Mapping[str, Any]) -> str:
    """One event as the line the worker writes."""
    return json.dumps({"type": kind, **fields}, default=str) + "\n"


#: An event as the parent reads it: its name and its fields (a parsed JSON object, read through the typed views
#: below by the code that takes that kind).
Event = tuple[str, dict[str, object]]


class EpochEvent(TypedDict, total=False):
    """An ``EPOCH`` event's fields (``worker.epochs.EpochTimer.epoch_event``), as the parent stores and tallies
    them; ``total=False``: older recorded streams and tests send fewer, and the tally adds ``stall_s``."""
    epoch: int
    elapsed_s: float
    steps: int
    samples: int
    samples_per_s: float | None
    loss: float | None
    accuracy: float | None
    warmup: bool
    cpu_s: float | None
    steps_s: float | None
    boundary_s: float | None
    validation_s: float | None
    validation_steps: int | None
    validation_steps_s: float | None
    idle_s: float | None
    wait_s: float | None
    val_loss: float | None
    val_accuracy: float | None
    metrics: dict[str, float]
    gpu_util: float | None
    target_value: float | None
    stall_s: float  # the idle stall the tally takes out of the epoch (``measure.tally.without_stall``)


class PeakEvent(TypedDict, total=False):
    """A ``PEAK`` event's fields (``worker.peak.measure_peak``): the rates, and what they were measured on."""
    gflops: float | None
    bandwidth_gbs: float | None
    matmul_n: int
    matmul_iterations: int
    bandwidth_bytes: int
    bandwidth_iterations: int
    backend: str
    device: str
    device_name: str
    precision: str
    seconds: float


class DoneEvent(TypedDict, total=False):
    """A ``DONE`` event's fields: the anchor's seconds and version (``worker.anchor``), the GPU's peak memory."""
    anchor_s: float
    anchor_version: int
    gpu_peak_bytes: int


class TrainStartEvent(TypedDict):
    """A ``TRAIN_START`` event's field: the wall clock of the first epoch's start."""
    wall: float


class ErrorEvent(TypedDict, total=False):
    """An ``ERROR`` event's field: why the worker failed."""
    message: str


def decode(line: bytes | str) -> Event | None:
    """An event line -> (name, fields); None for a line that is not an event."""
    try:
        event = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(event, dict):
        return None
    return str(event.pop("type", "")), event


@dataclass(frozen=True)
class RunConfig:
    """One measurement, fully resolved: what the worker trains and what the store records.

    ``cpustudy.measure.spec.plan`` makes one from what the user asked for (``RunSpec``); sweeps, the
    tuner and the overhead benchmark derive theirs with ``with_(...)``. Stored whole as a run's
    ``settings`` (``as_dict``); the worker reads it back with ``from_json``.
    """

    workload: str
    vcpus: int
    cpus: tuple[int, ...]
    cpu_list: str
    batch_size: int
    epochs: int
    full_steps_per_epoch: int
    samples_per_epoch: int
    flops_per_sample: int | None  # training FLOPs per sample; None: not counted (``flops_source`` says why)
    data: str  # real | synthetic, as resolved
    device: str = "cpu"
    build: str = "tf"
    build_kind: str = "pip"
    build_family: str = "tf"
    python: str | None = None  # the build's interpreter (None: the parent's)
    env: Mapping[str, str] = field(default_factory=dict)  # every variable set for the worker
    build_env: Mapping[str, str] = field(default_factory=dict)  # the build's own part of env
    oversubscribed: bool = False
    intra_threads: int | None = None
    inter_threads: int | None = None
    steps_per_epoch: int | None = None  # a cap below a full epoch (projected), else None
    validation: str = "study"
    validation_steps: int = 0
    full_validation_steps: int = 0
    data_requested: str = "auto"
    seed: int = 0
    repeat: int = 0
    jit_compile: bool | None = None
    warmup_steps: int = 0
    input_pipeline: str = "numpy"
    input_default: str = "tfdata"  # what ``--input auto`` gives this build (runs stored before it: numpy)
    measure_peak: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)  # workload switches (augment)
    params: Mapping[str, Any] = field(default_factory=dict)  # workload hyper-parameters
    precision_policy: str = precision.DEFAULT  # Keras dtype policy: one of precision.POLICIES
    target_accuracy: float | None = None  # stop at the first epoch whose validation accuracy reaches it
    target: str | None = None  # or at the first that reaches ``--target`` (``val_loss<=0.3``: cpustudy.targets)
    # A race's censoring (``compare`` over settings): stop after this many epochs short of the target, the
    # seed no longer able to make its setting the cheapest. Not part of the identity: the run is that seed's.
    give_up_after: int | None = None
    workload_version: int = 1  # the workload's version (its model or data changed: a new configuration)
    flops_source: str = "analytic"  # analytic | tensorflow cost analysis | not counted: why
    model_file: str | None = None  # a user's model file (absolute path), imported in the worker after pinning
    model_hash: str | None = None  # its content's SHA-256: an edited file is another configuration
    model_summary: Mapping[str, Any] | None = None  # parameters, layers, input shapes... (its check's findings)
    script: bool = False  # model_file is a training script run as it is (its first fit measured)
    # Set after planning, by whoever runs it:
    study: str = "cpustudy"  # cpustudy | tune | bench-overhead
    cell_key: str | None = None  # a sweep cell's identity, for resuming
    tuning_id: int | None = None  # the tuning a --tuned cell applies
    tune: Mapping[str, Any] | None = None  # a tuner trial's tag and setting
    machine_state: Mapping[str, Any] | None = None  # load, busy processes... just before the run
    measure_peak_now: bool = False  # measure the peak in this run (none cached for its key)
    cloud: Mapping[str, Any] | None = None  # cloud, region, zone, instance type, spot, recoveries (a cloud job)

    def with_(self, **changes: Any) -> "RunConfig":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types (lists, dicts), as stored in a run's ``settings``."""
        return json.loads(self.to_json())

    def to_json(self) -> str:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return json.dumps(values, sort_keys=True, default=plain)

    @classmethod
    def from_json(cls, text: str) -> "RunConfig":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "RunConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - names
        if unknown:
            raise ValueError(f"unknown run configuration field(s): {', '.join(sorted(unknown))}")
        kw = dict(values)
        kw["cpus"] = tuple(kw.get("cpus") or ())
        return cls(**kw)

    @property
    def steps_run(self) -> int:
        """Training steps each epoch runs (the cap, or a full epoch)."""
        return self.steps_per_epoch or self.full_steps_per_epoch
