"""Projections checked against full epochs, and the idle stalls kept out of the figures.

A capped run (``--steps-per-epoch``) projects a full epoch from its steps; a run of the same
configuration on the same machine that trained whole epochs says whether the projection holds
(``sweep --calibrate`` measures one such cell per workload beside its projection). The check pairs
them by the identity's ``speed`` view (``cpustudy.identity``: the setting, device, build, vCPUs and place),
and calls the projection good when its median is within ``TOLERANCE`` of the full epochs' median, wrong
only when every paired repeat misses the same way, and otherwise inconclusive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import pandas as pd

from cpustudy import identity
from cpustudy.analysis.frames import number, records
from cpustudy.environment import state

#: A projection agrees with full epochs when its median epoch time is within this share of theirs.
TOLERANCE = 0.05

#: The columns that name a checked configuration (its runs are one group of the identity's ``speed`` view).
KEYS = ["study", "workload", "device", "vcpus", "build", "machine_id"]

COLUMNS = ["study", "workload", "device", "vcpus", "build", "n_projected", "steps_per_epoch", "projected_s",
           "n_full", "full_s", "ratio", "agrees", "verdict", "pairs", "pair_low", "pair_high", "full_stall_s"]


def projection_check(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration measured both projected and in full epochs: the two medians, their
    ratio (projected / full) and whether it is within ``TOLERANCE``; ``full_stall_s`` is the median idle
    stall the full epochs had (left out of their times, as out of every figure)."""
    if runs.empty or not set(KEYS) <= set(runs.columns):
        return pd.DataFrame(columns=COLUMNS)
    ok = runs[(runs["status"] == "ok") & pd.to_numeric(runs["epoch_time_s"], errors="coerce").notna()]
    out = []
    for index in identity.group(zip(ok.index, records(ok)), view="speed", on=lambda pair: pair[1]).values():
        g = ok.loc[[i for i, _ in index]]
        key = tuple(g[k].iloc[0] for k in KEYS)
        capped = _capped(g)
        proj, full = g[capped], g[~capped]
        if proj.empty or full.empty:
            continue
        p, f = float(proj["epoch_time_s"].median()), float(full["epoch_time_s"].median())
        stall = pd.to_numeric(full["stall_s"], errors="coerce") if "stall_s" in full else pd.Series(dtype=float)
        pairs = _paired_ratios(proj, full)
        out.append({**dict(zip(KEYS, key)), "n_projected": len(proj),
                    "pairs": len(pairs), "pair_low": min(pairs) if pairs else None,
                    "pair_high": max(pairs) if pairs else None,
                    "steps_per_epoch": int(pd.to_numeric(proj["steps_per_epoch"], errors="coerce").median()),
                    "projected_s": p, "n_full": len(full), "full_s": f, "ratio": p / f if f > 0 else None,
                    "agrees": f > 0 and abs(p / f - 1) <= TOLERANCE,
                    "verdict": projection_verdict(p / f if f > 0 else None, pairs),
                    "full_stall_s": float(stall.median()) if stall.notna().any() else None})
    return pd.DataFrame(out, columns=COLUMNS)


@dataclass(frozen=True)
class ProjectionError:
    """How far a projected epoch time is from a full one on a database's machines: ``sd``, the root mean square
    of log(projected / full) over the configurations measured both ways (bias and spread together; each a ratio of
    medians, so the processes' own noise is in it too: an overestimate), from ``n`` of them."""

    sd: float
    n: int
    source: str


#: Configurations measured both ways needed before a database's own projection error is used.
MIN_PAIRS = 2


def projection_error(runs: pd.DataFrame) -> ProjectionError:
    """The projection's error on these runs' machines (:func:`projection_check`), or, where fewer than
    ``MIN_PAIRS`` configurations were measured both ways, cpustudy's default: ``TOLERANCE`` (what the check calls
    agreement; measured on Zen 3 and Zen 4 VMs, reports/*-calibration/: projected/full 0.97-1.03 where the machine
    was quiet)."""
    check = projection_check(runs)
    logs = [math.log(float(r)) for r in check["ratio"] if r is not None and pd.notna(r) and float(r) > 0]
    if len(logs) < MIN_PAIRS:
        return default_error(len(logs))
    sd = math.sqrt(sum(x * x for x in logs) / len(logs))
    return ProjectionError(sd, len(logs), f"{sd:.1%} over {len(logs)} configurations measured projected and in full "
                                          "epochs here")


def default_error(measured: int = 0) -> ProjectionError:
    """cpustudy's default projection error, ``TOLERANCE``, where ``measured`` (fewer than ``MIN_PAIRS``)
    configurations were measured both ways."""
    return ProjectionError(TOLERANCE, measured, f"cpustudy's default {TOLERANCE:.0%} (the projection's tolerance; "
                                                f"{measured} configuration(s) measured both ways here, "
                                                "`sweep --calibrate` measures more)")


def pair_range(row: Mapping[str, object]) -> str:
    """A check row's paired repeats' ratios as one text: ``0.959-1.121 (3 pairs)``."""
    n = number(row.get("pairs"))
    if not n or math.isnan(n):
        return "no paired repeats"
    low, high = number(row.get("pair_low")), number(row.get("pair_high"))
    return f"{low:.3f} ({int(n)} pair)" if int(n) == 1 else f"{low:.3f}-{high:.3f} ({int(n)} pairs)"


