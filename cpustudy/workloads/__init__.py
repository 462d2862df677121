"""The study's six workloads, by their fixed names (used in the CLI, the database and reports).

* ``base``: what a workload is (``Workload``), and the FLOP-counting convention they all follow;
* ``datasets``: synthetic datasets shaped like the real ones, and the text preprocessing both share;
* ``mnist_mlp``, ``mnist_cnn``, ``cifar10_cnn``, ``imdb_fasttext``, ``imdb_bidirectional_lstm``,
  ``lstm_text_generation``: the 2017 study's Keras examples;
* ``imdb_fasttext_lazy``: a named variant (lazy Adam updates), measured only when named;
* ``userfile``: a user's model file or training script as a workload.

Importing this package imports NumPy but never TensorFlow or Keras.
"""

from __future__ import annotations

from cpustudy.errors import UserError
from cpustudy.names import split_list, unknown
from cpustudy.workloads import (
    cifar10_cnn,
    imdb_bidirectional_lstm,
    imdb_fasttext,
    imdb_fasttext_lazy,
    lstm_text_generation,
    mnist_cnn,
    mnist_mlp,
    userfile,
)
from cpustudy.workloads.base import Dataset, Flops, Workload

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
    """A workload by its name, or a user's model file by its path (``./my_model.py``: checked, see
    :mod:`cpustudy.workloads.userfile`)."""
    if name not in ALL and userfile.looks_like_file(name):
        return userfile.load(name, reserved=ALL)
    try:
        return ALL[name]
    except KeyError:
        raise unknown("workload", name, ALL, "cpustudy workloads") from None


def parse_list(text: str, flag: str = "--workloads") -> list[Workload]:
    """``all`` or a comma-separated list of names and model files, each checked."""
    if text.strip() == "all":
        return list(WORKLOADS.values())
    out = [get(n) for n in dict.fromkeys(split_list(text, flag, "mnist_mlp,cifar10_cnn or all"))]
    by_name: dict[str, Workload] = {}
    for w in out:
        if w.name in by_name and by_name[w.name] is not w:
            raise UserError(f"{flag}: two model files are both named {w.name!r}: give one a NAME of its own")
        by_name[w.name] = w
    return out


def describe_all() -> list[dict[str, object]]:
    """Every workload's shapes, defaults and training FLOPs per sample (``cpustudy workloads``)."""
    rows: list[dict[str, object]] = []
    for w in ALL.values():
        f = w.flops()
        rows.append({
            "workload": w.name, "model": w.title, "dataset": w.dataset, "input": w.input_desc,
            "batch_size": w.batch_size, "epochs": w.epochs, "samples_per_epoch": w.samples_per_epoch,
            "steps_per_epoch": w.steps_per_epoch, "optimizer": w.optimizer,
            "train_mflops_per_sample": round(f.train / 1e6, 3),
            "forward_mflops_per_sample": round(f.forward / 1e6, 3),
            "bound": "memory" if w.memory_bound else "compute",
        })
    return rows


__all__ = ["WORKLOADS", "VARIANTS", "ALL", "Workload", "Dataset", "Flops", "describe_all", "get", "parse_list"]
