"""When a comparison between two configurations holds up, and why not when it does not.

A finding is stated only when the comparison behind it holds up:

* **a quiet machine**: no run of either side was measured while other processes used the CPUs
  (``busy_reason``: other processes using ``BUSY_CPU_PERCENT`` % of a CPU or more in the sample each
  run stores before it starts). The load average is not used: on a small machine it still counts the
  sweep's own previous worker;
* **a difference the runs show**: the per-run values of the two sides tested by
  :func:`cpustudy.analysis.stats.compare_samples` (Welch's t on log times, each side's spread pooled with
  the machine's known noise, the variation between periods as the machine's variance components say
  (within one period each side's own move in it; across two, blocked by a configuration of the page measured in both
  where there is one: :func:`session_relation`, :func:`reference`), significant at the page's threshold
  (Benjamini-Hochberg over the page's comparisons: :func:`page`) and at least
  :data:`~cpustudy.analysis.stats.MIN_EFFECT` (5 %) apart.

The 2017 study's imported logs are one run per configuration on machines cpustudy did not watch:
their comparisons are reported as that study's (its published figures), not re-judged here.
"""

from __future__ import annotations

import contextlib
import math
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Protocol, Sequence

import numpy as np
import pandas as pd

from cpustudy import identity
from cpustudy.analysis import stats
from cpustudy.analysis.frames import ids, number, records, run_records
from cpustudy.analysis.runs import periods, settings_of
from cpustudy.analysis.studies import study
from cpustudy.environment import state


class SummaryRow(Protocol):
    """A summary row as a comparison reads it: a cell by its column, None where the row lacks it (a record,
    ``Mapping[str, object]``, or the pandas row it came from); each cell checked where it is read."""

    def get(self, key: str, /) -> object: ...


BUSY_CPU_PERCENT = state.BUSY_CPU_PERCENT  # other processes' CPU use, in % of one CPU, that makes a machine busy


@dataclass(frozen=True)
class Judged:
    """How one comparison of a page was judged: ``kind`` "tested" (a p-value, in the page's family), "busy" (a side
    ran on a busy machine: not tested), "same" (one program under two names), "published" (an imported study's
    figures, taken as it published them) or "untested" (no test possible: a side without values); for a tested or
    busy one, whether a side rests on a single run (``single``)."""

    kind: str
    single: bool = False


@dataclass
class Family:
    """How the comparisons of one page are judged: the machine's noise, the p-value threshold (per
    comparison ``stats.ALPHA``, or the page's Benjamini-Hochberg threshold), and on a first pass the
    p-values of every distinct comparison made (``seen``) and how each comparison stated was judged (``judged``)."""

    noise: stats.Noise = stats.DEFAULT_NOISE
    threshold: float = stats.ALPHA
    corrected: bool = False
    seen: dict[tuple, float] | None = None
    blocks: tuple[Block, ...] = ()  # the page's configurations measured in several periods (:func:`blocks`)
    judged: dict[tuple, Judged] | None = None

    @property
    def family(self) -> int:
        return len(self.seen or {})

    def count(self, kind: str) -> int:
        """How many of the page's comparisons were judged as ``kind`` (:class:`Judged`)."""
        return sum(1 for j in (self.judged or {}).values() if j.kind == kind)

    def note(self, key: tuple, judged: Judged) -> None:
        """Keep how a comparison was judged, on a page's first pass (its comparisons as stated)."""
        if self.judged is not None and not self.corrected:
            self.judged[key] = judged


def _key(a: Sequence[float], b: Sequence[float]) -> tuple:
    """A comparison's identity on its page: its two sides' values, in either order."""
    return tuple(sorted((tuple(sorted(a)), tuple(sorted(b)))))


_PAGE: ContextVar[Family | None] = ContextVar("cpustudy_page", default=None)


@contextlib.contextmanager
def judging(p: Family) -> Iterator[Family]:
    token = _PAGE.set(p)
    try:
        yield p
    finally:
        _PAGE.reset(token)