def projection_verdict(ratio: float | None, pairs: list[float]) -> str:
    """``agrees`` when the medians' ratio is within ``TOLERANCE``; ``differs`` when it is not and every paired
    repeat is off the same way beyond it; otherwise ``inconclusive`` and why: the processes of one cell vary
    (on a shared VM up to 1.4x from one process to the next), and medians of a few of them can miss by
    that noise alone."""
    if ratio is None:
        return "inconclusive: no full-epoch time"
    if abs(ratio - 1) <= TOLERANCE:
        return "agrees"
    if len(pairs) >= 2 and (min(pairs) > 1 + TOLERANCE or max(pairs) < 1 - TOLERANCE):
        return "differs"
    if len(pairs) < 2:
        return "inconclusive: fewer than 2 paired repeats (`sweep --calibrate --repeats 3`)"
    return (f"inconclusive: the paired repeats ({min(pairs):.3f}-{max(pairs):.3f}) do not all miss ±{TOLERANCE:.0%} "
            "the same way: the cell's processes vary more than the gap; add repeats")


def _paired_ratios(proj: pd.DataFrame, full: pd.DataFrame) -> list[float]:
    """projected / full for each repeat measured both ways (``sweep --calibrate`` runs a repeat's full
    cell right after its capped twin): how far one pair can be off, beside the medians' ratio."""
    if "repeat" not in proj or "repeat" not in full:
        return []
    p = proj.groupby("repeat")["epoch_time_s"].median()
    f = full.groupby("repeat")["epoch_time_s"].median()
    both = p.index.intersection(f.index)
    return [float(p[r]) / float(f[r]) for r in both if float(f[r]) > 0]


def stall_note(runs: pd.DataFrame) -> str | None:
    """A sentence on the runs whose epochs had idle stalls (kept out of their figures), or None. The
    cause is named only where it is known: a quiet machine and the per-epoch NumPy input; on a busy
    machine other processes' contention also reads as idle time (seen: up to 5 s)."""
    if "stall_max_s" not in runs:
        return None
    worst = pd.to_numeric(runs["stall_max_s"], errors="coerce")
    stalled = runs[worst > 0]
    if stalled.empty:
        return None
    pipelines = ", ".join(sorted({str(p) for p in stalled.get("input_pipeline", pd.Series(dtype=str)).dropna()}))
    states = stalled["machine_state"] if "machine_state" in stalled else pd.Series(None, index=stalled.index)
    busy = sum(state.busy_share(m) is not None for m in states)
    if busy:
        why = (f"{busy} of them started on a busy machine, where other processes' contention also reads as idle "
               "time: measure again on a quiet one")
    elif pipelines == "numpy":
        why = "Keras 3 waits on the old per-epoch tf.data iterator's autotuning thread (`--input tfdata` keeps one)"
    else:
        why = "its cause is not known for this input"
    return (f"{len(stalled)} run(s) had idle stalls between epochs (no CPU time; median "
            f"{pd.to_numeric(stalled['stall_s'], errors='coerce').median():.2f} s per epoch, up to "
            f"{worst.max():.1f} s; input: {pipelines or 'unknown'}), left out of their epoch times and shown "
            f"as stall_s in `cpustudy results`: {why}")


def contended_runs(runs: pd.DataFrame) -> pd.Series[bool]:
    """Per run, whether it was contended (``state.contended``): its threads waited for a CPU notably more of
    the time inside its steps than the other runs of its configuration on its machine, and its epochs were
    slower than theirs. A run with no other run of its configuration is not judged."""
    flags = pd.Series(False, index=runs.index)
    if "wait_share" not in runs or "epoch_time_s" not in runs:
        return flags
    share = pd.to_numeric(runs["wait_share"], errors="coerce")
    time = pd.to_numeric(runs["epoch_time_s"], errors="coerce")
    capped = _capped(runs) if "projected" in runs else pd.Series(False, index=runs.index)
    of = dict(zip(runs.index, records(runs)))
    for group in identity.group(runs.index, "speed", on=of.__getitem__).values():
        for i in group:
            peers = [(share[j], time[j]) for j in group if j != i and capped[j] == capped[i]]
            flags[i] = state.contended(share[i], time[i], peers)
    return flags


def contention_note(runs: pd.DataFrame) -> str | None:
    """A sentence on the contended runs (:func:`contended_runs`), or None."""
    flags = contended_runs(runs)
    if not flags.any():
        return None
    contended = runs[flags]
    share = pd.to_numeric(contended["wait_share"], errors="coerce")
    ids = ", ".join(str(i) for i in contended["id"].head(8)) + (" ..." if len(contended) > 8 else "")
    return (f"{len(contended)} run(s) were contended: their threads waited for a CPU {100 * share.min():.0f}-"
            f"{100 * share.max():.0f} % of the time inside the steps (wait_share in `cpustudy results`; runs {ids}), "
            f"at least {100 * state.CONTENDED_EXCESS:.0f} points more than the other runs of their configuration, "
            f"and their epochs took {state.CONTENDED_SLOWER:.2f}x theirs or longer: other work took their CPUs, "
            "or their own threads did. Measure them again")


def superseded(runs: pd.DataFrame) -> pd.Series[bool]:
    """Projected runs with a full-epoch twin (the same identity ``speed`` group: setting, device, build, vCPUs and
    place): the full epochs are the measurement, so the projections are only checked against them, never pooled
    with them. A full run of another batch size, precision or validation supersedes nothing."""
    if runs.empty or "projected" not in runs:
        return pd.Series(False, index=runs.index)
    capped = _capped(runs)
    keys = pd.Series([identity.key(r, "speed") for r in records(runs)], index=runs.index)
    return capped & keys.isin(set(keys[~capped]))


def _capped(runs: pd.DataFrame) -> pd.Series[bool]:
    """Whether each run's epoch time is projected from capped epochs (the others trained whole ones)."""
    return runs["projected"].fillna(0).astype(bool)
