"""The parent side of one measurement: plan it, spawn its worker, store what it reports.

The parent never imports TensorFlow. It resolves the data source, picks the CPUs, starts
``python -m cpustudy.worker`` (under the build's interpreter), stores each epoch as it arrives, and
finishes the run as ``ok`` or ``failed`` (with the exit code and the tail of the worker's stderr).
"""

from __future__ import annotations

import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from cpustudy import machine as machine_mod
from cpustudy.errors import UserError
from cpustudy.store import Store
from cpustudy.workloads import Workload

DATA_MODES = ("auto", "real", "synthetic")
VALIDATIONS = ("study", "none")
INPUTS = ("numpy", "tfdata")
UNSTABLE_CV = 0.05  # timed epochs varying more than this (coefficient of variation) are flagged
PACKAGE_DIR = Path(__file__).resolve().parent


def worker_pythonpath() -> str:
    """A folder holding only a link to this ``cpustudy`` package, for workers' PYTHONPATH.

    Putting the package's parent on the path instead would also put every package installed beside
    it (the project's TensorFlow) ahead of a build's own.
    """
    from cpustudy.builds import cache_dir

    import hashlib

    key = hashlib.sha256(str(PACKAGE_DIR).encode()).hexdigest()[:12]
    folder = cache_dir() / "pkg" / key
    link = folder / "cpustudy"
    if not link.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".cpustudy-{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(PACKAGE_DIR, target_is_directory=True)
        os.replace(tmp, link)
    return str(folder)


def _worker_env(env: Mapping[str, str] | None) -> dict[str, str]:
    worker_env = dict(os.environ)
    worker_env.update(env or {})
    worker_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (worker_pythonpath(), worker_env.get("PYTHONPATH", "")) if p
    )
    worker_env["PYTHONUNBUFFERED"] = "1"
    return worker_env


def keras_datasets_dir() -> Path:
    return Path(os.environ.get("KERAS_HOME") or Path.home() / ".keras") / "datasets"


def real_data_cached(workload: Workload) -> bool:
    d = keras_datasets_dir()
    return any((d / name).exists() for name in workload.real_files)


def resolve_data(workload: Workload, mode: str) -> str:
    """``auto`` -> real when Keras' cache has the dataset, else synthetic; ``real`` must be cached."""
    if mode not in DATA_MODES:
        raise UserError(f"unknown data mode {mode!r}: use --data auto, real or synthetic")
    if mode == "synthetic":
        return "synthetic"
    if real_data_cached(workload):
        return "real"
    if mode == "auto":
        return "synthetic"
    raise UserError(
        f"real {workload.dataset} data is not in the Keras cache and cannot be downloaded here: place "
        f"{workload.real_files[0]} in {keras_datasets_dir()}, or use --data synthetic"
    )


@dataclass
class RunSpec:
    """What the user asked for; ``plan`` turns it into a worker configuration."""

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
    options: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"
    timeout_s: float | None = None
    cell_key: str | None = None
    warmup_steps: int = 0
    input_pipeline: str = "numpy"
    env: dict[str, str] = field(default_factory=dict)  # extra switches on top of the build's
    measure_peak: bool = True
    validation: str = "study"  # validate every epoch as the example did, or not at all


def check_positive(name: str, value: int | None) -> None:
    if value is not None and value <= 0:
        raise UserError(f"{name} must be a positive whole number, got {value}")


