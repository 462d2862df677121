"""A sweep request is parsed once: `sweep` and `cloud plan` read the same arguments, and the request
written back as a VM's `sweep` arguments is the same request."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cpustudy.cli.args import sweep_request
from cpustudy.cli.main import build_parser
from cpustudy.measure.request import SweepRequest


def _request(*argv: str) -> SweepRequest:
    return sweep_request(build_parser().parse_args(["sweep", *argv]))


REQUESTS = [
    (),
    ("--workloads", "mnist_mlp,mnist_cnn", "--builds", "tf,tf-onednn", "--vcpus", "1,2", "--repeats", "3",
     "--epochs", "2", "--steps-per-epoch", "20", "--batch-sizes", "64,256", "--precisions", "float32,mixed_bfloat16",
     "--data", "synthetic", "--seed", "7", "--input", "tfdata", "--warmup-steps", "5", "--augment", "model",
     "--validation", "none", "--timeout", "600", "--oversubscribe"),
    ("--data", "learnable", "--target-accuracy", "0.9", "--max-epochs", "4", "--batch-size", "32", "--precision",
     "mixed_bfloat16", "--tuned", "--device", "gpu"),
    ("--target", "val_loss<=0.3", "--seed", "-1", "--calibrate", "--steps-per-epoch", "5", "--data", "learnable"),
]


@pytest.mark.parametrize("argv", REQUESTS)
def test_a_request_written_back_as_sweep_arguments_is_the_same_request(argv):
    request = _request(*argv)
    assert _request(*request.argv()) == request


@pytest.mark.parametrize("argv", REQUESTS)
def test_a_request_written_as_cloud_plan_arguments_is_the_same_grid(argv):
    """What a refused sweep suggests (`cloud plan`, one VM per size): parsed by `cloud plan`, the same request
    but for what each VM decides (its vCPUs, its device) and what only this machine has (a tuning)."""
    request = _request(*argv)
    planned = sweep_request(build_parser().parse_args(
        ["cloud", "plan", "--targets", "gcp:n2-highcpu-8", "--out", "plan", *request.cloud_plan_argv()]))
    assert planned == replace(request, vcpus=None, device="cpu", oversubscribe=False, tuned=False)


def test_cloud_plan_arguments_leave_the_defaults_out():
    assert _request().cloud_plan_argv() == []
    assert _request("--vcpus", "8,16", "--workloads", "mnist_mlp", "--seed", "0", "--oversubscribe",
                    "--epochs", "2").cloud_plan_argv() == ["--workloads", "mnist_mlp", "--epochs", "2"]


def test_duplicate_axis_items_are_one_item_and_an_empty_list_is_refused(run_cli, db, empty_keras_home):
    assert _request("--batch-sizes", "64,64,128", "--precisions", "float32,float32").batch_sizes == (64, 128)
    r = run_cli("sweep", "--vcpus", 1, "--workloads", "mnist_mlp", "--batch-sizes", "64,64,128", "--precisions",
                "float32,float32", "--dry-run", "--db", db)
    assert r.code == 0 and "2 of 2 cell(s) to measure" in r.out
    for bad in (("--precisions", ""), ("--precisions", "float32,fp8"), ("--batch-size", "32", "--batch-sizes", "64")):
        r = run_cli("sweep", "--vcpus", 1, "--workloads", "mnist_mlp", *bad, "--dry-run", "--db", db)
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1, (bad, r.err)
