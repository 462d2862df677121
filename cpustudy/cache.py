"""The user cache: built environments, synthetic data, peaks, the worker's package link.

Standard library only: the worker uses it too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """``$CPUSTUDY_CACHE``, else ``$XDG_CACHE_HOME/cpustudy``, else ``~/.cache/cpustudy``."""
    base = os.environ.get("CPUSTUDY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cpustudy")
    return Path(base)


def read_json(path: Path | None) -> dict[str, Any] | None:
    """A cached answer (a JSON object), or None where there is none or it is unreadable."""
    if path is None:
        return None
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return dict(value) if isinstance(value, dict) else None


def write_json(path: Path | None, value: Any) -> None:
    """Remember ``value`` at ``path`` atomically (a temporary file renamed over it, so a reader never sees
    half); an unwritable cache only costs the check again next time."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(value, default=str))
        os.replace(tmp, path)
    except OSError:
        pass