def plan(spec: RunSpec, topo: machine_mod.CpuTopology | None = None) -> dict[str, Any]:
    """The worker configuration for ``spec``: validated, with CPUs, threads and data resolved."""
    w = spec.workload
    for name, value in (
        ("--vcpus", spec.vcpus),
        ("--epochs", spec.epochs),
        ("--steps-per-epoch", spec.steps_per_epoch),
        ("--batch-size", spec.batch_size),
        ("--intra-threads", spec.intra_threads),
        ("--inter-threads", spec.inter_threads),
    ):
        check_positive(name, value)
    if spec.warmup_steps < 0:
        raise UserError(f"--warmup-steps must be 0 or more, got {spec.warmup_steps}")
    if spec.input_pipeline == "tfdata" and spec.build in ("jax", "torch"):
        raise UserError("--input tfdata needs a TensorFlow build; use --input numpy with jax or torch")
    if spec.input_pipeline not in INPUTS:
        raise UserError(f"unknown input pipeline {spec.input_pipeline!r}: use --input numpy or tfdata")
    from cpustudy import builds

    if spec.validation not in VALIDATIONS:
        raise UserError(f"unknown validation {spec.validation!r}: use --validation study or none")
    # Workload switches apply to the workloads that have them (a sweep's --augment to cifar10_cnn).
    options = {**w.options, **{k: v for k, v in spec.options.items() if k in w.options}}
    if "augment" in options:
        from cpustudy.workloads.base import AUGMENT_MODES, augment_where

        try:
            options["augment"] = augment_where(options["augment"])
        except ValueError:
            raise UserError(f"--augment {options['augment']}: use one of {', '.join(AUGMENT_MODES)}") from None
    if spec.device not in ("cpu", "gpu"):
        raise UserError(f"unknown device {spec.device!r}: use --device cpu or gpu")
    if spec.device == "gpu" and not gpu_names():
        raise UserError("no GPU here (nvidia-smi lists none): run --device gpu on a machine with one, "
                        "then bring its results over with `cpustudy merge`")
    build = builds.load(spec.build)
    topo = topo or machine_mod.read_topology()
    cpus = machine_mod.choose_cpus(spec.vcpus, topo, oversubscribe=spec.oversubscribe)
    quota = machine_mod.cgroup_cpu_quota()
    throttled = quota is not None and spec.vcpus > quota + 1e-9
    if throttled and not spec.oversubscribe:
        raise UserError(
            f"{spec.vcpus} vCPUs cannot be measured honestly here: a cgroup CPU quota (docker --cpus) allows "
            f"{quota:g} CPUs; use --vcpus {max(1, int(quota or 1))} or fewer, pin with --cpuset-cpus instead of "
            "--cpus, or --oversubscribe to measure anyway")
    ready, why = build.readiness(_cpu_flags(), import_check=False)  # `builds list` imports for real
    if not ready:
        raise UserError(f"build {build.name} cannot run here: {why}")
    batch = spec.batch_size or w.batch_size
    full_steps = -(-w.samples_per_epoch // batch)
    steps = spec.steps_per_epoch
    if steps is not None and steps >= full_steps:
        steps = None  # a cap at or above a full epoch is a full epoch
    validating = spec.validation == "study" and w.validation_samples > 0
    intra = spec.intra_threads or spec.vcpus
    inter = spec.inter_threads or spec.vcpus
    return {
        "workload": w.name,
        "device": spec.device,
        "build": spec.build,
        "vcpus": spec.vcpus,
        "cpus": cpus,
        "cpu_list": machine_mod.format_cpu_list(cpus),
        "oversubscribed": spec.vcpus > len(cpus) or spec.vcpus > topo.logical or throttled,
        "intra_threads": intra,
        "inter_threads": inter,
        "batch_size": batch,
        "epochs": spec.epochs or w.epochs,
        "steps_per_epoch": steps,
        "full_steps_per_epoch": full_steps,
        "samples_per_epoch": w.samples_per_epoch,
        "validation": spec.validation,
        "validation_steps": w.validation_steps(batch, steps) if validating else 0,
        "full_validation_steps": w.validation_steps(batch) if validating else 0,
        "data_requested": spec.data,
        "data": resolve_data(w, spec.data),
        "seed": spec.seed,
        "repeat": spec.repeat,
        "jit_compile": spec.jit_compile if spec.jit_compile is not None else build.jit_compile,
        "build_kind": build.kind,
        "build_family": build.family,
        "python": build.python,
        "env": {**build.worker_env(), **spec.env},
        "build_env": build.worker_env(),  # the build's own switches, apart from extra settings
        "warmup_steps": spec.warmup_steps,
        "input_pipeline": spec.input_pipeline,
        "measure_peak": spec.measure_peak,
        "options": options,
        "params": spec.params,
        "flops_per_sample": w.flops(spec.params or None).train,
        "cell_key": spec.cell_key,
    }


def gpu_names() -> list[str]:
    """NVIDIA GPUs that ``nvidia-smi`` lists (empty where there is none or no driver)."""
    import shutil

    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.split(":", 1)[1].split("(")[0].strip() for line in out.splitlines() if line.startswith("GPU")]


def _cpu_flags() -> set[str] | None:
    flags = machine_mod._proc_cpuinfo().get("flags")
    return set(flags.split()) if flags else None


