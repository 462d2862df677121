"""The studies a database can hold and how each is treated: which are configurations to compare, which
sum their logged epochs, how they are priced and named. Standard library only (``suspect`` and
``results`` use it without pandas)."""

from __future__ import annotations

#: The tuner's trials and the overhead benchmark's runs: not configurations to compare.
INTERNAL_STUDIES = ("tune", "bench-overhead")
#: The stock builds: the fallback baseline, and what other builds' speedups are measured against.
STOCK_BUILDS = ("tf", "pip")
#: Studies whose full-training time is the sum of their logged epochs (imported logs).
SUMMED_STUDIES = {"woolf2017"}
#: How imported studies are priced: their own era's rates.
STUDY_PRICING = {
    "woolf2017": {"cpu": "gcp-2017:n1-highcpu", "gpu": "gcp-2017:n1-standard-1+1xK80"},
}
STUDY_TITLES = {"woolf2017": "Woolf (2017)", "cpustudy": "cpustudy"}
#: Display names of builds in sentences.
BUILD_NAMES = {"pip": "pip", "compiled": "compiled", "gpu": "GPU"}


def study_title(study: str) -> str:
    """``Woolf (2017)`` for ``woolf2017``; a study without a title is named as stored."""
    return STUDY_TITLES.get(study, study)
