"""The report's English: findings computed from the summary, the notes beside them, and the phrases
charts and page share (which baseline, which study).

Every sentence is computed from ``Analysis``; nothing here draws or writes a file.
"""

from __future__ import annotations

import math
import time
from typing import Any, Hashable, SupportsFloat

import pandas as pd

from cpustudy.analysis.frames import number, records, rows
from cpustudy.provenance import measured_by
from cpustudy import __version__, provenance
from cpustudy import prices
from cpustudy.decision import policy
from cpustudy.analysis.baselines import Baseline
from cpustudy.analysis import holdup, stats
from cpustudy.analysis.holdup import HOLDS, Reason, SummaryRow, against_limit, verdict
from cpustudy.names import config_name
from cpustudy.analysis import studies
from cpustudy.analysis.studies import IMPORTED_STUDIES, study_title
from cpustudy.analysis.summary import FROM_COMPARE, Analysis


def cheapest(df: pd.DataFrame, deadline: float | None = None) -> Hashable | None:
    """Index of the cheapest configuration of a sweep's report (meeting the deadline, if one is given), or None: the
    least median cost of its runs; a different question from a comparison's choice (``decision.policy.leader``)."""
    d = df.dropna(subset=["cost_usd"])
    d = d.assign(bill=d["billed_s"] if "billed_s" in d else d["total_time_s"])  # a summary's, or a time alone
    if deadline is not None:
        d = d[d["bill"] <= deadline]  # what a training bills: all of it counts against a deadline
    if d.empty:
        return None
    return d.sort_values(["cost_usd", "bill"]).index[0]


def times(v: float, sign: str = "×") -> str:
    """A ratio as the report writes it: two decimals (``1.23×``), two significant digits under 0.095
    (``0.042×``)."""
    return f"{v:.2f}{sign}" if v >= 0.095 else f"{v:.2g}{sign}"


#: How a sentence that is not a finding begins (the page lists those apart from the answer).
INCONCLUSIVE = "Inconclusive:"
#: The note on projected figures that closes the findings where a figure is projected.
PROJECTED_NOTE = "Figures marked (projected) or * come from epochs capped to fewer steps and projected to a full epoch."


def held(sentence: str, reason: Reason) -> str:
    """A finding as stated, or, when the comparison behind it does not hold up, marked inconclusive
    with the reason."""
    if not reason:
        return sentence
    return f"{INCONCLUSIVE} {sentence.rstrip('.')} (not a finding: {reason})."


def findings(a: Analysis) -> list[str]:
    """Plain-language findings, each computed from the summary; a comparison that does not hold up
    (``cpustudy.analysis.holdup``) is stated as inconclusive, with why."""
    out: list[str] = []
    s = a.summary
    for study in a.studies:
        ss = s[s["study"] == study]
        prefix = f"{study_title(study)}: " if len(a.studies) > 1 else ""
        for workload in a.workloads(study):
            base = a.baselines.get((study, workload))
            if base is not None:
                out += workload_findings(a, ss[ss["workload"] == workload], base, prefix)
        out += _study_findings(ss, prefix)
    if s["projected"].any():
        out.append(PROJECTED_NOTE)
    out += target_findings(a)
    out += larger_vm_notes(s)
    out += validation_notes(a)
    return out


def notes(a: Analysis) -> list[str]:
    """The sentences among :func:`findings` that are notes on how figures were made (projected epochs, a larger VM's
    price), not answers: the page lists them apart, and an answer without any finding says so."""
    return (([PROJECTED_NOTE] if a.summary["projected"].any() else []) + larger_vm_notes(a.summary)
            + validation_notes(a))


def nothing_held(a: Analysis) -> str:
    """The answer where no comparison of the page holds up: how many there were, why they did not hold up (runs on
    a busy machine, single runs, differences within the noise), and what would settle them."""
    p = a.page
    if p is None or p.judged is None:
        return ("No comparison on this page holds up, so none is stated as a finding; each inconclusive comparison "
                "below gives its figures and why.")
    total = len(p.judged)
    if not total:
        return "This page states no comparison."
    busy, same, untested = p.count("busy"), p.count("same"), p.count("untested")
    tested = [j for j in p.judged.values() if j.kind == "tested"]
    single = sum(1 for j in tested if j.single)
    busy_single = sum(1 for j in p.judged.values() if j.kind == "busy" and j.single)
    rest = len(tested) - single
    why = []
    if busy:
        why.append(f"{busy} {'has' if busy == 1 else 'have'} a run on a busy machine (not tested"
                   + (f"; {busy_single} of them also a single run on a side)" if busy_single else ")"))
    if single:
        why.append(f"{single} {'has' if single == 1 else 'have'} a single run on a side, and a difference the "
                   "machine's noise can explain")
    if rest:
        why.append(f"{rest} show{'s' if rest == 1 else ''} a difference {'its' if rest == 1 else 'their'} runs' "
                   "noise can explain, or one under 5 %")
    if same:
        why.append(f"{same} compare{'s' if same == 1 else ''} one program under two names")
    if untested:
        why.append(f"{untested} could not be tested (a side without values)")
    settle = ("measure again" + (" on a quiet machine (no other process using the CPUs)" if busy else "")
              + (" with --repeats 3" if single or busy_single else " with more repeats" if rest else ""))
    return (f"No comparison on this page holds up, so none is stated as a finding: of its {total} comparison"
            f"{'s' if total != 1 else ''}, {'; '.join(why)}. To settle them, {settle}; each inconclusive "
            "comparison below gives its figures and why.")