def summarize(config: Mapping[str, Any], epochs: Sequence[Mapping[str, Any]], startup_s: float | None) -> dict[str, Any]:
    """The run's figures from its epochs: median of the timed (non-warm-up) epochs.

    With a step cap below a full epoch, the full-epoch time is projected and flagged ``projected``:
    the median time inside the steps scaled to a full epoch's steps, plus the median time the epoch
    spends outside its steps (iterator set-up and tear-down happen once per epoch, whatever its
    length; scaling them with the steps would inflate a 20-step epoch's 2.5 s stall 23-fold). Epochs
    stored without that split (older runs) are projected as a whole. With no timed epoch
    (``--epochs 1``) the warm-up epoch is used and ``timed_epochs`` is 0.
    """
    timed = [e for e in epochs if not e.get("warmup")]
    basis = timed or list(epochs)
    if not basis:
        return {"startup_s": startup_s, "timed_epochs": 0, "projected": False}
    times = [e["elapsed_s"] for e in basis]
    measured = statistics.median(times)
    steps = config.get("steps_per_epoch") or config["full_steps_per_epoch"]
    samples = basis[0].get("samples") or steps * config["batch_size"]
    split = all(e.get("steps_s") is not None and e.get("boundary_s") is not None for e in basis)
    boundary = statistics.median(e["boundary_s"] for e in basis) if split else None
    step_time = statistics.median(e["steps_s"] for e in basis) / steps if split else measured / steps
    vcpus = config.get("vcpus") or 0
    utilization = None
    if vcpus and all(e.get("cpu_s") is not None and e["elapsed_s"] > 0 for e in basis):
        utilization = statistics.median(e["cpu_s"] / (e["elapsed_s"] * vcpus) for e in basis)
    projected = config.get("steps_per_epoch") is not None
    scale = config["full_steps_per_epoch"] / steps if projected else 1.0
    iqr = cv = None
    if len(times) >= 2:
        # The spread of the figure reported: each epoch as run, or each epoch projected like the median.
        shown = ([e["steps_s"] * scale + e["boundary_s"] for e in basis] if projected and split
                 else [t * scale for t in times])
        q = statistics.quantiles(shown, n=4, method="inclusive")
        iqr = q[2] - q[0]
        mean = statistics.fmean(times)
        cv = statistics.stdev(times) / mean if mean > 0 else None
    epoch_time = (step_time * config["full_steps_per_epoch"] + (boundary or 0.0)) if projected else measured
    validation = _validation_summary(config, basis)
    gpu = [e["gpu_util"] for e in basis if e.get("gpu_util") is not None]
    # Throughput of the epoch reported: a projected full epoch where its outside-steps time is known.
    rate = (samples / steps * config["full_steps_per_epoch"] / epoch_time if projected and split
            else samples / measured) if measured > 0 and epoch_time > 0 else None
    return {
        "epoch_time_iqr_s": iqr,
        "epoch_time_cv": cv,
        "unstable": None if cv is None else cv > UNSTABLE_CV,
        "epoch_time_s": epoch_time,
        "measured_epoch_time_s": measured,
        "step_time_s": step_time,
        "samples_per_s": rate,
        "startup_s": startup_s,
        "projected": projected,
        "timed_epochs": len(timed),
        "epoch_boundary_s": boundary,
        "cpu_utilization": utilization,
        "gpu_utilization": statistics.median(gpu) if gpu else None,
        **validation,
    }


