from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cpustudy import cli, precision
from cpustudy.environment import machine
from cpustudy.worker.protocol import RunConfig

# Keep TensorFlow quiet and off any GPU in the test process and in the workers it starts.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
# The tests' own cache folder (build probes, generated data, kernel readings), never the user's
# ~/.cache/cpustudy: kept between runs on this machine, so a second run reuses what the first made.
os.environ["CPUSTUDY_CACHE"] = os.path.join(tempfile.gettempdir(), f"cpustudy-tests-cache-{os.getuid()}")


#: What a CPU that runs no reduced precision natively lacks (Zen 3, Ice Lake, Cascade Lake): AMX, AVX10 and the
#: AVX-512 bfloat16/float16 instructions.
REDUCED_PRECISION_FLAGS = frozenset({f for flags in precision.NATIVE_ON_CPU.values() for f in flags}
                                    | {"amx_tile", "amx_int8", "avx10"})
#: Set to 1 to run the tests as on a CPU without bfloat16 (this process reads /proc/cpuinfo and CPUID without
#: REDUCED_PRECISION_FLAGS; the workers and probes it starts still run on the real CPU). Read here only, never
#: by cpustudy: ``CPUSTUDY_TESTS_HIDE_BF16=1 .venv/bin/python -m pytest tests/test_decision.py``.
HIDE_BF16 = os.environ.get("CPUSTUDY_TESTS_HIDE_BF16") == "1"


def hide_reduced_precision(mp: pytest.MonkeyPatch) -> None:
    """This machine read without :data:`REDUCED_PRECISION_FLAGS`: its /proc/cpuinfo (every reader of this CPU's
    flags, ``machine.cpu_flags`` and ``machine.collect``, goes through ``machine.proc_cpuinfo``; copies of other
    machines' cpuinfo read as they are) and what CPUID says here (``cpuid.read_cpuid``)."""
    from cpustudy.environment import cpuid

    real_proc, real_cpuid = machine.proc_cpuinfo, cpuid.read_cpuid

    def proc_without(path: Path = machine.PROC_CPUINFO) -> dict[str, str]:
        info = real_proc(path)
        if Path(path) != machine.PROC_CPUINFO:
            return info
        return {k: " ".join(f for f in v.split() if f.lower() not in REDUCED_PRECISION_FLAGS)
                if k in ("flags", "Features") else v for k, v in info.items()}

    def cpuid_without() -> dict[str, Any]:
        got = real_cpuid()
        if "features" not in got:
            return got
        got = {k: v for k, v in got.items() if k != "avx10_version"}
        return {**got, "features": [f for f in got["features"] if f not in REDUCED_PRECISION_FLAGS]}

    mp.setattr(machine, "proc_cpuinfo", proc_without)
    mp.setattr(cpuid, "read_cpuid", cpuid_without)


@pytest.fixture(scope="session", autouse=True)
def cpu_as_without_bf16_when_asked():
    """With CPUSTUDY_TESTS_HIDE_BF16=1, every test sees a CPU without bfloat16 (see :data:`HIDE_BF16`)."""
    if not HIDE_BF16:
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        hide_reduced_precision(mp)
        yield


@pytest.fixture
def cpu_without_bf16(monkeypatch) -> set[str]:
    """This machine as a CPU without bfloat16 (or float16): its flags as this process reads them, returned."""
    hide_reduced_precision(monkeypatch)
    return machine.cpu_flags() or set()


@dataclass
class Result:
    code: int
    out: str
    err: str


