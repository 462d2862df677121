"""The answer of ``cpustudy compare`` drawn (``--out DIR``): one chart of each candidate's billed time and
cost to the target with their prediction intervals, the Pareto front and each candidate's P(cheapest), and
a page around it (the report's :class:`~cpustudy.report.page.Page`, rendered to ``index.html`` and
``index.md``) with the candidates' table (each price's reasoning said once, in notes under it), the seeds
(with the setting each trained in, over several settings), the assumptions and notes and the settling steps.

Nothing a comparison says is left out: a candidate without a price is drawn on its time alone (a vertical
line, its interval a band) and said to be unpriced; one without an interval is drawn without bars and its
``interval_note`` listed; one not measured, or whose new trainings mostly never reach the target, is
listed under the chart. :func:`write_answer` writes ``answer.png`` (and ``answer.svg``), ``index.html``
and ``index.md`` into a folder, creating it; it touches no other file there.
"""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
from plotnine import (
    aes,
    annotate,
    arrow,
    element_blank,
    geom_blank,
    geom_errorbar,
    geom_errorbarh,
    geom_label,
    geom_path,
    geom_point,
    geom_segment,
    geom_text,
    geom_vline,
    ggplot,
    labs,
    scale_color_manual,
    scale_x_log10,
    scale_y_discrete,
    scale_y_log10,
    theme,
)

from cpustudy import __version__
from cpustudy.analysis.compare import CandidateResult, Decision, target_words
from cpustudy.decision.policy import leader
from cpustudy.decision.words import decision_lines
from cpustudy.errors import UserError
from cpustudy.report.figures import front_of, render
from cpustudy.report.labels import LabelledPlot
from cpustudy.report.page import Bullets, Callout, Chart, Charts, Page, Section, Table, to_html, to_markdown
from cpustudy.report.theme import FAMILIES, OTHER_FAMILIES, theme_cpustudy

#: The chart's file name without extension, beside the page.
STEM = "answer"
FRONT, DOMINATED, UNPRICED = "on the Pareto front", "dominated", "not priced: time only"
COLOURS = {FRONT: FAMILIES["pip"][3], DOMINATED: OTHER_FAMILIES[2][1], UNPRICED: FAMILIES["torch"][2]}


# -- what is drawn -----------------------------------------------------------------------------------


def candidates_on_front(results: Sequence[CandidateResult]) -> list[bool]:
    """Per result, whether it is on the Pareto front of time and cost to the target by the point estimates
    (the medians): the report's one front (:func:`cpustudy.report.figures.front_of`: ties kept)."""
    return front_of([(r.time_to_target_s, r.cost_usd) for r in results])


def p_text(p: float | None) -> str:
    """P(cheapest) as the chart and the table show it: two decimals, never rounded to a certainty or to
    nothing that the draws did not give."""
    if p is None:
        return "-"
    if 0 < p < 0.005:
        return "<0.01"
    if 0.995 < p < 1:
        return ">0.99"
    return f"{p:.2f}"


def level_words(results: Sequence[CandidateResult]) -> str:
    """The intervals' level as the caption states it: ``90 % prediction interval for one new training``."""
    levels = sorted({r.level for r in results}) or [0.9]
    return " / ".join(f"{lv * 100:g} %" for lv in levels) + " prediction interval for one new training"


def _seconds(values: Any) -> list[str]:
    return [f"{v:,.0f}" if v >= 10 else f"{v:.2g}" for v in values]


def _dollars(values: Any) -> list[str]:
    return [f"{v:.2g}" if v < 1 else f"{v:,.2f}" for v in values]


def _drawn(r: CandidateResult) -> bool:
    return r.speed_runs > 0 and r.time_to_target_s is not None


def _has_interval(r: CandidateResult) -> bool:
    return r.time_low_s is not None or r.time_high_s is not None


def _span(lo: float, hi: float, ratio: float = 1.6) -> tuple[float, float]:
    """A log axis' limits around ``lo``-``hi``, at least ``ratio`` wide (one point, or points almost
    alike, would otherwise give a degenerate axis)."""
    grow = math.sqrt(ratio * lo / hi) if hi < ratio * lo else 1.0
    return lo / grow, hi * grow