def _star(r: SummaryRow) -> str:
    return " (projected)" if r.get("projected") else ""


def _name(r: SummaryRow) -> str:
    vcpus = r.get("vcpus")
    return config_name(str(r.get("device")), float(vcpus) if isinstance(vcpus, SupportsFloat) else None,
                       str(r.get("build")))


def _apart(r: SummaryRow, n: SummaryRow) -> tuple[str, str]:
    """Two configurations' names, told apart by their builds where the names alone are alike (two GPU builds are
    both "the GPU")."""
    a, b = _name(r), _name(n)
    return (f"{a} ({r.get('build')})", f"{b} ({n.get('build')})") if a == b else (a, b)


def _names(g: pd.DataFrame) -> str:
    return ", ".join(_name(r) for _, r in g.iterrows())


def workload_findings(a: Analysis, g: pd.DataFrame, base: Baseline, prefix: str) -> list[str]:
    """One workload's findings against its baseline: the cheapest, the fastest, within the deadline."""
    workload = base.workload
    if base.suspect:
        return [f"{prefix}Withheld for {workload}: its GPU baseline ({base.label}) is suspect "
                f"({base.suspect}), so no comparison with it is stated."]
    g = g[g["suspect"].fillna("") == ""]  # a suspect GPU run is shown, never compared
    untimed = g[g["total_time_s"].isna()]  # every run reached its target within the warm-up: no full training
    one = len(untimed) == 1
    lacks = (f"{_names(untimed)} {'has' if one else 'have'} no full-training time (no run of {'it' if one else 'them'} "
             "timed an epoch after the warm-up; each reached its target within it)") if len(untimed) else ""
    g = g[g["total_time_s"].notna()]
    if len(g) == 1:
        r = g.iloc[0]
        if lacks:
            return [f"{prefix}Only one configuration of {workload} has a full-training time: {_name(r)}{_star(r)}; "
                    f"{lacks}."]
        return [f"{prefix}Only one configuration of {workload} was measured: {_name(r)}{_star(r)}."]
    if g.empty:
        return [f"{prefix}No configuration of {workload} has a full-training time: {lacks}."] if lacks else []
    idx = cheapest(g)
    out = _cheapest_findings(g, idx, base, prefix)
    if lacks:
        out.append(f"{prefix}Left out of {workload}'s cheapest and fastest: {lacks}.")
    fastest = g.dropna(subset=["total_time_s"]).sort_values("total_time_s")
    if not fastest.empty and fastest.index[0] != idx:
        out += _fastest_findings(fastest, base, prefix)
    if a.options.deadline is not None:
        out.append(_deadline_finding(g, fastest, a.options.deadline, workload, prefix))
    return out


