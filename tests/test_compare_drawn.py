"""``cpustudy compare --out DIR``: the answer drawn (``cpustudy.report.answer``). Comparisons are built from the
dataclasses, nothing is trained: the chart is rendered for real (plotnine, Agg) and the page opened in Debian's
headless Chromium where there is one (the helpers of ``test_report_browser``)."""

from __future__ import annotations

import argparse
import base64
import dataclasses
from functools import partial
from html import escape
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_browser import BROWSER, _chromium, _Refs

from cpustudy.analysis.compare import CandidateResult, SeedResult
from cpustudy.analysis.totarget import Comparison
from cpustudy.report.answer import answer_page, clauses, candidates_on_front, price_cells, write_answer
from cpustudy.report.page import to_html, to_markdown

PNG = b"\x89PNG\r\n\x1a\n"
NO_INTERVAL = "one speed run and no known spread of this machine: no interval (2 runs give one)"


def _result(name: str, t: float | None, cost: float | None, p: float | None, *, spread: float | None = 0.2,
            rate: float | None = 0.03, runs: int = 3, note: str = "", price: str = "gcp:n2-highcpu-2 spot 0.03 USD/h"
            ) -> CandidateResult:
    lo = None if spread is None or t is None else t * (1 - spread)
    hi = None if spread is None or t is None else t * (1 + spread)
    clo = None if spread is None or cost is None else cost * (1 - spread)
    chi = None if spread is None or cost is None else cost * (1 + spread)
    return CandidateResult(name, t, lo, hi, cost, clo, chi, p, None, None, 1.0, runs, rate, price,
                           [f"{runs} run(s), full epochs"], list(range(runs)), level=0.9, seeds=3, interval_note=note)


def _comparison() -> Comparison:
    results = [
        _result("here:1 tf", 49.0, 0.00032, 0.04),
        _result("here:2 tf", 31.0, 0.00020, 0.91),
        _result("gcp:c4d-highcpu-8", 12.0, 0.00090, 0.05),
        _result("here:4 tf", 40.0, 0.00040, 0.0),  # slower and dearer than here:2: dominated
        _result("here:8 tf", 20.0, None, None, rate=None, price="no price: gcp:n2-highcpu-8 is not in the catalog"),
        _result("here:16 tf", 15.0, 0.0004, 0.0, spread=None, runs=1, note=NO_INTERVAL),
    ]
    seeds = [SeedResult(1, True, 3, 6, 11, vcpus=2), SeedResult(2, True, 3, 6, 12, vcpus=2),
             SeedResult(3, True, 2, 6, 13, vcpus=2)]
    return Comparison("fashion_mnist_cnn", 0.88, results, seeds, assumptions=["spot prices; this machine's noise"],
                      notes=["seeds 1-3 needed the same epochs at 1 and 2 vCPUs"],
                      steps=["a speed run of here:2 tf and here:1 tf: P(cheapest) 0.84 < 0.9",
                             "settled: here:2 tf is the cheapest in 91% of new trainings"],
                      wall_s=121.0, training_wall_s=35.0)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> tuple[Comparison, Path, list[Path]]:
    out = tmp_path_factory.mktemp("answer") / "new" / "folder"  # created, parents too
    c = _comparison()
    return c, out, write_answer(c, out)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG and data[12:16] == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def test_the_front_leaves_out_a_dominated_candidate_and_the_unpriced():
    c = _comparison()
    front = dict(zip((r.candidate for r in c.results), candidates_on_front(c.results)))
    assert front == {"here:1 tf": False,  # here:2 is faster and cheaper
                     "here:2 tf": True,  # the cheapest
                     "gcp:c4d-highcpu-8": True,  # the fastest
                     "here:4 tf": False,  # here:2 again
                     "here:8 tf": False,  # no cost: on no front
                     "here:16 tf": True}  # faster than here:2, cheaper than the c4d
    # Equal in one, better in the other: dominated; two alike: neither dominates the other.
    a, b = _result("a", 10.0, 1.0, 0.5), _result("b", 10.0, 2.0, 0.5)
    assert candidates_on_front([a, b]) == [True, False]
    assert candidates_on_front([a, dataclasses.replace(a, candidate="a2")]) == [True, True]
    assert candidates_on_front([_result("n", None, None, None, runs=0)]) == [False]
    # The report's summary draws the same front, ties kept alike.
    import pandas as pd

    from cpustudy.report.figures import pareto_front as summary_front

    rows = pd.DataFrame({"total_time_s": [10.0, 10.0, 10.0, 5.0, None], "cost_usd": [1.0, 1.0, 2.0, 3.0, 0.5]})
    points = [_result(str(i), t, c, c) for i, (t, c) in enumerate(zip(rows["total_time_s"], rows["cost_usd"]))]
    expected = [True, True, False, True, False]
    assert list(summary_front(rows)) == candidates_on_front(points[:4]) + [False] == expected


