"""The report of an ``Analysis`` (``cpustudy.analysis.summary.analyze``): charts, findings and one page,
written as ``summary.csv``, PNG/SVG charts, ``index.html`` and ``report.md``. The modules:

* ``theme``: the look of every chart (the plotnine theme, the colours of builds);
* ``findings``: the English: findings computed from the summary, notes, phrases;
* ``beyond``: the charts beyond the 2017 study (throughput against batch size, cost to a target);
* ``figures``: one function per chart, each returning a ggplot (or None where it does not apply);
* ``page``: the page, rendered to HTML and Markdown, and ``write_report``, which writes everything;
* ``build``: ``cpustudy report`` as one call: analyse a database and write its report into a folder;
* ``answer``: the answer of ``cpustudy compare`` drawn (``--out DIR``): its chart and page.

Charts render off-screen (matplotlib's Agg backend, chosen here before plotnine is imported).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from cpustudy.report.page import write_report  # noqa: E402

__all__ = ["write_report"]
