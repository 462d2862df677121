"""The study's six workloads, by their fixed names (used in the CLI, the database and reports).

Importing this package imports NumPy but never TensorFlow or Keras.
"""

from __future__ import annotations

from cpustudy.errors import UserError
from cpustudy.workloads.base import Dataset, Flops, Workload
from cpustudy.workloads import (
    cifar10_cnn,
    imdb_bidirectional_lstm,
    imdb_fasttext,
    imdb_fasttext_lazy,
    lstm_text_generation,
    mnist_cnn,
    mnist_mlp,
)

WORKLOADS: dict[str, Workload] = {
    m.WORKLOAD.name: m.WORKLOAD
    for m in (
        mnist_mlp,
        mnist_cnn,
        cifar10_cnn,
        imdb_fasttext,
        imdb_bidirectional_lstm,
        lstm_text_generation,
    )
}


# Named variants of a study workload (another optimizer, say): measured only when named, never
# by `all`, and never in place of the workload they vary.
VARIANTS: dict[str, Workload] = {m.WORKLOAD.name: m.WORKLOAD for m in (imdb_fasttext_lazy,)}
ALL: dict[str, Workload] = {**WORKLOADS, **VARIANTS}


def get(name: str) -> Workload:
    try:
        return ALL[name]
    except KeyError:
        raise UserError(
            f"unknown workload {name!r}: choose one of {', '.join(ALL)} (see `cpustudy workloads`)"
        ) from None


def parse_list(text: str) -> list[Workload]:
    """``all`` or a comma-separated list of names, each checked."""
    if text.strip() == "all":
        return list(WORKLOADS.values())
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise UserError("no workload given: name one or more, comma-separated, or `all`")
    return [get(n) for n in dict.fromkeys(names)]


__all__ = ["WORKLOADS", "VARIANTS", "ALL", "Workload", "Dataset", "Flops", "get", "parse_list"]
