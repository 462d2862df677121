"""Which cpustudy measured a run: its version, the git commit of its source, and the method version.

A figure is only comparable with another measured the same way. The package version alone does not say
that (it stayed 0.1.0 through several changes of the timing method), so every run also stores:

* ``cpustudy_commit``: the commit of the checkout cpustudy runs from (``git describe``-style, ``-dirty``
  where its files differ from it), or what ``$CPUSTUDY_COMMIT`` says (a cloud VM installing a wheel built
  from a checkout: the plan sets it); None for an install from a wheel with nothing to say;
* ``method_version``: :data:`METHOD_VERSION`, raised whenever what a stored figure means changes (how an
  epoch is timed or projected, what the billed time to a target contains). :data:`METHOD_HISTORY` says what
  each version changed; runs stored before versions were recorded have none (NULL).

Caches of checks whose answer depends on the code or the frameworks are keyed on :func:`code_key` and
:func:`framework_versions`. Standard library only: the worker imports it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from cpustudy import __version__

METHOD_VERSION = 2
METHOD_HISTORY: dict[int, str] = {
    1: ("before 2026-11-26 (stored as NULL): epochs timed between step hooks, capped epochs projected from "
        "the steps' time plus the epoch boundary, idle stalls kept apart"),
    2: ("2026-11-26: as 1, and a training's billed time to a target counts start-up, every epoch with its "
        "stalls and validation; each run records its worker's peak resident memory"),
}
#: The distributions whose versions decide what a cached framework check says.
FRAMEWORKS = ("tensorflow", "tensorflow-cpu", "intel-tensorflow", "tf-nightly", "keras", "tf-keras", "jax", "jaxlib",
              "torch", "numpy")


@functools.lru_cache(maxsize=1)
def commit() -> str | None:
    """The source's commit (12 hex digits, ``-dirty`` where the package's files differ from it): from
    ``$CPUSTUDY_COMMIT`` where set, else from git where cpustudy runs from a checkout; None otherwise."""
    given = os.environ.get("CPUSTUDY_COMMIT", "").strip()
    if given:
        return given
    return commit_of(Path(__file__).resolve().parent.parent)


def commit_of(root: Path) -> str | None:
    """The commit of the cpustudy checkout at ``root`` (``-dirty`` where its package's files differ), or None
    where it is no git checkout."""
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10, stdin=subprocess.DEVNULL)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                "cpustudy"], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def record() -> dict[str, Any]:
    """What each run stores of the cpustudy that measured it."""
    return {"cpustudy_version": __version__, "cpustudy_commit": commit(), "method_version": METHOD_VERSION}


def code_key() -> str:
    """cpustudy's version, commit and method version, and this Python's: part of every cache key whose
    answer the code decides."""
    return f"cpustudy {__version__} {commit() or '-'} method {METHOD_VERSION} python {sys.version.split()[0]}"


def framework_versions() -> str:
    """The installed versions of :data:`FRAMEWORKS` in this interpreter (read from their metadata, nothing
    imported), as one text for a cache key."""
    out = []
    for name in FRAMEWORKS:
        try:
            out.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return " ".join(out)


def versions_text(versions: set[tuple[object, object, object]]) -> str:
    """One phrase for the cpustudy that measured a set of runs: ``cpustudy 0.2.0 (abc123def456, method 2)``,
    several joined, ``before versions were recorded`` for runs with none."""
    parts = []
    for version, sha, method in sorted(versions, key=lambda v: tuple(str(x) for x in v)):
        if method is None and sha is None and version is None:
            parts.append("a cpustudy before versions were recorded")
            continue
        inner = ", ".join(x for x in (str(sha) if sha else "", f"method {method}" if method is not None else "") if x)
        parts.append(f"cpustudy {version or '?'}" + (f" ({inner})" if inner else ""))
    return "; ".join(parts)


def measured_by(runs: Sequence[Mapping[str, object]]) -> str:
    """Which cpustudy measured ``runs`` (``versions_text``), for the line under a table or a page's
    header: ``measured by cpustudy 0.2.0 (abc123, method 2)``; several where they differ."""
    def value(x: object) -> object:  # a pandas record's NaN is none; its float 2.0 the method 2
        if isinstance(x, float):
            return None if x != x else int(x) if x.is_integer() else x
        return x

    versions = {(value(r.get("cpustudy_version")), value(r.get("cpustudy_commit")), value(r.get("method_version")))
                for r in runs if r.get("study") in (None, "cpustudy")}
    return f"measured by {versions_text(versions)}" if versions else ""