def test_the_answer_is_drawn_with_every_candidate_and_its_p_cheapest(drawn):
    c, out, written = drawn
    names = {p.name for p in written}
    assert names == {"answer.png", "answer.svg", "index.html", "index.md"}
    assert {p.name for p in out.iterdir()} == names
    png = out / "answer.png"
    w, h = _png_size(png)
    assert w >= 600 and h >= 400 and png.stat().st_size > 20_000  # a chart, not an empty canvas
    assert (out / "answer.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "<h1>Where to train fashion_mnist_cnn to validation accuracy 0.88</h1>" in html
    for name, p in [("here:1 tf", "0.04"), ("here:2 tf", "0.91"), ("gcp:c4d-highcpu-8", "0.05"), ("here:4 tf", "0.00"),
                    ("here:16 tf", "0.00")]:
        assert f"<td>{name}</td>" in html
        row = html.split(f"<td>{name}</td>", 1)[1].split("</tr>", 1)[0]
        assert f"<td>{p}</td>" in row  # its P(cheapest)
    assert "here:2 tf" in html and "cheapest in 91% of new trainings" in html
    # unpriced: drawn on its time, said so; no interval: its note listed; nothing dropped in silence
    assert "here:8 tf: not priced, drawn on its time alone (no price: gcp:n2-highcpu-8 is not in the catalog)" in html
    assert f"here:16 tf: no interval, drawn without bars: {NO_INTERVAL}" in html
    assert "<td>20 s [16-24]</td><td>not priced</td>" in html  # its time and interval, no cost
    assert "31 s [25-37]" in html  # median [90 % interval]
    # the page embeds the PNG it wrote; assumptions, notes and the settling steps are on it
    assert base64.b64encode(png.read_bytes()).decode("ascii") in html
    for line in c.assumptions + c.notes + c.steps:
        assert escape(line) in html
    md = (out / "index.md").read_text(encoding="utf-8")
    assert "](answer.png)" in md and "| here:2 tf | 31 s [25-37] |" in md and "settled: here:2 tf" in md


def _close_comparison(unpriced: str) -> Comparison:
    """Batch sizes of one convnet at 2 and 4 vCPUs whose times and costs differ by 1-3 % (where the labels of
    ``here:2 b128`` and ``here:2 b256`` printed over one another); ``unpriced``: ``"none"``, ``"two"`` (as close
    as the others) or ``"all"`` (the chart of time alone)."""
    c = _comparison()
    c.results = [
        _result("here:2 b64", 412.0, 0.00230, 0.08),
        _result("here:2 b128", 405.0, 0.00226, 0.22),
        _result("here:2 b256", 401.0, 0.00224, 0.31),
        _result("here:2 b512", 409.0, 0.00229, 0.09),
        _result("here:4 b64", 398.0, 0.00233, 0.05),
        _result("here:4 b128", 394.0, 0.00231, 0.10),
        _result("here:4 b256", 390.0, 0.00228, 0.15),
    ]
    unpriced_result = partial(_result, cost=None, p=None, rate=None, price="no price: not in the catalog")
    if unpriced == "two":
        c.results += [unpriced_result(f"here:8 b{b}", t) for b, t in ((128, 385.0), (256, 380.0))]
    if unpriced == "all":
        c.results = [unpriced_result(r.candidate, r.time_to_target_s) for r in c.results]
    return c


def _label_boxes(c: Comparison, png: Path) -> tuple[list[tuple[str, object]], object, object]:
    """The chart drawn as ``write_answer`` draws it (and saved to ``png``, to be looked at): each label's text and
    its box on the canvas (the box drawn around it, else the text's own extent), the panel's and the figure's."""
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from plotnine import theme

    from cpustudy.report.answer import fig_answer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = (fig_answer(c.workload, c.target, c.results) + theme(dpi=110)).draw()
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    fig.savefig(png, dpi=110)
    renderer = canvas.get_renderer()
    (ax,) = fig.axes
    boxes = []
    for t in ax.texts:
        patch = t.get_bbox_patch()
        boxes.append((t.get_text(), (patch or t).get_window_extent(renderer)))
    return boxes, ax.get_window_extent(renderer), fig.bbox


@pytest.mark.parametrize("unpriced", ["none", "two", "all"])
def test_labels_of_close_candidates_do_not_print_over_one_another(tmp_path, unpriced):
    c = _close_comparison(unpriced)
    boxes, panel, figure = _label_boxes(c, tmp_path / "answer.png")
    assert sorted(text.split("  ")[0] for text, _ in boxes) == sorted(r.candidate for r in c.results)  # each labelled
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            assert not box_a.overlaps(box_b), f"{a!r} over {b!r}"
    for text, box in boxes:  # inside the panel (a label is clipped to it), so inside the figure
        assert panel.contains(box.x0, box.y0) and panel.contains(box.x1, box.y1), f"{text!r} leaves the panel"
        assert figure.contains(box.x0, box.y0) and figure.contains(box.x1, box.y1), text


def test_only_its_own_files_are_written_and_they_are_replaced(tmp_path):
    mine = tmp_path / "notes.txt"
    mine.write_text("keep me")
    (tmp_path / "index.html").write_text("old")
    c = _comparison()
    c.results = [r for r in c.results if r.candidate in ("here:8 tf",)] + [_result("gcp:T4:1", None, None, None, runs=0)]
    c.results[-1].basis = ["not measured: a probe is planned"]
    written = write_answer(c, tmp_path, formats=("png",))
    assert mine.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answer.png", "index.html", "index.md", "notes.txt"]
    assert {p.name for p in written} == {"answer.png", "index.html", "index.md"}
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert html != "old" and "<img" in html
    assert "gcp:T4:1: not measured, not drawn (not measured: a probe is planned)" in html
    assert _png_size(tmp_path / "answer.png")[0] >= 600  # priced nothing: time alone, still drawn


def test_nothing_to_draw_gives_a_page_without_a_chart(tmp_path):
    c = _comparison()
    c.results = [_result("gcp:T4:1", None, None, None, runs=0)]
    written = write_answer(c, tmp_path / "out")
    assert sorted(p.name for p in written) == ["index.html", "index.md"]
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<img" not in html and "No candidate was measured to the target" in html


def test_out_that_is_a_file_is_refused(tmp_path):
    from cpustudy.errors import UserError

    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        write_answer(_comparison(), f)
    # The command refuses it before measuring anything: no database written.
    from cpustudy.cli.main import main

    db = tmp_path / "c.sqlite"
    for out in (f, f / "under"):
        assert main(["compare", "mnist_mlp", "--target-accuracy", "0.9", "--candidates", "here:1", "--out", str(out),
                     "--db", str(db)]) == 2
    assert not db.exists()


def test_the_command_takes_out_and_its_help_loads_no_plotting(tmp_path):
    from cpustudy.cli.commands import compare as cmd
    from cpustudy.cli.main import build_parser

    args = build_parser().parse_args(["compare", "mnist_mlp", "--target-accuracy", "0.9", "--candidates", "here:1",
                                      "--out", str(tmp_path / "drawn")])
    assert args.out == str(tmp_path / "drawn")
    assert build_parser().parse_args(["compare", "mnist_mlp", "--candidates", "here:1"]).out is None
    assert cmd._draw(argparse.Namespace(out=None), _comparison()) == 0 and not (tmp_path / "drawn").exists()
    assert cmd._draw(args, _comparison()) == 0 and (tmp_path / "drawn" / "index.html").is_file()
    code = ("import sys; from cpustudy.cli.main import build_parser; build_parser().parse_args(['compare', 'x', "
            "'--candidates', 'here:1', '--out', 'd']); "
            "sys.exit(any(m in sys.modules for m in ('tensorflow', 'keras', 'plotnine', 'cpustudy.report.answer')))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.skipif(BROWSER is None, reason="no Chromium here (apt-get install chromium)")
def test_the_answer_page_renders_in_a_browser_with_its_chart(drawn):
    _, out, _ = drawn
    dom = _chromium("--virtual-time-budget=10000", "--dump-dom", (out / "index.html").resolve().as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    refs = _Refs()
    refs.feed(dom.stdout)
    assert refs.headings[:2] == ["Where to train fashion_mnist_cnn to validation accuracy 0.88", "The answer"]
    assert len(refs.images) == 1
    for src in refs.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == PNG
    for href in refs.links:
        if ":" not in href and not href.startswith("#"):
            assert (out / href).is_file(), href
    failed = [line for line in dom.stderr.splitlines() if "Failed to load resource" in line or "ERR_" in line]
    assert failed == []
    # every image loaded, as the browser sees it: decoded to its natural size
    probe = out.parent / "probe.html"
    probe.write_text((out / "index.html").read_text(encoding="utf-8").replace(
        "</body>", "<script>document.title = [...document.images].every(i => i.complete && i.naturalWidth > 0)"
        " ? 'loaded' : 'broken';</script></body>"), encoding="utf-8")
    seen = _chromium("--virtual-time-budget=10000", "--dump-dom", probe.resolve().as_uri())
    assert "<title>loaded</title>" in seen.stdout, seen.stdout[:500]


# -- a comparison over several settings (``--precisions float32,mixed_bfloat16 --batch-sizes 64,256``) --------

#: Why a local candidate is priced as it is, as ``analysis.totarget.price_of`` says it (here 1 and 2 vCPUs of an
#: Emerald Rapids VM, as on reports/emr2-settings): the same ~400 characters on every row.
OWN_CPU = ("priced as its own CPU: Intel Xeon Scalable 5th gen (Emerald Rapids) (certain: the instruction sets agree; by "
           "CPUID family 6 model 207) runs in gcp:n4-highcpu, gcp:c4-highcpu by the providers' documentation "
           "(`cpustudy machine` names the sources, read 2026-11-25)")
CORES = {1: "1 vCPU is here 1 whole core (1 thread per core); one gcp:n4-highcpu vCPU is a hardware thread, so the "
            "same cores are 2 of its vCPUs",
         2: "2 vCPUs are here 2 whole cores (1 thread per core); one gcp:n4-highcpu vCPU is a hardware thread, so the "
            "same cores are 4 of its vCPUs"}
RATE = {1: "gcp:n4-highcpu-2 spot 0.02833 USD/h (us-central1, as of 2026-11-24)",
        2: "gcp:n4-highcpu-4 spot 0.05666 USD/h (us-central1, as of 2026-11-24)"}
SETTINGS = ["fp32 b64", "bf16 b64"]


def _own_price(vcpus: int) -> str:
    return (f"{RATE[vcpus]}; priced as gcp:n4-highcpu-{2 * vcpus}: {OWN_CPU}; the cheapest of them priced: "
            f"gcp:n4-highcpu; {CORES[vcpus]}; --family chooses another")


def _settings_comparison() -> Comparison:
    """Two settings of two local candidates, as ``measure.compare.combined`` joins them: every setting's seeds in
    turn (seeds 1-3 each), a note per setting in the same order."""
    results = [_result(f"here:{v} {label}", 20.0 + v + 5 * i, 0.0002 * v, 0.5 if (v, i) == (1, 1) else 0.1,
                       rate=0.02833 * v, price=_own_price(v))
               for i, label in enumerate(SETTINGS) for v in (1, 2)]
    seeds = [SeedResult(seed, True, 1 + i, 6, 10 * i + seed, vcpus=2, setting=("fp32 b64", "bf16 b64")[i])
             for i in range(2) for seed in (1, 2, 3)]
    notes = [f"{label}: 3 seed(s), epochs to the target {', '.join([str(1 + i)] * 3)}"
             for i, label in enumerate(SETTINGS)] + ["mixed_bfloat16 on build tf: matmuls through AMX"]
    return Comparison("fashion_mnist_cnn", 0.86, results, seeds, notes=notes)


def _seed_rows(md: str) -> list[str]:
    part = md.split("## The seeds", 1)[1].split("##", 1)[0]
    return [line for line in part.splitlines() if line.startswith("|")]


def test_the_seeds_of_several_settings_say_which_setting_each_trained_in():
    c = _settings_comparison()
    page = answer_page(c, chart=False)
    md = to_markdown(page)
    rows = _seed_rows(md)
    assert rows[0] == "| setting | seed | epochs to target | max epochs | vCPUs | run |"
    assert rows[2:] == ["| fp32 b64 | 1 | 1 | 6 | 2 | 1 |", "| fp32 b64 | 2 | 1 | 6 | 2 | 2 |",
                        "| fp32 b64 | 3 | 1 | 6 | 2 | 3 |", "| bf16 b64 | 1 | 2 | 6 | 2 | 11 |",
                        "| bf16 b64 | 2 | 2 | 6 | 2 | 12 |", "| bf16 b64 | 3 | 2 | 6 | 2 | 13 |"]
    html = to_html(page, Path("."))
    assert "<th>setting</th><th>seed</th>" in html and "<tr><td>bf16 b64</td><td>1</td><td>2</td>" in html
    # One setting: no such column, the seeds' table as it was.
    one = _seed_rows(to_markdown(answer_page(_comparison(), chart=False)))
    assert one[0] == "| seed | epochs to target | max epochs | vCPUs | run |" and one[2] == "| 1 | 3 | 6 | 2 | 11 |"
    c.seeds = [SeedResult(1, True, 2, 6, 7, vcpus=2)]  # one setting: its label is empty, no column
    assert _seed_rows(to_markdown(answer_page(c, chart=False)))[0].startswith("| seed |")


def test_the_price_reasoning_is_said_once_and_each_row_keeps_its_rate():
    c = _settings_comparison()
    md = to_markdown(answer_page(c, chart=False))
    assert md.count(OWN_CPU) == 1 and md.count("--family chooses another") == 1
    for v in (1, 2):
        assert md.count(CORES[v]) == 1  # each core mapping once, under the table
    table = md.split("## The candidates", 1)[1].split("\n\n", 2)[1]
    assert OWN_CPU not in table
    for label in SETTINGS:
        for v, notes in ((1, "1, 2"), (2, "1, 3")):
            row = next(line for line in table.splitlines() if line.startswith(f"| here:{v} {label} |"))
            assert row.endswith(f"| {RATE[v]} (price notes {notes}) |"), row
    assert (f"- price note 1: {OWN_CPU}; the cheapest of them priced: gcp:n4-highcpu; --family chooses another"
            in md)
    assert f"- price note 2: {CORES[1]}" in md and f"- price note 3: {CORES[2]}" in md
    html = to_html(answer_page(c, chart=False), Path("."))
    assert html.count(escape(OWN_CPU)) == 1


def test_a_price_said_by_one_row_alone_stays_whole_in_it():
    one = _result("here:2", 20.0, 0.0004, 1.0, rate=0.05666, price=_own_price(2))
    cloud = _result("gcp:c4d-highcpu-8", 12.0, 0.0009, 0.0, price="gcp:c4d-highcpu-8 spot 0.3 USD/h (us-central1)")
    lacks = "measured on gcp:n2-highcpu-8, which the price catalog lacks"
    stored = [_result(f"db:3f2a:8 {s}", 15.0, None, None, rate=None, price=lacks) for s in SETTINGS]
    why = "no cloud family known to run this CPU (AMD EPYC 9B45; by CPUID), priced as the default gcp:n2-highcpu"
    spotless = [_result(f"here:16 {s}", 15.0, None, None, rate=None,
                        price=f"priced as gcp:n2-highcpu-16: {why}; n2-highcpu-16 has no spot price") for s in SETTINGS]
    cells, notes = price_cells([one, cloud, *stored, *spotless])
    assert cells[:2] == [_own_price(2), "gcp:c4d-highcpu-8 spot 0.3 USD/h (us-central1)"]  # said by one row alone
    assert cells[2:4] == [lacks] * 2  # an unpriced row keeps its first reason
    # ... and the instance it would be priced as; the reasons two rows share go into one note
    assert cells[4:] == ["priced as gcp:n2-highcpu-16 (price note 1)"] * 2
    assert notes == [f"price note 1: {why}; n2-highcpu-16 has no spot price"]
    assert price_cells([_result("x", 1.0, None, None, rate=None, price="")]) == ([""], [])
    # "; " inside parentheses does not split a clause
    assert clauses("a (b; c); d") == ["a (b; c)", "d"]
