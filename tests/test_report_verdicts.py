"""Charts carry the findings' verdicts, and the page says which data its runs trained on."""

from __future__ import annotations

import reportdb

from cpustudy.analysis import summary
from cpustudy.report import figures
from cpustudy.store import Store


def test_the_heatmap_draws_an_inconclusive_comparison_neutral_and_says_so(run_cli, tmp_path):
    db = tmp_path / "h.sqlite"
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2})
        reportdb.add_run(s, m, "mnist_mlp", "tf", 1, [4.0, 4.0])
        reportdb.add_run(s, m, "mnist_mlp", "tf-onednn", 1, [3.2, 3.2])  # 1.25x, one run each: inconclusive
        reportdb.add_run(s, m, "mnist_cnn", "tf", 1, [10.0, 10.0])
        reportdb.add_run(s, m, "mnist_cnn", "tf-onednn", 1, [4.0, 4.0])  # 2.5x: beyond the single-run margin
    with Store.read(db) as s:
        a = summary.analyze(s, summary.Options())
    d = figures.fig_build_heatmap(a, "cpustudy").data.set_index("workload", drop=False)
    mlp, cnn = d.loc["mnist_mlp"], d.loc["mnist_cnn"]
    assert mlp["log_speedup"] == 0.0 and "inconclusive" in mlp["text"] and mlp["text"].startswith("1.25x")
    assert cnn["log_speedup"] > 1 and "inconclusive" not in cnn["text"]
    r = run_cli("report", "--db", db, "--out", tmp_path / "out", "--no-svg")
    assert r.code == 0, r.err
    page = (tmp_path / "out" / "report.md").read_text()
    assert "Data: synthetic (the real data's shapes and statistics, random labels): 4 runs." in page


def test_a_configuration_measured_in_both_periods_blocks_a_contrast_across_them():
    """B (the later period only) and C (the earlier only) run at one speed; every run of the later period is 30 %
    slower. A, timed in both, is the page's reference: judged against it B and C are not called different, and a
    true 1.5x between them is found where the figures as measured agree with it (a small shift); where they do not
    (1.95x as measured), or go the other way (B fast: 5 % slower as measured, 19 % faster against A), the blocked ratio
    is said, not stated as a finding about the figures shown. Without A the assumed shift leaves it inconclusive."""
    import pandas as pd

    from cpustudy.analysis import holdup, stats

    def row(name: str, ids: range, times: dict[str, list[float]]) -> dict:
        periods = [p for p, ts in times.items() for _ in ts]
        return {"label": name, "study": "cpustudy", "busy": "", "run_ids": tuple(ids), "periods": tuple(sorted(set(periods))),
                "run_periods": tuple(periods), "run_times": tuple(t for ts in times.values() for t in ts)}

    early, late = "period s1", "period s2"
    a = row("A", range(0, 6), {early: [12.1, 11.9, 12.0], late: [15.7, 15.5, 15.6]})
    b = row("B", range(6, 9), {late: [13.1, 12.9, 13.0]})
    b_slow = row("B slow", range(9, 12), {late: [19.6, 19.4, 19.5]})
    c = row("C", range(12, 15), {early: [10.1, 9.9, 10.0]})
    b_fast = row("B fast", range(15, 18), {late: [10.6, 10.4, 10.5]})  # 5 % slower as measured, 19 % faster blocked
    noise = stats.Noise(within=0.03, df=20, between=0.15, source="test")
    page = pd.DataFrame([a, b, b_slow, c, b_fast])
    assert holdup.reference(b, c) is None  # no page being judged: no reference
    with holdup.judging(holdup.Family(noise, blocks=holdup.blocks(page))):
        assert holdup.reference(b, c) == ((15.7, 15.5, 15.6), (12.1, 11.9, 12.0))
        assert "could be noise" in str(holdup.verdict(b, c)) or "under the 5 %" in str(holdup.verdict(b, c))
        assert "the ratio is 1.50" in str(holdup.verdict(b_slow, c))  # 1.5x blocked, 1.95x as shown: said so
        # a page shows the figures as measured: where the blocked ratio says otherwise, that is said instead
        assert "the ratio is 0.81" in str(holdup.verdict(b_fast, c)) and "carry the machine's shift" in \
            str(holdup.verdict(b_fast, c))
    calm = row("A", range(0, 6), {early: [12.1, 11.9, 12.0], late: [12.7, 12.5, 12.6]})  # a shift of 5 %
    b_calm = row("B slow", range(9, 12), {late: [15.8, 15.6, 15.7]})  # 1.5x blocked, 1.57x as measured
    with holdup.judging(holdup.Family(noise, blocks=holdup.blocks(pd.DataFrame([calm, b_calm, c])))):
        assert not holdup.verdict(b_calm, c)  # holds: the figures shown agree with it
    with holdup.judging(holdup.Family(noise, blocks=holdup.blocks(page.iloc[1:]))):
        assert holdup.reference(b, c) is None
        assert "not measured for these configurations" in str(holdup.verdict(b_slow, c))  # the shift assumed