def page(noise: stats.Noise, state_all: Callable[[], object], alpha: float = stats.ALPHA,
         references: tuple[Block, ...] = ()) -> Family:
    """The page on which everything ``state_all`` states is judged together: it is run once to collect the
    p-values of its comparisons, and the returned page holds their Benjamini-Hochberg threshold (the
    expected share of false findings among those stated is at most ``alpha``). Judge under it with
    ``with judging(page): ...``."""
    with judging(Family(noise, alpha, seen={}, blocks=references, judged={})) as first:
        state_all()
    seen = first.seen or {}
    return Family(noise, stats.bh_threshold(seen.values(), alpha), corrected=True, seen=seen, blocks=references,
                  judged=first.judged)


def busy_reason(machine_state: str | Mapping[str, object] | None) -> str:
    """Why a run's machine was busy when it started (empty when quiet or not recorded)."""
    parsed = state.parsed(machine_state)
    busy = state.busy_share(parsed)
    if busy is None:
        return ""
    load = parsed.get("loadavg") or [math.nan]
    return f"busy: other processes used {busy[0]:.0f} % of a CPU ({busy[1]}; load average {load[0]:.1f})"


#: Per measure a comparison can be about: the summary column of per-run values, its median's column, and for a
#: cost the cost column that prices them (the same runs at one rate). A full training's time is its training (as
#: speed is compared), its cost what it bills (``billed_s``); to a target, both are billed.
MEASURES = {
    "time": ("run_times", "total_time_s", None),
    "cost": ("run_bills", "billed_s", "cost_usd"),
    "target_time": ("target_times", "time_to_target_s", None),
    "target_cost": ("target_times", "time_to_target_s", "cost_to_target_usd"),
}


def samples(r: SummaryRow, metric: str) -> list[float]:
    """A configuration's per-run values for ``metric`` (:data:`MEASURES`): time (full training), cost, target_time
    or target_cost (to the target, over the runs that reached it); costs are the billed times at its rate."""
    column, middle, cost = MEASURES[metric]
    if metric == "cost" and r.get(column) is None:  # a row made without billed times: its training times
        column, middle = MEASURES["time"][:2]
    values = r.get(column)
    if not isinstance(values, (list, tuple)):  # none stored (None, NaN): the median alone
        mid = number(r.get(middle))
        values = [mid] if mid > 0 else []
    out = [number(v) for v in values if number(v) > 0]
    if cost:
        mid = number(r.get(middle))
        scale = number(r.get(cost)) / mid if mid > 0 else math.nan
        out = [v * scale for v in out] if scale > 0 else []
    return out


@dataclass(frozen=True)
class Reason:
    """Why a comparison is inconclusive; false (empty) when it holds up. ``busy``: a side ran on a busy
    machine (the report counts those apart). Reads as its text."""

    text: str = ""
    busy: bool = False
    same: bool = False  # the two sides are one program under two names (:func:`same_program`)

    def __bool__(self) -> bool:
        return bool(self.text)

    def __str__(self) -> str:
        return self.text


#: The comparison holds up.
HOLDS = Reason()


def same_program(a: SummaryRow, b: SummaryRow) -> Reason | None:
    """Two builds that resolved to the same program on this machine (``resolved``: versions, oneDNN, XLA,
    interpreter and environment alike) are one configuration under two names: not a comparison."""
    ra, rb = str(a.get("resolved") or ""), str(b.get("resolved") or "")
    if ra and ra == rb and a.get("recipe") != b.get("recipe"):
        return Reason(f"{a.get('recipe')} and {b.get('recipe')} resolve to the same switches on this machine "
                      "(same TensorFlow, oneDNN, XLA and environment): the same configuration, not compared",
                      same=True)
    return None