def _own_cpus_first() -> None:
    """Under pytest-xdist each worker's runs take the CPUs in an order of their own (``CPUSTUDY_CPUS``, rotated by the
    worker's number): two 1-vCPU runs of two tests go to two CPUs, not both to CPU 0 with CPU 1 idle. The set is
    the same, so 2-vCPU runs and the machine's fingerprint are as without it."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    cpus = sorted(os.sched_getaffinity(0))
    if worker.startswith("gw") and count > 1 and "CPUSTUDY_CPUS" not in os.environ:
        turn = int(worker[2:]) * len(cpus) // count
        os.environ["CPUSTUDY_CPUS"] = ",".join(map(str, cpus[turn:] + cpus[:turn]))


_own_cpus_first()


#: This worker's lock files of the run's machine share (``gate``, ``share``) and what it holds: "alone", "shared" or
#: None (:func:`pytest_runtest_protocol`).
_SHARE: dict[str, Any] = {}


def _lock_files() -> tuple[Any, Any] | None:
    """Under pytest-xdist (the README's ``-n 2``), the two files of this run's readers-writer lock, opened once per
    worker: a test marked ``quiet`` holds the machine alone, the other workers' tests waiting for it and it for theirs
    to end; the rest share it (and may hold it alone for a block: :func:`alone`). The gate keeps a waiting ``quiet``
    test from being passed over by tests that start after it. None without pytest-xdist: every test runs alone."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    if "gate" not in _SHARE:
        base = os.path.join(tempfile.gettempdir(), f"cpustudy-tests-{run}")
        _SHARE.update(gate=open(f"{base}.gate", "a"), share=open(f"{base}.share", "a"), held=None)
    return _SHARE["gate"], _SHARE["share"]


def _hold(want: str | None) -> None:
    """Hold the machine as ``want`` says ("alone", "shared"; None: let it go), through the gate."""
    files = _lock_files()
    if files is None or _SHARE["held"] == want:
        return
    gate, share = files
    if _SHARE["held"] is not None:
        fcntl.flock(share, fcntl.LOCK_UN)
        _SHARE["held"] = None
    if want is not None:
        _take(gate, share, want == "alone")
        _SHARE["held"] = want


def _take(gate, share, alone: bool) -> None:
    """Take the machine, alone or shared, through the gate. Holding it alone, wait (a minute at most) until it is not
    busy as a run's stored state is read (``environment.state.busy_share``: the rule that leaves a run out): a worker
    that has run out of tests may still be exiting (a second or two of a CPU)."""
    fcntl.flock(gate, fcntl.LOCK_EX)
    try:
        fcntl.flock(share, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
    finally:
        fcntl.flock(gate, fcntl.LOCK_UN)
    if alone:
        from cpustudy.environment.state import busy_processes, busy_share

        deadline = time.monotonic() + 60  # busy as the tool leaves a run out, not by a rule of the tests' own
        while busy_share({"busy_processes": busy_processes(0.5)}) and time.monotonic() < deadline:
            pass


@pytest.fixture
def alone():
    """``with alone():`` holds the machine alone for a block of a test, as a test marked ``quiet`` does for all of
    it: the block measures speed here, the rest of the test (a container's setup, a report) shares the machine.
    The test's shared hold is let go first, so a ``quiet`` test already waiting at the gate goes before it."""

    @contextlib.contextmanager
    def block():
        before = _SHARE.get("held")
        _hold("alone")
        try:
            yield
        finally:
            _hold(before)

    return block


#: The file whose tests go out first after those that measure alone: the container image's build (3-4 minutes on 2
#: cores with the engine's cache empty) is the longest piece of the suite; started last, as pytest-xdist's loadfile
#: order (files with the most tests first) had it, it ran on alone at the end (57 s past the other worker on a 2-core
#: Zen 3 VM).
FIRST = "test_containers.py"


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: hand the files out in the order collected below
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session, config, items):
    """Files in the order pytest-xdist's loadfile would give them (the most tests first), with the files of ``quiet``
    tests before all and ``FIRST`` next; the tests of a file in their own order, its ``quiet`` tests first. A test that
    holds the machine alone waits for the other worker's test in progress to end and leaves that worker idle while it
    runs: at the start, where every worker begins with such a test, none waits for a long test (a container's build,
    a sweep) to end, and the holds follow one another (on a 2-core Zen 3 VM the waits had been 8-18 s each)."""
    count = collections.Counter(item.path for item in items)
    quiet_files = {item.path for item in items if _quiet(item)}
    items.sort(key=lambda item: (item.path not in quiet_files, item.path.name != FIRST, -count[item.path], str(item.path),
                                 not _quiet(item)))


def _quiet(item) -> bool:
    return item is not None and item.get_closest_marker("quiet") is not None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Every test's set-up (module and session fixtures made for it included), call and tear-down inside its share
    of the machine (:func:`_lock_files`): a ``quiet`` test's runs are measured with no other test running, as a
    user measures, so they are not left out of its speed figures as measured on a busy machine. A ``quiet`` test
    followed by another keeps the machine for it (the other worker's tests wait once, not once each)."""
    _hold("alone" if _quiet(item) else "shared")
    try:
        yield
    finally:
        if not (_quiet(item) and _quiet(nextitem)):
            _hold(None)


@pytest.fixture(scope="session", autouse=True)
def no_skypilot_catalog(tmp_path_factory):
    """Every test (and the session fixtures, made before any test's own fixtures) sees an empty
    SkyPilot folder: prices come from the shipped catalog, not from whatever SkyPilot downloaded to
    this machine's ~/.sky. A test that wants a catalog writes one and points SKY_RUNTIME_DIR at it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKY_RUNTIME_DIR", str(tmp_path_factory.mktemp("sky-runtime-empty")))
        yield


@pytest.fixture
def run_cli(capsys):
    """Run ``cpustudy ARGS`` in-process; returns exit code, stdout and stderr."""

    def run(*args: str) -> Result:
        code = cli.main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "results.sqlite"


@pytest.fixture
def empty_keras_home(tmp_path: Path, monkeypatch) -> Path:
    """A Keras cache with no datasets, so ``--data auto`` means synthetic on every machine."""
    home = tmp_path / "keras-home"
    (home / "datasets").mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(home))
    return home


def run_config(**fields) -> RunConfig:
    """A RunConfig for arithmetic on a run's figures (no worker starts): mnist_mlp at 1 vCPU with
    the given fields."""
    values = dict(workload="mnist_mlp", vcpus=1, cpus=(0,), cpu_list="0", batch_size=32, epochs=4,
                  full_steps_per_epoch=100, samples_per_epoch=3200, flops_per_sample=1, data="synthetic")
    values.update(fields)
    return RunConfig(**values)


@pytest.fixture(scope="session")
def woolf_report(tmp_path_factory):
    """The invented 2017-style logs imported and reported once: (database, report folder)."""
    import reportdb

    return reportdb.woolf_report(tmp_path_factory)


@pytest.fixture(scope="session")
def local_analysis(tmp_path_factory):
    """The analysis of reportdb.make_local_db's CPU-only results, once."""
    import reportdb

    return reportdb.local_analysis(tmp_path_factory)