def _validation_summary(config: Mapping[str, Any], basis: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The validation each epoch ran, timed apart from training: its median time, projected to the
    whole test set like training steps are (time inside the validation steps scaled to the full
    number of steps, the rest added once), and the accuracy the last epoch reached."""
    val = [e for e in basis if e.get("validation_s") is not None]
    if not val:
        return {"validation_time_s": None, "val_loss": None, "val_accuracy": None}
    measured = statistics.median(e["validation_s"] for e in val)
    ran = val[0].get("validation_steps") or config.get("validation_steps") or 0
    full = config.get("full_validation_steps") or ran
    split = all(e.get("validation_steps_s") is not None for e in val)
    if ran and full and full != ran and split:
        inside = statistics.median(e["validation_steps_s"] for e in val)
        outside = statistics.median(e["validation_s"] - e["validation_steps_s"] for e in val)
        projected = inside * full / ran + outside
    elif ran and full and full != ran:
        projected = measured * full / ran
    else:
        projected = measured
    last = basis[-1]
    return {"validation_time_s": projected, "val_loss": last.get("val_loss"),
            "val_accuracy": last.get("val_accuracy")}


@dataclass
class RunOutcome:
    run_id: int
    status: str
    summary: dict[str, Any]
    error: str | None = None
    exit_code: int | None = None


Listener = Callable[[str, Mapping[str, Any]], None]


def stderr_tail(path: Path, lines: int = 25, chars: int = 4000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])[-chars:]


def execute(
    store: Store,
    machine_id: int,
    config: dict[str, Any],
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    listener: Listener | None = None,
) -> RunOutcome:
    """Run one measurement in a fresh worker and store it; never raises for a failed measurement."""
    from cpustudy import checks

    config = dict(config)
    config["machine_state"] = checks.machine_state(sample_s=0.2)
    peak_key = _peak_key(config)
    cached_peak = None
    if config.get("measure_peak"):
        cached_peak = _stored_peak(store.peak(machine_id, peak_key)) or _file_peak(store, machine_id, peak_key)
        if cached_peak and (cached_peak.get("peak_device") or "cpu") != config.get("device", "cpu"):
            cached_peak = None  # measured before peaks were taken on the training device: measure again
    config["measure_peak_now"] = bool(config.get("measure_peak")) and cached_peak is None
    worker_env = _worker_env({**config.get("env", {}), **(env or {})})
    if config.get("device", "cpu") == "cpu":
        worker_env["CUDA_VISIBLE_DEVICES"] = "-1"
    else:  # CUDA's device numbers as NVML's (PCI order), so the sampled GPU is the one trained on
        worker_env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    run_id = store.start_run(machine_id, config)
    try:
        return _measure(store, machine_id, run_id, config, worker_env, python, timeout_s, listener,
                        peak_key, cached_peak)
    except BaseException as exc:
        # Whatever went wrong in the parent (an interrupt, a full disk, a listener's bug), the run
        # must not stay "running": finish it as failed, then let the exception go on.
        if store.runs(run_ids=[run_id])[0]["status"] == "running":
            reason = "interrupted by the user" if isinstance(exc, KeyboardInterrupt) else f"parent error: {exc!r}"
            store.finish_run(run_id, "failed", {}, error=reason)
        raise


def _measure(
    store: Store, machine_id: int, run_id: int, config: dict[str, Any], worker_env: dict[str, str],
    python: str | None, timeout_s: float | None, listener: Listener | None, peak_key: str,
    cached_peak: dict[str, Any] | None,
) -> RunOutcome:
    epochs: list[dict[str, Any]] = []
    software: dict[str, Any] = {}
    startup: float | None = None
    error: str | None = None
    read_fd, write_fd = os.pipe()
    errlog = tempfile.NamedTemporaryFile(prefix="cpustudy-worker-", suffix=".log", delete=False)
    errpath = Path(errlog.name)
    spawn_wall = time.time()
    try:
        proc = subprocess.Popen(
            [python or config.get("python") or sys.executable, "-m", "cpustudy.worker",
             json.dumps(config), str(write_fd)],
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=errlog,
            stderr=subprocess.STDOUT,
            env=worker_env,
            start_new_session=True,
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        errlog.close()
        msg = f"could not start the worker: {exc}"
        store.finish_run(run_id, "failed", {}, error=msg)
        return RunOutcome(run_id, "failed", {}, msg)
    os.close(write_fd)
    deadline = time.monotonic() + timeout_s if timeout_s else None
    buffer = b""
    timed_out = False
    try:
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([read_fd], [], [], wait)
            if not ready:
                timed_out = True
                break
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                kind = event.pop("type", "")
                if kind == "software":
                    software = event
                    store.set_software(run_id, software)
                elif kind in ("data", "model", "warmup"):
                    # How long data preparation (and from where), model building and warm-up took.
                    software[{"data": "data_prep"}.get(kind, kind)] = event
                    store.set_software(run_id, software)
                    if kind == "model" and event.get("xla") is not None:
                        store.set_xla(run_id, bool(event["xla"]))
                elif kind == "train_start":
                    startup = float(event["wall"]) - spawn_wall
                elif kind == "epoch":
                    store.add_epoch(run_id, event)
                    epochs.append(event)
                elif kind == "error":
                    error = event.get("message")
                elif kind == "gpu_monitor":
                    software["gpu_monitor"] = event
                    store.set_software(run_id, software)
                elif kind == "peak":
                    software["peak"] = {"seconds": event.get("seconds")}  # time spent measuring it
                    store.set_software(run_id, software)
                    store.set_peak(machine_id, peak_key, event.get("gflops"), event.get("bandwidth_gbs"), event)
                    _save_file_peak(store, machine_id, peak_key, event)
                    cached_peak = _peak_figures(event)
                if listener:
                    listener(kind, event)
    except BaseException:
        _kill(proc)  # never leave a worker training behind; the caller finishes the run as failed
        os.close(read_fd)
        errlog.close()
        errpath.unlink(missing_ok=True)
        raise
    os.close(read_fd)
    if timed_out:
        _kill(proc)
        error = f"timed out after {timeout_s:g} s"
    code = proc.wait()
    errlog.close()
    summary = summarize(config, epochs, startup)
    if cached_peak:
        summary.update(cached_peak)
    expected = int(config["epochs"])
    if code == 0 and not timed_out and len(epochs) == expected:
        store.finish_run(run_id, "ok", summary, exit_code=0)
        errpath.unlink(missing_ok=True)
        return RunOutcome(run_id, "ok", summary, exit_code=0)
    if error is None:
        if code < 0:
            error = f"worker killed by signal {signal.Signals(-code).name}"
            if -code == signal.SIGKILL:
                error += " (out of memory?)"
        elif code == 0:
            error = f"worker ended after {len(epochs)} of {expected} epochs"
        else:
            error = f"worker exited with code {code}"
    tail = stderr_tail(errpath)
    errpath.unlink(missing_ok=True)
    full = error + ("\n--- worker stderr (tail) ---\n" + tail if tail else "")
    store.finish_run(run_id, "failed", summary, exit_code=code, error=full)
    return RunOutcome(run_id, "failed", summary, error, code)


def _peak_figures(event: Mapping[str, Any]) -> dict[str, Any]:
    """A peak measurement as a run stores it: the rates, and the device and precision they were
    measured on and at (older peaks, measured before devices were told apart, say neither)."""
    return {"peak_gflops": event.get("gflops"), "mem_bandwidth_gbs": event.get("bandwidth_gbs"),
            "peak_device": event.get("device"), "peak_precision": event.get("precision")}


def _stored_peak(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not row:
        return None
    try:
        details = json.loads(row.get("details") or "{}")
    except ValueError:
        details = {}
    return _peak_figures({**details, "gflops": row.get("peak_gflops"), "bandwidth_gbs": row.get("mem_bandwidth_gbs")})


def _peak_key(config: Mapping[str, Any]) -> str:
    """What the hardware peak depends on: the build, its switches, the CPUs and threads."""
    import hashlib

    key = {k: config.get(k) for k in ("build", "python", "env", "cpu_list", "intra_threads",
                                      "inter_threads", "device")}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]


def _peak_file(store: Store, machine_id: int, peak_key: str) -> Path:
    from cpustudy.builds import cache_dir

    fp = store.conn.execute("SELECT fingerprint FROM machines WHERE id = ?", (machine_id,)).fetchone()[0]
    return cache_dir() / "peaks" / f"{fp}-{peak_key}.json"


def _file_peak(store: Store, machine_id: int, peak_key: str) -> dict[str, Any] | None:
    """A peak measured on this machine for this configuration into another database: copied into
    this one (with its original date), so the peak is measured once per machine, not per file."""
    try:
        event = json.loads(_peak_file(store, machine_id, peak_key).read_text())
    except (OSError, ValueError):
        return None
    store.set_peak(machine_id, peak_key, event.get("gflops"), event.get("bandwidth_gbs"), event)
    return _peak_figures(event)


def _save_file_peak(store: Store, machine_id: int, peak_key: str, event: Mapping[str, Any]) -> None:
    path = _peak_file(store, machine_id, peak_key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**event, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
    except OSError:
        pass  # an unwritable cache only means measuring again


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def probe_software(python: str | None = None, env: Mapping[str, str] | None = None,
                   timeout_s: float = 180) -> dict[str, Any]:
    """Import the frameworks in a worker (under ``python``) and return what they report."""
    worker_env = _worker_env(env)
    worker_env["CUDA_VISIBLE_DEVICES"] = worker_env.get("CUDA_VISIBLE_DEVICES", "-1")
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            [python or sys.executable, "-m", "cpustudy.worker", "--probe", str(write_fd)],
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=worker_env,
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        raise UserError(f"cannot start {python or sys.executable}: {exc}") from None
    os.close(write_fd)
    with os.fdopen(read_fd) as events:
        try:
            _, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        lines = events.read().splitlines()
    result: dict[str, Any] = {}
    for line in lines:
        event = json.loads(line)
        if event.pop("type") == "software":
            result = event
        elif not result:
            result = {"error": event.get("message")}
    if not result:
        tail = (err or b"").decode(errors="replace").strip().splitlines()[-1:]
        result = {"error": tail[0] if tail else f"exit code {proc.returncode}"}
    return result