def frame(results: Sequence[CandidateResult]) -> pd.DataFrame:
    """One row per drawn candidate: its medians and bounds, front membership, label and kind."""
    front = candidates_on_front(results)
    rows = []
    for r, on in zip(results, front):
        if not _drawn(r):
            continue
        priced = r.cost_usd is not None
        kind = UNPRICED if not priced else FRONT if on else DOMINATED
        label = f"{r.candidate}  " + (f"P={p_text(r.p_cheapest)}" if priced else "not priced") + (
            f"  E={p_text(r.p_best)}" if r.p_best is not None else "")
        if not _has_interval(r):
            label += "  (no interval)"
        rows.append({"candidate": r.candidate, "time": r.time_to_target_s, "time_pi_low": r.time_low_s,
                     "time_pi_high": r.time_high_s, "cost": r.cost_usd, "cost_pi_low": r.cost_low_usd,
                     "cost_pi_high": r.cost_high_usd, "kind": kind, "label": label, "interval": _has_interval(r)})
    return pd.DataFrame(rows, columns=["candidate", "time", "time_pi_low", "time_pi_high", "cost", "cost_pi_low", "cost_pi_high",
                                       "kind", "label", "interval"])


def _bounds(df: pd.DataFrame, col: str) -> tuple[float, float]:
    values = [float(v) for c in (col, f"{col}_pi_low", f"{col}_pi_high") for v in df[c] if v is not None and not pd.isna(v)]
    return min(values), max(values)


