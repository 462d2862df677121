"""``compare --simulate SCENARIO.json``: the real comparison, planned as the command line asks and measured to its
decision by the real loop, against a simulated measurer that plays a scenario (:mod:`cpustudy.rehearsal.replay`),
trial after trial, each in a database of its own; then every trial's answer beside the truth it could not see.

A scenario (JSON; docs/compare.md "Rehearsal" has the format) gives each local candidate's true seconds per
training sample (and its start-up, and how far its capped-epoch probes read off), each setting's distribution of
whole epochs to the target, the run-to-run noise, the shift between periods and each candidate's own share of it
(interaction). Per trial: one period shift shared by every run (it moves all candidates alike, as a session
does), one interaction draw per candidate, one noise draw per run; a seed's epochs are drawn from its setting's
distribution by the seed and trial (the same seed at the same quantile in every setting). A scenario with
``earlier`` plays a comparison resumed in a later period: those candidates first, alone, in one session; then the
whole comparison with its runs stamped two hours later (``store.CLOCK_OFFSET_S``) and a new period shift. Nothing
trains.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Collection, Iterator, Mapping, Protocol, Sequence, TypedDict

import numpy as np

from cpustudy import precision
from cpustudy.errors import NoSeedReached, UserError
from cpustudy.measure import compare as single
from cpustudy.measure import race
from cpustudy.rehearsal import replay
from cpustudy.analysis.totarget import Comparison
from cpustudy.decision import policy
from cpustudy.measure.compare import CompareRequest, Planned, plan_compare
from cpustudy.measure.execute import Measurer
from cpustudy.measure.spec import Host
from cpustudy.rules import RULES, Rules
from cpustudy.worker import protocol
from cpustudy.worker.protocol import RunConfig

#: The recorded worker events a simulated run's software, data and model events are played from: what one real
#: worker sent for ``compare mnist_mlp --target-accuracy 0.5 --data learnable`` at 1 vCPU, seed 1 (TensorFlow
#: 2.21.0, Keras 3.15.1, an Emerald Rapids 2-core VM, 2026-11-27); the decision loop's tests play it too.
TEMPLATE = Path(__file__).resolve().parent.parent / "data" / "replay-template.jsonl"
#: What the simulated CPU runs natively: every reduced precision (the scenario is the truth, not this CPU).
SIMULATED_FLAGS = frozenset({"sse4_2", "avx", "avx2", "fma", "avx512f", *(f for fs in precision.NATIVE_ON_CPU.values()
                                                                          for f in fs)})
SLOPE = 0.02  # the metric's gain an epoch around the target


class SettingTruth(TypedDict, total=False):
    """A setting's truth in a scenario: the whole epochs a seed needs to the target with their chances ({"1": 0.7,
    "2": 0.3}), and its time a sample against the candidate's (``speed``, 1 where not given)."""

    epochs: dict[str, float]
    speed: float


class TrialAnswer(TypedDict, total=False):
    """One trial's answer beside its truth (a row of ``--simulate --format json``'s ``trials``)."""

    trial: int
    stop: str | None
    choice: str | None
    stated_regret: float | None
    unit: str
    deciding_s: float | None
    same: list[str]
    deciding_trainings: float | None
    truly_best: list[str]
    default_regret: float
    realised_regret: float
    p_best: float | None
    fresh_s: float | None  # None: the fresh training did not reach the target within --max-epochs
    inside: bool


class Bin(TypedDict):
    low: float
    high: float
    trials: int
    stated: float
    truly_best: float


class Summary(TypedDict):
    """What the trials say of the answer's own numbers (``--simulate --format json``'s ``summary``)."""

    trials: int
    stops: dict[str, int]
    mean_stated_regret: float | None
    mean_realised_regret: float | None
    within_indifference: float | None
    said_same: float | None
    decided_over_twice_regret: float | None
    mean_p_best_of_choice: float | None
    p_best_bins: list[Bin]
    choice_truly_best: float | None
    mean_deciding_s: float | None
    fresh_inside: float | None
    fresh_checked: int
    trainings: int
    horizon_measured: float | None
    horizon_default: float | None


