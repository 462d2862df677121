"""The rows :class:`~cpustudy.store.Store` reads, as typed records (one ``TypedDict`` per query).

Each key is a column of the table (``schema``), typed as SQLite gives it back: ``int`` for INTEGER (booleans
are 0/1), ``float`` for REAL, ``str`` for TEXT, ``| None`` where the column may be NULL. JSON columns are
text here unless the query parses them (the statements' and the tunings' own). At run time each is a
plain ``dict``; ``total=False`` because code and tests also build partial ones (a run of a few fields).
"""

from __future__ import annotations

from typing import Any, Mapping, TypedDict, cast

#: A value parsed from a JSON column or document (``settings``, ``params``, ``info``, a statement's
#: ``rules``): whatever ``json.loads`` gives, read by the code that knows its shape.
JSON = Any


class MachineRow(TypedDict, total=False):
    """A ``machines`` row (``Store.machines()``)."""
    id: int
    fingerprint: str
    hostname: str | None
    cpu_model: str | None
    cpu_vendor: str | None
    arch: str | None
    flags: str | None
    isa: str | None
    physical_cores: int | None
    logical_cpus: int | None
    threads_per_core: int | None
    sockets: int | None
    numa_nodes: int | None
    memory_bytes: int | None
    os: str | None
    info: str | None
    created_at: str


class RunRow(TypedDict, total=False):
    """A ``runs`` row joined with its machine's columns (``Store.runs()``): the machine's fingerprint as
    ``machine``, its flags as ``cpu_flags``, its info (JSON text) as ``machine_info``; all None where the run
    has no machine row."""
    id: int
    uuid: str
    machine_id: int | None
    study: str
    status: str
    workload: str
    device: str
    build: str
    vcpus: int | None
    cpu_list: str | None
    oversubscribed: int
    intra_threads: int | None
    inter_threads: int | None
    batch_size: int | None
    epochs: int | None
    steps_per_epoch: int | None
    full_steps_per_epoch: int | None
    data: str | None
    seed: int | None
    repeat: int
    cell_key: str | None
    settings: str | None
    software: str | None
    python_version: str | None
    tf_version: str | None
    keras_version: str | None
    keras_backend: str | None
    onednn: int | None
    xla: int | None
    tf_missing_isa: str | None
    flops_per_sample: int | None
    epoch_time_s: float | None
    measured_epoch_time_s: float | None
    step_time_s: float | None
    samples_per_s: float | None
    startup_s: float | None
    projected: int
    timed_epochs: int | None
    exit_code: int | None
    error: str | None
    created_at: str
    finished_at: str | None
    epoch_time_iqr_s: float | None
    epoch_time_cv: float | None
    unstable: int | None
    warmup_steps: int | None
    input_pipeline: str | None
    peak_gflops: float | None
    mem_bandwidth_gbs: float | None
    machine_state: str | None
    epoch_boundary_s: float | None
    cpu_utilization: float | None
    validation: str | None
    validation_time_s: float | None
    val_loss: float | None
    val_accuracy: float | None
    gpu_utilization: float | None
    peak_device: str | None
    peak_precision: str | None
    precision: str | None
    augment: str | None
    precision_policy: str | None
    target_accuracy: float | None
    target_reached: int | None
    epochs_to_target: int | None
    time_to_target_s: float | None
    workload_version: int | None
    jit_compile: int | None
    options: str | None
    params: str | None
    env: str | None
    tuning_id: int | None
    instance: str | None
    model_file: str | None
    model_hash: str | None
    model_summary: str | None
    flops_source: str | None
    stall_s: float | None
    stall_max_s: float | None
    isa_peak_gflops: float | None
    isa_peak_basis: str | None
    wait_share: float | None
    target: str | None
    output_tail: str | None
    cpustudy_version: str | None
    cpustudy_commit: str | None
    method_version: int | None
    peak_rss_bytes: int | None
    gpu_peak_bytes: int | None
    cpu_model: str | None
    hostname: str | None
    machine: str | None
    logical_cpus: int | None
    physical_cores: int | None
    threads_per_core: int | None
    cpu_flags: str | None
    cpu_vendor: str | None
    arch: str | None
    machine_info: str | None


class EpochRow(TypedDict, total=False):
    """An ``epochs`` row with its run's workload, build, vCPUs, device and status (``Store.epochs()``)."""
    run_id: int
    epoch: int
    elapsed_s: float
    steps: int | None
    samples_per_s: float | None
    loss: float | None
    accuracy: float | None
    warmup: int
    cpu_s: float | None
    steps_s: float | None
    boundary_s: float | None
    validation_s: float | None
    validation_steps: int | None
    validation_steps_s: float | None
    val_loss: float | None
    val_accuracy: float | None
    gpu_util: float | None
    idle_s: float | None
    wait_s: float | None
    metrics: str | None
    target_value: float | None
    workload: str
    build: str
    vcpus: int | None
    device: str
    status: str


class PeakRow(TypedDict, total=False):
    """A ``peaks`` row (``Store.peak()``)."""
    machine_id: int
    config_key: str
    peak_gflops: float | None
    mem_bandwidth_gbs: float | None
    details: str | None
    measured_at: str


class TuningRow(TypedDict, total=False):
    """A ``tunings`` row, its ``setting`` read back from JSON (``Store.tuning()``)."""
    id: int
    machine_id: int | None
    workload: str
    build: str
    vcpus: int
    setting: dict[str, JSON]
    default_time_s: float | None
    best_time_s: float | None
    gain: float | None
    gain_low: float | None
    gain_high: float | None
    trials: int | None
    created_at: str


class CheckRow(TypedDict, total=False):
    """A ``checks`` row with the settings (JSON text) of the run it trained (``Store.checks()``)."""
    id: int
    run_id: int
    machine_id: int | None
    candidate: str
    level: float
    low_s: float | None
    high_s: float | None
    billed_s: float | None
    inside: int
    stated_session: str | None
    data_sessions: str | None
    later_session: int
    stated_at: str
    kind: str
    median_s: float | None
    factor: float | None
    run_settings: str | None


class StatementRow(TypedDict, total=False):
    """A ``statements`` row, its ``convergence``, ``data_sessions`` and ``rules`` read back from JSON
    (``Store.statements()``; ``rules`` None where stored before they were)."""
    id: int
    machine_id: int | None
    session: str | None
    stated_at: str
    workload: str
    target_accuracy: float
    convergence: dict[str, JSON]
    place: str
    place_key: dict[str, JSON] | None
    candidate: str
    level: float
    low_s: float
    median_s: float | None
    high_s: float
    data_sessions: list[str]
    cpustudy: str | None
    rules: dict[str, JSON] | None
    factor: float | None


def column(row: Mapping[str, object], name: str) -> object:
    """``row[name]`` for a column named at run time (a list of a table's columns): ``KeyError`` where it lacks it."""
    return row[name]


def value(row: Mapping[str, object], name: str) -> float | int | str | None:
    """``row.get(name)`` for a column named at run time (a metric's): a value as SQLite gives one (REAL, INTEGER or
    TEXT), None where the row lacks it."""
    return cast("float | int | str | None", row.get(name))
