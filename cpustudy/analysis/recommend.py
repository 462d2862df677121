"""``cpustudy recommend``: from the stored runs and the price catalog, the cheapest configuration that
meets a deadline and the fastest within a budget, with the spread of the figures it rests on and what
it assumed (projected epochs, spot or on-demand, which machine and price).

With a target accuracy, time and cost are those to reach it (runs with ``--target-accuracy``, at that
target or a higher one); otherwise the full training time of the workload's default epochs. The rule: the least
median cost (then time) of a configuration's runs, named by its build label (``tf+b64``: the setting included).
Runs trained to the target are answered from ``compare``'s combination instead, by its rule (the command's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict, cast

import pandas as pd

from cpustudy.names import config_name
from cpustudy.analysis.frames import records
from cpustudy.analysis.studies import IMPORTED_STUDIES
from cpustudy.analysis.summary import Analysis
from cpustudy.errors import UserError


@dataclass
class Choice:
    role: str  # "cheapest within the deadline" | "fastest within the budget" | "cheapest" | "fastest"
    config: str
    time_s: float
    low_s: float  # the billed time's range: the fastest and slowest of its runs, or a prediction interval
    high_s: float
    range_is: str  # which: "its runs' range" | "90 % prediction interval"
    cost_usd: float | None
    n_runs: int
    run_ids: list[int]
    basis: list[str]  # what it assumed


@dataclass
class Recommendation:
    workload: str
    measure: str  # what time and cost mean here
    choices: list[Choice] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be met, what was left out


class Considered(TypedDict, total=False):
    """What an answer reads of a configuration it can name (a row of :func:`_candidates`: the summary's columns, and the
    time and cost it is judged by) as ``DataFrame.to_dict`` gives it: Python's scalars, a missing number as NaN (NA
    for ``vcpus``: ``config_name`` reads it with ``pd.isna``), a missing text as None or NaN."""
    device: str
    vcpus: float | None
    build: str
    projected: bool
    data: str
    machines: str
    busy: str
    changes_accuracy: bool
    price_usd_per_hour: float
    price_kind: str | None
    instance: str | None
    region: str | None
    price_source: str | None
    price_as_of: str | None
    price_note: str | None
    time: float  # training alone, or the time to the target
    wall: float  # what it bills: what a deadline is held against
    low: float  # the billed time's range
    high: float
    range_is: str
    cost: float
    runs_used: int
    ids_used: tuple[int, ...]


def _rows(df: pd.DataFrame) -> list[Considered]:
    """The rows of :func:`_candidates` (or a part of it) as records."""
    return cast("list[Considered]", records(df))


def _first(df: pd.DataFrame) -> Considered:
    """The first row of :func:`_candidates` (or a part of it, sorted)."""
    return _rows(df.head(1))[0]


def _candidates(a: Analysis, workload: str, target: float | None, notes: list[str] | None = None) -> pd.DataFrame:
    """The configurations an answer can name, with the time (``wall``) and cost it is judged by; those left out
    without a target (no full-training time) are said in ``notes``."""
    s = a.summary
    names = {workload} if target is None else {workload, f"{workload} (learnable data)"}
    df = s[s["workload"].isin(names) & ~s["study"].isin(IMPORTED_STUDIES)].copy()
    if df.empty:
        known = sorted(set(s.loc[~s["study"].isin(IMPORTED_STUDIES), "workload"]))
        raise UserError(f"no stored runs of {workload} to recommend from: the database has "
                        f"{', '.join(known) or 'none'} (measure it with `cpustudy sweep --workloads {workload}`)")
    df = df[df["suspect"].fillna("") == ""]
    if target is None:
        untimed = df[df["total_time_s"].isna()]
        if len(untimed) and notes is not None:
            aimed = sorted({float(x) for x in untimed["target_accuracy"].dropna()})
            notes.append(f"left out: {', '.join(_name(r) for r in _rows(untimed))}: no full-training time (no "
                         "run of them timed an epoch after the warm-up; each reached its target within it)"
                         + (f"; answer by the time to the target with --target-accuracy {aimed[0]:g}" if aimed else ""))
        df = df[df["total_time_s"].notna()]
        df["time"], df["cost"] = df["total_time_s"], df["cost_usd"]
        # a full training's figures rest on the runs that timed an epoch after the warm-up, not every run stored
        df["range_is"], df["runs_used"], df["ids_used"] = "its runs' range", df["timed_runs"], df["timed_run_ids"]
        return _billed(df)
    df = df[(df["target_reached_runs"] > 0) & (df["target_accuracy"] >= target - 1e-12)]
    if df.empty:
        raise UserError(f"no run of {workload} reached validation accuracy {target:g}: measure with `cpustudy "
                        f"sweep --workloads {workload} --target-accuracy {target:g} --data real` (or learnable)")
    df["time"], df["cost"] = df["time_to_target_s"], df["cost_to_target_usd"]
    # compare's prediction interval for one new training where it gave one, else the range of the runs that reached it
    pi = df["target_pi_low"].notna() & df["target_pi_high"].notna()
    df["low"] = df["target_pi_low"].where(pi, df["target_time_min"])
    df["high"] = df["target_pi_high"].where(pi, df["target_time_max"])
    df["range_is"] = [f"{level:.0%} prediction interval" if p else "its runs' range"
                      for p, level in zip(pi, df["target_level"])]
    df["runs_used"], df["ids_used"] = df["target_reached_runs"], df["run_ids"]
    df["wall"] = df["time"]  # already the billed time to the target (each run's Billed, or compare's prediction)
    return df


def _billed(df: pd.DataFrame) -> pd.DataFrame:
    """A full training as the summary bills it (each run's :class:`~cpustudy.analysis.billed.Billed` at the
    workload's epochs): its median (``wall``, what a deadline is held against) and range; the cost is the summary's,
    priced from the same seconds (a deadline and a budget mean the same here as in compare)."""
    df = df.assign(wall=df["billed_s"], low=df["billed_min_s"], high=df["billed_max_s"])
    return df[df["wall"].notna()].copy()


def _name(r: Considered) -> str:
    """The configuration, with its build on a GPU too (JAX and PyTorch differ 4x there)."""
    name = config_name(r["device"], r["vcpus"], r["build"])
    return f"{name} ({r['build']})" if r["device"] == "gpu" else name


def _choice(a: Analysis, role: str, r: Considered) -> Choice:
    basis = []
    if r.get("projected"):
        basis.append("projected from capped epochs")
    if r.get("data"):
        basis.append(f"{r['data']} data")
    basis.append(f"measured on {r['machines']}")
    if pd.notna(r.get("price_usd_per_hour")):
        basis.append(f"{r['price_kind']} price of {r['instance']} in {r['region']}: {r['price_usd_per_hour']:.4g} "
                     f"USD/h ({r['price_source']}, as of {r['price_as_of']})")
    else:
        basis.append(f"not priced ({r.get('price_note') or 'no price'})")
    if r.get("busy"):
        basis.append(str(r["busy"]))
    if r.get("wall", 0) > r["time"]:
        basis.append(f"{r['time']:.0f} s of training; {r['wall']:.0f} s billed with start-up, tracing, validation "
                     "and stalls (the deadline and the cost count all of it)")
    if r.get("changes_accuracy"):
        basis.append("its batch size or precision is not the workload's own, which can change the accuracy "
                     "reached: compare at equal accuracy with --target-accuracy")
    n = int(r["runs_used"])
    if n < 2:
        basis.append("a single run (fresh processes vary up to 1.5x here: measure with --repeats 3)")
    cost = None if pd.isna(r["cost"]) else float(r["cost"])
    # the summary's own rows (a union of the identity's run groups): their ids, no join of our own
    return Choice(role, _name(r), float(r["wall"]), float(r["low"]), float(r["high"]),
                  str(r["range_is"]), cost, n, sorted(int(i) for i in r["ids_used"]), basis)


def recommend(a: Analysis, workload: str, *, deadline_s: float | None = None, budget_usd: float | None = None,
              target: float | None = None) -> Recommendation:
    left_out: list[str] = []
    df = _candidates(a, workload, target, left_out)
    measure = (f"billed time (start-up, tracing, training, validation, stalls) and cost to reach validation accuracy "
               f"{target:g}" if target is not None else "billed time of a full training (the workload's default "
               "epochs: start-up, tracing, training, validation, stalls) and its cost")
    rec = Recommendation(workload, measure)
    priced = df.dropna(subset=["cost"])
    if deadline_s is not None:
        ok = priced[priced["wall"] <= deadline_s]  # the billed time: all of it counts
        if ok.empty:
            fastest = _first(df.sort_values("wall"))
            rec.notes.append(f"no priced configuration meets the {deadline_s:g} s deadline; the fastest, "
                             f"{_name(fastest)}, bills {fastest['wall']:.0f} s (start-up, tracing, validation and stalls)")
        else:
            best = _first(ok.sort_values(["cost", "wall"]))
            c = _choice(a, f"cheapest within the {deadline_s:g} s deadline", best)
            if c.high_s > deadline_s:
                c.basis.append(f"the top of {c.range_is}, {c.high_s:.0f} s in all, is over the deadline")
            rec.choices.append(c)
    if budget_usd is not None:
        ok = priced[priced["cost"] <= budget_usd]
        if ok.empty:
            cheapest = _first(priced.sort_values("cost")) if len(priced) else None
            rec.notes.append(f"no configuration costs {budget_usd:g} USD or less" + (
                f"; the cheapest, {_name(cheapest)}, costs "
                f"{cheapest['cost']:.4g} USD" if cheapest is not None else ""))
        else:
            rec.choices.append(_choice(a, f"fastest within {budget_usd:g} USD", _first(ok.sort_values(["wall", "cost"]))))
    if deadline_s is None and budget_usd is None:
        if len(priced):
            rec.choices.append(_choice(a, "cheapest", _first(priced.sort_values(["cost", "wall"]))))
        rec.choices.append(_choice(a, "fastest", _first(df.sort_values(["wall"]))))
    unpriced = len(df) - len(priced)
    if unpriced:
        rec.notes.append(f"{unpriced} configuration(s) could not be priced and were left out of cost choices")
    rec.notes += left_out
    rec.notes.append(f"from {int(df['runs_used'].sum())} run(s) of {len(df)} configuration(s)"
                     + (" (the runs that timed an epoch after the warm-up)" if target is None
                        and (df["runs_used"] < df["n_runs"]).any() else ""))
    return rec


def as_rows(rec: Recommendation) -> list[dict[str, object]]:
    return [{"choice": c.role, "configuration": c.config, "time_s": round(c.time_s, 1),
             "time_range_s": f"{c.low_s:.0f}-{c.high_s:.0f} ({c.range_is})" if c.n_runs > 1 or "interval" in c.range_is
             else "single run",
             "cost_usd": None if c.cost_usd is None else float(f"{c.cost_usd:.3g}"), "runs": c.n_runs} for c in rec.choices]