def verdict(a: SummaryRow, b: SummaryRow, metric: str = "time") -> Reason:
    """Whether the comparison of configurations ``a`` and ``b`` (summary rows) by ``metric`` (time,
    cost, target_time or target_cost: to a target, over the runs that reached it) holds up on the page
    being judged (:func:`judging`): :data:`HOLDS`, or the :class:`Reason` it is inconclusive."""
    xa, xb = samples(a, metric), samples(b, metric)
    page_ = _PAGE.get() or Family()
    same = same_program(a, b)
    if same:
        page_.note(_key(xa, xb), Judged("same"))
        return same
    busy = [str(r.get("busy") or "") for r in (a, b) if r.get("busy")]
    if busy:
        page_.note(_key(xa, xb), Judged("busy", single=min(len(xa), len(xb)) == 1))
        return Reason(busy[0], busy=True)
    if not study(a.get("study")).judged and not study(b.get("study")).judged:
        page_.note(_key(xa, xb), Judged("published"))
        return HOLDS  # an imported study's single logged runs, as it published them
    ref = reference(a, b)
    result = judge(xa, xb, same_session=session_relation(a, b), reference=ref)
    if not result.holds:
        return Reason(result.reason)
    if ref is None:
        return HOLDS
    raw = stats.compare_samples(xa, xb).ratio  # the figures as measured, the machine's shift between periods in them
    if not result.low <= raw <= result.high:  # a page shows the figures as measured
        return Reason(f"measured in different periods: read against a configuration measured in both, the ratio is "
                      f"{result.ratio:.2f} ({result.low:.2f}-{result.high:.2f} at {1 - stats.ALPHA:.0%}); the figures "
                      f"as measured, {raw:.2f}, carry the machine's shift between the periods")
    return HOLDS


def against_limit(r: SummaryRow, limit: float, what: str = "deadline") -> Reason:
    """Whether configuration ``r`` (a summary row) bills on the side of ``limit`` (seconds) that its median does,
    beyond what the noise explains, on the page being judged (:func:`judging`): :data:`HOLDS`, or the
    :class:`Reason` it is inconclusive (a run on a busy machine; a margin the noise can explain).

    A one-sided t test on the logs of its runs' billed times: their spread pooled with the machine's known noise
    between runs, plus its variation between sweeps (the runs are one sweep's draw of it); significant at the page's
    threshold, and counted among the page's comparisons (Benjamini-Hochberg)."""
    bills = r.get("run_bills")
    values = [number(v) for v in (bills if isinstance(bills, (list, tuple)) else ()) if number(v) > 0]
    if not values and number(r.get("billed_s")) > 0:
        values = [number(r.get("billed_s"))]
    page_ = _PAGE.get() or Family()
    key = ("limit", float(limit), tuple(sorted(values)))
    if r.get("busy"):
        page_.note(key, Judged("busy", single=len(values) == 1))
        return Reason(str(r.get("busy")), busy=True)
    if not study(r.get("study")).judged:
        page_.note(key, Judged("published"))
        return HOLDS  # an imported study's single logged runs, as it published them
    if not values or not limit > 0:
        page_.note(key, Judged("untested"))
        return Reason(f"no billed time to hold against the {limit:g} s {what}")
    x = np.log(np.asarray(values))
    n = len(x)
    var, df = stats.moderated(x, page_.noise)
    if df <= 0:
        page_.note(key, Judged("untested"))
        return Reason(f"{n} run(s) and no known spread: a run alone cannot show it meets the {limit:g} s {what} "
                      "(measure with --repeats 2 or more)")
    between = page_.noise.between ** 2
    se2 = var / n + between
    dof = se2 ** 2 / ((var / n) ** 2 / df) if var > 0 else math.inf
    se = math.sqrt(se2)
    middle = float(np.median(values))
    under = middle <= limit
    d = (math.log(limit) - float(x.mean())) * (1 if under else -1)  # the margin on the side the median is
    p = stats.t_sf(d / se, dof) if se > 0 else (0.0 if d > 0 else 1.0)
    if page_.seen is not None and math.isfinite(p):
        page_.seen[key] = p
    page_.note(key, Judged("tested", single=n == 1))
    threshold = page_.threshold
    if math.isfinite(p) and p <= threshold:
        return HOLDS
    q = stats.t_ppf(1 - stats.ALPHA / 2, dof) * se
    low, high = math.exp(float(x.mean()) - q), math.exp(float(x.mean()) + q)
    margin = abs(middle / limit - 1)
    return Reason(f"{middle:.0f} s billed is {100 * margin:.1f} % {'under' if under else 'over'} the {limit:g} s "
                  f"{what}, a margin the noise can explain: p = {p:.2g}, "
                  f"{stats.level_text(threshold, max(page_.family, 1) if page_.corrected else 1)} "
                  f"({n} run{'s' if n != 1 else ''}; {low:.0f}-{high:.0f} s at {100 * (1 - stats.ALPHA):.0f} %)")