class Result(TypedDict):
    trials: list[TrialAnswer]
    summary: Summary


@dataclass(frozen=True)
class Scenario:
    """The truth a rehearsal plays (see the module's docstring)."""

    candidates: dict[str, dict[str, float]]  # place (here:2, here:gpu, here:2 tf-eigen) -> sample_s, startup_s, ...
    settings: dict[str, SettingTruth]  # label ("" for one setting, "bf16 b64") -> epochs {E: p}, speed
    noise: float = 0.06
    interaction: float = 0.0
    period_shift: float = 0.0
    startup_s: float = 4.0
    tracing_s: float = 0.2
    validation_s: float = 0.3
    #: a comparison resumed in a later period: the candidates (scenario places) its first session measured (with
    #: the seeds), 2 hours before the whole comparison is run again (each session its own period shift); empty: one
    #: session
    earlier: tuple[str, ...] = ()
    #: each trial's world drawn about this one, so that a probability can be scored over worlds as a prior draws
    #: them (in one fixed world a posterior is scored against that world alone): ``speed`` (log sd) moves each
    #: candidate's sample_s and each setting's speed, ``epochs`` (true) draws each setting's chances of its listed
    #: epochs from a flat Dirichlet; empty: the scenario itself every trial
    draw: dict[str, float] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str) -> "Scenario":
        try:
            raw = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise UserError(f"--simulate {path}: {exc.__class__.__name__}: {exc}: give a scenario file as "
                            "docs/compare.md's Rehearsal describes") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("candidates"), dict) or not raw["candidates"]:
            raise UserError(f"--simulate {path}: no \"candidates\": give each local candidate's sample_s, e.g. "
                            "{\"candidates\": {\"here:1\": {\"sample_s\": 2e-4}}, \"settings\": {\"\": {\"epochs\": "
                            "{\"1\": 0.7, \"2\": 0.3}}}}")
        stray = sorted(set(raw) - {*_TOP, "candidates", "settings", "earlier", "draw"})
        if stray:
            raise UserError(f"--simulate {path}: unknown key(s) {', '.join(map(repr, stray))}: a scenario takes "
                            f"{', '.join(_TOP)}, candidates, settings, earlier and draw (docs/compare.md, Rehearsal)")
        known = {k: _number(path, k, raw[k], high=_HIGH.get(k)) for k in _TOP if k in raw}
        earlier = raw.get("earlier") or []
        if not isinstance(earlier, list) or not all(isinstance(x, str) for x in earlier):
            raise UserError(f"--simulate {path}: \"earlier\" is a list of candidates' places, e.g. [\"here:1\"]")
        draw = raw.get("draw") or {}
        if not isinstance(draw, dict) or set(draw) - {"speed", "epochs"} or not all(
                isinstance(v, (int, float)) and 0 <= v <= 1 for v in draw.values()):
            raise UserError(f"--simulate {path}: \"draw\" takes \"speed\" (a log sd from 0 to 1, e.g. 0.15) and "
                            "\"epochs\" "
                            "(true or false), e.g. {\"speed\": 0.15, \"epochs\": true}")
        sc = cls(raw["candidates"], raw.get("settings") or {"": {"epochs": {"1": 1.0}}}, **known,
                 earlier=tuple(earlier), draw={k: float(v) for k, v in draw.items()})
        sc.check(path)
        return sc

    def check(self, path: str) -> None:
        unknown = sorted(set(self.earlier) - set(self.candidates))
        if unknown:
            raise UserError(f"--simulate {path}: \"earlier\" names {', '.join(unknown)}, not among the scenario's "
                            "\"candidates\": list the places measured first")
        for name, c in self.candidates.items():
            if isinstance(c, dict):  # a misspelt key named first (not read as a missing sample_s)
                _fields(path, f"candidate {name!r}", {k: c[k] for k in c if k not in _CANDIDATE}, _CANDIDATE)
            if not isinstance(c, dict) or not isinstance(c.get("sample_s"), (int, float)) or isinstance(
                    c.get("sample_s"), bool) or not c["sample_s"] > 0:
                raise UserError(f"--simulate {path}: candidate {name!r} needs a positive \"sample_s\" (its true "
                                "seconds per training sample)")
            _fields(path, f"candidate {name!r}", c, _CANDIDATE, strict={"sample_s"})
        for label, s in self.settings.items():
            dist = s.get("epochs") if isinstance(s, dict) else None
            if not isinstance(dist, dict) or not dist or any(
                    not str(e).isdigit() or int(e) < 1 or isinstance(p, bool) or not isinstance(p, (int, float))
                    or p < 0 for e, p in dist.items()) or abs(sum(dist.values()) - 1) > 0.01:
                raise UserError(f"--simulate {path}: setting {label!r} needs \"epochs\": whole epochs to the target "
                                "with their probabilities, summing to 1, e.g. {\"1\": 0.7, \"2\": 0.3}")
            _fields(path, f"setting {label!r}", s, {"epochs": None, "speed": 0.0}, strict={"speed"})

    def drawn(self, rng: np.random.Generator) -> "Scenario":
        """One trial's world: this scenario, or one drawn about it (``draw``)."""
        if not self.draw:
            return self
        sd = self.draw.get("speed", 0.0)

        def chances(dist: dict[str, float]) -> dict[str, float]:
            return dict(zip(dist, map(float, rng.dirichlet(np.ones(len(dist)))))) if self.draw.get("epochs") else dist

        return replace(self, draw={}, candidates={n: {**c, "sample_s": float(c["sample_s"]) * math.exp(rng.normal(0, sd))}
                                                  for n, c in self.candidates.items()},
                       settings={k: {**v, "speed": float(v.get("speed", 1.0)) * math.exp(rng.normal(0, sd)),
                                     "epochs": chances(v["epochs"])} for k, v in self.settings.items()})

    def epochs(self, label: str, u: float) -> int:
        """The whole epochs a seed at quantile ``u`` needs in setting ``label``."""
        dist = sorted((int(e), float(p)) for e, p in self.settings[label]["epochs"].items())
        total, acc = sum(p for _, p in dist), 0.0
        for e, p in dist:
            acc += p / total
            if u < acc:
                return e
        return dist[-1][0]

    def mean_epochs(self, label: str) -> float:
        dist = self.settings[label]["epochs"]
        return sum(int(e) * float(p) for e, p in dist.items()) / sum(float(p) for p in dist.values())


