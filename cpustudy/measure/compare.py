"""``cpustudy compare``: which candidate machine trains a model to a target accuracy cheapest, which
fastest, and how sure that is.

What it measures, on this machine, into the database (each run an ordinary stored run, so an interrupted
comparison resumes from what it stored, and every later comparison reuses it):

* **convergence**: the workload trained to the target with ``--seeds`` different seeds, in full
  epochs, at ``--convergence-at`` (default: all of this machine's vCPUs), one after another;
* **speed** of each local candidate (``here:N``): capped epochs (``--probe-steps``, at least 100, as the
  calibration checked), ``--repeats`` fresh workers, interleaved with the convergence runs and with each
  other. The convergence runs count as speed repeats of the candidate they ran on.

Cloud candidates become a plan of probe jobs (``cloud plan``: the same capped epochs on the instance
type), whose own cost is estimated and held against ``--probe-budget`` before anything is written; their
runs join the comparison once fetched into the database (``cloud launch``, ``cloud fetch``). Runs stored
from another machine count too (``db:MACHINE:VCPUS``). The combination is :mod:`cpustudy.analysis.compare`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Protocol, Sequence

from cpustudy import identity, precision, targets
from cpustudy.analysis import compare as combo
from cpustudy.analysis import recalibration, totarget
from cpustudy.analysis.billed import Billed, to_target_s
from cpustudy.analysis.holdup import busy_reason
from cpustudy.analysis.runs import PERIOD_GAP_S, ago_s, session_of
from cpustudy.analysis.totarget import MIN_PROBE_STEPS, Candidate, Comparison, Rented, speed_samples
from cpustudy.decision import policy
from cpustudy.environment import machine as machine_mod
from cpustudy.errors import NoSeedReached, UserError
from cpustudy.identity import Configuration
from cpustudy.measure.execute import Measurer, RunOutcome, execute
from cpustudy.measure.spec import Host, RunSpec, plan
from cpustudy.measure.sweep import Cell, cell_key, pending
from cpustudy.names import place_name, split_list
from cpustudy.prices import Catalog
from cpustudy.rules import RULES, Rules
from cpustudy.store import Known, Readable, Store, default_path
from cpustudy.store.rows import MachineRow, RunRow
from cpustudy.workloads import Workload, get

PROBE_EPOCHS = 2  # the first (tracing) is warm-up; the second is timed


class CloudTargets(Protocol):
    """What reads a cloud candidate (``cpustudy.cloud.targets``, handed down by the command: measuring never imports
    ``cloud/``)."""

    @property
    def CLOUDS(self) -> tuple[str, ...]: ...

    def one(self, item: str, catalog: Catalog, region: str | None, flag: str = ...) -> CloudPlace: ...


class CloudPlace(Rented, Protocol):
    """A cloud candidate's place as read (``cloud.targets.CloudTarget``): what names and sizes it (and prices it)."""

    @property
    def cloud(self) -> str: ...
    @property
    def instance_type(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def vcpus(self) -> int: ...


@dataclass(frozen=True)
class CompareRequest:
    workload: str
    target: float | None  # --target-accuracy
    candidates: str
    seeds: int = 3
    first_seed: int = 1
    max_epochs: int | None = None
    builds: str = "tf"
    gpu_builds: str = "jax-here"
    batch_size: int | None = None
    precision: str = precision.DEFAULT
    data: str = "auto"
    repeats: int = 2
    probe_steps: int = MIN_PROBE_STEPS
    convergence_at: str = "here:all"
    deadline_s: float | None = None
    budget_usd: float | None = None
    probe_budget_usd: float | None = None
    spot: bool = True
    family: str | None = None
    prices: str | None = None
    probe_plan: str | None = None  # the cloud probes' plan folder
    workdir: str | None = None  # the checkout the probe VMs install, as a wheel built from it (None: this checkout)
    db: str | None = None
    timeout: int | None = None
    max_trainings: float | None = None  # decide within this many trainings' time (None: the rules'; 0: the fixed plan)
    target_text: str | None = None  # --target METRIC=VALUE, instead of --target-accuracy
    checks: int = 0  # --check N: fresh trainings of the decision's choice, where local, against its interval
    precisions: str | None = None  # --precisions: several settings raced (``measure.race``)
    batch_sizes: str | None = None  # --batch-sizes, likewise
    precision_named: bool = False  # --precision given (not its default): with --precisions, it must be among them

    @property
    def goal(self) -> float | targets.Target:
        """The target: a validation accuracy, or ``--target``'s (a ``targets.Target``)."""
        if self.target_text:
            return targets.parse(self.target_text)
        if self.target is None:
            raise UserError("give the target as --target-accuracy A or as --target METRIC=VALUE (val_auc=0.8)")
        return self.target

    @property
    def fixed_plan(self) -> bool:
        """``--max-trainings 0``: the planned seeds and repeats only, nothing decided on the way."""
        return self.max_trainings == 0

    def budget(self, settings: int, rules: Rules) -> float:
        """The trainings' time the decision may spend in all: ``--max-trainings``, else the rules' budget for
        ``settings`` settings (``budget_trainings`` and ``budget_per_setting`` for each past the first)."""
        if self.max_trainings is not None:
            return float(self.max_trainings)
        return rules.budget_trainings + rules.budget_per_setting * max(0, settings - 1)

    @property
    def goal_words(self) -> str:
        return combo.target_words(self.goal)

    def check(self) -> None:
        if (self.target is None) == (self.target_text is None):
            raise UserError("give the target as --target-accuracy A or as --target METRIC=VALUE (val_auc=0.8), one of "
                            "them")
        if self.target is not None and not 0 < self.target <= 1:
            raise UserError(f"--target-accuracy {self.target:g}: give a validation accuracy above 0 and at most 1")
        _ = self.goal  # a malformed --target: one line
        if self.seeds < 1:
            raise UserError(f"--seeds {self.seeds}: give at least 1 seed (3 by default, more as settling needs; MLPerf uses 3-10)")
        if not 0 <= self.first_seed <= 2**32 - self.seeds:  # else spec.py's "--seed": a flag compare does not have
            raise UserError(f"--first-seed {self.first_seed}: give a whole number from 0 to {2**32 - self.seeds} (the "
                            f"seeds S to S+{self.seeds - 1} are each at most {2**32 - 1})")
        if self.repeats < 1:
            raise UserError(f"--repeats {self.repeats}: give at least 1 speed repeat per candidate")
        if not 0 <= self.checks <= 100:
            raise UserError(f"--check {self.checks}: give 0 (no check) up to 100 fresh trainings")
        if self.max_trainings is not None and not 0 <= self.max_trainings < 1000:
            raise UserError(f"--max-trainings {self.max_trainings:g}: give 0 (no settling) or a number of trainings, "
                            "e.g. 8")
        if self.probe_steps < MIN_PROBE_STEPS:
            raise UserError(f"--probe-steps {self.probe_steps}: give at least {MIN_PROBE_STEPS} (the projection "
                            f"from capped epochs was checked from {MIN_PROBE_STEPS} steps on)")
        if self.db:  # before anything is probed or measured, not after
            folder = Path(self.db).parent
            if str(folder) and not folder.is_dir():
                raise UserError(f"--db {self.db}: folder {folder} does not exist: create it (mkdir -p {folder}) or "
                                "pass another --db path")


# --- candidates -----------------------------------------------------------------------------------------------


def _here_vcpus(item: str, rest: str, topo: machine_mod.CpuTopology) -> int:
    """The vCPUs of ``here:N`` or ``here:all`` (``rest``: what follows ``here:``), checked against this machine."""
    if rest == "all":
        return topo.logical
    if not (rest.isdigit() and int(rest) > 0):
        raise UserError(f"--candidates: {item!r}: write here:N (vCPUs of this machine), here:all or here:gpu")
    if int(rest) > topo.logical:
        raise UserError(f"--candidates: {item}: this machine has {topo.logical} vCPUs: give here:1 to "
                        f"here:{topo.logical}, or here:all")
    return int(rest)


def parse_candidates(text: str, builds: Sequence[str], topo: machine_mod.CpuTopology, catalog: Catalog,
                     machines: Sequence[MachineRow], *, clouds: CloudTargets | None = None,
                     gpu_build: str = "jax-here") -> list[Candidate]:
    """``--candidates``: ``here:N``/``here:all``, ``here:gpu`` (this machine's GPU, with ``gpu_build``, fed by
    all its vCPUs), ``CLOUD:INSTANCE_TYPE``, ``CLOUD:GPU:1`` or ``db:MACHINE:VCPUS`` (a fingerprint prefix or
    host name of a machine in the database; ``gpu`` for its GPU runs), each with every CPU build of ``builds``.
    Every name is checked before anything runs.
    ``clouds``: what reads a cloud target (``cpustudy.cloud.targets``, handed down by the caller above both
    rooms); without it a cloud candidate is refused."""
    known_clouds = clouds.CLOUDS if clouds is not None else ("gcp", "aws", "azure")

    items = split_list(text, "--candidates", "here:1,here:2,gcp:c4d-highcpu-8,gcp:T4:1")
    if not items:
        raise UserError("--candidates: name at least one, e.g. here:1,here:all,gcp:c4d-highcpu-8,gcp:T4:1")
    out: list[Candidate] = []
    several = len(builds) > 1
    for item in items:
        head, _, rest = item.partition(":")
        head = head.lower()
        if head == "here" and rest.lower() == "gpu":
            if not machine_mod.gpu_names():
                raise UserError(f"--candidates: {item}: no GPU here (nvidia-smi lists none): drop it, or compare "
                                "a GPU measured elsewhere as db:MACHINE:gpu or a cloud one as CLOUD:GPU:1")
            out.append(Candidate(local_name("gpu", topo.logical, gpu_build), "here", gpu_build, vcpus=topo.logical,
                                 device="gpu"))
        elif head == "here":
            v = _here_vcpus(item, rest, topo)
            out += [Candidate(local_name("cpu", v, b, several), "here", b, vcpus=v) for b in builds]
        elif head == "db":
            stored = [_stored(item, rest, machines, b, several) for b in builds]
            out += stored[:1] if stored[0].device == "gpu" else stored  # a GPU's runs: one candidate, not per CPU build
        elif head in known_clouds:
            if clouds is None:
                raise UserError(f"--candidates: {item}: a cloud candidate is not taken here (--simulate rehearses "
                                "local candidates only): leave it out")
            t = clouds.one(item, catalog, None, "--candidates")  # in any region
            instance = f"{t.cloud}:{t.instance_type}"
            if t.device == "gpu":
                out.append(Candidate(item, "cloud", "gpu", vcpus=t.vcpus, device="gpu", target=t, instance=instance,
                                     asked=item))
            else:
                out += [Candidate(item + (f" {b}" if several else ""), "cloud", b, vcpus=t.vcpus, target=t,
                                  instance=instance, asked=item) for b in builds]
        else:
            raise UserError(f"--candidates: {item!r}: write here:N, here:all, here:gpu, CLOUD:INSTANCE_TYPE "
                            "(gcp:c4d-highcpu-8, aws:c7i.4xlarge), CLOUD:GPU:1 (gcp:T4:1) or db:MACHINE:VCPUS")
    names = [c.name for c in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"--candidates: {', '.join(twice)} named twice (here:all is here:{topo.logical}): give "
                        "each once")
    return out


def local_name(device: str, vcpus: int, build: str, several_builds: bool = False) -> str:
    """A local candidate's name: ``here:gpu``, ``here:2``, or ``here:2 tf-eigen`` where several builds are compared."""
    if device == "gpu":
        return "here:gpu"
    return f"here:{vcpus}" + (f" {build}" if several_builds else "")


def _stored(item: str, rest: str, machines: Sequence[MachineRow], build: str, several: bool) -> Candidate:
    name, _, vcpus = rest.rpartition(":")
    if not name or not (vcpus.isdigit() or vcpus == "gpu"):
        raise UserError(f"--candidates: {item!r}: write db:MACHINE:VCPUS (or db:MACHINE:gpu), MACHINE a "
                        "fingerprint prefix or host name from `cpustudy results`")
    found = [m for m in machines if m["fingerprint"].startswith(name) or m.get("hostname") == name]
    if len(found) != 1:
        listed = ", ".join(f"{m['fingerprint'][:12]} ({m.get('cpu_model') or '?'}, {m.get('hostname') or '?'})"
                           for m in machines) or "none"
        what = "matches several machines" if found else "names no machine in the database"
        raise UserError(f"--candidates: {item}: {name!r} {what}; the database has {listed}")
    fp = found[0]["fingerprint"]
    if vcpus == "gpu":
        return Candidate(item, "stored", "gpu", device="gpu", machine=fp)
    return Candidate(item + (f" {build}" if several else ""), "stored", build, vcpus=int(vcpus), machine=fp)


# --- the measurements -----------------------------------------------------------------------------------------


@dataclass
class Planned:
    """Everything checked and planned before the database is touched."""

    request: CompareRequest
    workload: Workload
    candidates: list[Candidate]
    convergence: list[Cell]  # one per seed
    probes: list[Cell]  # per local candidate, per repeat
    fingerprint: str
    machine: machine_mod.Machine
    catalog: Catalog
    builds: list[str]
    host: Host | None = None
    convergence_vcpus: int = 1
    cap: int | None = None  # the speed probes' steps per epoch (None: whole epochs)

    @property
    def reference(self) -> Configuration:
        """The configuration the comparison answers for: its first seed's (workload, batch size, precision,
        switches); every speed sample is held to it in the identity's ``setting`` view."""
        return Configuration.of(self.convergence[0].config)

    def seed_cell(self, seed: int, c: Candidate | None = None) -> Cell:
        """The convergence run of one seed: trained to the target in full epochs (on local candidate ``c``: at
        its vCPUs and build; else where the seeds train)."""
        vcpus, build = (int(c.vcpus or 1), c.build) if c is not None else (self.convergence_vcpus, self.builds[0])
        return self._cell(RunSpec(workload=self.workload, vcpus=vcpus, build=build, seed=seed,
                                  device=c.device if c else "cpu", epochs=self.request.max_epochs,
                                  target_accuracy=self.request.target, target=self.request.target_text))

    def probe_cell(self, c: Candidate, repeat: int) -> Cell:
        """One speed probe of a local candidate: capped epochs in a fresh worker."""
        return self._cell(RunSpec(workload=self.workload, vcpus=int(c.vcpus or 1), build=c.build, seed=0,
                                  repeat=repeat, device=c.device, epochs=PROBE_EPOCHS, steps_per_epoch=self.cap))

    def _cell(self, spec: RunSpec) -> Cell:
        """A run in the request's setting (data, precision, batch size), validated as the study does; no peak measured
        (a comparison needs no % of peak, and a peak costs seconds in a probe of ten)."""
        req = self.request
        spec = replace(spec, data=req.data, validation="study", precision_policy=req.precision,
                       batch_size=req.batch_size, measure_peak=False)
        config = plan(spec, host=self.host)
        return Cell(config.with_(cell_key=cell_key(config, self.fingerprint)), spec)

    def next_seed(self, store: Readable) -> Cell:
        """The convergence run of the first planned seed not trained yet, else of the next seed not planned yet
        (added to the plan)."""
        todo = pending(store, self.convergence)
        if todo:
            return todo[0]
        cell = self.seed_cell(max(c.config.seed for c in self.convergence) + 1)
        self.convergence.append(cell)
        return cell

    def another_probe(self, c: Candidate, past: int = -1) -> Cell:
        """A speed probe of ``c``'s next repeat not planned yet (and past repeat ``past``), added to the plan."""
        cell = self.probe_cell(c, max([x.config.repeat for x in self.probes if probes_of(x, c)] + [past]) + 1)
        self.probes.append(cell)
        return cell


def plan_compare(request: CompareRequest, clouds: CloudTargets | None = None, host: Host | None = None) -> Planned:
    """Check and plan a comparison before the database is touched; ``clouds``: what reads cloud candidates
    (``cpustudy.cloud.targets``, from the caller); ``host``: the machine its local candidates run on (default:
    this one, :meth:`Host.here`)."""
    from cpustudy.environment import builds as builds_mod

    request.check()
    workload = get(request.workload)
    builds = [b.name for b in builds_mod.parse_list(request.builds)]
    host = host or Host.here()
    topo = host.topo
    catalog = Catalog.load(request.prices)
    if request.family:
        catalog.check_family(request.family)
    db = Path(request.db) if request.db else default_path()
    machines: list[MachineRow] = []
    if db.is_file():
        with Store.read(db) as store:
            machines = store.machines()
    gpu_build = split_list(request.gpu_builds or "jax-here", "--gpu-builds", "jax-here")[:1]
    candidates = parse_candidates(request.candidates, builds, topo, catalog, machines, clouds=clouds,
                                  gpu_build=gpu_build[0])
    m = machine_mod.collect()
    if request.convergence_at.strip().lower() == "here:gpu":
        raise UserError("--convergence-at here:gpu: the seeds train on this machine's CPUs (the GPU's speed is "
                        "probed): give here:N or here:all")
    at = parse_candidates(request.convergence_at, builds[:1], topo, catalog, machines)
    if len(at) != 1 or at[0].kind != "here":
        raise UserError(f"--convergence-at {request.convergence_at}: give one place on this machine, here:N or "
                        "here:all (convergence needs no quiet machine, but it trains here)")
    p = Planned(request, workload, candidates, [], [], m.fingerprint, m, catalog, builds, host=host,
                convergence_vcpus=int(at[0].vcpus or 1))
    p.convergence = [p.seed_cell(request.first_seed + i) for i in range(request.seeds)]
    if p.convergence[0].config.data == "synthetic":
        raise UserError(f"{workload.name} would train on synthetic data here, whose labels are noise: no seed "
                        "would reach a target. Give --data real (its dataset cached) or --data learnable")
    full_steps = p.convergence[0].config.full_steps_per_epoch
    p.cap = request.probe_steps if request.probe_steps < full_steps and cappable(workload) else None
    local = [c for c in candidates if c.kind == "here"]
    for r in range(request.repeats):
        turn = local[r % len(local):] + local[:r % len(local)] if local else []
        p.probes += [p.probe_cell(c, r) for c in turn]  # interleaved, the order rotating from repeat to repeat
    return p


def probes_of(cell: Cell, c: Candidate) -> bool:
    """Whether a planned speed probe measures local candidate ``c`` (its device, vCPUs and build)."""
    return cell.config.device == c.device and cell.config.vcpus == c.vcpus and cell.config.build == c.build


def cappable(workload: Workload) -> bool:
    """Whether a probe's epochs can be capped: a script fed a PyDataset or a generator trains whole epochs."""
    model = workload.model
    return model is None or model.kind != "script" or (model.summary.get("fit") or {}).get("input") in (
        "arrays", "tf.data")


def order(convergence: list[Cell], probes: list[Cell]) -> list[tuple[str, Cell]]:
    """Convergence runs and speed probes alternating, so that every candidate's repeats meet the
    machine's slow and fast spells alike."""
    out: list[tuple[str, Cell]] = []
    conv, prob = list(convergence), list(probes)
    while conv or prob:
        if conv:
            out.append(("convergence", conv.pop(0)))
        take = max(1, len(prob) // max(1, len(conv) + 1)) if prob else 0
        out += [("speed", prob.pop(0)) for _ in range(take)]
    return out


def probes_wanted(p: Planned, store: Readable, seeds_to_come: int) -> list[Cell]:
    """The planned speed probes still wanted, in their planned, interleaved order: per local candidate,
    ``--repeats`` speed runs in all, counting what is stored and the ``seeds_to_come`` convergence runs (each times
    the candidate it trains on)."""
    ref = p.reference
    todo = pending(store, p.probes)
    stored = store.runs(status="ok")
    chosen: set[str] = set()
    for c in (c for c in p.candidates if c.kind == "here"):
        have = len(speed_samples(store, c, ref, p.fingerprint, stored))
        if c.device == "cpu" and c.vcpus == ref.vcpus and c.build == ref.build:  # the seeds train on the CPUs
            have += seeds_to_come
        mine = [x for x in todo if probes_of(x, c)]
        chosen.update(x.key for x in mine[:max(0, p.request.repeats - have)])
    return [x for x in todo if x.key in chosen]


def reference_probe(p: Planned, store: Readable, say: Callable[[str], None], wanted: Sequence[Cell] = ()) -> list[Cell]:
    """The reference re-timed in this measuring session: the first local candidate (the default), where its speed was
    timed only in earlier periods (its last speed run ended more than ``runs.PERIOD_GAP_S`` ago), gets one speed probe
    now, so that the one model reads this period's shift of the machine from it (a contrast with a candidate timed
    only now is then a ratio of ratios, not a guess of the shift). Nothing where it was never timed (the planned
    probes time it), was timed in this period, or has a probe among ``wanted`` (this session's planned ones)."""
    c = next((c for c in p.candidates if c.kind == "here" and c.device == "cpu"), None)
    if c is None or any(probes_of(x, c) for x in wanted):
        return []
    stored = store.runs(status="ok")
    ids = {s.run_id for s in speed_samples(store, c, p.reference, p.fingerprint, stored)}
    ago = ago_s(r for r in stored if r["id"] in ids)
    if ago <= PERIOD_GAP_S:
        return []
    tried = totarget.runs_of(c, p.reference, p.fingerprint, stored)  # those left out (busy) too: a new repeat
    cell = p.another_probe(c, max(int(r.get("repeat") or 0) for r in tried))
    left = [r for r in tried if r["id"] not in ids and ago_s([r]) <= PERIOD_GAP_S and busy_reason(r.get("machine_state"))]
    say(f"compare: {c.name} was last timed {ago / 3600:.1f} h ago"
        + (f" (its {len(left)} probe(s) since were taken on a busy machine and left out)" if left else "")
        + ": one speed probe of it now, this period's reference (the machine's shift since is read from it)")
    return [cell]


def state(m: Measuring, comparison: Comparison) -> None:
    """Store what the comparison stated for each local candidate with an interval (its seeds: its setting's), and
    its rules, so that the backtest holds later trainings against it as stated."""
    target, store, known = comparison.target, m.store, m.known
    if isinstance(target, bool) or not isinstance(target, (int, float)):  # a validation accuracy only
        return
    setting_of = {c.name: label for label, p in m.entries for c in p.candidates if c.kind == "here"}
    rules = comparison.decision.rules.as_dict() if comparison.decision else None
    for r in comparison.results:
        if r.candidate not in setting_of or r.time_low_s is None or r.time_high_s is None or not r.run_ids:
            continue
        seeds = known.runs(run_ids=[s.run_id for s in comparison.seeds if s.setting == setting_of[r.candidate]])
        runs = known.runs(run_ids=[int(i) for i in r.run_ids])
        if not runs or not seeds:
            continue
        store.add_statement({
            "machine_id": m.machine_id, "session": store.session, "workload": seeds[0]["workload"],
            "target_accuracy": float(target), "convergence": identity.values(seeds[0], "convergence"),
            "place": place_name(runs[0]), "place_key": identity.values(runs[0], "place"), "candidate": r.candidate, "level": r.level,
            "low_s": r.time_low_s, "median_s": r.time_to_target_s, "high_s": r.time_high_s,
            "data_sessions": sorted({session_of(x) for x in runs + seeds} - {""}), "rules": rules,
            "factor": comparison.factor_of(r.candidate)})


def check_winner(m: Measuring, comparison: Comparison) -> list[dict[str, object]]:
    """``--check N``: the decision's choice (``comparison.decision.choice``), where it is a local candidate,
    trained ``N`` more times to the target with seeds no comparison trains (from
    :data:`cpustudy.analysis.totarget.CHECK_FIRST_SEED`), each billed as the comparison bills a training and held
    against the interval it stated before them. Stored as ordinary runs (run again, they are reused)."""
    n, store, known = m.req.checks, m.store, m.known
    if not n:
        return []
    choice = comparison.decision.choice if comparison.decision else None
    lead = next((r for r in comparison.results if r.candidate == choice and r.time_to_target_s is not None), None)
    local = next(((p, c) for _, p in m.entries for c in p.candidates if c.kind == "here" and c.name == choice), None)
    if lead is None or local is None:
        m.say(f"compare: --check: the choice, {choice or 'none'}, is no local candidate timed to the target: nothing "
              "to check")
        return []
    plan_, cand = local
    out = []
    behind = [int(x) for x in lead.run_ids] + [s.run_id for s in comparison.seeds]
    data_sessions = sorted({session_of(r) for r in known.runs(run_ids=behind)} - {""})
    for i in range(n):
        cell = plan_.seed_cell(totarget.CHECK_FIRST_SEED + i, cand)
        fresh = bool(pending(known, [cell]))
        if fresh:
            if m.progress:
                m.progress(f"check [{i + 1}/{n}]: seed {cell.config.seed} on {lead.candidate}")
            run_one(m, "convergence", cell, "(check)", Ledger())  # not the comparison's cost
        runs = known.runs(status="ok", cell_keys=[cell.key])
        if not runs:
            continue  # failed: stored as such, said by run_one
        run = runs[-1]
        billed = to_target_s(run, known.epochs([run["id"]]))
        low, high = lead.time_low_s, lead.time_high_s
        inside = (high is None and low is not None) if billed is None else \
            (low is not None and high is not None and low <= billed <= high)
        check: dict[str, object] = {"candidate": lead.candidate, "seed": int(cell.config.seed), "run_id": int(run["id"]),
                 "billed_s": billed, "epochs": run.get("epochs_to_target"), "low_s": low, "high_s": high,
                 "level": lead.level, "inside": bool(inside), "factor": comparison.factor_of(lead.candidate)}
        out.append(check)
        if fresh:  # held against the interval stated before it: the machine's backtest (a reused one was already)
            session = session_of(run)
            store.add_check({**check, "machine_id": m.machine_id, "stated_session": store.session,
                             "data_sessions": data_sessions,
                             "later_session": bool(session and data_sessions and session not in data_sessions)})
    return out


def conclude(m: Measuring, comparison: Comparison) -> None:
    """After the decision, for a single setting (label "") or a race alike: what it stated for each local candidate,
    stored (:func:`state`); ``--check``'s fresh trainings of its choice (:func:`check_winner`); this machine's
    backtest in a line (``analysis.totarget.backtest``)."""
    state(m, comparison)
    comparison.checks = check_winner(m, comparison)
    bt = totarget.backtest(m.store, m.machine_id)
    comparison.notes += [bt.line] if bt is not None else []


@dataclass
class Ledger:
    """What a comparison measured in this call: its trainings to the target at their billed seconds (as ``compare``
    bills one: the budget's unit), and what measuring cost (``spent_s``, ``probe_runs``: each run's wall clock, seeds,
    stopped seeds, probes and checks alike, a real worker's or a played one's; not a billed training)."""

    trainings: list[float] = field(default_factory=list)
    probe_runs: list[float] = field(default_factory=list)  # one per speed probe measured: its wall clock (s)
    spent_s: float = 0.0
    seeds: int = 0  # convergence runs measured (stopped ones included)
    busy: list[str] = field(default_factory=list)  # per run, in order: why the machine was busy ("" where it was not)

    def add(self, known: Known, kind: str, cell: Cell, outcome: RunOutcome) -> None:
        run = known.learn(outcome.run_id) or RunRow()  # the run read back, and held from now on
        took, billed = run_seconds(known, outcome, run)
        self.busy.append(busy_reason(run.get("machine_state")) if outcome.status == "ok" else "")
        self.spent_s += took
        if kind == "convergence":
            self.seeds += 1
            if billed is not None and not cell.config.give_up_after:
                self.trainings.append(billed)
        else:
            self.probe_runs.append(took)

    def busy_streak(self) -> tuple[int, str]:
        """How many of the last runs in a row were measured on a busy machine, and why the last one was."""
        n = next((i for i, why in enumerate(reversed(self.busy)) if not why), len(self.busy))
        return n, self.busy[-1] if n else ""

    def probe_s(self, comparison: Comparison | None = None) -> float:
        """What one speed run takes here: the median of those measured, else half a training."""
        if self.probe_runs:
            return statistics.median(self.probe_runs)
        return 0.5 * (self.one_training(comparison) or 0.0)

    def one_training(self, comparison: Comparison | None = None) -> float | None:
        """One training to the target here: the median of those measured, else the fastest candidate's
        predicted median."""
        if self.trainings:
            return statistics.median(self.trainings)
        times = [r.time_to_target_s for r in (comparison.results if comparison else []) if r.time_to_target_s]
        return min(times) if times else None

    def spent(self, comparison: Comparison | None = None) -> float:
        """Trainings' worth spent so far (inf where one training's time is not known)."""
        one = self.one_training(comparison)
        return self.spent_s / one if one else (0.0 if not self.spent_s else math.inf)


def run_seconds(store: Readable, outcome: RunOutcome, run: RunRow) -> tuple[float, float | None]:
    """What one stored run cost to measure (wall clock: start-up, every epoch, each validation) and what its training
    bills (:class:`~cpustudy.analysis.billed.Billed` at its epochs to the target, else all it trained; None: failed);
    ``run``: its stored row, ``store``: what its epochs are read from (the ledger's: what the loop knows)."""
    epochs = store.epochs([outcome.run_id])
    took = float(outcome.summary.get("startup_s") or 0.0) + sum(
        float(e.get("elapsed_s") or 0.0) + float(e.get("validation_s") or 0.0) for e in epochs)
    billed = Billed.of_run(run, epochs)
    return took, None if billed is None else float(billed.seconds(run.get("epochs_to_target") or len(epochs)))


def what(kind: str, cell: Cell, target: str, label: str = "") -> str:
    """A run in words: a seed to ``target``, or a speed probe, with its setting's ``label`` where it has one."""
    cfg = cell.config
    where = f"the GPU ({cfg.vcpus} vCPU(s) feeding it)" if cfg.device == "gpu" else f"{cfg.vcpus} vCPU(s)"
    return (f"seed {cfg.seed} to {target} at {where}" if kind == "convergence" else
            f"speed probe {where} {cfg.build} r{cfg.repeat}") + (f" {label}" if label else "")


@dataclass
class Measuring:
    """What every step of measuring one comparison needs: the database open for measuring (``store``: every write), what
    is known of it (``known``: read once, each run measured read back: every read), this machine's id in it, the
    request, its settings (label and plan of each; one labelled "") and each cell's setting in words (``label_of``),
    what to say and show, what measures a run (``execute``, or ``rehearsal.replay``'s player), the ledger, the rules."""

    store: Store
    known: Known
    machine_id: int
    req: CompareRequest
    entries: Sequence[tuple[str, Planned]]
    label_of: Callable[[Cell], str]
    say: Callable[[str], None]
    progress: Callable[[str], None] | None = None
    measurer: Measurer = execute
    ledger: Ledger = field(default_factory=Ledger)
    rules: Rules = RULES
    probes: tuple[str | None, float | None] = (None, None)  # the cloud candidates' probe plan, its estimated cost


def run_one(m: Measuring, kind: str, cell: Cell, label: str = "", ledger: Ledger | None = None) -> RunOutcome:
    """Measure one convergence run or speed probe into the store, enter it in the ledger (``ledger``: another
    than the comparison's, for ``--check``) and say how it went (``label``: its setting, where several are
    compared)."""
    cfg, said, say = cell.config, what(kind, cell, m.req.goal_words, label), m.say
    outcome = m.measurer(m.store, m.machine_id, cfg, timeout_s=m.req.timeout)
    (ledger or m.ledger).add(m.known, kind, cell, outcome)
    busy = (ledger or m.ledger).busy[-1]
    left = f"; left out of every speed figure: measured on a busy machine ({busy})" if busy else ""
    if outcome.status != "ok":
        say(f"  FAILED {kind} {said}: {outcome.error} (stored; `cpustudy results --errors` shows it)")
    elif kind == "convergence":
        s = outcome.summary
        say(f"  {said}: " + (f"reached after {s.get('epochs_to_target')} epoch(s)" if s.get("target_reached")
                             else f"stopped after {cfg.give_up_after} epoch(s) by the race (censored)"
                             if cfg.give_up_after else f"not reached in {cfg.epochs} epochs") + left)
    else:
        say(f"  {said}: epoch {outcome.summary['epoch_time_s']:.2f} s"
            + (" (projected)" if outcome.summary.get("projected") else "") + left)
    return outcome


def measure_cells(m: Measuring, work: Sequence[tuple[str, Cell]], stage: str = "") -> None:
    """The one loop that measures a comparison's cells (its planned seeds and probes, a race's round, what the
    policy adds), each through :func:`run_one`, with progress by ``stage``."""
    for i, (kind, cell) in enumerate(work):
        if m.progress:
            m.progress(f"{stage} [{i + 1}/{len(work)}] {kind}: {what(kind, cell, m.req.goal_words, m.label_of(cell))}")
        run_one(m, kind, cell, m.label_of(cell))


def decide(m: Measuring, seed_cell: Callable[[str, Planned, Comparison], tuple[Cell, str]]) -> Comparison:
    """The one loop that measures a comparison to its decision, single setting (one entry, label "") or raced (one entry
    per setting): after what was planned, one measurement at a time, the one the policy (``policy.next_step``) says is
    worth the most, until it says the decision is made (or not worth making) or the next one would pass
    ``--max-trainings`` trainings' time, the comparison combined (:func:`combined`) after each from what is known
    (``m.known``: the store read once, each run measured learned), not from the database read again. ``seed_cell``: one
    more seed of a setting (given its label, its plan, the comparison so far) and, where it is told to stop early (a
    race's censoring), the sentence saying so. Returns the last comparison, with its steps and decision."""
    req, ledger, rules, entries = m.req, m.ledger, m.rules, m.entries
    comparison = combined(entries, m.known, rules, *m.probes)
    steps: list[str] = list(comparison.steps)
    last: policy.Step | None = None
    limit = req.budget(len(entries), rules)
    st = policy.standing_of(comparison, rules)  # of the comparison as it stands: read again after each measurement
    while not req.fixed_plan:
        step = _step(m, comparison, st)
        last = step
        if step.stops:
            steps.append(f"stopped: {step.why} ({ledger.spent(comparison):.1f} trainings spent)")
            break
        if step.kind == "seed":
            label, p = next(((lb, p) for lb, p in entries if lb == step.setting), entries[0])
            cells = [("convergence", *seed_cell(label, p, comparison))]
        else:  # candidate names are unique across the settings
            cells = [("speed", p.another_probe(c), "") for name in step.candidates
                     for _, p in entries for c in p.candidates if c.name == name]
        cost = sum(ledger.probe_s(comparison) if kind == "speed" else ledger.one_training(comparison) or 0.0
                   for kind, _, _ in cells)  # a speed run: the probes so far; a seed: one training
        one = ledger.one_training(comparison) or math.inf
        if ledger.spent(comparison) + cost / one > limit:
            steps.append(f"stopped at the limit of {limit:g} trainings ({ledger.spent(comparison):.1f} "
                         f"spent): not settled: {step.why}" + _remains(st, rules))
            last = policy.Step(policy.LIMIT, steps[-1])
            break
        for _, _, note in cells:
            if note:
                steps.append(note)
                m.say(f"compare: {note}")
        steps.append("added " + " and ".join(what(k, c, req.goal_words, m.label_of(c)) for k, c, _ in cells)
                     + f": {step.why}")
        m.say(f"compare: not settled yet, {steps[-1]}")
        ref = reference_probe(entries[0][1], m.known, m.say)  # a later period's first measurement: the reference first
        measure_cells(m, [("speed", c) for c in ref] + [(kind, cell) for kind, cell, _ in cells], "settling")
        comparison = combined(entries, m.known, rules, *m.probes)
        st = policy.standing_of(comparison, rules)
    comparison.steps = steps
    attach(comparison, st, last, ledger, rules, default_of(entries, m.req))
    return comparison


def default_of(entries: Sequence[tuple[str, Planned]], request: CompareRequest) -> str | None:
    """The candidate the user would take without comparing: the first listed, in the setting ``request`` (the
    comparison's own, before it is split into settings) names by ``--precision`` and ``--batch-size`` (else the
    workload's batch size); where none is that, the first with its precision; else the first setting."""
    def rank(p: Planned) -> int:
        cfg = p.convergence[0].config
        same = cfg.precision_policy == request.precision
        return 0 if same and cfg.batch_size == (request.batch_size or p.workload.batch_size) else 1 if same else 2

    plans = sorted((p for _, p in entries if p.candidates), key=rank)  # stable: the listed order within a rank
    return plans[0].candidates[0].name if plans else None


def _step(m: Measuring, comparison: Comparison, st: policy.Standing | None) -> policy.Step:
    """The policy's next step; with fewer than two candidates to choose from, the single candidate's interval
    rule (:func:`cpustudy.decision.policy.one_candidate_step`)."""
    entries, rules = m.entries, m.rules
    busy, why = m.ledger.busy_streak()
    if busy >= rules.busy_runs:
        return policy.Step(policy.STUCK, f"the last {busy} runs were measured on a busy machine ({why}) and left out of "
                           "every speed figure: measure again when nothing else runs (what was measured is stored, "
                           "and the same command resumes from it)")
    local = {c.name for _, p in entries for c in p.candidates if c.kind == "here"}
    unmeasured = [r.candidate for r in comparison.results if not r.speed_runs]
    if st is None:
        step = policy.one_candidate_step(comparison.results, comparison.seeds, local, rules,
                                         planned=entries[0][1].request.seeds)
        step = replace(step, setting=entries[0][0]) if step.kind == "seed" else step
    else:
        trained = {label: len(seeds) for label, seeds, _ in comparison.groups}
        seeds_left = {label: max(0, p.request.seeds - trained.get(label, 0)) for label, p in entries} \
            if len(entries) > 1 else {}
        seed_cost = {label: min((st.time_s[c] for c in st.time_s if st.group_of.get(c) == label), default=0.0)
                     for label, _ in entries}
        step = policy.next_step(st, measurable=local, seed_cost_s=seed_cost, probe_cost_s=dict.fromkeys(
            local, m.ledger.probe_s(comparison)), seeds_left=seeds_left, default=default_of(entries, m.req), rules=rules)
    return policy.unmeasured_step(step, unmeasured, local)


def _remains(st: policy.Standing | None, rules: Rules) -> str:
    """What is left undecided, and roughly what more would decide it (regret taken to shrink as one over the
    square root of the leading candidates' runs)."""
    if st is None:
        return ""
    lead = str(policy.leader(st))
    r = st.regret[lead]
    n = st.runs.get(lead, 1)
    more = max(1, math.ceil(n * (r / rules.regret) ** 2) - n)
    return (f"; {lead} leads with expected regret {r:.1%} (decided at {rules.regret:.0%}); roughly {more} more speed "
            "run(s) of each leading candidate would decide it (regret taken to shrink as 1/sqrt(runs))")


def attach(comparison: Comparison, st: policy.Standing | None, step: policy.Step | None, ledger: Ledger,
           rules: Rules, default: str | None) -> None:
    """The decision's figures on the comparison: every candidate's expected cost, P(lowest expected cost) and
    expected regret, and its :class:`~cpustudy.analysis.compare.Decision` (:func:`cpustudy.decision.policy.decision`:
    what the page, the JSON and ``--check`` read)."""
    cost = combo.DecisionCost(round(ledger.spent(comparison), 2), round(ledger.spent_s, 1), ledger.seeds,
                              len(ledger.probe_runs))
    comparison.decision = policy.decision(st, step, default, comparison.results, rules, cost)
    if st is not None and comparison.decision.choice is not None:
        for r in comparison.results:
            if r.candidate in st.expected:
                r.expected, r.expected_unit = st.expected[r.candidate], st.unit
                r.expected_low, r.expected_high = st.low[r.candidate], st.high[r.candidate]
                r.p_best, r.regret = st.p_best[r.candidate], st.regret[r.candidate]


def seeds_of(p: Planned, store: Readable) -> tuple[list[combo.SeedResult], str]:
    """The comparison's seeds, those that trained one training counted once, and the sentence saying so."""
    runs = list({r["cell_key"]: r for r in store.runs(status="ok", cell_keys=[c.key for c in p.convergence])}.values())
    by = totarget.epochs_by_run(store, runs)
    seeds = sorted(totarget.seed_results(store, runs, p.request.goal, by), key=lambda s: s.seed)
    return totarget.distinct_seeds(seeds, by)


def combined(entries: Sequence[tuple[str, Planned]], store: Readable, rules: Rules, plan_folder: str | None = None,
             probe_cost: float | None = None) -> Comparison:
    """The one builder of a comparison being measured, from everything ``store`` holds (the loop's: what it knows,
    ``store.Known``): one setting (one entry, label "") or a race (one entry per setting, each setting's seeds
    converging on their own); at ``rules.level`` from ``rules.draws`` draws, recalibrated by this machine's backtest."""
    req, raced = entries[0][1].request, len(entries) > 1
    groups: totarget.Groups = []
    notes: list[str] = []
    runs = store.runs(status="ok")
    for label, p in entries:
        seeds, same = seeds_of(p, store)
        seeds = [replace(x, setting=label) for x in seeds]
        if not seeds:
            notes.append(f"{label}: no convergence run finished (see `cpustudy results --errors`): left out")
            continue
        inputs = totarget.candidate_inputs(store, p.candidates, p.reference, p.fingerprint, runs, p.catalog, req.spot,
                                           req.family)
        groups.append((label, seeds, [_censoring_said(seeds, i) for i in inputs]))
        reached = ", ".join(s.outcome() for s in seeds)
        notes += [f"{label}: {len(seeds)} seed(s), epochs to the target {reached}" + (f"; {same}" if same else "")] \
            if raced else [same] if same else []
    seeds_all = [s for _, seeds, _ in groups for s in seeds]
    if not groups:
        raise UserError(f"no convergence run finished{' in any setting' if raced else ''} (see `cpustudy results "
                        "--errors`): nothing to compare; the same command measures what is missing")
    if not any(s.reached for s in seeds_all):
        goal = combo.as_target(req.goal)
        seen = [v for v in (combo.metric_value(e, goal.metric) for e in store.epochs([s.run_id for s in seeds_all]))
                if v is not None]
        best = (max(seen) if goal.op == ">=" else min(seen)) if seen else None
        raise NoSeedReached(f"no seed{' of any setting' if raced else ''} reached {req.goal_words} within "
                        f"{seeds_all[0].max_epochs} epochs" + (f" (the best was {best:.4f})" if best is not None else "")
                        + ": give an easier target or more --max-epochs (what was measured is stored)")
    noise = totarget.stored_noise(store)
    factor, widened = recalibration.factor(store, entries[0][1].fingerprint, rules.level)
    out = totarget.compared(store, req.goal, groups, entries[0][1].reference, spot=req.spot, noise=noise, factor=factor,
                            notes=widened + notes, rules=rules, deadline_s=req.deadline_s, budget_usd=req.budget_usd)
    out.plan_folder, out.probe_cost_usd = plan_folder, probe_cost
    if not raced:
        agree = combo.agreement(_all_seed_results(entries[0][1], store))
        out.notes += [agree.line] if agree is not None else []
    cloud = {c.name for _, p in entries for c in p.candidates if c.kind == "cloud"}
    out.notes += [f"{r.candidate}: no speed measured yet: launch the probe plan ({plan_folder}) with `cpustudy cloud "
                  f"launch {plan_folder}`, then `cpustudy cloud fetch {plan_folder} --db {req.db or 'cpustudy.sqlite'}` "
                  "and compare again" for r in out.results if r.speed_runs == 0 and r.candidate in cloud]
    return out


def _censoring_said(seeds: Sequence[combo.SeedResult], given: combo.CandidateInput) -> combo.CandidateInput:
    """A candidate's input, its basis saying how the seeds a race stopped short of the target were counted."""
    stopped = [s for s in seeds if s.censored_after is not None]
    if stopped:
        how = ("counted with their margins to the target up to where they stopped" if all(s.margins for s in seeds)
               else "counted at their earliest (one epoch after they stopped): its figures are lower bounds")
        given.basis = [*given.basis, f"{len(stopped)} seed(s) stopped by the race short of the target, {how}"]
    return given


def _all_seed_results(p: Planned, store: Readable) -> list[combo.SeedResult]:
    """Every stored full-epoch training of this configuration's seeds, at any vCPU count on this machine
    (``--convergence-at``), for the agreement check."""
    mine = p.reference.columns()
    runs = [r for r in store.runs(status="ok") if (r.get("target_accuracy") or r.get("target"))
            and identity.same(r, mine, "convergence") and r.get("machine") == p.fingerprint and not r.get("projected")]
    return totarget.seed_results(store, runs, p.request.goal)
