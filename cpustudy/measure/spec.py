"""What the user asked for (``RunSpec``) -> the measurement to run (``RunConfig``), checked.

``plan`` is the one place where a measurement's settings are validated and resolved: CPUs picked,
threads sized, the data source, the build's interpreter and switches, step caps, validation steps.
Every check happens here, before a database is touched; a bad setting is a one-line ``UserError``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, TypedDict

from cpustudy import precision
from cpustudy.environment import machine as machine_mod
from cpustudy.errors import UserError
from cpustudy.worker.protocol import RunConfig
from cpustudy.workloads import Workload
from cpustudy.workloads.base import MIN_PROJECTED_STEPS

if TYPE_CHECKING:
    from cpustudy.environment.builds import Build
    from cpustudy.store.rows import JSON

DATA_MODES = ("auto", "real", "synthetic", "learnable")
VALIDATIONS = ("study", "none")
INPUTS = ("auto", "numpy", "tfdata")
DEVICES = ("cpu", "gpu")


@dataclass
class RunSpec:
    """What the user asked for; ``plan`` turns it into a ``RunConfig``."""

    workload: Workload
    vcpus: int
    epochs: int | None = None
    steps_per_epoch: int | None = None
    batch_size: int | None = None
    data: str = "auto"
    seed: int = 0
    repeat: int = 0
    build: str = "tf"
    oversubscribe: bool = False
    intra_threads: int | None = None
    inter_threads: int | None = None
    jit_compile: bool | None = None
    options: Mapping[str, object] = field(default_factory=dict)
    params: Mapping[str, object] = field(default_factory=dict)
    device: str = "cpu"
    warmup_steps: int = 0
    input_pipeline: str = "auto"
    env: dict[str, str] = field(default_factory=dict)  # extra switches on top of the build's
    measure_peak: bool = True
    validation: str = "study"  # validate every epoch as the example did, or not at all
    precision_policy: str = precision.DEFAULT  # precision.POLICIES (Keras mixed precision)
    target_accuracy: float | None = None  # train until validation accuracy reaches it (epochs = the most)
    target: str | None = None  # or until another validation metric does (``val_loss<=0.3``: cpustudy.targets)


class SpecArgs(TypedDict, total=False):
    """Settings of :class:`RunSpec` that every cell of a sweep shares (``sweep.plan_sweep``'s keywords,
    ``request.SweepRequest.spec_args``): each field but the workload, vCPUs, build and repeat a cell sets."""
    epochs: int | None
    steps_per_epoch: int | None
    batch_size: int | None
    data: str
    seed: int
    oversubscribe: bool
    intra_threads: int | None
    inter_threads: int | None
    jit_compile: bool | None
    options: Mapping[str, object]
    params: Mapping[str, object]
    device: str
    warmup_steps: int
    input_pipeline: str
    env: dict[str, str]
    measure_peak: bool
    validation: str
    precision_policy: str
    target_accuracy: float | None
    target: str | None


@dataclass(frozen=True)
class Host:
    """The machine a measurement is planned for: this one (:meth:`here`, every check against it), or a
    cloud VM known only by its size and device (:meth:`vm`: its CPU flags, GPU, quota and data cache
    are unknown here, so those checks are left to the sweep that runs on it). ``cpu_flags``: the CPU's flags
    where they are given (a simulated measurer's CPU: ``cpustudy.rehearsal.replay``); None reads this machine's."""

    topo: machine_mod.CpuTopology
    local: bool = True
    cpu_flags: frozenset[str] | None = None

    @classmethod
    def here(cls, topo: machine_mod.CpuTopology | None = None) -> "Host":
        return cls(topo or machine_mod.read_topology())

    @classmethod
    def vm(cls, vcpus: int) -> "Host":
        return cls(machine_mod.CpuTopology(cpus={i: (0, i, 0) for i in range(vcpus)}), local=False)


def keras_datasets_dir() -> Path:
    return Path(os.environ.get("KERAS_HOME") or Path.home() / ".keras") / "datasets"


def real_data_cached(workload: Workload) -> bool:
    d = keras_datasets_dir()
    return any((d / name).exists() for name in workload.real_files)


def resolve_data(workload: Workload, mode: str) -> str:
    """``auto`` -> real when Keras' cache has the dataset, else synthetic; ``real`` must be cached;
    ``learnable``: synthetic inputs whose labels follow a planted rule (accuracy rises with training)."""
    if mode not in DATA_MODES:
        raise UserError(f"unknown data mode {mode!r}: use --data auto, real, synthetic or learnable")
    if mode in ("synthetic", "learnable"):
        return mode
    if real_data_cached(workload):
        return "real"
    if mode == "auto":
        return "synthetic"
    raise UserError(
        f"real {workload.dataset} data is not in the Keras cache and cannot be downloaded here: place "
        f"{workload.real_files[0]} in {keras_datasets_dir()}, or use --data synthetic"
    )


def _check(spec: RunSpec, local: bool = True) -> None:
    for name, value in (
        ("--vcpus", spec.vcpus),
        ("--epochs", spec.epochs),
        ("--steps-per-epoch", spec.steps_per_epoch),
        ("--batch-size", spec.batch_size),
        ("--intra-threads", spec.intra_threads),
        ("--inter-threads", spec.inter_threads),
    ):
        if value is not None and value <= 0:
            raise UserError(f"{name} must be a positive whole number, got {value}")
    if not 0 <= spec.seed < 2**32:
        raise UserError(f"--seed {spec.seed}: give a whole number from 0 to {2**32 - 1}")
    if spec.warmup_steps < 0:
        raise UserError(f"--warmup-steps must be 0 or more, got {spec.warmup_steps}")
    if spec.input_pipeline not in INPUTS:
        raise UserError(f"unknown input pipeline {spec.input_pipeline!r}: use --input auto, numpy or tfdata")
    if spec.validation not in VALIDATIONS:
        raise UserError(f"unknown validation {spec.validation!r}: use --validation study or none")
    if spec.device not in DEVICES:
        raise UserError(f"unknown device {spec.device!r}: use --device cpu or gpu")
    if spec.target_accuracy is not None:
        if not 0 < spec.target_accuracy <= 1:
            raise UserError(f"--target-accuracy {spec.target_accuracy:g}: give a validation accuracy between 0 "
                            "and 1, e.g. 0.9")
        if spec.validation != "study":
            raise UserError("--target-accuracy needs the validation after every epoch: drop --validation none")
        if spec.steps_per_epoch is not None:
            raise UserError("--target-accuracy counts full epochs to the target: drop --steps-per-epoch")
        if spec.workload.validation_samples <= 0:
            raise UserError(f"--target-accuracy: {spec.workload.name} has no validation set to measure accuracy on")
        model = spec.workload.model
        if model is not None and not model.summary.get("accuracy_metric"):
            raise UserError(f"--target-accuracy: {model.path}'s model reports no accuracy: compile it with "
                            "metrics=['accuracy'], or give --target on a metric it logs "
                            f"({', '.join(_validation_metrics(model.summary)) or 'none'})")
    if spec.target is not None:
        _check_target(spec)
    if spec.workload.model is not None and spec.workload.model.kind == "script":
        _check_script(spec)
    full = spec.workload.steps_for(spec.batch_size or spec.workload.batch_size)
    if spec.steps_per_epoch is not None and spec.steps_per_epoch < min(MIN_PROJECTED_STEPS, full):
        raise UserError(f"--steps-per-epoch {spec.steps_per_epoch}: too few steps to project a full epoch from (a "
                        f"2-step epoch read 3.4x slower than a 20-step one): give {MIN_PROJECTED_STEPS} or more, or "
                        "leave it out for full epochs")
    if spec.device == "gpu" and local and not machine_mod.gpu_names():
        raise UserError("no GPU here (nvidia-smi lists none): run --device gpu on a machine with one, "
                        "then bring its results over with `cpustudy merge`")


def _check_script(spec: RunSpec) -> None:
    """What a script's own fit can take: another batch size and a step cap need inputs cpustudy can resize."""
    model = spec.workload.model
    assert model is not None
    fit = model.summary.get("fit") or {}
    name, kind = Path(model.path).name, fit.get("input")
    if spec.warmup_steps:
        raise UserError(f"--warmup-steps: {name} is a script, whose fit runs as it is: leave --warmup-steps out")
    if spec.batch_size and spec.batch_size != fit.get("batch_size") and kind != "arrays":
        raise UserError(f"--batch-size {spec.batch_size}: {name} feeds fit a {kind} input already batched by "
                        f"{fit.get('batch_size')}: change the batch in the script, or leave --batch-size out")
    if spec.steps_per_epoch is not None and kind not in ("arrays", "tf.data"):
        raise UserError(f"--steps-per-epoch: {name} feeds fit a {kind} input, which cpustudy cannot cap: leave "
                        "--steps-per-epoch out (full epochs)")
    if spec.input_pipeline != "auto":
        raise UserError(f"--input {spec.input_pipeline}: {name} is a script with its own input ({kind}): leave "
                        "--input out")


def _validation_metrics(summary: Mapping[str, JSON]) -> list[str]:
    """The validation metrics a model file's or script's model logs (its check's finding: a JSON line)."""
    return [f"val_{m}" for m in (summary.get("metrics") or []) if not str(m).startswith("val_")]


def _check_target(spec: RunSpec) -> None:
    """``--target``: what ``--target-accuracy`` needs, and a metric the model logs where its check knows."""
    from cpustudy import targets

    target = targets.parse(spec.target or "")
    flag = f"--target {target.text}"
    if spec.target_accuracy is not None:
        raise UserError("give --target-accuracy or --target, not both (--target val_accuracy=A is the same as "
                        "--target-accuracy A)")
    if spec.validation != "study":
        raise UserError(f"{flag} needs the validation after every epoch: drop --validation none")
    if spec.steps_per_epoch is not None:
        raise UserError(f"{flag} counts full epochs to the target: drop --steps-per-epoch")
    if spec.workload.validation_samples <= 0:
        raise UserError(f"{flag}: {spec.workload.name} has no validation set to measure it on")
    model = spec.workload.model
    if model is not None:
        known = _validation_metrics(model.summary)
        if target.metric not in known and not (target.metric == "val_accuracy" and model.summary.get("accuracy_metric")):
            raise UserError(f"{flag}: {Path(model.path).name}'s model logs no {target.metric} (it logs "
                            f"{', '.join(known) or 'no validation metric'})")
    elif target.metric not in ("val_loss", "val_accuracy"):
        raise UserError(f"{flag}: {spec.workload.name} logs val_loss and val_accuracy only")


def check_precision(policy: str, device: str, cpu_flags: Iterable[str] | None,
                    gpu_capability: float | None = None) -> None:
    """Refuse a precision the device cannot run natively (:mod:`cpustudy.precision`), once, before
    anything runs: emulated bfloat16 is slower than float32 and would be a false finding about it."""
    problem = precision.unknown(policy) or (
        precision.cpu_problem(policy, cpu_flags) if device == "cpu" else precision.gpu_problem(policy, gpu_capability))
    if problem:
        raise UserError(problem)


def _workload_options(spec: RunSpec) -> dict[str, object]:
    """Workload switches apply to the workloads that have them (a sweep's --augment to cifar10_cnn)."""
    w = spec.workload
    options = {**w.options, **{k: v for k, v in spec.options.items() if k in w.options}}
    if "augment" in options:
        from cpustudy.workloads.base import AUGMENT_MODES, augment_where

        try:
            options["augment"] = augment_where(options["augment"])
        except ValueError:
            raise UserError(f"--augment {options['augment']}: use one of {', '.join(AUGMENT_MODES)}") from None
    return options


def _pick_cpus(spec: RunSpec, host: Host) -> tuple[list[int], bool]:
    """The CPUs the worker is pinned to, and whether a cgroup quota throttles them (refused unless
    ``--oversubscribe``)."""
    cpus = machine_mod.choose_cpus(spec.vcpus, host.topo, oversubscribe=spec.oversubscribe)
    quota = machine_mod.cgroup_cpu_quota() if host.local else None
    throttled = quota is not None and spec.vcpus > quota + 1e-9
    if throttled and not spec.oversubscribe:
        raise UserError(
            f"{spec.vcpus} vCPUs cannot be measured honestly here: a cgroup CPU quota (docker --cpus) allows "
            f"{quota:g} CPUs; use --vcpus {max(1, int(quota or 1))} or fewer, pin with --cpuset-cpus instead of "
            "--cpus, or --oversubscribe to measure anyway")
    return cpus, throttled


def _check_device(spec: RunSpec, build: Build, host: Host) -> None:
    """The precision and the build against this machine's CPU flags (read once) and GPU; on a VM not
    rented yet only that the precision exists (its CPU and GPU are checked on the VM)."""
    if not host.local:
        if precision.unknown(spec.precision_policy):
            raise UserError(str(precision.unknown(spec.precision_policy)))
        return
    flags = set(host.cpu_flags) if host.cpu_flags is not None else machine_mod.cpu_flags()
    check_precision(spec.precision_policy, spec.device, flags,
                    machine_mod.gpu_compute_capability() if spec.device == "gpu" else None)
    ready, why = build.readiness(flags, import_check=False)  # `builds list` imports for real
    if not ready:
        raise UserError(f"build {build.name} cannot run here: {why}")


def _resolve_data(spec: RunSpec, host: Host) -> str:
    """The data source; a target accuracy needs labels that mean something. On a VM not rented yet the
    Keras cache is unknown: ``auto`` and ``real`` are resolved there."""
    w = spec.workload
    if w.model is not None:  # a model file brings its own data (load_data), recorded as the file says
        data = w.model.data
        if spec.data not in DATA_MODES:
            resolve_data(w, spec.data)  # the one-line error for an unknown mode
    elif not host.local and spec.data in DATA_MODES:
        return spec.data
    else:
        data = resolve_data(w, spec.data)
    if spec.target_accuracy is not None and data == "synthetic" and w.model is not None:
        raise UserError(f"--target-accuracy: {w.model.path} says DATA = \"synthetic\" (random labels), so accuracy "
                        "means nothing: say DATA = \"learnable\" if its labels follow a rule, \"real\" for real data")
    if spec.target is not None and data == "synthetic":
        raise UserError("--target with synthetic data: its labels are random, so the metric means nothing: use "
                        "--data real or --data learnable")
    if spec.target_accuracy is not None and data == "synthetic":
        raise UserError(f"--target-accuracy with synthetic data: its labels are random, so accuracy means nothing "
                        f"({'--data auto found no cached ' + w.dataset + ' data' if spec.data == 'auto' else '--data synthetic'})"
                        ": use --data real (cached Keras datasets) or --data learnable (planted labels, a demonstration)")
    return data


def keras_backend(spec: RunSpec, build: Build) -> str:
    """The Keras backend the run's worker will use (its build's ``KERAS_BACKEND``, or an extra setting)."""
    return {**build.worker_env(), **spec.env}.get("KERAS_BACKEND") or (
        build.family if build.family in ("jax", "torch") else "tensorflow")


def input_pipeline(spec: RunSpec, build: Build) -> str:
    """The input pipeline the run uses: ``auto`` is ``tfdata`` on TensorFlow (one iterator for the whole
    run: no per-epoch iterator stall) and ``numpy`` on JAX and PyTorch; ``tfdata`` needs TensorFlow."""
    backend = keras_backend(spec, build)
    if spec.input_pipeline == "auto":
        return "tfdata" if backend == "tensorflow" else "numpy"
    if spec.input_pipeline == "tfdata" and backend != "tensorflow":
        raise UserError(f"--input tfdata needs a TensorFlow build ({build.name} runs Keras on {backend}); "
                        "use --input numpy or auto")
    return spec.input_pipeline


def plan(spec: RunSpec, host: Host | None = None) -> RunConfig:
    """The measurement ``spec`` asks for on ``host`` (default: this machine): validated, with CPUs, threads and
    data resolved."""
    from cpustudy.environment import builds

    host = host or Host.here()
    topo = host.topo
    _check(spec, host.local)
    w = spec.workload
    options = _workload_options(spec)
    build = builds.load(spec.build)
    cpus, throttled = _pick_cpus(spec, host)
    _check_device(spec, build, host)
    batch = spec.batch_size or w.batch_size
    full_steps = -(-w.samples_per_epoch // batch)
    steps = spec.steps_per_epoch
    if steps is not None and steps >= full_steps:
        steps = None  # a cap at or above a full epoch is a full epoch
    validating = spec.validation == "study" and w.validation_samples > 0
    data = _resolve_data(spec, host)
    return RunConfig(
        workload=w.name,
        workload_version=w.version,
        device=spec.device,
        build=spec.build,
        vcpus=spec.vcpus,
        cpus=tuple(cpus),
        cpu_list=machine_mod.format_cpu_list(cpus),
        oversubscribed=spec.vcpus > len(cpus) or spec.vcpus > topo.logical or throttled,
        intra_threads=spec.intra_threads or spec.vcpus,
        inter_threads=spec.inter_threads or spec.vcpus,
        batch_size=batch,
        epochs=spec.epochs or w.epochs,
        precision_policy=spec.precision_policy,
        target_accuracy=spec.target_accuracy,
        target=spec.target,
        steps_per_epoch=steps,
        full_steps_per_epoch=full_steps,
        samples_per_epoch=w.samples_per_epoch,
        validation=spec.validation,
        validation_steps=w.validation_steps(batch, steps) if validating else 0,
        full_validation_steps=w.validation_steps(batch) if validating else 0,
        data_requested=spec.data,
        data=data,
        seed=spec.seed,
        repeat=spec.repeat,
        jit_compile=spec.jit_compile if spec.jit_compile is not None else build.jit_compile,
        build_kind=build.kind,
        build_family=build.family,
        python=build.python,
        env={**build.worker_env(), **spec.env},
        build_env=build.worker_env(),  # the build's own switches, apart from extra settings
        warmup_steps=spec.warmup_steps,
        input_pipeline="script" if w.model is not None and w.model.kind == "script" else input_pipeline(spec, build),
        input_default="tfdata" if keras_backend(spec, build) == "tensorflow" else "numpy",
        measure_peak=spec.measure_peak,
        options=options,
        params=dict(spec.params),
        **flops_and_model(w, build, spec.params),
    )


class ModelFigures(TypedDict, total=False):
    """A run's training FLOPs per sample and their source, and its model file's identity (``flops_and_model``)."""
    flops_per_sample: int | None
    flops_source: str
    model_file: str
    model_hash: str
    model_summary: dict[str, object]
    script: bool


def flops_and_model(w: Workload, build: Build, params: Mapping[str, object]) -> ModelFigures:
    """The training FLOPs per sample and where they come from (the study's analytic counts, or for a model
    file TensorFlow's cost analysis of its training step, which Keras on JAX or PyTorch has no graph
    for), and the model file's identity and summary."""
    if w.model is None:
        return {"flops_per_sample": w.flops(params or None).train, "flops_source": "analytic"}
    backend = build.env.get("KERAS_BACKEND", "tensorflow")
    flops: int | None = w.flops().train
    if backend != "tensorflow":
        flops, source = None, f"not counted: TensorFlow's cost analysis has no graph of Keras on {backend}"
    elif w.model.flops_note:
        flops, source = None, w.model.flops_note
    else:
        source = "tensorflow cost analysis"
    return {"flops_per_sample": flops, "flops_source": source,
            "model_file": w.model.path, "model_hash": w.model.sha256, "model_summary": dict(w.model.summary),
            "script": w.model.kind == "script"}