def _cheapest_findings(g: pd.DataFrame, idx: Any, base: Baseline, prefix: str) -> list[str]:
    """The cheapest configuration against the baseline (or, when it is the baseline, the next cheapest)."""
    if idx is None or not base.cost_usd:
        return []
    workload = base.workload
    base_rows = g[g["is_baseline"].astype(bool)]
    base_row: SummaryRow = base_rows.iloc[0] if not base_rows.empty else {}
    r = g.loc[idx]
    if bool(r["is_baseline"]) and not base.is_gpu:
        rest = g.drop(index=idx)
        j = cheapest(rest)
        nxt = (f"; the next cheapest, {_name(rest.loc[j])}, costs {times(rest.loc[j, 'cost_rel_baseline'])} as much "
               f"at {times(rest.loc[j, 'time_rel_baseline'])} its time{_star(rest.loc[j])}") if j is not None else ""
        return [held(f"{prefix}{base.name}, the baseline, is also the cheapest configuration for "
                     f"{workload}{_star(r)}{nxt}.", verdict(r, rest.loc[j], "cost") if j is not None else HOLDS)]
    if base.is_gpu and r["device"] == "gpu":
        cpu = g[g["device"] != "gpu"]
        j = cheapest(cpu)
        if j is None:
            return []
        c = cpu.loc[[j]].iloc[0]
        return [held(f"{prefix}The GPU is the cheapest configuration for {workload}; the cheapest CPU "
                     f"configuration, {_name(c)}, costs {times(c['cost_rel_baseline'])} as much at "
                     f"{times(c['time_rel_baseline'])} its time{_star(c)}.", verdict(r, c, "cost"))]
    if base.is_gpu:
        whom = "the GPU's cost"
    elif base.kind == "fallback":
        whom = f"the cost of {base.name} (the fallback baseline, {base.missing} of {workload})"
    else:
        whom = f"the cost of {base.name} (the baseline)"
    sentence = (f"{prefix}{_name(r)} is the cheapest configuration for {workload}: {times(r['cost_rel_baseline'])} "
                f"{whom} at {times(r['time_rel_baseline'])} its time{_star(r)}")
    rest = g.drop(index=idx)
    j = cheapest(rest)
    if j is None:
        return [held(sentence + ".", verdict(r, base_row, "cost"))]
    n = rest.loc[j]
    one, other = _apart(r, n)
    sentence += f"; the next cheapest, {other}, costs {times(n['cost_usd'] / r['cost_usd'])} as much{_star(n)}."
    # "the cheapest" is a claim against the next cheapest, as "the fastest" is against the next fastest; the ratio
    # to the baseline is a claim against the baseline: both must hold
    why = _against(verdict(r, n, "cost"), f"{one} and {other} cannot be told apart by cost")
    if not why and not bool(n["is_baseline"]):
        why = _against(verdict(r, base_row, "cost"), f"against {whom.removeprefix('the cost of ')}")
    return [held(sentence, why)]


def _against(reason: Reason, what: str) -> Reason:
    """``reason`` (why a comparison did not hold up) led by which comparison it is; :data:`HOLDS` stays as it is."""
    if not reason:
        return reason
    return Reason(f"{what}: {reason}", busy=reason.busy, same=reason.same)


def _fastest_findings(fastest: pd.DataFrame, base: Baseline, prefix: str) -> list[str]:
    """The fastest configuration (when it is not the cheapest) against the baseline."""
    workload = base.workload
    f = fastest.iloc[0]
    if f["device"] == "gpu" and base.is_gpu:
        cpu = fastest[fastest["device"] != "gpu"]
        if cpu.empty:
            return []
        c = cpu.iloc[0]
        return [held(f"{prefix}The GPU is the fastest configuration for {workload}; the fastest CPU "
                     f"configuration, {_name(c)}, takes {times(c['time_rel_baseline'])} its time{_star(c)}.",
                     verdict(f, c))]
    whose = "the GPU's" if base.is_gpu else f"{base.name}'s"
    cost = times(f['cost_rel_baseline']) if not pd.isna(f['cost_rel_baseline']) else 'an unknown'
    return [held(f"{prefix}{_name(f)} is the fastest configuration for {workload}: {times(f['time_rel_baseline'])} "
                 f"{whose} time at {cost} its cost{_star(f)}.", verdict(f, fastest.iloc[1]) if len(fastest) > 1 else HOLDS)]


def _deadline_finding(g: pd.DataFrame, fastest: pd.DataFrame, deadline: float, workload: str, prefix: str) -> str:
    """The cheapest configuration within the deadline, or that none meets it; judged as every finding is
    (:func:`held`): it meets the deadline by more than the noise explains (``holdup.against_limit``), it is cheaper
    than the next cheapest that meets it, and each cheaper configuration misses it by more than the noise explains."""
    d = cheapest(g, deadline)
    if d is None:
        if fastest.empty:
            return f"{prefix}No configuration trains {workload} within the {deadline:g} s deadline."
        quickest = fastest.iloc[0]
        return held(f"{prefix}No configuration trains {workload} within the {deadline:g} s deadline; the fastest, "
                    f"{_name(quickest)}, bills {quickest['billed_s']:.0f} s{_star(quickest)}.",
                    _against(against_limit(quickest, deadline), f"{_name(quickest)}"))
    r = g.loc[[d]].iloc[0]
    rest = g.drop(index=d)
    j = cheapest(rest, deadline)
    n = rest.loc[[j]].iloc[0] if j is not None else None
    one, other = _apart(r, n) if n is not None else (_name(r), "")
    sentence = (f"{prefix}Within the {deadline:g} s deadline, {one} is the cheapest configuration for "
                f"{workload}: {r['billed_s']:.0f} s billed for {r['cost_usd']:.4f} USD{_star(r)}")
    why = _against(against_limit(r, deadline), one)
    if n is not None:
        sentence += (f"; the next cheapest within it, {other}, costs {times(n['cost_usd'] / r['cost_usd'])} as much "
                     f"({n['billed_s']:.0f} s billed{_star(n)})")
        why = why or _against(verdict(r, n, "cost"), f"{one} and {other} cannot be told apart by cost")
    priced = g.dropna(subset=["cost_usd"])
    over = priced[(priced["cost_usd"] < r["cost_usd"]) & (priced["billed_s"] > deadline)].sort_values("billed_s")
    if len(over):
        o = over.iloc[0]
        sentence += (f"; {_names(over)}, cheaper, bill{'s' if len(over) == 1 else ''} more "
                     f"(the nearest, {_name(o)}, {o['billed_s']:.0f} s{_star(o)})")
        for _, o in over.iterrows():
            why = why or _against(against_limit(o, deadline), f"{_name(o)}, cheaper,")
    return held(sentence + ".", why)


