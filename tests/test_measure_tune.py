"""The tuner: trials stored, the best setting confirmed against the default in pairs, what a build pins left alone."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cpustudy.store import Store


@pytest.mark.tensorflow
def test_tune_stores_trials_and_the_best_setting_and_never_keeps_a_switch_the_framework_did_not_apply(
        run_cli, db, empty_keras_home):
    """The tuner for real (its search against scripted times is tested below): cifar10_cnn with its
    augmentation layers in the model (``--augment model``), which XLA cannot compile: Keras turns jit_compile
    off, so "XLA on" is the same program as the default and must never be reported as the tuned setting. No
    rechecks (``--rechecks 0``: which candidates are re-run is the scripted search's below): 6 trials here, not 10."""
    r = run_cli("tune", "cifar10_cnn", "--vcpus", 1, "--epochs", 2, "--steps-per-epoch", 10, "--confirm", 1,
                "--rechecks", 0, "--augment", "model", "--db", db)
    assert r.code == 0, r.err
    assert r.out.startswith("cifar10_cnn tf 1 vCPU(s): ")
    assert "(gain 1.00x)" in r.out or "x the default (range" in r.out  # kept the default, or a confirmed gain
    assert "xla True was not applied by the framework" in r.err
    with Store.read(db) as s:
        runs = s.runs()
        assert runs and all(x["study"] == "tune" for x in runs)
        (tuning,) = [dict(t) for t in s.conn.execute("SELECT * FROM tunings")]
    # 1 vCPU: input pipeline, oneDNN and XLA each have one alternative to the default (the value the
    # default resolved to is not tried again); no thread counts to try.
    assert tuning["workload"] == "cifar10_cnn" and tuning["trials"] >= 4
    assert len(runs) == tuning["trials"]
    default_run = runs[0]
    assert json.loads(default_run["settings"])["tune"]["tag"] == "default"
    trials = [json.loads(x["settings"])["tune"] for x in runs[1:]]
    for dim in ("onednn", "xla"):
        resolved = bool(default_run[dim])
        # The first trial of a switch is the alternative to what the default resolved to (asking for the
        # resolved value would measure the same program). Only if the alternative then wins by noise is
        # the resolved value tried again, against the new best: a different program by then.
        first = next(t["setting"] for t in trials if t["tag"] == f"try {dim}")
        assert first[dim] == (not resolved)
    asked = [x for x in runs if json.loads(x["settings"])["tune"]["setting"]["xla"]]
    assert asked and all(x["xla"] == 0 for x in asked)  # asked for, never applied
    tags = [json.loads(x["settings"])["tune"]["tag"] for x in runs]
    assert not [t for t in tags if t.startswith("recheck")]  # none asked for
    confirms = [t for t in tags if t.startswith("confirm")]
    assert confirms in ([], ["confirm default", "confirm best"]) and tags[len(tags) - len(confirms):] == confirms  # --confirm 1
    assert tuning["default_time_s"] > 0 and tuning["best_time_s"] > 0
    if tuning["gain"] == 1.0:  # the default kept: its time is the default's, whatever a rejected winner measured
        assert tuning["best_time_s"] == pytest.approx(tuning["default_time_s"])
    else:  # a change is stored only with a confirmed gain (the paired test and the 3 % margin)
        assert tuning["gain"] is None or tuning["gain"] >= 1.03
    setting = json.loads(tuning["setting"])
    assert setting["xla"] is None and setting["intra_threads"] == 1
    assert setting["input_pipeline"] in ("auto", "numpy")  # auto: tf.data here
    # A sweep can now use the tuned setting; without a tuning it refuses.
    plan = run_cli("sweep", "--vcpus", 1, "--workloads", "cifar10_cnn", "--epochs", 2, "--steps-per-epoch", 10,
                   "--augment", "model", "--tuned", "--dry-run", "--db", db)
    assert plan.code == 0 and "1 of 1 cell(s) to measure" in plan.out, plan.err
    refused = run_cli("sweep", "--vcpus", 1, "--workloads", "mnist_cnn", "--tuned", "--dry-run", "--db", db)
    assert refused.code == 2 and "no tuning stored" in refused.err


def test_more_vcpus_than_this_machine_is_refused_without_suggesting_an_option_tune_lacks(run_cli, db):
    """`tune mnist_mlp --vcpus 5` on 2 CPUs said '... or --oversubscribe to measure anyway', which tune
    rejects as an unrecognized argument."""
    from cpustudy.environment import machine

    vcpus = machine.read_topology().logical + 3
    r = run_cli("tune", "mnist_mlp", "--vcpus", vcpus, "--db", db)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert f"{vcpus} vCPUs cannot be tuned here" in r.err and "use --vcpus" in r.err
    assert "or --oversubscribe" not in r.err and "tune has no --oversubscribe" in r.err
    assert not db.exists()
    assert "unrecognized" in run_cli("tune", "mnist_mlp", "--vcpus", 1, "--oversubscribe").err


def test_more_vcpus_than_a_cgroup_quota_is_refused_by_tune():
    from cpustudy.environment import machine
    from cpustudy.errors import UserError
    from cpustudy.measure import tune

    topo = machine.CpuTopology(cpus={i: (0, i, 0) for i in range(8)})
    tune.refuse_beyond_this_machine(8, topo, quota=None)
    tune.refuse_beyond_this_machine(4, topo, quota=4.0)
    with pytest.raises(UserError, match=r"allows 2\.5 CPUs; use --vcpus 2 or fewer") as exc:
        tune.refuse_beyond_this_machine(4, topo, quota=2.5)
    assert "or --oversubscribe" not in str(exc.value)


def test_a_tie_in_the_confirmation_pairs_keeps_the_default():
    from cpustudy.measure import tune

    assert tune.confirmed([1.08, 1.10, 1.09])
    assert not tune.confirmed([1.05, 1.10, 0.99])  # a gain of 4.6 % that one pair contradicts: could be noise
    assert not tune.confirmed([1.00, 1.02, 0.92])  # median 1.00: a tie, not a gain
    assert not tune.confirmed([1.02, 1.02, 1.02])  # under the search's 3 % margin
    assert not tune.confirmed([])


def test_tuner_leaves_alone_what_a_build_pins():
    from cpustudy.environment import builds
    from cpustudy.measure import tune

    assert tune.pinned_dimensions(builds.load("tf-eigen")) == ("onednn",)
    assert tune.pinned_dimensions(builds.load("tf-xla")) == ("xla",)
    assert tune.pinned_dimensions(builds.load("tf")) == ()


def test_search_keeps_a_clearly_faster_change_and_skips_what_the_default_resolved_to():
    from cpustudy.measure import tune

    class Scripted(tune.Trials):
        """Trials timed by ``seconds`` instead of workers; oneDNN on and XLA off are what the default
        resolves to (and tf.data for the input), and the framework never applies XLA."""

        def __init__(self, seconds):
            self.said: list[str] = []
            self.tags: list[str] = []
            super().__init__(None, 0, None, 1, "tf", 2, 2, "synthetic", None, self.said.append)
            self.seconds = seconds

        def measure(self, setting, tag):
            t = self.seconds(setting)
            self.trials.append(tune.Trial(setting, t, len(self.trials)))
            self.tags.append(tag)
            return t

        def resolved_switches(self):
            last = self.trials[-1].setting
            return {"onednn": True if last.onednn is None else last.onednn, "xla": False,
                    "input_pipeline": "tfdata" if last.input_pipeline == "auto" else last.input_pipeline}

    def seconds(s):
        return (0.5 if s.input_pipeline == "numpy" else 1.0) * (2.0 if s.onednn is False else 1.0)

    def search(pinned):
        trials = Scripted(seconds)
        trials.measure(default, "default")
        return tune.search(trials, default, tune.dimensions(1, True, None), pinned, rechecks=1), trials

    default = tune.default_setting(1)
    best, trials = search(pinned=set())
    assert best == replace(default, input_pipeline="numpy")
    # NumPy is faster here: measured again beside the best; tf.data, what "auto" resolved to, and oneDNN on
    # (the default's) are never asked for;
    # oneDNN off, slower by far, is not measured again; XLA on is asked for but not applied: not a change.
    assert trials.tags == ["default", "try input_pipeline", "recheck best", "recheck input_pipeline",
                           "try onednn", "try xla"]
    assert trials.said == ["  xla True was not applied by the framework: not a change"]
    best, trials = search(pinned={"input_pipeline"})  # what the build pins is not tried
    assert best == default and trials.tags == ["default", "try onednn", "try xla"]
