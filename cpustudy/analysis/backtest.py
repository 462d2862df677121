"""The tool's own backtest from what a database holds, and the recalibration of its intervals by it.

**Held out** (:func:`held_out`): every fresh training to a target stored in the database (a ``cpustudy run`` or
``compare`` seed, a ``--check``) that trained after other runs of its configuration, held against the latest interval
``compare`` stated for its place and configuration before it (``statements``, schema v15), as stated and at its
level; where none was stored, against the interval the runs stored before it, in other sessions, give for its place
(:func:`cpustudy.analysis.totarget.stored` over a copy of the database as it was). Stored in ``checks`` as
``kind="held out"`` beside ``compare --check``'s; :func:`cpustudy.analysis.totarget.backtest` counts both per machine
at one level, clustered by period and statement, and a training as later only in a later period than its interval's.

**Recalibration** (:mod:`cpustudy.analysis.recalibration`): each check's score is how far its billed time lies from its interval's
middle, in units of the interval's half-width on a log scale (at most 1: inside). From ``MIN_CHECKS`` checks on, the
split-conformal quantile of those scores (the ceil((n + 1) x level)-th smallest) is the factor by which later
intervals must be widened, on the same log scale about their middle, for ``level`` of fresh trainings to fall
inside; a factor under 1 (intervals wider than needed) is reported and never applied: the tool does not narrow a
statement of certainty on a handful of checks.
"""

from __future__ import annotations

import json
import math
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence, TypedDict, cast

from cpustudy import identity
from cpustudy.analysis import totarget
from cpustudy.analysis.billed import to_target_s
from cpustudy.analysis.recalibration import Inflation, inflation
from cpustudy.analysis.runs import session_of
from cpustudy.errors import UserError
from cpustudy.store import Store, default_path
from cpustudy.store.rows import RunRow, StatementRow

if TYPE_CHECKING:
    from cpustudy.prices import Catalog

# --- Held out -----------------------------------------------------------------------------------------------------

def fresh_trainings(runs: Sequence[RunRow]) -> list[RunRow]:
    """The stored trainings that reached a validation-accuracy target in full epochs, oldest first."""
    out = [r for r in runs if r["status"] == "ok" and not r.get("projected") and r.get("target_accuracy")
           and r.get("target_reached") and r.get("time_to_target_s") is not None]
    return sorted(out, key=lambda r: (str(r.get("created_at")), r["id"]))


def _as_it_was(src: Path, keep: set[int], folder: Path) -> Path:
    """A copy of the database at ``src`` holding only the runs ``keep`` (their epochs and the machines)."""
    out = folder / f"before-{len(keep)}-{min(keep) if keep else 0}.sqlite"
    with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as a, sqlite3.connect(out) as b:
        a.backup(b)
    with sqlite3.connect(out) as b:
        b.execute("PRAGMA foreign_keys = OFF")
        ids = ",".join(str(i) for i in sorted(keep)) or "-1"
        b.execute(f"DELETE FROM epochs WHERE run_id NOT IN ({ids})")
        b.execute(f"DELETE FROM checks WHERE run_id NOT IN ({ids})")
        b.execute(f"DELETE FROM runs WHERE id NOT IN ({ids})")
    return out


class HeldOut(TypedDict):
    """A fresh training held against an interval, as ``Store.add_check`` takes it (``kind="held out"``)."""
    run_id: int
    machine_id: int | None
    candidate: str
    level: float
    low_s: float
    high_s: float
    median_s: float | None
    billed_s: float
    inside: bool
    kind: str
    stated_session: str | None
    data_sessions: list[str]
    later_session: bool
    stated_at: str | None
    factor: float | None


