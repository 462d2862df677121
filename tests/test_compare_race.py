"""Precision and batch size as compare candidates (cpustudy.measure.settings): each setting converges with
its own seeds, combined with P(cheapest) over all settings, raced."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cpustudy.analysis.billed import Billed
from cpustudy.analysis import compare as combo
from cpustudy.analysis.totarget import Comparison
from cpustudy.errors import UserError
from cpustudy.measure import race


def _sample(epoch_s: float, run_id: int) -> combo.SpeedSample:
    return combo.SpeedSample(Billed(epoch_s, 1.0, 0.5, 3.0), run_id)


def _seeds(*epochs: int, base: int = 100) -> list[combo.SeedResult]:
    return [combo.SeedResult(i + 1, True, e, 10, base + i) for i, e in enumerate(epochs)]


def test_settings_are_every_pair_of_the_two_axes_checked():
    got = race.parse_settings("float32,mixed_bfloat16", "64,256", "float32", None)
    assert [(s.precision, s.batch_size) for s in got] == [("float32", 64), ("float32", 256), ("mixed_bfloat16", 64),
                                                          ("mixed_bfloat16", 256)]
    assert got[2].label(128, True, True) == "bf16 b64" and got[0].label(128, True, False) == "fp32"
    assert race.parse_settings(None, None, "float32", None) == [race.Setting("float32", None)]
    for precisions, batches, fix in (("float32,bfloat", None, "--precisions"), (None, "64,x", "--batch-sizes"),
                                     ("float32,float32", None, "named twice"), (None, "0", "positive")):
        with pytest.raises(UserError, match=fix):
            race.parse_settings(precisions, batches, "float32", None)


def test_the_default_setting_named_must_be_among_the_lists_given_and_only_then():
    from cpustudy.measure.compare import CompareRequest

    def check(r: CompareRequest) -> None:
        race.check_default(r, race.parse_settings(r.precisions, r.batch_sizes, r.precision, r.batch_size))

    base = CompareRequest("mnist_mlp", 0.5, "here:1")
    for ok in (replace(base, batch_sizes="64,256", batch_size=256), replace(base, batch_sizes="64,256"),
               replace(base, batch_size=128), replace(base, precisions="mixed_bfloat16"),  # float32 by default only
               replace(base, precisions="float32,mixed_bfloat16", precision="mixed_bfloat16", precision_named=True)):
        check(ok)
    with pytest.raises(UserError, match="--batch-size 128 is not among --batch-sizes 64,256"):
        check(replace(base, batch_sizes="64,256", batch_size=128))
    with pytest.raises(UserError, match="--precision float32 is not among --precisions mixed_bfloat16"):
        check(replace(base, precisions="mixed_bfloat16", precision_named=True))


def test_each_setting_is_drawn_from_its_own_seeds_and_p_cheapest_spans_them_all():
    # The same speed on both; bf16 converges in 2 epochs, float32 in 4: bf16 is cheaper though no faster an epoch.
    fp32 = (_seeds(4, 4, 4), [combo.CandidateInput("here:2 fp32", [_sample(10.0, 1), _sample(10.5, 2)], 1.0, "")])
    bf16 = (_seeds(2, 2, 2, base=200), [combo.CandidateInput("here:2 bf16", [_sample(10.0, 3), _sample(10.5, 4)], 1.0, "")])
    a, b = combo.combine_groups([fp32, bf16])
    assert a.candidate == "here:2 fp32" and b.candidate == "here:2 bf16"
    assert b.time_to_target_s < a.time_to_target_s and b.cost_usd < a.cost_usd
    assert b.p_cheapest > 0.95 and a.p_cheapest + b.p_cheapest == pytest.approx(1.0)
    assert (a.seeds, b.seeds) == (3, 3)
    # One group is combine itself.
    (alone,) = combo.combine_groups([fp32])
    (same,) = combo.combine(*fp32)
    assert alone == same


def test_round_one_takes_the_settings_in_a_random_order_interleaved():
    class Plan:
        pass

    sp = race.Race(None, [Plan(), Plan(), Plan(), Plan()], ["a", "b", "c", "d"])
    orders = {tuple(label for label, _ in race.shuffled(sp, seed)) for seed in range(1, 9)}
    assert len(orders) > 1 and all(sorted(o) == ["a", "b", "c", "d"] for o in orders)  # random, every setting
    assert race.shuffled(sp, 1) == race.shuffled(sp, 1)  # fixed by the first seed: resumable
    assert race.interleave([[1, 2, 3], ["x"], [10, 20]]) == [1, "x", 10, 2, 20, 3]


def test_the_race_decides_on_four_settings_in_fewer_trainings_than_every_seed_of_every_setting(tmp_path):
    """Four settings, bf16 b256 truly needing half the epochs, against a simulated measurer: the race picks it
    after fewer seeds than --seeds x settings, says why it stopped and what it cost, and labels each seed with its
    setting."""
    import simloop

    names = ["fp32 b64", "fp32 b256", "bf16 b64", "bf16 b256"]
    slow = lambda s: 1.6 + 0.8 * simloop.uniform(s)  # noqa: E731  2 or 3 epochs
    truth = simloop.Truth({k: 1.7e-4 for k in names}, {**{k: slow for k in names},
                                                        "bf16 b256": lambda s: 0.5 + 0.4 * simloop.uniform(s)})
    out, _ = simloop.run(truth, tmp_path / "race.sqlite", trial=1)
    d = out.decision.as_dict()
    assert d["choice"] == "here:2 bf16 b256" and d["stop"] != "limit", out.steps
    assert d["cost"]["seeds"] < 3 * 4 and any(s.startswith("the race trained") for s in out.steps)
    assert {s.setting for s in out.seeds} == set(names)
    assert sum(r.p_best for r in out.results) == pytest.approx(1.0)


def test_the_loop_reads_the_store_once_and_then_each_run_it_measured_by_its_id(tmp_path, monkeypatch):
    """Every comparison after the first measurement is built from what the loop knows (``store.Known``): the runs and
    epochs are read once when measuring starts, then only each measured run (and its epochs) by its id, however many
    steps the decision takes."""
    import simloop

    from cpustudy.store import Store

    reads: list[tuple[str, object]] = []

    def counted(name: str):
        was = getattr(Store, name)

        def read(self, *args, **kw):
            reads.append((name, kw.get("run_ids", args[0] if args else None)))
            return was(self, *args, **kw)
        return read

    for name in ("runs", "epochs"):
        monkeypatch.setattr(Store, name, counted(name))
    names = ["fp32 b64", "fp32 b256", "bf16 b64", "bf16 b256"]
    slow = lambda s: 1.6 + 0.8 * simloop.uniform(s)  # noqa: E731
    truth = simloop.Truth({k: 1.7e-4 for k in names}, {**{k: slow for k in names},
                                                        "bf16 b256": lambda s: 0.5 + 0.4 * simloop.uniform(s)})
    out, _ = simloop.run(truth, tmp_path / "race.sqlite", trial=1)
    during = list(reads)
    with Store.read(tmp_path / "race.sqlite") as s:
        measured = [[r["id"]] for r in s.runs()]
    assert sum(step.startswith("added") for step in out.steps) >= 2  # decisions after round 1, each from what it knew
    assert [ids for what, ids in during if what == "runs"] == [None, *measured]
    assert [ids for what, ids in during if what == "epochs"] == [None, *measured]


def test_a_race_that_cannot_pay_over_its_trainings_is_not_started_and_names_the_default(tmp_path, monkeypatch):
    """Four settings, ten trainings to serve: deciding can save at most 3 trainings' time (30 % of each, the rules'
    assumption) and round 1 alone takes 4: nothing is measured (not even which kernels bf16 runs on, a TensorFlow
    process of its own), the default is the answer and the line says what would make measuring pay. With 100
    trainings to serve the same race runs."""
    import simloop

    from cpustudy.decision import policy
    from cpustudy.measure import race
    from cpustudy.rules import RULES, Rules
    from cpustudy.store import Store

    stop = policy.before_measuring(4.0, "here:2 fp32 b64", RULES)
    assert stop is not None and stop.kind == "not worth it" and "--trainings 14 or more" in stop.why
    assert policy.before_measuring(2.0, "x", RULES) is None  # two settings: 2 trainings' time can pay
    truth = simloop.Truth({k: 1.7e-4 for k in ("fp32 b64", "fp32 b256", "bf16 b64", "bf16 b256")},
                          {k: (lambda s: 1.5) for k in ("fp32 b64", "fp32 b256", "bf16 b64", "bf16 b256")})
    read: list[int] = []
    monkeypatch.setattr(race, "reduced_precision_kernels", lambda *a, **k: read.append(1) or [])
    out, _ = simloop.run(truth, tmp_path / "ten.sqlite", rules=RULES)
    assert read == [] and out.wall_s > 0  # refused before the kernels are read; its time still said
    d = out.decision.as_dict()
    assert (d["stop"], d["choice"], d["default"]) == ("not worth it", "here:2 fp32 b64", "here:2 fp32 b64")
    assert d["cost"]["seeds"] == 0 and all(r.speed_runs == 0 for r in out.results) and len(out.results) == 4
    # The default is the setting --precision and --batch-size name, wherever the lists put it (it was the first listed)
    for batch, default in ((64, "here:2 fp32 b64"), (None, "here:2 fp32 b256")):
        listed, _ = simloop.run(truth, tmp_path / f"listed-{batch}.sqlite", rules=RULES, batch_size=batch,
                                precisions="mixed_bfloat16,float32", batch_sizes="256,64")
        assert listed.decision.as_dict()["default"] == default
    with Store.read(tmp_path / "ten.sqlite") as store:
        assert store.runs() == []
    many, _ = simloop.run(truth, tmp_path / "hundred.sqlite", rules=Rules(trainings=100))
    assert read == [1]  # measured: the kernels read once, before round 1
    assert many.decision.cost.seeds >= 4 and many.decision.stop != "not worth it" or \
        "before measuring" not in many.decision.why
    # One setting is a race of one whose round 1 is its planned seeds: four of them take 4 trainings' time, more
    # than 10 trainings can win back; three (3.0, the most it can) are measured.
    one = dict(precisions=None, batch_sizes=None, batch_size=64, candidates="here:1,here:2")
    four, _ = simloop.run(truth, tmp_path / "four.sqlite", rules=RULES, seeds=4, **one)
    assert four.decision.stop == "not worth it" and "first round alone takes 4" in four.decision.why
    three, _ = simloop.run(truth, tmp_path / "three.sqlite", rules=RULES, seeds=3, **one)
    assert three.decision.cost.seeds == 3 and "before measuring" not in three.decision.why
    # One candidate has nothing to decide: its four seeds are the interval asked for, measured (before, refused)
    alone, _ = simloop.run(truth, tmp_path / "alone.sqlite", rules=RULES, seeds=4, **{**one, "candidates": "here:2"})
    assert alone.decision.cost.seeds == 4 and "before measuring" not in alone.decision.why


@pytest.mark.tensorflow
def test_compare_races_two_precisions_on_a_real_model(run_cli, tmp_path):
    """Two precisions (bf16 only where this CPU runs it natively), a tiny model on learnable data."""
    from cpustudy.environment import machine

    flags = set(machine.collect(use_cpuinfo=False).flags)
    if not flags & {"avx512_bf16", "amx_bf16"}:
        pytest.skip("this CPU has no native bfloat16: the comparison is refused here (tested below)")
    db = str(tmp_path / "race.sqlite")
    r = run_cli("compare", "mnist_mlp", "--target-accuracy", "0.5", "--max-epochs", "3", "--candidates", "here:1",
                "--precisions", "float32,mixed_bfloat16", "--seeds", "1", "--repeats", "1", "--max-trainings", "0",
                "--data", "learnable", "--format", "json", "--db", db)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    names = [c["candidate"] for c in out["candidates"]]
    assert names == ["here:1 fp32", "here:1 bf16"]
    assert any("the race trained" in s for s in out["settling"])
    assert all(c["seeds"] == 1 for c in out["candidates"])
    # Which kernels bf16 ran on, in oneDNN's own words (AMX on an AMX CPU).
    (kernel,) = [n for n in out["notes"] if n.startswith("mixed_bfloat16 on build tf")]
    assert ("through AMX" in kernel) == bool(flags & {"amx_bf16"}) or "not known" in kernel


def test_a_race_over_bfloat16_is_refused_in_one_line_on_a_cpu_without_it(run_cli, tmp_path, cpu_without_bf16):
    """On a CPU without bfloat16 (Zen 3, Ice Lake, Cascade Lake: this one's flags read without it) compare refuses
    --precisions with mixed_bfloat16 before anything runs or is stored; float32 alone is planned."""
    assert cpu_without_bf16 and not cpu_without_bf16 & {"avx512_bf16", "amx_bf16"}
    db = tmp_path / "race.sqlite"
    args = ("compare", "mnist_mlp", "--target-accuracy", "0.5", "--max-epochs", "3", "--candidates", "here:1",
            "--data", "learnable", "--db", db)
    r = run_cli(*args, "--precisions", "float32,mixed_bfloat16")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "--precision mixed_bfloat16:" in r.err and "use --precision float32" in r.err
    assert not db.exists()
    import simloop

    from cpustudy.measure.compare import plan_compare

    sp = race.plan(simloop.request(db, precisions="float32"), plan_compare)  # batch sizes its axis
    assert sp.labels == ["b64", "b256"] and not db.exists()


def test_onednn_implementation_names_in_words():
    from cpustudy.environment.kernels import path_of

    assert path_of("brg_matmul:avx10_1_512_amx") == "AMX" and path_of("brgemm:avx512_core_amx") == "AMX"
    assert path_of("brg_matmul:avx512_core_bf16") == "AVX-512 BF16"
    assert path_of("gemm:jit") == "no AMX or AVX-512 bfloat16 kernel (gemm:jit)"


@pytest.mark.tensorflow
def test_which_kernels_a_reduced_precision_runs_on_is_read_once_per_build(tmp_path, monkeypatch):
    """The build's answer is remembered, where oneDNN names a kernel and where it reports no matmul (oneDNN off, as
    TensorFlow leaves it on a CPU without AVX-512): a race on such a CPU does not start TensorFlow again to learn it."""
    from cpustudy.environment.kernels import reduced_precision_path

    monkeypatch.setenv("CPUSTUDY_CACHE", str(tmp_path))
    first = reduced_precision_path("mixed_bfloat16")
    assert ("impl" in first) != ("error" in first) and "cached" not in first, first
    assert "did not finish" not in str(first.get("error")) and "failed" not in str(first.get("error"))
    assert reduced_precision_path("mixed_bfloat16") == {**first, "cached": True}


def test_a_model_files_batch_sizes_are_configurations_of_their_own():
    from cpustudy.analysis.runs import several_batches

    two = [{"workload": "my_model", "batch_size": 64}, {"workload": "my_model", "batch_size": 256}]
    tags = several_batches(two)
    assert [tags[id(r)] for r in two] == [["b64"], ["b256"]]
    assert several_batches([{"workload": "my_model", "batch_size": 64}]) == {}
    assert several_batches([{"workload": "mnist_mlp", "batch_size": 64}, {"workload": "mnist_mlp", "batch_size": 32}]) == {}


def test_the_noise_never_pools_runs_of_different_epochs():
    """A compare's 2-epoch probes beside its seeds' 6-epoch trainings of one configuration: their totals differ
    3x by design, which is no noise of the machine."""
    import pandas as pd

    from cpustudy.analysis.holdup import machine_noise

    rows = []
    for epochs, t in [(2, 20.0), (2, 21.0), (2, 19.5), (6, 60.0), (6, 63.0), (6, 58.5)]:
        rows.append({"study": "cpustudy", "workload": "w", "device": "cpu", "vcpus": 2, "recipe": "tf", "tags": "",
                     "platform": "", "machine": "m", "epochs": epochs, "batch_size": 64,
                     "precision_policy": "float32", "total_time_s": t, "machine_state": None,
                     "settings": '{"session": "s1"}'})
    noise = machine_noise(pd.DataFrame(rows))
    assert "repeats" in noise.source and noise.within < 0.1, noise  # pooled across the epochs: ~0.5


def test_a_seed_is_stopped_once_its_setting_cannot_come_in_under_the_leaders_upper_bound():
    # per epoch 10 + 0.5 validation = 10.5 s, once 1 + 3 = 4 s; at 1 USD a second.
    fast = combo.CandidateInput("here:1 b256", [_sample(10.0, 1), _sample(12.0, 2)], 3600.0, "")
    assert combo.censor_after([fast], 30.0, 10, priced=True) == 2  # 4 + 2 x 10.5 = 25 <= 30 < 4 + 3 x 10.5
    assert combo.censor_after([fast], 30.0, 10, priced=False) == 2  # the same in seconds, unpriced
    assert combo.censor_after([fast], 1000.0, 10, priced=True) is None  # every epoch up to the cap could still win
    assert combo.censor_after([fast], 1.0, 10, priced=True) == 1  # at least one epoch: nothing is learnt without one
    unpriced = combo.CandidateInput("here:1 b256", [_sample(10.0, 1)], None, "no price")
    assert combo.censor_after([unpriced], 30.0, 10, priced=True) is None  # no cost to bound
    assert combo.censor_after([], 30.0, 10, priced=False) is None


def test_a_censored_seed_counts_at_its_earliest_not_as_never_reaching():
    run = {"id": 7, "status": "ok", "seed": 2, "epochs": 6, "batch_size": 64, "vcpus": 2,
           "settings": json.dumps({"give_up_after": 1})}
    epochs = [{"epoch": 1, "val_accuracy": 0.4, "steps": 10}]
    s = combo.seed_result(run, epochs, 0.9)
    assert s is not None and not s.reached and s.censored_after == 1 and s.earliest == 2
    # Not told to stop: the same epoch is a seed that did not reach the target in its epochs (no censoring).
    plain = combo.seed_result({**run, "settings": "{}", "epochs": 1}, epochs, 0.9)
    assert plain is not None and plain.censored_after is None and plain.earliest is None
    # In the draws a censored seed is a seed reaching at 2 epochs, the earliest it could: never "not reached".
    import numpy as np

    from cpustudy.analysis.model import epochs_of

    censored_draws = epochs_of([*_seeds(1), s], 4000, np.random.default_rng(0))
    reached_draws = epochs_of(_seeds(1, 2), 4000, np.random.default_rng(0))
    assert censored_draws is not None and reached_draws is not None
    assert np.isfinite(censored_draws.new).all() and (censored_draws.new == reached_draws.new).all()
    assert (censored_draws.mean == reached_draws.mean).all()


def test_the_race_stops_a_trailing_settings_seed_and_not_the_leaders():
    from cpustudy import workloads
    from cpustudy.measure.spec import RunSpec, plan
    from cpustudy.measure.sweep import Cell

    cfg = plan(RunSpec(workload=workloads.get("mnist_mlp"), vcpus=1, epochs=6, data="learnable",
                       target_accuracy=0.9))
    cell = Cell(cfg.with_(cell_key="k"))

    def result(name: str, cost: float, high: float, p: float) -> combo.CandidateResult:
        return combo.CandidateResult(name, 10.0, 8.0, 12.0, cost, 0.8 * cost, high, p, None, None, 1.0, 2, 3600.0,
                                     "", [], [])

    class Plan:
        def __init__(self, *names: str) -> None:
            self.candidates = [type("C", (), {"name": n})() for n in names]

    sp = race.Race(None, [Plan("a fp32"), Plan("a bf16")], ["fp32", "bf16"])
    groups = [("fp32", [], [combo.CandidateInput("a fp32", [_sample(10.0, 1)], 3600.0, "")]),
              ("bf16", [], [combo.CandidateInput("a bf16", [_sample(5.0, 2)], 3600.0, "")])]
    comparison = Comparison("w", 0.9, [result("a fp32", 40.0, 50.0, 0.1), result("a bf16", 20.0, 30.0, 0.9)], [],
                            groups=groups)
    stopped, why = race.censored(sp, "fp32", cell, comparison)
    assert stopped.config.give_up_after == 2 and stopped.key == cell.key  # the same seed's cell, told to stop
    assert "stops after 2 epoch(s)" in why and "a bf16" in why
    same, none = race.censored(sp, "bf16", cell, comparison)  # the leader's own setting trains to the end
    assert same is cell and none == ""