def target_findings(a: Analysis) -> list[str]:
    """At equal accuracy: per workload run to a target, the cheapest (or, unpriced, the fastest)
    configuration to reach it, against the next one, and which never reached it. Busy machines,
    overlapping repeats and small single-run differences are inconclusive, as everywhere
    (``holdup.verdict`` on the time to the target of the runs that reached it)."""
    s = a.summary
    if "target_runs" not in s:
        return []
    out = []
    # a configuration timed only in speed runs is one of compare's candidates for the target (summary.to_target)
    timed = s["target_basis"].fillna("").str.startswith(FROM_COMPARE) & s["time_to_target_s"].notna() \
        if "target_basis" in s else pd.Series(False, index=s.index)
    for _, g in s[(s["target_runs"] > 0) | timed].groupby(["study", "workload", "target"], sort=False):
        study, workload = g["study"].iloc[0], g["workload"].iloc[0]
        target = str(g["target"].iloc[0])  # as the summary names it (summary.target_text)
        prefix = f"{study_title(str(study))}: " if len(a.studies) > 1 else ""
        missed = g[(g["target_reached_runs"] == 0) & ~timed[g.index]]
        if len(missed):
            names = ", ".join(config_name(r["device"], r["vcpus"], r["build"]) for _, r in missed.iterrows())
            out.append(f"{prefix}{names} did not reach {target} on {workload} within "
                       f"{int(missed['epochs'].max())} epochs.")
        ok = g[(g["target_reached_runs"] > 0) | timed[g.index]]
        if ok.empty:
            continue
        by = "cost_to_target_usd" if ok["cost_to_target_usd"].notna().all() else "time_to_target_s"
        ok = _leader_first(a, ok.sort_values([by, "time_to_target_s"]))
        best = ok.iloc[0]
        what = "cheapest" if by == "cost_to_target_usd" else "fastest"
        sentence = (f"{prefix}{config_name(best['device'], best['vcpus'], best['build'])} is the {what} to reach "
                    f"{target} on {workload}: {_epochs(best)}"
                    f"{best['time_to_target_s']:.0f} s{_interval(best)} billed" + (f", {best['cost_to_target_usd']:.6f} USD"
                                                           if pd.notna(best["cost_to_target_usd"]) else ""))
        if len(ok) < 2:
            out.append(sentence + ".")
            continue
        nxt = ok.iloc[1]
        ratio = nxt[by] / best[by] if best[by] > 0 else float("nan")
        sentence += (f"; the next, {config_name(nxt['device'], nxt['vcpus'], nxt['build'])}, needs "
                     f"{_epochs(nxt, ' and ')}{times(ratio)} the {'cost' if by != 'time_to_target_s' else 'time'}.")
        only = [r for r in (best, nxt) if not r["target_reached_runs"]]  # timed in speed runs alone: compare's figures
        out.append(held(sentence, Reason(
            f"{config_name(only[0]['device'], only[0]['vcpus'], only[0]['build'])} trained to no target itself: its "
            "figures are compare's prediction (the seeds' epochs x its speed runs), not trainings a test can hold "
            "against the other's; `cpustudy compare` decides between them") if only else
            verdict(best, nxt, "target_cost" if by == "cost_to_target_usd" else "target_time")))
    return out


def _leader_first(a: Analysis, ok: pd.DataFrame) -> pd.DataFrame:
    """A target's configurations with the one ``compare`` would choose first (:func:`cpustudy.decision.policy.leader_of`
    of the comparison whose figures they show: the least expected regret), the rest as given; as given where no
    comparison drew them all."""
    base = ok["workload_base"] if "workload_base" in ok else ok["workload"]
    comparison = a.comparisons.get((str(base.iloc[0]), float(ok["target_accuracy"].iloc[0])))
    if comparison is None:
        return ok
    row_of = {r.candidate: i for r in comparison.results for i, own in zip(ok.index, ok["run_ids"])
              if set(r.run_ids) & set(own)}
    if set(row_of.values()) != set(ok.index):  # rows of other settings, on their own runs' medians: by those
        return ok
    name, _ = policy.leader_of(comparison, set(row_of))
    if name is None:
        return ok
    return pd.concat([ok.loc[[row_of[name]]], ok.drop(index=row_of[name])])

