"""Projections checked against full epochs, and the idle stalls kept out of the figures.

A capped run (``--steps-per-epoch``) projects a full epoch from its steps; a run of the same
configuration on the same machine that trained whole epochs says whether the projection holds
(``sweep --calibrate`` measures one such cell per workload beside its projection). The check pairs
them by the configuration's name (build, settings and platform), workload, device, vCPUs and machine,
and calls the projection good when its median is within ``TOLERANCE`` of the full epochs' median.
"""

from __future__ import annotations

import pandas as pd

from cpustudy.environment import state

#: A projection agrees with full epochs when its median epoch time is within this share of theirs.
TOLERANCE = 0.05

KEYS = ["study", "workload", "device", "vcpus", "build", "machine_id"]

COLUMNS = ["study", "workload", "device", "vcpus", "build", "n_projected", "steps_per_epoch", "projected_s",
           "n_full", "full_s", "ratio", "agrees", "full_stall_s"]


def projection_check(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration measured both projected and in full epochs: the two medians, their
    ratio (projected / full) and whether it is within ``TOLERANCE``; ``full_stall_s`` is the median idle
    stall the full epochs had (left out of their times, as out of every figure)."""
    if runs.empty or not set(KEYS) <= set(runs.columns):
        return pd.DataFrame(columns=COLUMNS)
    ok = runs[(runs["status"] == "ok") & pd.to_numeric(runs["epoch_time_s"], errors="coerce").notna()]
    out = []
    for key, g in ok.groupby(KEYS, sort=False, dropna=False):
        capped = g["projected"].fillna(0).astype(bool)
        proj, full = g[capped], g[~capped]
        if proj.empty or full.empty:
            continue
        p, f = float(proj["epoch_time_s"].median()), float(full["epoch_time_s"].median())
        stall = pd.to_numeric(full["stall_s"], errors="coerce") if "stall_s" in full else pd.Series(dtype=float)
        out.append({**dict(zip(KEYS, key)), "n_projected": len(proj),
                    "steps_per_epoch": int(pd.to_numeric(proj["steps_per_epoch"], errors="coerce").median()),
                    "projected_s": p, "n_full": len(full), "full_s": f, "ratio": p / f if f > 0 else None,
                    "agrees": f > 0 and abs(p / f - 1) <= TOLERANCE,
                    "full_stall_s": float(stall.median()) if stall.notna().any() else None})
    return pd.DataFrame(out, columns=COLUMNS)


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


def superseded(runs: pd.DataFrame) -> pd.Series:
    """Projected runs of a configuration also measured in full epochs on the same machine: the full
    epochs are the measurement, so the projections are only checked against them, never pooled with them."""
    if runs.empty or not set(KEYS) <= set(runs.columns):
        return pd.Series(False, index=runs.index)
    capped = runs["projected"].fillna(0).astype(bool)
    full_keys = set(map(tuple, runs.loc[~capped, KEYS].astype(str).itertuples(index=False)))
    keys = runs[KEYS].astype(str).itertuples(index=False)
    return pd.Series([bool(c) and tuple(k) in full_keys for c, k in zip(capped, keys)], index=runs.index)
