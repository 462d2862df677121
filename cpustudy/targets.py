"""Targets a training stops at: ``--target-accuracy A`` (the validation accuracy, whatever the model calls its
accuracy metric) or ``--target METRIC=VALUE`` on any metric ``fit`` logs (``val_auc=0.8``, ``val_loss<=0.3``).

A target is kept as its text (``val_loss<=0.3``): that is its column, its part of a configuration's identity
and what reports print. Standard library only: the parent and the worker both read it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from cpustudy.errors import UserError

#: The names Keras gives an accuracy metric, in the order one is taken where a model logs several.
ACCURACY_NAMES = ("accuracy", "acc", "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy")
#: Words in a metric's name that make lower better (``METRIC=VALUE`` then means at or below).
LOWER_IS_BETTER = ("loss", "error", "mse", "mae", "mape", "msle", "crossentropy", "hinge", "perplexity")
_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_./-]*)\s*(<=|>=|=)\s*([-+0-9.eE]+)\s*$")


def accuracy_metric(names: Iterable[str], prefix: str = "") -> str | None:
    """The log key of the accuracy metric among ``names`` (``prefix`` ``val_`` for the validation's)."""
    keys = set(names)
    return next((prefix + n for n in ACCURACY_NAMES if prefix + n in keys), None)


def accuracy_value(logs: Mapping[str, Any], prefix: str = "") -> float | None:
    """The accuracy in one epoch's logs, whatever its metric's name; None where there is none."""
    key = accuracy_metric(logs, prefix)
    return float(logs[key]) if key is not None and logs[key] is not None else None


@dataclass(frozen=True)
class Target:
    """Reached at the first epoch whose ``metric`` is at or above (``>=``) or at or below (``<=``) ``value``."""

    metric: str
    op: str  # ">=" | "<="
    value: float

    @property
    def text(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"

    def reached(self, value: float | None) -> bool:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        return value >= self.value if self.op == ">=" else value <= self.value


def parse(text: str, flag: str = "--target") -> Target:
    """``METRIC=VALUE``, ``METRIC>=VALUE`` or ``METRIC<=VALUE``; ``=`` means at or above, or at or below for a
    metric whose name says lower is better (a loss, an error). One ``UserError`` naming the form otherwise."""
    m = _RE.match(text or "")
    if not m:
        raise UserError(f"{flag} {text!r}: give METRIC=VALUE as fit logs it, e.g. val_accuracy=0.9, val_auc=0.8 or "
                        "val_loss<=0.3")
    metric, op, raw = m.groups()
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{flag} {text!r}: {raw!r} is not a number") from None
    if not math.isfinite(value):
        raise UserError(f"{flag} {text!r}: give a finite number")
    if op == "=":
        op = "<=" if any(w in metric.lower() for w in LOWER_IS_BETTER) else ">="
    if not metric.startswith("val_"):
        raise UserError(f"{flag} {text!r}: a target is measured on the validation after every epoch: name a val_ "
                        f"metric (val_{metric})")
    return Target(metric, op, value)


def of_run(target: str | None, target_accuracy: float | None) -> Target | None:
    """A run's target: its ``--target`` text, or ``--target-accuracy`` as the validation accuracy."""
    if target:
        return parse(target)
    if target_accuracy is not None:
        return Target("val_accuracy", ">=", float(target_accuracy))
    return None


def value_in(target: Target, logs: Mapping[str, Any]) -> float | None:
    """The target's metric in one epoch's logs (the validation accuracy under any of its names)."""
    if target.metric == "val_accuracy" and "val_accuracy" not in logs:
        return accuracy_value(logs, "val_")
    v = logs.get(target.metric)
    return float(v) if v is not None else None