def _epochs(r: SummaryRow, then: str = ", ") -> str:
    """``2 epoch(s)`` and ``then`` where the row's own runs reached the target; a configuration timed only in speed
    runs trains the seeds' epochs, said by its interval: nothing."""
    e = r.get("epochs_to_target")
    return f"{float(e):.0f} epoch(s){then}" if isinstance(e, SupportsFloat) and not math.isnan(float(e)) else ""


def _interval(r: SummaryRow) -> str:
    """A time to the target's prediction interval, where the figure is one (``summary.to_target``)."""
    level, low, high = (r.get(k) for k in ("target_level", "target_pi_low", "target_pi_high"))
    if not all(isinstance(x, SupportsFloat) and not math.isnan(float(x)) for x in (level, low, high)):
        return ""
    return f" [{low:.0f}-{high:.0f} s, {level:.0%} prediction interval]"


def validation_notes(a: Analysis) -> list[str]:
    """One sentence per workload whose priced configurations differ in validation: some validated on the test set
    after every epoch (``--validation study``: a validation time stored), others did not. A run bills the validation
    it ran (``analysis.billed``), so their costs and billed times are not like for like; their training times are."""
    s = a.summary[~a.summary["study"].isin(IMPORTED_STUDIES) & a.summary["cost_usd"].notna()]
    if "validation_time_s" not in s:
        return []
    out = []
    for (study, workload), g in s.groupby(["study", "workload"], sort=False):
        seconds = pd.to_numeric(g["validation_time_s"], errors="coerce")
        validated, not_ = g[seconds > 0], g[~(seconds > 0)]
        if validated.empty or not_.empty:
            continue
        prefix = f"{study_title(str(study))}: " if len(a.studies) > 1 else ""
        each = float(seconds[seconds > 0].median())
        out.append(f"{prefix}{workload}: {len(validated)} configuration{'s' if len(validated) != 1 else ''} validated "
                   f"on the test set after every epoch ({', '.join(validated['label'])}; median {each:.2g} s an "
                   f"epoch) and {len(not_)} did not ({', '.join(not_['label'])}): a run's billed time and cost include "
                   "the validation it ran, so their costs are not like for like (their training times are).")
    return out


def larger_vm_notes(s: pd.DataFrame) -> list[str]:
    """One sentence per instance that priced configurations with fewer vCPUs than it has, and why: the same
    physical cores take more of its family's vCPUs (a run's whole cores priced as hyperthreads), the training
    needs more memory than the smaller types have, or the family's smallest VM is larger than the run. Its
    cost is the whole VM's, so it does not shrink with vCPUs."""
    import re

    out: list[str] = []
    if "priced_vcpus" not in s:
        return out
    larger = pd.to_numeric(s["priced_vcpus"], errors="coerce") > pd.to_numeric(s["vcpus"], errors="coerce")
    mask = (s["priced_by"] == "family") & larger
    for inst, g in s[mask].groupby("instance", sort=False):
        counts = sorted({int(v) for v in g["vcpus"].dropna()})
        size = f"{int(g['priced_vcpus'].iloc[0])} vCPUs"
        runs = " and ".join(f"{c} vCPU{'s' if c != 1 else ''}" for c in counts)
        notes = " ".join(str(n) for n in g.get("price_note", pd.Series(dtype=object)).dropna())
        why = []
        cores = re.findall(r"\d+ vCPUs? (?:are|is) here [^;]+; one \S+ vCPU is a [^,;]+, so the same cores are \d+ of its vCPUs",
                           notes)
        if cores:
            why.append("the VM that holds the same physical cores: " + "; ".join(dict.fromkeys(cores)))
        memory = re.findall(r"\S+ has [\d.]+ GiB, less than the [\d.]+ GiB this training needs", notes)
        if memory:
            why.append("the training's memory: " + "; ".join(dict.fromkeys(memory)))
        unrated = re.findall(r"no (?:spot|on-demand) price for [^;]+ in the catalog", notes)
        if unrated:
            why.append("the smallest of its family with a rate on this basis (" + "; ".join(dict.fromkeys(unrated)) + ")")
        reason = "; ".join(why) or "the smallest VM of its family with that many vCPUs"
        out.append(f"Cost at {runs} is that of {inst} ({size}), {reason}: renting it costs the same whatever share "
                   f"of it a run uses, so there cost follows time (it is not cut pro rata).")
    return out


