"""The report page (cpustudy.report.page): one model rendered to a self-contained index.html and to
report.md."""

from __future__ import annotations

import re

import reportdb


def test_woolf_report_writes_charts_and_a_self_contained_page(woolf_report):
    _, out = woolf_report
    for w in ("mnist_mlp", "text_generator_keras", "lstm_text_generation"):
        for metric in ("time", "cost"):
            assert (out / f"woolf2017-{w}-{metric}.png").stat().st_size > 1000
    for stem in ("speedup", "build-heatmap", "time-vs-cost"):
        assert (out / f"woolf2017-{stem}.png").is_file()
    assert not (out / "then-vs-now.png").exists()  # only one study in the database
    page = (out / "index.html").read_text()
    assert page.count("data:image/png;base64,") == 9
    assert "<script" not in page and "<link" not in page and not re.search(r"""(src|href)=["']https?:""", page)
    assert "8 vCPUs compiled is the cheapest configuration for mnist_mlp: " in page
    ratio = 14.0 * reportdb.CPU8 / (7.0 * reportdb.GPU)
    assert f"{ratio:.2f}× the GPU&#x27;s cost at 2.00× its time" in page
    assert "GCE Skylake (2017)" in page and "GCE n1-standard-1 + Tesla K80 (2017)" in page  # machines
    assert "gcp-2017:n1-highcpu-16" in page  # prices used
    md = (out / "report.md").read_text()
    for image in re.findall(r"\]\(([^)]+\.png)\)", md):
        assert (out / image).is_file()
    assert "## The answer" in md and "| cpu8pip |" in md


def test_html_and_markdown_render_one_page_model_in_the_same_order(tmp_path):
    from cpustudy.report import page as P

    (tmp_path / "a.png").write_bytes(b"\x89PNG")
    page = P.Page(title="T <1>", doc_title="doc", meta=["db x", "studies y"],
                  callouts=[P.Callout("fallback", "Careful.", "a | b"), P.Callout("note", "", "n.")],
                  sections=[P.Section("Findings", [P.Bullets(["f1", "f2"])]),
                            P.Section("Charts", [P.Charts([P.Chart("a", "alt a")])]),
                            P.Section("Tables", [P.Paragraph(["see ", P.Link("s.csv", "s.csv"), "."]),
                                                 P.Table(["h1", "h2"], [["1", "x|y"]], wide=True)])])
    md = P.to_markdown(page)
    page_html = P.to_html(page, tmp_path)
    assert re.findall(r"^## (.*)$", md, flags=re.M) == re.findall(r"<h2>(.*?)</h2>", page_html) == \
        ["Findings", "Charts", "Tables"]
    assert md.startswith("# T <1>\n\n- db x\n- studies y\n\n> **Careful.** a | b\n\n> n.\n\n## Findings\n\n- f1\n- f2\n")
    assert "![alt a](a.png)" in md and "see [s.csv](s.csv)." in md and "| 1 | x\\|y |" in md
    assert "<h1>T &lt;1&gt;</h1>" in page_html and '<p class="fallback"><strong>Careful.</strong> a | b</p>' in page_html
    assert '<p class="note">n.</p>' in page_html and "<li>f1</li><li>f2</li>" in page_html
    assert 'src="data:image/png;base64,' in page_html and 'see <a href="s.csv">s.csv</a>.' in page_html
    assert '<table class="wide">' in page_html and "<td>x|y</td>" in page_html


def test_the_summary_table_says_n_a_for_a_spread_over_one_run(tmp_path_factory):
    import reportdb

    from cpustudy.report.page import TIME_COLUMNS, _rows

    a = reportdb.local_analysis(tmp_path_factory)
    rows = {(r[1], r[2]): r for r in _rows(a.summary, TIME_COLUMNS)}
    iqr = [h for _, h in TIME_COLUMNS].index("IQR over runs s")
    assert rows[("mnist_mlp", "cpu1 tf")][iqr] == "n/a"  # one run: no spread over runs, not 0
    assert rows[("mnist_mlp", "cpu2 tf")][iqr] == "0.5"  # three repeats of 2.5, 3.0 and 2.0 s epochs
    assert [h for _, h in TIME_COLUMNS][4] == "epochs in full training"  # not the epochs that were run


def test_the_summary_tables_are_narrow_enough_to_read_and_lose_no_column(tmp_path_factory):
    import reportdb

    from cpustudy.report.page import COST_COLUMNS, TIME_COLUMNS, build_page

    page = build_page(reportdb.local_analysis(tmp_path_factory), [], [])
    summary = [s for s in page.sections if s.title == "Summary"][0]
    tables = [b for b in summary.blocks if hasattr(b, "header")]
    assert [len(t.header) for t in tables] == [len(TIME_COLUMNS), len(COST_COLUMNS)]
    assert all(len(t.header) <= 14 for t in tables)  # each fits a 1200 px page; the rest is in summary.csv
    shown = {c for c, _ in TIME_COLUMNS + COST_COLUMNS}
    assert {"cost_usd", "cost_rel_baseline", "instance", "baseline", "projected", "unstable"} <= shown