def _periods(r: SummaryRow) -> tuple[str, ...] | None:
    """The periods of a configuration's runs (summary row: ``periods``), None where any run's is unknown (stored
    before sessions were kept: grouped only by the gaps between them)."""
    x = r.get("periods")
    if not isinstance(x, (list, tuple)) or not x or not all(isinstance(p, str) and p.startswith("period ") for p in x):
        return None
    return tuple(str(p) for p in x)


def session_relation(a: SummaryRow, b: SummaryRow) -> bool | None:
    """True where every run of both configurations (summary rows) came from one measuring period
    (:func:`cpustudy.analysis.runs.periods`: sessions less than an hour apart), so one shift moved both alike; False
    where their stored periods say otherwise; None where either side's runs did not store their session (cpustudy's
    default variation between sessions is assumed there: :func:`cpustudy.analysis.stats.compare_samples`)."""
    pa, pb = _periods(a), _periods(b)
    if pa is None or pb is None:
        return None
    return len(set(pa)) == 1 and set(pa) == set(pb)


@dataclass(frozen=True)
class Block:
    """A configuration's full-training times per period (a page's possible reference), and its runs."""

    run_ids: frozenset[int]
    times: Mapping[str, tuple[float, ...]]


def blocks(summary: pd.DataFrame) -> tuple[Block, ...]:
    """Every configuration of a page (summary rows with ``run_periods``) measured on a quiet machine, as a possible
    reference for a contrast across two periods (:func:`reference`)."""
    out = []
    for r in records(summary):
        if r.get("busy") or not study(r.get("study")).judged:
            continue
        by: dict[str, list[float]] = {}
        ps, ts = r.get("run_periods"), r.get("run_times")  # tuples (summary.aggregate); none where not stored
        for period, t in zip(ps if isinstance(ps, (list, tuple)) else (), ts if isinstance(ts, (list, tuple)) else ()):
            if str(period).startswith("period "):
                by.setdefault(str(period), []).append(number(t))
        if len(by) > 1:
            out.append(Block(frozenset(ids(r.get("run_ids"))), {k: tuple(v) for k, v in by.items()}))
    return tuple(out)


def reference(a: SummaryRow, b: SummaryRow) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """Where ``a`` was measured in one period and ``b`` in another, a third configuration of the page being judged
    measured in both (the one with most runs in the fewer of the two): its times in ``a``'s period and in ``b``'s,
    which block the contrast (a ratio of ratios, free of the machine's shift); None where none was."""
    pa, pb = _periods(a), _periods(b)
    if pa is None or pb is None or len(set(pa)) != 1 or len(set(pb)) != 1 or pa[0] == pb[0]:
        return None
    own = {i for r in (a, b) for i in ids(r.get("run_ids"))}
    fits = [k for k in (_PAGE.get() or Family()).blocks
            if pa[0] in k.times and pb[0] in k.times and not (k.run_ids & own)]
    if not fits:
        return None
    best = max(fits, key=lambda k: min(len(k.times[pa[0]]), len(k.times[pb[0]])))
    return best.times[pa[0]], best.times[pb[0]]


def judge(a: Sequence[float], b: Sequence[float], same_session: bool | None = None,
          reference: tuple[Sequence[float], Sequence[float]] | None = None) -> stats.Contrast:
    """Two sets of per-run values compared on the page being judged (its noise and threshold); on a
    first pass, the comparison's p-value is collected for the page's correction."""
    p = _PAGE.get() or Family()
    result = stats.compare_samples(a, b, noise=p.noise, threshold=p.threshold, same_session=same_session,
                                   reference=reference)
    if p.corrected:
        result = result.at(p.threshold, max(p.family, 1))
    key = _key(a, b)
    if p.seen is not None and math.isfinite(result.p):
        p.seen[key] = result.p
    p.note(key, Judged("tested", single=min(result.n_a, result.n_b) == 1) if math.isfinite(result.p)
           else Judged("untested"))
    return result