def _tally(verdicts: list[tuple[bool, Reason]]) -> tuple[int, int, list[Reason]]:
    """(held and true, held and false, reasons of those that did not hold)."""
    yes = sum(1 for ok, why in verdicts if ok and not why)
    no = sum(1 for ok, why in verdicts if not ok and not why)
    return yes, no, [why for _, why in verdicts if why]


def _inconclusive(reasons: list[Reason]) -> str:
    if not reasons:
        return ""
    busy = sum(r.busy for r in reasons)
    first = next((r for r in reasons if r.busy), reasons[0])
    return (f"; {len(reasons)} inconclusive ({busy} on a busy machine; e.g. {first})" if busy
            else f"; {len(reasons)} inconclusive (e.g. {first})")


def _study_findings(ss: pd.DataFrame, prefix: str) -> list[str]:
    out = []
    cpu_all = ss[(ss["device"] != "gpu") & ss["vcpus"].notna()]
    stock_rows = cpu_all[cpu_all["stock"].astype(bool)]
    cpu = ss[(ss["device"] != "gpu") & ss["build_speedup_vs_stock"].notna() & ~ss["stock"].astype(bool)]
    for build, g in cpu.groupby("build", sort=False):
        stocks = stock_rows[stock_rows["platform"] == g["platform"].iloc[0]]
        stock_name = stocks["build"].iloc[0] if not stocks.empty else "the stock build"
        verdicts = []
        for r in records(g):
            same = stocks[(stocks["workload"] == r["workload"]) & (stocks["vcpus"] == r["vcpus"])]
            why = verdict(r, same.iloc[0]) if not same.empty else Reason("no stock run at these vCPUs")
            verdicts.append((number(r["build_speedup_vs_stock"]) > 1, why))
        faster, slower, reasons = _tally(verdicts)
        by_v = g.groupby("vcpus")["build_speedup_vs_stock"].median()
        detail = ", ".join(f"{times(v)} at {int(k)} vCPU{'s' if int(k) != 1 else ''}"
                           for k, v in zip(by_v.index.astype(int), by_v.astype(float)))
        sentence = (f"{prefix}{build} against {stock_name} at equal vCPUs, {len(g)} comparisons: faster in {faster}, "
                    f"slower in {slower}{_inconclusive(reasons)} (median speedup "
                    f"{times(g['build_speedup_vs_stock'].median())}; {detail}).")
        out.append(sentence if faster + slower else f"{INCONCLUSIVE} {sentence}")
    counts = sorted(int(v) for v in cpu_all["vcpus"].unique())
    if len(counts) >= 2:
        lo, hi = counts[-2], counts[-1]
        a = cpu_all[cpu_all["vcpus"] == lo].set_index(["workload", "build"])
        b = cpu_all[cpu_all["vcpus"] == hi].set_index(["workload", "build"])
        both = a.index.intersection(b.index)
        if len(both):
            ratio = a.loc[both, "total_time_s"] / b.loc[both, "total_time_s"]
            verdicts = [(bool(ratio[k] > 1), verdict(a.loc[k].to_dict(), b.loc[k].to_dict())) for k in both]
            faster, slower, reasons = _tally(verdicts)
            sentence = (f"{prefix}Going from {lo} to {hi} vCPUs, {len(both)} workload × build pairs: faster in "
                        f"{faster}, slower in {slower}{_inconclusive(reasons)} (median speedup "
                        f"{times(float(ratio.median()))}).")
            out.append(sentence if faster + slower else f"{INCONCLUSIVE} {sentence}")
    gpu_beaten = []
    for workload, g in ss.groupby("workload", sort=False):
        base_rows = g[g["is_baseline"].astype(bool)]
        if (g["baseline_kind"] == "gpu").any() and not (base_rows["suspect"].fillna("") != "").any():
            c = g[(g["device"] != "gpu") & (g["time_rel_baseline"] < 1)]
            held_up = [r for r in records(c) if not verdict(r, base_rows.iloc[0])]
            n = int((g["device"] != "gpu").sum())
            if held_up:
                gpu_beaten.append(f"{workload} ({len(held_up)} of {n} CPU configurations)")
    if gpu_beaten:
        out.append(f"{prefix}CPUs trained faster than the GPU for: {'; '.join(gpu_beaten)}.")
    return out


def baseline_phrase(b: Baseline) -> str:
    """For titles: 'GPU', or the fallback configuration."""
    if b.is_gpu:
        return "GPU"
    return b.label