#: A candidate's fields and the least each takes (None: any).
_CANDIDATE: dict[str, float | None] = {"sample_s": 0.0, "startup_s": 0.0, "projection_bias": -0.9}

#: The most each number of a scenario takes (docs/compare.md, Rehearsal): past these a rehearsal means nothing, and
#: far past them its times overflow (a sample_s of 1e308 ran for 10 minutes in warnings). 10 s a sample is a week for
#: a 60,000-sample epoch; a log sd of 1 moves a time 2.7 times either way; a projection bias of 0.9 (log) reads
#: 2.5 times off; an hour of start-up, tracing or validation.
_HIGH: dict[str, float] = {"sample_s": 10.0, "startup_s": 3600.0, "tracing_s": 3600.0, "validation_s": 3600.0,
                           "noise": 1.0, "interaction": 1.0, "period_shift": 1.0, "projection_bias": 0.9,
                           "speed": 100.0}

#: A scenario's top-level numbers (each 0 or more).
_TOP = ("noise", "interaction", "period_shift", "startup_s", "tracing_s", "validation_s")


def _number(path: str, where: str, value: object, low: float | None = 0.0, strict: bool = False,
            high: float | None = None) -> float:
    """``value`` as a finite number of a scenario, at least ``low`` (above it where ``strict``; None: any) and at most
    ``high`` (None: any), else a one-line refusal naming it and the range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or (
            low is not None and (value <= low if strict else value < low)) or (high is not None and value > high):
        bound = "" if low is None else f" {'above' if strict else 'at least'} {low:g}"
        bound += "" if high is None else f"{' and' if bound else ''} at most {high:g}"
        raise UserError(f"--simulate {path}: {where} is {value!r}: give a number{bound} (docs/compare.md, Rehearsal)")
    return float(value)


def _fields(path: str, where: str, given: Mapping[str, object], allowed: Mapping[str, float | None],
            strict: Collection[str] = ()) -> None:
    """A candidate's or setting's fields: none unknown, each number at least its bound (None: any; ``strict``:
    above it)."""
    stray = sorted(set(given) - set(allowed))
    if stray:
        raise UserError(f"--simulate {path}: {where}: unknown key(s) {', '.join(map(repr, stray))}: it takes "
                        f"{', '.join(allowed)}")
    for k, low in allowed.items():
        if k in given and k != "epochs":
            _number(path, f"{where}: {k!r}", given[k], low, k in strict, _HIGH.get(k))


class Placed(Protocol):
    """A local candidate or a run's configuration: where it runs."""

    @property
    def device(self) -> str: ...
    @property
    def vcpus(self) -> int | None: ...
    @property
    def build(self) -> str: ...


