"""The report's English (cpustudy.report.findings): findings computed from the summary, against the
GPU, a fallback baseline or a deadline, prefixed by their study when there are several."""

from __future__ import annotations

import pytest
import reportdb

from cpustudy.analysis import summary
from cpustudy.report import findings
from cpustudy.store import Store


@pytest.fixture(scope="module")
def woolf_report(tmp_path_factory):
    return reportdb.woolf_report(tmp_path_factory)


@pytest.fixture(scope="module")
def local_analysis(tmp_path_factory):
    return reportdb.local_analysis(tmp_path_factory)


def test_findings_against_a_fallback_baseline(local_analysis):
    facts = findings.findings(local_analysis)
    assert ("2 vCPUs tf-eigen is the cheapest configuration for mnist_mlp: 0.50× the cost of 1 vCPU tf (the "
            "fallback baseline, no GPU run of mnist_mlp) at 0.50× its time.") in facts
    assert "Only one configuration of mnist_cnn was measured: 1 vCPU tf (projected)." in facts


def test_findings_name_their_study_when_there_are_several(tmp_path):
    db = reportdb.make_local_db(tmp_path / "both.sqlite")
    reportdb.import_fixtures(db)
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    facts = findings.findings(a)
    assert any(f.startswith("Woolf (2017): ") for f in facts) and any(f.startswith("cpustudy: ") for f in facts)


def test_findings_with_a_deadline(woolf_report):
    db, _ = woolf_report
    with Store.read(db) as s:
        facts = findings.findings(summary.analyze(s, summary.Options(deadline=45)))
        tight = findings.findings(summary.analyze(s, summary.Options(deadline=5)))
    assert "Within the 45 s deadline, 8 vCPUs compiled is the cheapest configuration for mnist_mlp: 14 s" in \
        " ".join(facts)
    assert "No configuration trains" not in " ".join(facts)
    assert "No configuration trains mnist_mlp within the 5 s deadline; the fastest, the GPU, takes 7 s." in tight


def test_ratios_are_written_with_two_decimals_or_two_significant_digits():
    assert findings.times(1.0) == "1.00×" and findings.times(0.5) == "0.50×" and findings.times(0.042) == "0.042×"
    assert findings.times(12.345, "x") == "12.35x"