def _bars(df: pd.DataFrame, col: str, edge: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows with an interval on ``col``: closed ones (low and high), and open ones whose high bound is
    never (some new trainings never reach the target) drawn from low to the axis' ``edge`` with an arrow."""
    d = df[df["interval"] & df[f"{col}_pi_low"].notna()].copy()
    closed = d[d[f"{col}_pi_high"].notna()].copy()
    open_ = d[d[f"{col}_pi_high"].isna()].copy()
    open_[f"{col}_pi_high"] = edge
    return closed, open_


def fig_answer(workload: str, target: Any, results: Sequence[CandidateResult]) -> ggplot | None:
    """Billed time (x, log) against cost (y, log) to the target of one new training per candidate: its
    median a point, its interval bars both ways, labelled with its name and P(cheapest); the Pareto front
    joined by a dashed line; unpriced candidates a vertical line at their time (their interval a band).
    Without any priced candidate, time alone, one row per candidate. None when nothing can be drawn."""
    df = frame(results)
    if df.empty:
        return None
    drawn = [r for r in results if _drawn(r)]
    priced = df[df["kind"] != UNPRICED]
    if priced.empty:
        return _fig_time_only(workload, target, df, drawn)
    unpriced = df[df["kind"] == UNPRICED].copy()
    x_lo, x_hi = _bounds(df, "time")
    y_lo, y_hi = _bounds(priced, "cost")
    open_x = df["interval"] & df["time_pi_low"].notna() & df["time_pi_high"].isna()
    open_y = priced["interval"] & priced["cost_pi_low"].notna() & priced["cost_pi_high"].isna()
    x_edge = x_hi * (2.0 if open_x.any() else 1.0)
    y_edge = y_hi * (2.0 if open_y.any() else 1.0)
    x_lim, y_lim = _span(x_lo, x_edge), _span(y_lo, y_edge)
    # room for the labels to the right of the rightmost points and above the top ones
    blank = pd.DataFrame({"time": [x_lim[0], x_lim[1] * 1.8], "cost": [y_lim[0], y_lim[1] * 1.25]})
    x_closed, x_open = _bars(priced, "time", x_edge)
    y_closed, y_open = _bars(priced, "cost", y_edge)
    front = priced[priced["kind"] == FRONT].sort_values(["time", "cost"])
    kinds = [k for k in (FRONT, DOMINATED, UNPRICED) if k in set(df["kind"])]
    p = (
        LabelledPlot(priced, aes(x="time", y="cost"))  # labels set apart once laid out: none over another
        + geom_blank(data=blank)
    )
    p = _unpriced_layers(p, unpriced, x_edge)
    unpriced["foot"] = y_lim[0]  # labelled from the panel's foot up: below the front, where no point is
    if len(front) >= 2:
        p = p + geom_path(data=front, color=COLOURS[FRONT], linetype="dashed", size=0.6, alpha=0.7)
    p = _interval_layers(p, x_closed, y_closed, x_open, y_open)
    caption = _caption(df, drawn, bool(open_x.any() or open_y.any()), unpriced=not unpriced.empty)
    p = (
        p
        + geom_point(aes(color="kind"), size=3.2)
        + geom_label(aes(label="label", color="kind"), ha="left", va="bottom", size=8, fill="white", alpha=0.85,
                     label_size=0, label_padding=0.1, show_legend=False)
        + geom_label(aes(x="time", y="foot", label="label", color="kind"), data=unpriced, angle=90, ha="right",
                     va="bottom", size=7.5, fill="white", alpha=0.85, label_size=0,
                     label_padding=0.1, show_legend=False)
        + scale_x_log10(labels=_seconds)
        + scale_y_log10(labels=_dollars)
        + scale_color_manual(values=COLOURS, breaks=[k for k in kinds if k != UNPRICED])
        + labs(
            x="Billed time of one training to the target (s, log scale)",
            y="Cost of one training to the target (USD, log scale)",
            color="",
            title=textwrap.fill(f"{workload} to {target_words(target)}: time and cost on each candidate", 70),
            subtitle=_subtitle(len(front)),
            caption="\n".join(caption),
        )
        + theme_cpustudy()
        + theme(figure_size=(9, 6))
    )
    return p


def _unpriced_layers(p: ggplot, unpriced: pd.DataFrame, x_edge: float) -> ggplot:
    """Candidates without a price, on their time alone: a band for the interval (to ``x_edge`` where it is open), a
    dashed line at the median."""
    for _, u in unpriced.iterrows():
        if u["interval"] and not pd.isna(u["time_pi_low"]):
            hi = u["time_pi_high"] if not pd.isna(u["time_pi_high"]) else x_edge
            p = p + annotate("rect", xmin=u["time_pi_low"], xmax=hi, ymin=0.0, ymax=math.inf,  # the panel's height
                             fill=COLOURS[UNPRICED], alpha=0.10)
    if not unpriced.empty:
        p = p + geom_vline(aes(xintercept="time", color="kind"), data=unpriced, linetype="dashed", size=0.7,
                           show_legend=False)
    return p


def _interval_layers(p: ggplot, x_closed: pd.DataFrame, y_closed: pd.DataFrame, x_open: pd.DataFrame,
                     y_open: pd.DataFrame) -> ggplot:
    """The priced candidates' intervals: bars both ways where closed, an arrow where one end is open."""
    if not x_closed.empty:
        p = p + geom_errorbarh(aes(xmin="time_pi_low", xmax="time_pi_high", color="kind"), data=x_closed, height=0.04,
                               size=0.6, show_legend=False)
    if not y_closed.empty:
        p = p + geom_errorbar(aes(ymin="cost_pi_low", ymax="cost_pi_high", color="kind"), data=y_closed, width=0.04,
                              size=0.6, show_legend=False)
    if not x_open.empty:
        p = p + geom_segment(aes(x="time_pi_low", xend="time_pi_high", y="cost", yend="cost", color="kind"), data=x_open,
                             size=0.6, arrow=arrow(length=0.08, type="open"), show_legend=False)
    if not y_open.empty:
        p = p + geom_segment(aes(x="time", xend="time", y="cost_pi_low", yend="cost_pi_high", color="kind"), data=y_open,
                             size=0.6, arrow=arrow(length=0.08, type="open"), show_legend=False)
    return p

def _caption(df: pd.DataFrame, drawn: Sequence[CandidateResult], open_: bool, unpriced: bool = False) -> list[str]:
    """The chart's caption lines: what a point and its bars are, what no bars, an arrow and a dashed vertical line
    (``unpriced``) mean, and the version (the last line)."""
    out = [f"Point: median; bars: {level_words(drawn)} (billed: worker start to the target)."]
    if not df["interval"].all():
        out.append("No bars: the measurements give no interval (why: see the page).")
    if open_:
        out.append("Arrow: the interval's upper end is never (some new trainings do not reach the target).")
    if unpriced:
        out.append("Dashed vertical line: a candidate without a price, drawn on its time alone (band: its interval).")
    return out + [f"cpustudy {__version__}"]


def _subtitle(front: int) -> str:
    what = ("dashed line: the Pareto front (nothing is both faster and cheaper)" if front >= 2 else
            "one candidate is both the fastest and the cheapest (no front to draw)" if front == 1 else
            "no candidate is priced and timed")
    return textwrap.fill(f"P = probability of being the cheapest in one new training; E = of the lowest expected cost "
                         f"(what the decision reads); {what}", 95)


def _fig_time_only(workload: str, target: Any, df: pd.DataFrame, drawn: Sequence[CandidateResult]) -> ggplot:
    """No candidate priced: each candidate's time to the target on its own row."""
    d = df.copy()
    order = list(d.sort_values("time", ascending=False)["candidate"])
    d["candidate"] = pd.Categorical(d["candidate"], categories=order, ordered=True)
    lo, hi = _bounds(d, "time")
    edge = hi * 2.0
    closed = d[d["interval"] & d["time_pi_low"].notna() & d["time_pi_high"].notna()]
    open_ = d[d["interval"] & d["time_pi_low"].notna() & d["time_pi_high"].isna()].assign(time_pi_high=edge)
    lim = _span(lo, edge)
    blank = pd.DataFrame({"time": [lim[0], lim[1] * 1.5], "candidate": pd.Categorical([order[0]] * 2, categories=order)})
    d["label"] = [lab.replace("  not priced", "") for lab in d["label"]]
    p = ggplot(d, aes(x="time", y="candidate")) + geom_blank(data=blank)
    if not closed.empty:
        p = p + geom_errorbarh(aes(xmin="time_pi_low", xmax="time_pi_high"), data=closed, height=0.2, color=COLOURS[UNPRICED])
    if not open_.empty:
        p = p + geom_segment(aes(x="time_pi_low", xend="time_pi_high", y="candidate", yend="candidate"), data=open_,
                             color=COLOURS[UNPRICED], arrow=arrow(length=0.08, type="open"))
    return (
        p
        + geom_point(size=3.2, color=COLOURS[UNPRICED], shape="D")
        + geom_text(aes(label="label"), va="bottom", ha="left", nudge_y=0.15, size=8)
        + scale_x_log10(labels=_seconds)
        + scale_y_discrete(labels=lambda v: ["" for _ in v])
        + labs(
            x="Billed time of one training to the target (s, log scale)", y="",
            title=textwrap.fill(f"{workload} to {target_words(target)}: time on each candidate", 70),
            subtitle="No candidate is priced: time alone, no cost and no P(cheapest)",
            caption="\n".join(_caption(d, drawn, not open_.empty)),
        )
        + theme_cpustudy()
        + theme(panel_grid_major_y=element_blank(), figure_size=(9, 1.6 + 0.7 * len(d)))
    )


# -- the page ----------------------------------------------------------------------------------------


def _bound(x: float | None, fmt: str) -> str:
    return "never" if x is None else format(x, fmt)


def time_text(r: CandidateResult) -> str:
    """A candidate's time to the target as the table shows it: ``31 s [23-34]``."""
    if r.speed_runs == 0:
        return "not measured"
    if r.time_to_target_s is None:
        return "not reached"
    mid = f"{r.time_to_target_s:,.0f} s"
    return mid if not _has_interval(r) else f"{mid} [{_bound(r.time_low_s, ',.0f')}-{_bound(r.time_high_s, ',.0f')}]"


def cost_text(r: CandidateResult) -> str:
    """A candidate's cost to the target: ``0.0002 [0.00015-0.00023]``, ``not priced`` or ``-``."""
    if r.speed_runs == 0 or r.time_to_target_s is None:
        return "-"
    if r.cost_usd is None:
        return "not priced"
    if not _has_interval(r):
        return f"{r.cost_usd:.3g}"
    return f"{r.cost_usd:.3g} [{_bound(r.cost_low_usd, '.3g')}-{_bound(r.cost_high_usd, '.3g')}]"


def _listed(results: Sequence[CandidateResult]) -> list[str]:
    """What the chart does not show of each candidate, one line each: unpriced, without an interval, not
    measured, not reached."""
    out = []
    for r in results:
        if r.speed_runs == 0:
            out.append(f"{r.candidate}: not measured, not drawn ({'; '.join(r.basis) or 'no speed run'})")
            continue
        if r.time_to_target_s is None:
            out.append(f"{r.candidate}: not drawn: most new trainings would not reach the target "
                       f"({r.reached:.0%} of the seeds did)")
            continue
        if r.cost_usd is None:
            out.append(f"{r.candidate}: not priced, drawn on its time alone ({r.price or 'no price'})")
        if not _has_interval(r):
            out.append(f"{r.candidate}: no interval, drawn without bars: {r.interval_note or 'the measurements give none'}")
        elif r.interval_note:
            out.append(f"{r.candidate}: {r.interval_note}")
    return out


#: Said where P(cheapest) is shown: what it is, and why the decision reads another probability.
ONE_TRAINING = ("P(cheapest) is P(cheapest in one training), the share of new trainings in which a candidate costs "
                "least: it carries one training's luck (its seed, its run's noise), so it does not settle which is "
                "cheaper on average; P(lowest expected cost) does, and the decision reads it.")


def _answer_lines(results: Sequence[CandidateResult], d: Decision | None) -> list[str]:
    """The answer in short: the decision's choice (``d.choice``; without a decision, the same rule's fallback,
    :func:`cpustudy.decision.policy.leader`) with its one probability, P(lowest expected cost); the fastest by
    the median; the Pareto front."""
    lines = []
    choice = (d.choice if d else None) or leader(None, results)
    lead = next((r for r in results if r.candidate == choice and _drawn(r)), None)
    if lead is not None:
        how = ([f"expected regret {d.expected_regret:.1%}"] if d and d.expected_regret is not None else []) + (
            [f"P(lowest expected cost) {p_text(lead.p_best)}"] if lead.p_best is not None else [])
        stop = f" ({d.stop}; the decision below)" if d else ""
        money = f"{cost_text(lead)} USD, " if lead.cost_usd is not None else ""
        lines.append(f"Choose {choice}{': ' + ', '.join(how) if how else ''}{stop}; {money}{time_text(lead)}.")
    timed = [r for r in results if _drawn(r)]
    if timed:
        fast = min(timed, key=lambda r: r.time_to_target_s or math.inf)
        lines.append(f"Fastest by the median: {fast.candidate}, {time_text(fast)}" +
                     (f", {cost_text(fast)} USD." if fast.cost_usd is not None else " (not priced)."))
    front = [r.candidate for r, on in zip(results, candidates_on_front(results)) if on]
    if front:
        lines.append("On the Pareto front (nothing both faster and cheaper by the medians): " + ", ".join(front) + ".")
    if not lines:
        lines.append("No candidate was measured to the target: nothing to compare yet.")
    return lines


def seed_settings(comparison: Any) -> list[str] | None:
    """Per seed of ``comparison``, the setting it trained in (``SeedResult.setting``: ``bf16 b256``) where the
    comparison covers several settings; None where it covers one (the seeds' table then has no such column)."""
    labels = [str(getattr(s, "setting", "") or "") for s in comparison.seeds]
    return labels if any(labels) else None


def _seed_table(comparison: Any) -> Table:
    """The seeds, one row each, led by the setting each trained in where the comparison covers several."""
    seeds = list(comparison.seeds)
    header = ["seed", "epochs to target", "max epochs", "vCPUs", "run"]
    rows = [[str(s.seed), s.outcome(f"not within {s.max_epochs}"), str(s.max_epochs),
             "" if s.vcpus is None else str(s.vcpus), str(s.run_id)] for s in seeds]
    labels = seed_settings(comparison)
    if labels is None:
        return Table(header, rows)
    return Table(["setting", *header], [[label, *row] for label, row in zip(labels, rows)])


# -- the prices: each reason said once ----------------------------------------------------------------

#: A price's clause naming the instance it was priced as, then why: ``priced as gcp:n4-highcpu-2: priced as its
#: own CPU: ...`` (``analysis.totarget.price_of``).
PRICED_AS = re.compile(r"^(priced as \S+): (.+)$", re.S)


def clauses(text: str) -> list[str]:
    """``text`` split at each ``"; "`` outside parentheses and brackets."""
    out: list[str] = []
    depth = start = i = 0
    while i < len(text):
        ch = text[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i = i + 2
            continue
        i += 1
    out.append(text[start:])
    return [c.strip() for c in out if c.strip()]


def price_cells(results: Sequence[CandidateResult]) -> tuple[list[str], list[str]]:
    """The candidates' price column, and the notes said once under it: each row keeps its rate (or, unpriced,
    its first reason) and whatever no other row says; a clause that two or more rows share (why that family,
    how its vCPUs map to the cores here: hundreds of characters, alike over every setting) goes into one
    numbered note, the clauses shared by the same rows into the same note, and the row points at it (``price
    note 1``). ``priced as NAME:`` before a shared reason stays in the row unless its rate names NAME already."""
    items: list[list[tuple[str | None, str | None, str]]] = []  # per row: (kept, shareable, the clause as given)
    for r in results:
        row: list[tuple[str | None, str | None, str]] = []
        parts = clauses(r.price or "")
        for i, clause in enumerate(parts):
            m = PRICED_AS.match(clause)
            if i == 0 and (r.usd_per_hour is not None or not m):  # the rate, or the first reason of an unpriced one
                row.append((clause, None, clause))
            elif m:
                head, body = m.group(1), m.group(2)
                named = i > 0 and head.removeprefix("priced as ") in parts[0]
                row.append((None if named else head, body, clause))
            else:
                row.append((None, clause, clause))
        items.append(row)
    rows_of: dict[str, set[int]] = {}
    for k, row in enumerate(items):
        for _, body, _ in row:
            if body is not None:
                rows_of.setdefault(body, set()).add(k)
    groups: dict[frozenset[int], list[str]] = {}  # the rows that share clauses -> those clauses, in order
    for row in items:
        for _, body, _ in row:
            if body is not None and len(rows_of[body]) >= 2:
                shared = groups.setdefault(frozenset(rows_of[body]), [])
                if body not in shared:
                    shared.append(body)
    number = {rows: n for n, rows in enumerate(groups, 1)}
    cells = []
    for k, row in enumerate(items):
        said = []
        for kept, body, whole in row:
            if body is None or len(rows_of[body]) < 2:
                said.append(whole)
            elif kept:
                said.append(kept)
        notes = sorted(n for rows, n in number.items() if k in rows)
        mark = "" if not notes else f"price note{'s' if len(notes) > 1 else ''} {', '.join(map(str, notes))}"
        cells.append("; ".join(said) + (f" ({mark})" if said and mark else mark))
    return cells, [f"price note {n}: {'; '.join(shared)}" for n, shared in enumerate(groups.values(), 1)]


def answer_page(comparison: Any, chart: bool) -> Page:
    """The page of a comparison (``cpustudy.analysis.totarget.Comparison``): the answer and its chart
    (``chart``: whether ``answer.png`` was drawn), the candidates, the seeds, what was assumed and noted,
    and what settling added."""
    c = comparison
    results = list(c.results)
    target = target_words(c.target)
    level = level_words(results)
    answer: list[Any] = [Bullets(_answer_lines(results, c.decision))]
    if chart:
        answer.append(Charts([Chart(STEM, f"{c.workload} to {target}: billed time and cost of one new training per "
                                          f"candidate, {level}, Pareto front and P(cheapest in one training)")]))
    listed = _listed(results)
    if listed:
        answer.append(Bullets(listed))
    front = candidates_on_front(results)
    pi = " / ".join(f"{lv * 100:g} %" for lv in sorted({r.level for r in results}) or [0.9]) + " PI"
    header = ["candidate", f"time to target [{pi}]", f"cost USD [{pi}]", "P(cheapest)", "P(lowest expected cost)",
              "expected regret", "Pareto front", "seeds", "speed runs", "reached", "basis", "price"]
    prices, price_notes = price_cells(results)
    table = [[r.candidate, time_text(r), cost_text(r), p_text(r.p_cheapest), p_text(r.p_best),
              "" if r.regret is None else f"{r.regret:.1%}", "yes" if on else "",
              str(r.seeds), str(r.speed_runs), f"{r.reached:.0%}", "; ".join(r.basis), price]
             for r, on, price in zip(results, front, prices)]
    meta = [f"cpustudy {__version__}: {len(results)} candidates, {len(c.seeds)} seeds trained to the target"]
    if c.training_wall_s:
        meta.append(f"this comparison took {c.wall_s:,.0f} s; one training to the target {c.training_wall_s:,.0f} s "
                    f"(median of its convergence runs): {c.wall_s / c.training_wall_s:.1f} trainings")
    if c.plan_folder:
        cost = f", estimated at {c.probe_cost_usd:.3g} USD" if c.probe_cost_usd is not None else ""
        meta.append(f"cloud probes planned in {c.plan_folder}{cost}")
    candidates: list[Any] = [Table(header, table, wide=True)]
    if any(r.p_cheapest is not None for r in results):
        candidates.append(Bullets([ONE_TRAINING]))
    if price_notes:
        candidates.append(Bullets(price_notes))
    sections = [Section("The answer", answer)]
    if c.decision:
        sections.append(Section("The decision", [Bullets(decision_lines(c.decision))]))
    sections.append(Section("The candidates", candidates))
    if c.seeds:
        sections.append(Section("The seeds", [_seed_table(c)]))
    said = [f"assumed: {x}" for x in c.assumptions] + [f"note: {x}" for x in c.notes]
    sections.append(Section("Assumptions and notes", [Bullets(said or ["none stated"])]))
    sections.append(Section("Settling", [Bullets(list(c.steps) or ["nothing added: the planned seeds and speed runs "
                                                                    "only"])]))
    callouts = [Callout("note", "Every figure is a prediction for one new training", f"(a seed not yet seen, on a run "
                        f"not yet made): the median and its {level}. Not covered: another machine of the same "
                        "instance type, a cloud VM's provisioning, price changes.")]
    return Page(title=f"Where to train {c.workload} to {target}", doc_title=f"cpustudy compare: {c.workload}",
                meta=meta, callouts=callouts, sections=sections, first=1)


def write_answer(comparison: Any, out: Path | str, *, dpi: int = 110,
                 formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    """Draw ``comparison`` into the folder ``out`` (created): ``answer.png`` (and ``.svg``) where anything
    can be drawn, ``index.html`` (self-contained) and ``index.md`` (the PNG beside it). Those files are
    overwritten; nothing else there is touched. Returns the files written."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as e:
        raise UserError(f"--out {out}: not a folder ({e.strerror or e})") from None
    if "png" not in formats:
        raise ValueError("the page embeds the PNG: formats must include png")
    written: list[Path] = []
    fig = fig_answer(comparison.workload, comparison.target, comparison.results)
    if fig is not None:
        written += render(fig, out / STEM, dpi=dpi, formats=formats)
    page = answer_page(comparison, chart=fig is not None)
    for name, text in (("index.html", to_html(page, out)), ("index.md", to_markdown(page))):
        (out / name).write_text(text, encoding="utf-8")
        written.append(out / name)
    return written
