"""The studies a database can hold and how each is treated, as one record per study (:class:`Study`):
whether its runs were imported or measured, how its full training is summed, whether its comparisons
are judged, how it is priced, what it is called, and its workload order. Standard library only
(``suspect`` and ``results`` use it without pandas)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

#: The stock builds: the fallback baseline, and what other builds' speedups are measured against.
STOCK_BUILDS = ("tf", "pip")
#: The order the 2017 study's (and so every report's) workloads are shown in.
STUDY_WORKLOADS = ("mnist_mlp", "mnist_cnn", "cifar10_cnn", "imdb_fasttext", "imdb_bidirectional_lstm",
                   "lstm_text_generation", "text_generator_keras")


@dataclass(frozen=True)
class Study:
    """How the analysis and the report treat one study's runs."""

    name: str
    title: str
    #: Imported from published logs (not measured by cpustudy): shown first, never recommended from,
    #: never mixed into the CPU models of merged databases, its settings are its own.
    imported: bool = False
    #: Full training = the sum of the logged epochs (else the median epoch x the workload's epochs).
    summed_epochs: bool = False
    #: Comparisons within it are judged by their repeats and the machine's state (an imported study's
    #: single logged runs are taken as it published them).
    judged: bool = True
    #: Its own era's rates: instance family for CPU runs, instance for GPU runs (None: today's prices).
    pricing: Mapping[str, str] | None = None
    #: How its own chart labels shorten build names (``cpu8cmp``), or None for ``cpu8 tf``.
    short_builds: Mapping[str, str] | None = None
    #: A configuration to compare (False: the tuner's trials, the overhead benchmark's runs).
    compared: bool = True
    workload_order: tuple[str, ...] = field(default=STUDY_WORKLOADS)


WOOLF2017 = Study(
    name="woolf2017", title="Woolf (2017)", imported=True, summed_epochs=True, judged=False,
    pricing={"cpu": "gcp-2017:n1-highcpu", "gpu": "gcp-2017:n1-standard-1+1xK80"},
    short_builds={"pip": "pip", "compiled": "cmp"},
)
STUDIES = {s.name: s for s in (
    WOOLF2017,
    Study(name="cpustudy", title="cpustudy"),
    Study(name="tune", title="tune", compared=False),
    Study(name="bench-overhead", title="bench-overhead", compared=False),
)}

#: The tuner's trials and the overhead benchmark's runs: not configurations to compare.
INTERNAL_STUDIES = tuple(s.name for s in STUDIES.values() if not s.compared)
#: Studies whose full-training time is the sum of their logged epochs (imported logs).
SUMMED_STUDIES = {s.name for s in STUDIES.values() if s.summed_epochs}
#: Studies whose runs were imported from logs, not measured here.
IMPORTED_STUDIES = {s.name for s in STUDIES.values() if s.imported}


def study(name: object) -> Study:
    """The record of study ``name``; a study cpustudy does not know is a measured one, named as stored."""
    return STUDIES.get(str(name)) or Study(name=str(name), title=str(name))


def study_title(name: object) -> str:
    """``Woolf (2017)`` for ``woolf2017``; a study without a title is named as stored."""
    return study(name).title
