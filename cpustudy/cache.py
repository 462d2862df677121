"""The user cache: built environments, synthetic data, peaks, the worker's package link.

Standard library only: the worker uses it too.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$CPUSTUDY_CACHE``, else ``$XDG_CACHE_HOME/cpustudy``, else ``~/.cache/cpustudy``."""
    base = os.environ.get("CPUSTUDY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cpustudy")
    return Path(base)