def baseline_subtitle(b: Baseline, machine: str) -> str:
    """For a chart's subtitle: what 1.0x is, where it ran, and why it is the baseline."""
    where = f" ({machine})" if machine else ""
    if b.kind == "gpu":
        return f"1.0x = {b.label}{where}" + (f"  SUSPECT: {b.suspect}" if b.suspect else "")
    if b.kind == "requested":
        return f"1.0x = {b.label}{where}, as requested"
    return f"Fallback baseline ({b.missing} of {b.workload}): 1.0x = {b.label}{where}, {b.reason}"


def suspect_notes(a: Analysis) -> list[str]:
    """GPU configurations that cannot be right, mostly idle ones (a caveat), and GPU runs whose
    utilisation was not recorded."""
    out = []
    gpu = a.summary[a.summary["device"] == "gpu"]
    for r in rows(gpu, index=False):
        where = f"{study_title(r.study)}, {r.workload}, {r.label}"
        if r.suspect:
            role = " (the baseline: every finding that would compare with it is withheld)" \
                if r.is_baseline else " (shown, compared with nothing)"
            out.append(f"{where} is suspect{role}: {r.suspect}.")
        elif r.gpu_caveat:
            out.append(f"{where}: {r.gpu_caveat}.")
        elif not studies.study(r.study).imported and math.isnan(number(r.gpu_utilization)):
            out.append(f"{where}: GPU utilisation was not recorded (measured before cpustudy sampled it), "
                       "so an idle GPU cannot be ruled out.")
    return out


def fallback_notes(a: Analysis) -> list[str]:
    """The workloads whose baseline is a fallback, one sentence per study, baseline and reason (not one
    per workload): e.g. "no GPU run of mnist_mlp and mnist_cnn: each is compared with cpu1 tf, the stock
    build at the fewest vCPUs"."""
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for (study, workload), b in a.baselines.items():
        if b.kind == "fallback":
            missing, why = b.missing, b.reason
            groups.setdefault((study, b.label, missing, why), []).append(workload)
    out = []
    for (study, label, missing, why), workloads in groups.items():
        names = workloads[0] if len(workloads) == 1 else ", ".join(workloads[:-1]) + f" and {workloads[-1]}"
        each = "it is" if len(workloads) == 1 else "each is"
        prefix = f"{study_title(study)}: " if len(a.studies) > 1 else ""
        out.append(f"{prefix}{missing} of {names}: {each} compared with {label}"
                   + (f", {why}." if why else "."))
    return out


def header_lines(a: Analysis) -> list[str]:
    """The page's header: database, studies, baseline, cost basis, what epoch times include, deadline."""
    o = a.options
    base = o.baseline or "default (the GPU run of each workload; otherwise the stock build at the fewest vCPUs)"
    rate = prices.basis_sentence(o.on_demand)
    lines = [
        f"Database: {a.db}; generated {time.strftime('%Y-%m-%d %H:%M %Z')} by cpustudy {__version__} "
        f"({provenance.commit() or 'no commit known'}, method {provenance.METHOD_VERSION}); runs "
        f"{measured_by(records(a.runs)) or 'measured by no cpustudy (imported only)'}.",
        f"Studies: {', '.join(study_title(s) for s in a.studies)}; {len(a.runs)} finished runs, "
        f"{len(a.summary)} configurations.",
        *([line] if (line := runs_line(a)) else []),
        f"Baseline: {base}.",
        f"{rate}; CPU results priced as {o.instance_family or 'the cloud family that runs the CPU they ran on (each price note names it)'}"
        + (f"; GPU instance {o.gpu_instance}" if o.gpu_instance else "")
        + (f"; price file {o.prices}" if o.prices else "") + "; 2017 results use the 2017 rates"
        + (f"; {a.price_catalogs}" if a.price_catalogs else "") + ".",
    ]
    lines.append("Epoch and training times are training only; the validation on the test set that the study's "
                 "examples ran after every epoch is timed apart (--validation study), added to a time only where the "
                 "study's logged epochs are compared (then and now), and billed: a run's billed time and cost include "
                 "the validation it ran.")
    lines.append(data_line(a))
    lines.append(machine_state_line(a))
    if o.deadline is not None:
        lines.append(f"Deadline: {o.deadline:g} s of full training.")
    return lines


