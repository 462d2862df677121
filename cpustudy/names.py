"""Names and lists on the command line: a comma-separated list whose every item is given, and the
nearest known name for a mistyped one; what a configuration and the place a run measured are called in words.
Standard library only."""

from __future__ import annotations

import difflib
import math
from typing import Iterable, Mapping, Sequence

from cpustudy.errors import UserError


def split_list(text: str, flag: str, example: str) -> list[str]:
    """``a,b`` -> ["a", "b"]. An empty item (``1,,2``, a trailing comma) is a typo, refused in one
    line rather than read as something else."""
    items = [t.strip() for t in text.split(",")]
    if not text.strip():
        raise UserError(f"{flag}: give one or more, comma-separated, e.g. {example}")
    if any(not t for t in items):
        raise UserError(f"{flag} {text!r}: an item is empty (two commas, or one at an end): give e.g. {example}")
    return items


def and_list(values: Sequence[int]) -> str:
    """``8, 16 and 32``."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def unknown(kind: str, name: str, known: Iterable[str], see: str) -> UserError:
    """``unknown workload 'mnist_mpl': did you mean mnist_mlp? (choose one of ...; see ...)``."""
    choices = list(known)
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    return UserError(f"unknown {kind} {name!r}: {hint}(choose one of {', '.join(choices)}; see `{see}`)")


def int_list(text: str, flag: str) -> list[int]:
    """``32,64,128`` -> [32, 64, 128]; anything else is a one-line error naming the flag."""
    try:
        values = [int(t) for t in split_list(text, flag, "32,64,128")]
    except ValueError:
        raise UserError(f"{flag}: give whole numbers separated by commas, e.g. 32,64,128") from None
    if not values or min(values) <= 0:
        raise UserError(f"{flag}: give positive whole numbers separated by commas, e.g. 32,64,128")
    return values


def parse_duration(text: str, flag: str = "--deadline") -> float:
    """``90s``, ``10m``, ``1h30m``, ``2h``, or plain seconds (``600``, ``1.5``); positive and finite."""
    import math
    import re

    t = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        value = float(t)
    else:
        parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?", t)
        if not t or parts is None or not any(parts.groups()):
            raise UserError(f"{flag} {text!r}: write a duration like 90s, 10m, 1h30m or 2h (or seconds)".lstrip())
        h, m, s = (float(g) if g else 0.0 for g in parts.groups())
        value = h * 3600 + m * 60 + s
    if not value > 0 or math.isinf(value):
        raise UserError(f"{flag} {text!r}: give a positive duration".lstrip())
    return value


#: Display names of builds in sentences.
BUILD_NAMES = {"pip": "pip", "compiled": "compiled", "gpu": "GPU"}


def config_name(device: str, vcpus: object, build: str) -> str:
    """In words: ``16 vCPUs compiled``, ``the GPU`` (a vCPU count that is no finite number, None, NaN or NA, as
    ``None``)."""
    if device == "gpu":
        return "the GPU"
    try:
        count = float(vcpus)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        count = math.nan
    v = int(count) if math.isfinite(count) else None
    return f"{v} vCPU{'s' if v != 1 else ''} {BUILD_NAMES.get(build, build)}"


def place_name(run: Mapping[str, object]) -> str:
    """Where a stored run measured, in words: its configuration on its instance, else its CPU model (or machine).
    A label only: what joins runs and statements is the identity's ``place`` view (:mod:`cpustudy.identity`)."""
    device = str(run.get("device") or "cpu")
    where = run.get("instance") or str(run.get("cpu_model") or run.get("machine"))[:40]
    what = config_name(device, run.get("vcpus"), str(run["build"]))
    if device == "gpu" and isinstance(run.get("vcpus"), int):  # the place's vCPUs: the host feeding the GPU
        what += f" ({run['vcpus']} vCPU{'s' if run['vcpus'] != 1 else ''} feeding it)"
    return f"{what} on {where}"