def held_out(store: Store, *, catalog: Catalog, spot: bool = True, progress: Callable[[str], None] | None = None,
             skip: set[int] | None = None) -> list[HeldOut]:
    """Each fresh training (:func:`fresh_trainings`, those in ``skip`` left out) held against the interval the runs
    stored before it, in other sessions, give for its place, as they stood when the last session of several runs
    before it ended (what a comparison or sweep stated; lone trainings after it, this one's peers, are left out):
    one check each (``kind="held out"``), for :meth:`cpustudy.store.Store.add_check`. A training with no earlier
    seed of its configuration, or no earlier speed run at its place, has no interval to be held against: left out."""
    runs = store.runs(status="ok")
    fresh = [r for r in fresh_trainings(runs) if r["id"] not in (skip or set())]
    by: dict[str, list[RunRow]] = {}
    for x in runs:
        by.setdefault(session_of(x), []).append(x)
    end = {s: max(str(x.get("created_at")) for x in xs) for s, xs in by.items()}
    # each session's first run id orders a statement's session before a training's (sessions measure one at a time;
    # ids never tie where times, stored to the second, do); one that stored no run, strictly by time
    first = {s: min(x["id"] for x in xs) for s, xs in by.items()}
    out: list[HeldOut] = []
    statements = store.statements()
    with tempfile.TemporaryDirectory(prefix="cpustudy-backtest-") as tmp:
        for i, r in enumerate(fresh):
            if progress:
                progress(f"[{i + 1}/{len(fresh)}] run {r['id']}: the interval its earlier runs give")
            session, said, at = session_of(r), stated(statements, r, first), to_target_s(r, store.epochs([r["id"]]))
            if at is None:
                continue
            if said is not None:
                out.append(_check(r, at, said["candidate"] + f" ({said['place']})", said["level"], said["low_s"],
                                  said["median_s"], said["high_s"], said["data_sessions"], session,
                                  stated_session=said["session"], factor=said.get("factor")))
                continue
            earlier = [x for x in runs if str(x.get("created_at")) < str(r.get("created_at"))
                       and (not session or session_of(x) != session)]
            # what was stated: the runs as they stood when the last session of several runs before it (a
            # comparison, a sweep) ended; a lone training between is no statement the user was shown
            stating = [end[s] for s in {session_of(x) for x in earlier} if s and len(by[s]) > 1]
            cut = min(max(stating), str(r.get("created_at"))) if stating else None
            before = {x["id"] for x in earlier if cut is None or str(x.get("created_at")) <= cut}
            if not before:
                continue
            with Store.read(_as_it_was(store.path, before, Path(tmp))) as then:
                answer = totarget.stored(then, str(r["workload"]), float(cast(float, r["target_accuracy"])), catalog=catalog,
                                         spot=spot, convergence=identity.key(r, "convergence"))
                stored = {x["id"]: x for x in then.runs(status="ok")}
            if answer is None or not answer.seeds:
                continue
            place = identity.key(r, "place")  # the candidate whose runs were measured where this training ran
            result = next((x for x in answer.results if x.run_ids and x.run_ids[0] in stored
                           and identity.key(stored[x.run_ids[0]], "place") == place), None)
            if result is None or result.time_low_s is None or result.time_high_s is None:
                continue
            name = result.candidate
            data_sessions = sorted({session_of(stored[i]) for i in result.run_ids + [s.run_id for s in answer.seeds]
                                    if i in stored} - {""})
            out.append(_check(r, at, name, result.level, result.time_low_s, result.time_to_target_s, result.time_high_s,
                              data_sessions, session, factor=answer.factor_of(name)))
    return out


def stated(statements: Sequence[StatementRow], run: RunRow,
           first: dict[str, int] | None = None) -> StatementRow | None:
    """The latest interval ``compare`` stated (``Store.statements``) for a training like ``run`` (its workload,
    target, and the identity's convergence and place) before it, in another session; None where none was stored.
    ``first``: each session's first run id, which orders sessions where it can (see ``held_out``)."""
    key = json.dumps(identity.values(run, "convergence"), sort_keys=True, default=str)
    place = json.dumps(identity.values(run, "place"), sort_keys=True, default=str)
    session, first = session_of(run), first or {}
    found = [s for s in statements
             if s["workload"] == run.get("workload") and json.dumps(s["place_key"], sort_keys=True, default=str) == place
             and s.get("machine_id") in (None, run.get("machine_id"))
             and math.isclose(float(s["target_accuracy"]), float(cast(float, run["target_accuracy"])))
             and json.dumps(s["convergence"], sort_keys=True, default=str) == key
             and (first[s["session"]] < run["id"] if s["session"] in first
                  else str(s["stated_at"]) < str(run.get("created_at"))) and (not session or s["session"] != session)]
    return found[-1] if found else None


def _check(run: RunRow, billed: float, candidate: str, level: float, low: float, median: float | None,
           high: float, data_sessions: Sequence[str], session: str, stated_session: str | None = None,
           factor: float | None = None) -> HeldOut:
    """A training that billed ``billed`` seconds held against an interval: one checks row (``kind="held out"``)."""
    return {"run_id": int(run["id"]), "machine_id": run.get("machine_id"), "candidate": candidate, "level": level,
            "low_s": low, "high_s": high, "median_s": median, "billed_s": billed, "inside": low <= billed <= high,
            "kind": "held out", "stated_session": stated_session, "data_sessions": list(data_sessions),
            "later_session": bool(session and session not in data_sessions), "stated_at": run.get("created_at"),
            "factor": factor}


@dataclass
class Outcome:
    """What ``cpustudy backtest`` found: the checks it added, and per machine the backtest and recalibration."""

    added: list[HeldOut]
    machines: list[tuple[str, totarget.Backtest | None, Inflation]]


def run_backtest(path: str | Path | None, *, catalog: Catalog, spot: bool = True,
                 progress: Callable[[str], None] | None = None) -> Outcome:
    """Hold out every stored fresh training not yet checked (:func:`held_out`), store each check, and say per
    machine how the database's checks held and what recalibration they call for. The database must exist: the
    checks are added to what it holds, and a path with no database is refused as every reading command refuses it,
    never created."""
    path = Path(path) if path is not None else default_path()
    if not path.is_file():
        raise UserError(f"no database at {path}: run a measurement first (`cpustudy run ...`) or pass --db "
                        "with an existing file")
    with Store.open(path) as store:
        known = {int(c["run_id"]) for c in store.checks()}
        added = held_out(store, catalog=catalog, spot=spot, progress=progress, skip=known)
        for check in added:
            store.add_check(check)
        machines = [(f"{m.get('cpu_model')} ({m.get('fingerprint')})", totarget.backtest(store, m["id"]),
                     inflation(checks, float(checks[-1]["level"])))  # both at the latest check's level
                    for m in store.machines() for checks in [store.checks(m["id"])] if checks]
    return Outcome(added, machines)
