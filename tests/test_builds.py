"""Builds: recipes, readiness, setup commands, and that a build's switches reach the worker."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
import sys

import pytest

from cpustudy import workloads
from cpustudy.environment import builds, machine
from cpustudy.measure.execute import execute
from cpustudy.measure.spec import RunSpec, plan
from cpustudy.errors import UserError
from cpustudy.store import Store

REQUIRED = {"tf", "tf-eigen", "tf-xla", "tf214-pip", "tf214-avx512", "tf-keras2", "jax", "source",
            "jax-here", "torch-here"}


def test_required_builds_exist_with_their_switches():
    all_ = builds.all_builds()
    assert REQUIRED <= set(all_)
    assert all_["tf-eigen"].env == {"TF_ENABLE_ONEDNN_OPTS": "0"}
    assert all_["tf-xla"].jit_compile is True and all_["tf"].jit_compile is None
    assert all_["tf-keras2"].env["TF_USE_LEGACY_KERAS"] == "1"
    assert all_["jax"].env["KERAS_BACKEND"] == "jax"
    assert "numpy<2" in all_["tf214-pip"].packages and "numpy<2" in all_["tf214-avx512"].packages
    assert "tensorflow-cpu==2.14.0" in all_["tf214-pip"].packages
    assert "intel-tensorflow-avx512==2.14.0" in all_["tf214-avx512"].packages


@pytest.mark.tensorflow
def test_readiness_checks_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("CPUSTUDY_CACHE", str(tmp_path))
    b = builds.load("tf214-avx512")
    ready, why = b.readiness({"avx2", "fma"})
    assert not ready and "AVX512F" in why
    ready, why = b.readiness({"avx512f"})
    assert not ready and "builds setup tf214-avx512" in why
    assert builds.load("tf").readiness(set())[0]


def test_setup_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("CPUSTUDY_CACHE", str(tmp_path))
    cmds = builds.setup_commands(builds.load("tf214-pip"))
    assert cmds[0][1:4] == ["-m", "venv", "--clear"] and cmds[0][-1] == str(tmp_path / "builds" / "tf214-pip")
    assert cmds[-1][-2:] == ["tensorflow-cpu==2.14.0", "numpy<2"]
    overlay = builds.setup_commands(builds.load("tf-keras2"))
    assert overlay[-1][-1].startswith("tf-keras~=") and "{" not in overlay[-1][-1]
    with pytest.raises(UserError, match="--wheel"):
        builds.setup_commands(builds.load("source"))
    wheel = tmp_path / "tensorflow_cpu-2.21.0+march.x86_64_v4-cp311-cp311-linux_x86_64.whl"
    assert builds.setup_commands(builds.load("source"), wheel)[-1][-1] == str(wheel)
    with pytest.raises(UserError, match="only for builds of kind 'wheel'"):
        builds.setup_commands(builds.load("tf214-pip"), wheel)


def test_setup_cli_errors(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CPUSTUDY_CACHE", str(tmp_path))
    r = run_cli("builds", "setup", "source", "--wheel", tmp_path / "missing.whl")
    assert r.code == 2 and "no wheel at" in r.err
    r = run_cli("builds", "setup", "nope")
    assert r.code == 2 and "unknown build" in r.err
    r = run_cli("builds", "setup", "tf214-pip", "--dry-run")
    assert r.code == 0 and "tensorflow-cpu==2.14.0" in r.err and not (tmp_path / "builds").exists()


def test_run_refuses_a_build_that_is_not_set_up(run_cli, db, tmp_path, monkeypatch):
    monkeypatch.setenv("CPUSTUDY_CACHE", str(tmp_path))
    r = run_cli("run", "mnist_mlp", "--vcpus", 1, "--build", "tf214-pip", "--db", db)
    assert r.code == 2 and "builds setup tf214-pip" in r.err and not db.exists()


def test_image_dry_run(run_cli):
    r = run_cli("builds", "image", "cpu-compiled", "--march", "x86-64-v4", "--dry-run")
    assert r.code == 0 and r.out.startswith("docker build") and "MARCH=x86-64-v4" in r.out


@pytest.mark.tensorflow
@pytest.mark.parametrize("build,onednn,xla", [("tf-eigen", 0, 0), ("tf-onednn", 1, 0), ("tf-xla", None, 1)])
def test_build_switches_reach_the_worker(db, build, onednn, xla, empty_keras_home):
    s = Store.open(db)
    mid = s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
    spec = RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, epochs=2, steps_per_epoch=10,
                          data="synthetic", build=build)
    outcome = execute(s, mid, plan(spec))
    assert outcome.status == "ok", outcome.error
    (run,) = s.runs()
    assert run["build"] == build and run["xla"] == xla
    if onednn is not None:
        assert run["onednn"] == onednn
    assert json.loads(run["settings"])["env"] == builds.load(build).env


# -- builds on the interpreter's own frameworks, and readiness that really imports ------------------


def test_here_builds_use_the_interpreters_own_frameworks():
    all_ = builds.all_builds()
    for name, backend in (("jax-here", "jax"), ("torch-here", "torch")):
        b = all_[name]
        assert (b.kind, b.family, dict(b.env), b.packages) == ("project", backend, {"KERAS_BACKEND": backend}, ())
        assert b.python == sys.executable and builds.setup_commands(b) == []


def test_a_project_build_whose_backend_is_missing_is_not_ready():
    b = builds.Build(name="nowhere", description="", kind="project", family="jax",
                     env={"KERAS_BACKEND": "cpustudy_no_such_backend"})
    ready, why = b.readiness(set())
    assert not ready
    assert why == (f"cpustudy_no_such_backend is not importable by {sys.executable} (ModuleNotFoundError: "
                   "No module named 'cpustudy_no_such_backend'): install it, or use a build whose backend "
                   "this interpreter has")
    if importlib.util.find_spec("jax") is None:  # the usual case in the test venv
        ready, why = builds.load("jax-here").readiness(set())
        assert not ready and why.startswith(f"jax is not importable by {sys.executable} (ModuleNotFoundError")


def test_readiness_really_imports_the_backend(tmp_path, monkeypatch):
    """find_spec finds a broken install; only importing it shows that it fails (or crashes)."""
    (tmp_path / "cpustudy_broken_backend").mkdir()
    (tmp_path / "cpustudy_broken_backend" / "__init__.py").write_text(
        "raise ImportError('libbackend.so.1: cannot open shared object file')\n")
    (tmp_path / "cpustudy_crashing_backend").mkdir()
    (tmp_path / "cpustudy_crashing_backend" / "__init__.py").write_text("import os\nos.abort()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    paths = (str(tmp_path), os.environ.get("PYTHONPATH"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    for module in ("cpustudy_broken_backend", "cpustudy_crashing_backend"):
        assert importlib.util.find_spec(module) is not None
    broken = builds.Build(name="broken", description="", kind="project", family="jax",
                          env={"KERAS_BACKEND": "cpustudy_broken_backend"})
    ready, why = broken.readiness(set())
    assert not ready and why == (f"cpustudy_broken_backend is not importable by {sys.executable} (ImportError: "
                                 "libbackend.so.1: cannot open shared object file): install it, or use a build "
                                 "whose backend this interpreter has")
    crashing = builds.Build(name="crashing", description="", kind="project", family="jax",
                            env={"KERAS_BACKEND": "cpustudy_crashing_backend"})
    ready, why = crashing.readiness(set())
    assert not ready and why.startswith("cpustudy_crashing_backend is not importable") and "SIGABRT" in why


@pytest.mark.tensorflow
def test_tf_is_ready_without_importing_tensorflow_here():
    code = ("import sys; from cpustudy.environment import builds; print(builds.load('tf').readiness(set())); "
            "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["(True, 'ready')", "False False"]


def test_builds_list_says_why_a_here_build_is_not_ready(run_cli):
    r = run_cli("builds", "list", "--no-probe", "--format", "json")
    assert r.code == 0, r.err
    rows = {row["build"]: row for row in json.loads(r.out)}
    assert rows["tf"]["ready"] is True
    for name, module in (("jax-here", "jax"), ("torch-here", "torch")):
        if importlib.util.find_spec(module) is None:
            assert rows[name]["ready"] is False
            assert rows[name]["status"].startswith(f"{module} is not importable by")


def test_a_builds_own_env_is_not_a_setting():
    from cpustudy.analysis.runs import setting_tags

    base = {"study": "cpustudy", "workload": "mnist_mlp", "build": "jax-here", "vcpus": 2, "intra_threads": 2,
            "inter_threads": 2, "batch_size": 128, "input_pipeline": "numpy"}

    def label(build: str, **settings) -> str:
        return "+".join([build, *setting_tags({**base, "build": build, "settings": json.dumps(settings)})])

    jax_env = {"KERAS_BACKEND": "jax"}
    assert label("jax-here", env=jax_env, build_env=jax_env) == "jax-here"
    assert label("jax-here", env=jax_env) == "jax-here"  # stored before build_env: the recipe here
    # A recipe this checkout does not have: stored build_env, or else all of its env is the build's own.
    assert label("jax-elsewhere", env=jax_env, build_env=jax_env) == "jax-elsewhere"
    assert label("jax-elsewhere", env=jax_env) == "jax-elsewhere"
    assert label("jax-elsewhere", env={**jax_env, "OMP_NUM_THREADS": "1"}, build_env=jax_env) == \
        "jax-elsewhere+OMP_NUM_THREADS=1"
    # A setting that really differs from the build's env is still shown.
    assert label("tf", env={"OMP_NUM_THREADS": "1"}, build_env={}) == "tf+OMP_NUM_THREADS=1"
    assert label("tf", env={"OMP_NUM_THREADS": "1"}) == "tf+OMP_NUM_THREADS=1"
    assert label("tf-eigen", env={"TF_ENABLE_ONEDNN_OPTS": "1"}, build_env={"TF_ENABLE_ONEDNN_OPTS": "0"}) == \
        "tf-eigen+TF_ENABLE_ONEDNN_OPTS=1"
    assert label("tf-eigen", env={"TF_ENABLE_ONEDNN_OPTS": "0"}, build_env={"TF_ENABLE_ONEDNN_OPTS": "0"}) == \
        "tf-eigen"


def test_a_probe_is_remembered_until_the_interpreter_or_its_packages_change(tmp_path):
    from cpustudy.environment.probe import probe_key

    py = tmp_path / "venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text("")
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    first = probe_key(str(py), None)
    assert first is not None and probe_key(str(py), None) == first  # nothing changed: the same key
    (site / "tensorflow-2.21.0.dist-info").mkdir()
    installed = probe_key(str(py), None)
    assert installed != first  # an install changes it
    assert probe_key(str(py), {"TF_ENABLE_ONEDNN_OPTS": "0"}) != installed  # so do the build's switches
    assert probe_key(str(tmp_path / "missing" / "python"), None) is None  # unreadable: never cached


@pytest.mark.tensorflow
def test_the_second_probe_of_a_build_comes_from_the_cache(tmp_path, monkeypatch):
    from cpustudy.environment.probe import probe_software_cached

    monkeypatch.setenv("CPUSTUDY_CACHE", str(tmp_path / "cache"))
    first = probe_software_cached()
    second = probe_software_cached()
    assert "cached" not in first and second.pop("cached") is True
    assert second == json.loads(json.dumps(first, default=str)) and first.get("tf_version")


def test_the_hugepages_build_puts_the_heap_on_huge_pages_where_the_kernel_offers_them():
    from cpustudy.environment import state

    hp = builds.all_builds()["tf-hugepages"]
    assert hp.kind == "project" and hp.env == {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    mode = state.thp_mode()
    assert state.machine_state(sample_s=0)["transparent_hugepages"] == mode
    libc = platform.libc_ver()
    if mode not in ("madvise", "always") or libc[0] != "glibc" or tuple(map(int, libc[1].split(".")[:2])) < (2, 35):
        pytest.skip(f"huge pages for malloc need THP madvise/always and glibc >= 2.35 (here {mode}, {libc})")
    code = ("n = 96 * 2**20\n"  # 96 MiB from malloc (NumPy would ask for huge pages itself), each page touched
            "b = bytearray(n); b[::4096] = bytes([1]) * len(range(0, n, 4096))\n"
            "print(next(int(l.split()[1]) for l in open('/proc/self/smaps_rollup') if l.startswith('AnonHugePages')))\n")

    def huge_kib(env: dict) -> int:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             env={**os.environ, **env})
        assert out.returncode == 0, out.stderr
        return int(out.stdout)

    plain, with_recipe = huge_kib({"GLIBC_TUNABLES": ""}), huge_kib(dict(hp.env))
    assert with_recipe >= 32 * 1024  # most of the 96 MiB on 2 MiB pages
    assert with_recipe > plain or mode == "always"  # with "always" the kernel gives them unasked