def compare_samples(a: Sequence[float], b: Sequence[float], *, sessions_a: Sequence[str] | None = None,
                    sessions_b: Sequence[str] | None = None, noise: stats.Noise | None = None,
                    reference: tuple[Sequence[float], Sequence[float]] | None = None) -> stats.Contrast:
    """Two sequences of per-run times compared as a report's finding would be, alone on its page: an
    object with ``.holds`` and ``.ratio`` (a / b). See :func:`cpustudy.analysis.stats.compare_samples`.
    Without ``noise``, the samples alone (plain Welch); with it, the page's judge (:func:`judge`) with that
    noise. ``sessions_a``/``sessions_b``: each run's measuring period; where every run of both came from one,
    the shift between periods is left out (:func:`session_relation`); ``reference``: a third configuration's runs
    in ``a``'s period and in ``b``'s."""
    same = session_relation({"periods": tuple(f"period {x}" for x in sessions_a)} if sessions_a else {},
                            {"periods": tuple(f"period {x}" for x in sessions_b)} if sessions_b else {})
    if noise is None:
        return stats.compare_samples(a, b, noise=stats.NO_PRIOR, same_session=same, reference=reference)
    with judging(Family(noise)):
        return judge(a, b, same_session=same, reference=reference)


def period_of(runs: pd.DataFrame) -> pd.Series[str]:
    """Each run's measuring period (:func:`cpustudy.analysis.runs.periods` of its stored session), or its sweep
    (:func:`sweeps`) where it stored no session."""
    sweep = sweeps(runs)
    period = periods(run_records(runs))
    return pd.Series([period.get(s.removeprefix("session "), s) for s in sweep], index=runs.index, dtype="object")


#: Runs further apart than this (one's end to the next one's start, on one machine) belong to separate sweeps.
SWEEP_GAP_S = 20 * 60


def sweeps(runs: pd.DataFrame) -> pd.Series[str]:
    """Which sweep each run belongs to: the measuring session that stored it (one ``sweep``, ``run`` or
    ``compare`` call, kept in its settings); for runs stored before sessions were kept, per machine, a new
    sweep begins where the machine measured nothing for ``SWEEP_GAP_S``."""
    out = pd.Series("", index=runs.index, dtype="object")
    if runs.empty:
        return out
    if "settings" in runs:
        for i, text in zip(runs.index, runs["settings"]):
            session = str(settings_of(text).get("session") or "")
            if session:
                out[i] = f"session {session}"
    rest = runs[out == ""]
    if rest.empty or "created_at" not in rest:
        return out
    start = pd.to_datetime(rest["created_at"], errors="coerce", utc=True)
    end = pd.to_datetime(rest["finished_at"], errors="coerce", utc=True) if "finished_at" in rest else start
    end = end.fillna(start)
    machine = rest["machine"] if "machine" in rest else pd.Series("", index=rest.index)
    for m, idx in rest.groupby(machine.fillna(""), sort=False).groups.items():
        order = start.loc[idx].sort_values().index
        n, last = 0, None
        for i in order:
            if last is not None and pd.notna(start[i]) and (start[i] - last).total_seconds() > SWEEP_GAP_S:
                n += 1
            out[i] = f"{m} gap {n}"
            last = max(last, end[i]) if last is not None and pd.notna(end[i]) else end[i]
    return out


def machine_noise(runs: pd.DataFrame, prior: stats.Noise = stats.DEFAULT_NOISE) -> stats.Noise:
    """This database's noise (:func:`cpustudy.analysis.stats.noise_from_groups`) from the full-training
    times of its own runs on a quiet machine: per configuration (the identity's ``noise`` view: the
    setting, device, build, vCPUs, place and epochs trained), per sweep; what they cannot tell comes from ``prior``
    (:func:`cpustudy.analysis.anchor.prior`: cpustudy's default, or the machine's anchor)."""
    own = runs[~runs["study"].map(lambda s: study(s).imported)] if "study" in runs else runs
    if "machine_state" in own:
        own = own[[not busy_reason(m) for m in own["machine_state"]]]
    if own.empty or "total_time_s" not in own:
        return prior
    # A run's total is its own epochs' (a compare's 2-epoch probes beside its seeds' trainings): never pooled.
    by: dict[tuple, dict[str, list[float]]] = {}
    totals = pd.to_numeric(own["total_time_s"], errors="coerce")
    for r, period, total in zip(records(own), period_of(own), totals):  # one draw of the machine's shift a period
        if pd.notna(total):
            by.setdefault(identity.key(r, "noise"), {}).setdefault(period, []).append(float(total))
    return stats.noise_from_groups(list(by.values()), fallback=prior)