def place(x: Placed, several_builds: bool) -> str:
    """A run's (or a local candidate's) place as a scenario names it: the candidate's name without its setting
    (:func:`cpustudy.measure.compare.local_name`)."""
    return single.local_name(x.device, int(x.vcpus or 1), x.build, several_builds)


def _uniform(*key: object) -> float:
    return (zlib.crc32(":".join(map(str, key)).encode()) % 100_003) / 100_003


@dataclass
class World:
    """One trial's draws: the period's shift and each candidate's own factor."""

    scenario: Scenario
    labels: dict[tuple[str, int], str]  # (precision, batch) -> setting label
    several_builds: bool
    trial: int
    shift: float
    own: dict[str, float]

    def label(self, cfg: RunConfig) -> str:
        return self.labels.get((cfg.precision_policy, int(cfg.batch_size)), "")

    def step_s(self, cfg: RunConfig) -> float:
        where = place(cfg, self.several_builds)
        c = self.scenario.candidates[where]
        bias = float(c.get("projection_bias", 0.0)) if cfg.steps_per_epoch else 0.0
        speed = float(self.scenario.settings[self.label(cfg)].get("speed", 1.0))
        return float(c["sample_s"]) * int(cfg.batch_size) * speed * math.exp(self.own[where] + bias)

    def metric(self, target: float, cfg: RunConfig, epoch: int) -> float:
        need = self.scenario.epochs(self.label(cfg), _uniform(self.trial, cfg.seed))
        return target + SLOPE * (epoch - need + 0.5)

    def startup_s(self, cfg: RunConfig) -> float:
        return float(self.scenario.candidates[place(cfg, self.several_builds)].get("startup_s",
                                                                                   self.scenario.startup_s))

    def billed_s(self, name: str, label: str, samples: int, rng: np.random.Generator | None = None,
                 cap: int | None = None) -> float:
        """A training's true billed seconds on candidate place ``name`` in ``label``: its expectation over later
        periods (the measured period's own move of the candidate, its interaction, is no part of it), or with
        ``rng`` one fresh training in a later period (a new shift, own factor and run noise, a new seed): inf where
        its seed needs more than ``cap`` epochs (--max-epochs: it never reaches the target, as an interval says)."""
        sc, c = self.scenario, self.scenario.candidates[name]
        speed = float(sc.settings[label].get("speed", 1.0))
        if rng is None:
            epochs, factor = sc.mean_epochs(label), 1.0  # a period's own move (interaction) averages out over later ones
        else:
            epochs = sc.epochs(label, float(rng.random()))
            if cap is not None and epochs > cap:
                return math.inf
            factor = math.exp(rng.normal(0, sc.period_shift) + rng.normal(0, sc.interaction) + rng.normal(0, sc.noise))
        per_epoch = samples * float(c["sample_s"]) * speed * factor + sc.validation_s * factor
        return epochs * per_epoch + (sc.tracing_s + float(c.get("startup_s", sc.startup_s))) * factor


