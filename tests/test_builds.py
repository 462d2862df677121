"""Builds: recipes, readiness, setup commands, and that a build's switches reach the worker."""

from __future__ import annotations

import json

import pytest

from cpustudy import builds, machine, runner, workloads
from cpustudy.errors import UserError
from cpustudy.store import Store

REQUIRED = {"tf", "tf-eigen", "tf-xla", "tf214-pip", "tf214-avx512", "tf-keras2", "jax", "source"}


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


@pytest.mark.parametrize("build,onednn,xla", [("tf-eigen", 0, 0), ("tf-onednn", 1, 0), ("tf-xla", None, 1)])
def test_build_switches_reach_the_worker(db, build, onednn, xla, empty_keras_home):
    s = Store.open(db)
    mid = s.machine_id(machine.collect(use_cpuinfo=False).as_dict())
    spec = runner.RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, epochs=2, steps_per_epoch=2,
                          data="synthetic", build=build)
    outcome = runner.execute(s, mid, runner.plan(spec))
    assert outcome.status == "ok", outcome.error
    (run,) = s.runs()
    assert run["build"] == build and run["xla"] == xla
    if onednn is not None:
        assert run["onednn"] == onednn
    assert json.loads(run["settings"])["env"] == builds.load(build).env