def runs_line(a: Analysis) -> str:
    """What became of the stored runs this page does not show (``Analysis.stored``): failed, interrupted, still
    marked running, left out; empty where every stored run is on it."""
    n = a.stored
    total = sum(n.values())
    if not n or total == n.get("page", 0):
        return ""

    def runs(k: int) -> str:
        return f"{k} run{'s' if k != 1 else ''}"

    parts = []
    for kind, words in (("failed", "failed"), ("interrupted", "were interrupted before they finished"),
                        ("running", "are still marked running (measuring, or stopped before they could say)"),
                        ("other study", f"are of other studies than --study {a.options.study}"),
                        ("internal", "are the tuner's or the overhead benchmark's (not configurations to compare)"),
                        ("oversubscribed", "were oversubscribed (more vCPUs than the machine had)"),
                        ("warm-up only", "timed no epoch after the warm-up (measure with --epochs 2 or more)"),
                        ("left out", "were left out of the figures (why: the notes below)")):
        k = n.get(kind, 0)
        if k:
            parts.append(f"{runs(k)} {words if k != 1 else _singular(words)}")
    errors = n.get("failed", 0) + n.get("interrupted", 0)
    see = "; `cpustudy results --errors` lists the failed and interrupted ones with their errors" if errors else ""
    return f"Runs: {n.get('page', 0)} of the {total} stored are on this page; {', '.join(parts)}{see}."


def _singular(words: str) -> str:
    return words.replace("were ", "was ", 1).replace("are ", "is ", 1).replace(" they ", " it ")


DATA_WORDS = {"synthetic": "synthetic (the real data's shapes and statistics, random labels)",
              "learnable": "learnable (synthetic inputs whose labels follow a planted rule)", "real": "real"}


def data_line(a: Analysis) -> str:
    """Which data the reported runs trained on, per study: timing on synthetic data is faithful,
    accuracy on it is not."""
    parts = []
    for s in a.studies:
        counts = a.runs.loc[a.runs["study"] == s, "data"].fillna("unknown").value_counts()
        runs = ", ".join(f"{DATA_WORDS.get(str(k), str(k))}: {int(n)} run{'s' if n != 1 else ''}"
                         for k, n in counts.items())
        parts.append(f"{study_title(s)}, {runs}" if len(a.studies) > 1 else runs)
    return "Data: " + "; ".join(parts) + "."


def rule_sentence(p: holdup.Family) -> str:
    """How this page's findings were judged, for its header: the rule, and where the page's first pass kept them
    (``Family.judged``), how many comparisons it states and how each kind was treated."""
    cleared = f"p at most {p.threshold:.2g}" if p.threshold > 0 else "none cleared it"
    fam = (f"Benjamini-Hochberg over the {p.family} comparison(s) the page tested, a false-discovery rate of "
           f"{100 * stats.ALPHA:g} %: {cleared}" if p.corrected and p.family
           else f"Benjamini-Hochberg over the comparisons a page tests, a false-discovery rate of "
                f"{100 * stats.ALPHA:g} %: this page tested none" if p.corrected
           else f"each comparison alone at p <= {p.threshold:g}")
    rule = (f"a finding is a difference of at least {100 * stats.MIN_EFFECT:g} % between the runs of two "
            f"configurations on a quiet machine that Welch's test on log times shows ({fam}), with the "
            f"machine's {p.noise.line}; the rest are marked inconclusive")
    if p.judged is None:
        return rule
    total, published = len(p.judged), p.count("published")
    kinds = [(p.count("tested"), "tested"),
             (p.count("busy"), "with a run on a busy machine (not tested: inconclusive)"),
             (p.count("same"), "of one program under two names (not compared)"),
             (p.count("untested"), "without values on a side (not tested: inconclusive)"),
             (published, "of an imported study's figures")]
    said = ", ".join(f"{n} {what}" for n, what in kinds if n)
    out = f"{rule}. The page states {total} comparison{'s' if total != 1 else ''}" + (f": {said}" if said else "")
    if published:
        out += (". An imported study's figures (one logged run per configuration, on machines cpustudy did not "
                "watch) are taken as the study published them: their comparisons are stated as its findings, "
                "not tested here")
    return out


def machine_state_line(a: Analysis) -> str:
    """How quiet the machines were when cpustudy's own runs started (the 2017 study's were not watched)."""
    from cpustudy.analysis.holdup import BUSY_CPU_PERCENT, Family, busy_reason

    own = a.runs[~a.runs["study"].isin(IMPORTED_STUDIES)] if "study" in a.runs else a.runs
    states = list(own["machine_state"]) if "machine_state" in own else []
    recorded = [m for m in states if isinstance(m, str) and m]
    busy = [busy_reason(m) for m in recorded]
    busy = [b for b in busy if b]
    rule = rule_sentence(a.page or Family(a.noise))
    if not states:
        return f"Machine state: no cpustudy runs; {rule}."
    head = (f"Machine state: {len(busy)} of {len(states)} runs started on a busy machine (e.g. {busy[0]})" if busy
            else f"Machine state: every run whose state was recorded ({len(recorded)} of {len(states)}) started on a "
                 f"quiet machine (no other process used {BUSY_CPU_PERCENT:g} % of a CPU)")
    return f"{head}; {rule}."