def rehearse(request: CompareRequest, scenario: Scenario, trials: int, rules: Rules = RULES,
             progress: Callable[[str], None] | None = None) -> Result:
    """``trials`` comparisons of ``request`` against ``scenario``: every trial's answer and truth, and a summary."""
    if not isinstance(request.target, (int, float)):
        raise UserError("--simulate plays a validation accuracy: give --target-accuracy A, not --target")
    plan = plan_simulated(request)
    plans = plan.plans
    labels = {(p.convergence[0].config.precision_policy, int(p.convergence[0].config.batch_size)): label
              for label, p in plan.entries}
    several_builds = len(plans[0].builds) > 1
    _check_covers(scenario, plans, labels, several_builds)
    template = replay.load_stream(TEMPLATE)
    rows: list[TrialAnswer] = []
    for trial in range(trials):
        if progress:
            progress(f"rehearsal: trial {trial + 1} of {trials}")
        rng = np.random.default_rng([trial, 20261128])
        world = World(scenario.drawn(rng), labels, several_builds, trial, float(rng.normal(0, scenario.period_shift)),
                      {name: float(rng.normal(0, scenario.interaction)) for name in scenario.candidates})
        rows.append(_trial(copy.deepcopy(plan), world, template, rules, rng))  # a trial adds to its plan
    return {"trials": rows, "summary": summary(rows, rules)}


def plan_simulated(request: CompareRequest) -> race.Race:
    """``request`` planned as ``compare`` plans it (a race of one setting or several), on this machine's topology
    with the simulated CPU's flags (:data:`SIMULATED_FLAGS`)."""
    host = replace(Host.here(), cpu_flags=SIMULATED_FLAGS)
    return race.plan(request, lambda r: plan_compare(r, host=host))


def measure_into(plan: race.Race, db: str, measurer: Measurer, rules: Rules) -> Comparison:
    """A plan (:func:`plan_simulated`; changed: point each trial at a copy) measured into ``db`` by ``measurer``
    through the real loop, to its decision."""
    for p in plan.plans:
        p.request = replace(p.request, db=db)
    plan.request = replace(plan.request, db=db)
    return race.measure(plan, say=lambda _: None, measurer=measurer, rules=rules)


def _check_covers(scenario: Scenario, plans: Sequence[Planned], labels: dict[tuple[str, int], str],
                  several_builds: bool) -> None:
    places = {place(c.config, several_builds) for p in plans for c in p.convergence + p.probes}
    missing = sorted(places - set(scenario.candidates))
    if any(c.kind != "here" for p in plans for c in p.candidates):
        raise UserError("--simulate: only local candidates (here:N, here:gpu) are rehearsed: leave cloud and db: "
                        "candidates out")
    if missing:
        raise UserError(f"--simulate: the scenario has no {', '.join(missing)}: give each candidate and where the "
                        "seeds train (--convergence-at) a sample_s")
    stray = sorted(set(scenario.candidates) - places)
    if stray:
        raise UserError(f"--simulate: the scenario's candidate(s) {', '.join(stray)} are not among the comparison's "
                        f"({', '.join(sorted(places))}, with where the seeds train): drop them from the scenario or "
                        "add them to --candidates")
    unknown = sorted(set(labels.values()) - set(scenario.settings))
    if unknown:
        raise UserError(f"--simulate: the scenario has no setting {', '.join(map(repr, unknown))}: give each "
                        "setting's \"epochs\" under \"settings\"")


def _trial(plan: race.Race, world: World, template: list[protocol.Event], rules: Rules, rng: np.random.Generator) -> TrialAnswer:
    sc = world.scenario
    target = float(plan.request.target or 0.0)  # a validation accuracy: checked in rehearse
    sim = replay.Simulated(replay.Truth(
        step_s=world.step_s, metric=lambda cfg, k: world.metric(target, cfg, k), noise=sc.noise,
        session_shift=world.shift, startup_s=sc.startup_s, startup_of=world.startup_s, tracing_s=sc.tracing_s,
        validation_s=sc.validation_s), template, seed=world.trial)
    with tempfile.TemporaryDirectory(prefix="cpustudy-rehearsal-") as tmp:
        db = str(Path(tmp) / "rehearsal.sqlite")
        if sc.earlier:  # the first session: these candidates alone, in this period
            first = copy.deepcopy(plan)
            for p in first.plans:
                p.candidates = [c for c in p.candidates if place(c, world.several_builds) in sc.earlier]
            measure_into(first, db, sim.measurer(), rules)
            sim.truth = replace(sim.truth, session_shift=float(rng.normal(0, sc.period_shift)))
        with _later(2 * 3600.0 if sc.earlier else 0.0):
            try:
                comparison = measure_into(plan, db, sim.measurer(), rules)
            except NoSeedReached:  # an outcome of this trial's draws, not of the rehearsal: counted, the next one runs
                return {"trial": world.trial, "stop": "no seed reached", "choice": None, "stated_regret": None,
                        "unit": "s", "deciding_s": None, "same": [], "deciding_trainings": None, "truly_best": []}
    return _answer(comparison, plan, world, rng)


@contextmanager
def _later(seconds: float) -> Iterator[None]:
    """Runs stamped ``seconds`` later than the wall clock (a later period), then as before."""
    from cpustudy.store import store as store_mod

    was = store_mod.CLOCK_OFFSET_S
    store_mod.CLOCK_OFFSET_S = was + seconds
    try:
        yield
    finally:
        store_mod.CLOCK_OFFSET_S = was


def _answer(comparison: Comparison, plan: race.Race, world: World, rng: np.random.Generator) -> TrialAnswer:
    """One trial's answer beside its truth: each candidate's true expected cost, the best, the choice's realised
    regret, and a fresh training of the choice in a later period against its stated interval."""
    samples = int(plan.plans[0].convergence[0].config.samples_per_epoch)
    where = {c.name: (place(c, world.several_builds), label)
             for label, p in plan.entries for c in p.candidates}
    priced = all(r.usd_per_hour for r in comparison.results)
    true = {r.candidate: world.billed_s(*where[r.candidate], samples) * ((r.usd_per_hour or 0) / 3600 if priced else 1)
            for r in comparison.results}
    best = min(true.values())
    d = comparison.decision
    choice = d.choice if d else None
    row: TrialAnswer = {"trial": world.trial, "stop": d.stop if d else None, "choice": choice,
                           "stated_regret": d.expected_regret if d else None, "unit": "USD" if priced else "s",
                           "deciding_s": d.cost.seconds if d else None, "same": d.same if d else [],
                           "deciding_trainings": d.cost.trainings if d else None,
                           "truly_best": sorted(n for n, v in true.items() if v <= best * (1 + 1e-9))}  # ties: all (best_share)
    if d and d.default in true:
        row["default_regret"] = (true[d.default] - best) / best
    if choice in true:
        r = next(x for x in comparison.results if x.candidate == choice)
        row["realised_regret"], row["p_best"] = (true[choice] - best) / best, r.p_best
        if not r.interval_note and r.time_to_target_s is not None:  # an interval stated; a bound None: never
            cap = int(plan.plans[0].convergence[0].config.epochs)
            fresh = world.billed_s(*where[choice], samples, rng, cap=cap)
            low, high = r.time_low_s if r.time_low_s is not None else math.inf, r.time_high_s or math.inf
            row["fresh_s"] = fresh if math.isfinite(fresh) else None
            row["inside"] = bool(low <= fresh <= high)
    return row


def summary(rows: Sequence[TrialAnswer], rules: Rules) -> Summary:
    """What the trials say of the answer's own numbers: stated against realised regret, how often the choice was
    within the indifference zone of the best, how often the leader was truly best against its P(lowest expected
    cost), and how many fresh trainings in a later period fell inside the stated interval."""
    chosen = [r for r in rows if "realised_regret" in r]
    decided = [r for r in chosen if r["stop"] == policy.DECIDED]
    mean = (lambda xs: float(np.mean(xs)) if xs else None)
    fresh = [r["inside"] for r in chosen if "inside" in r]
    return {
        "trials": len(rows), "stops": {k: sum((r["stop"] or "") == k for r in rows)
                                       for k in sorted({r["stop"] or "" for r in rows})},
        "mean_stated_regret": mean([r["stated_regret"] for r in chosen if r["stated_regret"] is not None]),
        "mean_realised_regret": mean([r["realised_regret"] for r in chosen]),
        "within_indifference": mean([r["realised_regret"] <= rules.indifference for r in chosen]),
        "said_same": mean([len(r.get("same") or []) > 1 for r in rows]),  # two or more named the same within delta
        "decided_over_twice_regret": mean([r["realised_regret"] > 2 * rules.regret for r in decided]),
        "mean_p_best_of_choice": mean([r["p_best"] for r in chosen if r.get("p_best") is not None]),
        "p_best_bins": _bins(chosen),
        "choice_truly_best": mean([best_share(r) for r in chosen]),
        "mean_deciding_s": mean([r["deciding_s"] for r in rows if r["deciding_s"] is not None]),
        "fresh_inside": mean(fresh), "fresh_checked": len(fresh),
        # over rules.trainings trainings, in trainings' time: what measuring cost plus the choice's realised regret,
        # against taking the default unmeasured (its true regret)
        "trainings": rules.trainings,
        "horizon_measured": mean([(r["deciding_trainings"] or 0.0) + rules.trainings * r["realised_regret"]
                                  for r in chosen]),
        "horizon_default": mean([rules.trainings * r["default_regret"] for r in rows if "default_regret" in r]),
    }


def _bins(chosen: Sequence[TrialAnswer]) -> list[Bin]:
    """The choice's P(lowest expected cost) against how often it was truly best, by bins of the stated P."""
    out: list[Bin] = []
    for lo, hi in ((0.0, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01)):
        xs = [(p, r) for r in chosen if (p := r.get("p_best")) is not None and lo <= p < hi]
        if xs:
            out.append({"low": lo, "high": min(hi, 1.0), "trials": len(xs), "stated": float(np.mean([p for p, _ in xs])),
                        "truly_best": float(np.mean([best_share(r) for _, r in xs]))})
    return out


def best_share(row: TrialAnswer) -> float:
    """How far the trial's choice was truly best, scored as P(lowest expected cost) counts it: 1 where it alone
    costs least, 1/k where it ties with k - 1 others (identical candidates), 0 otherwise. A probability that sums
    to 1 over the candidates is scored against a truth that does too: were a tie counted whole for each, two
    identical candidates stated at 0.5 each would look underconfident by half."""
    tied = row["truly_best"]
    return 1.0 / len(tied) if row["choice"] in tied else 0.0


__all__: Sequence[str] = ("Scenario", "measure_into", "plan_simulated", "rehearse", "summary")
