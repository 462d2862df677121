"""The report page: one model of it (:class:`Page`: title, header lines, callouts, then sections of
bullets, charts, paragraphs and tables, in page order), built once from an ``Analysis`` by
:func:`build_page` and rendered to ``index.html`` (:func:`to_html`: self-contained, images embedded as
data URIs, no external fonts or scripts) and to ``report.md`` (:func:`to_markdown`: for GitHub, images
next to it). :func:`write_report` renders the charts and writes both pages and ``summary.csv``.
"""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union

import pandas as pd

from cpustudy import identity
from cpustudy.analysis.frames import number, records, rows
from cpustudy.analysis.projection import TOLERANCE, pair_range
from cpustudy.analysis.summary import SUMMARY_COLUMNS, Analysis
from cpustudy.report.figures import figures, render
from cpustudy.report.findings import (INCONCLUSIVE, PROJECTED_NOTE, fallback_notes, findings, header_lines,
                                      nothing_held, suspect_notes, times)
from cpustudy.report.findings import notes as figure_notes

# -- the model ---------------------------------------------------------------------------------------


@dataclass
class Link:
    text: str
    href: str


@dataclass
class Callout:
    """A boxed paragraph above the findings, opened by ``lead`` in bold when there is one; ``style`` is
    "fallback" (something to distrust: suspect results, fallback baselines) or "note"."""

    style: str
    lead: str
    text: str


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Chart:
    stem: str  # the chart's file name without extension (``stem.png``, ``stem.svg``)
    alt: str


@dataclass
class Charts:
    charts: list[Chart]


@dataclass
class Paragraph:
    parts: list[str | Link]


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    wide: bool = False  # long text in its cells: wrapped, left-aligned


Block = Union[Bullets, Charts, Paragraph, Table]


@dataclass
class Section:
    title: str
    blocks: list[Block]


@dataclass
class Page:
    title: str  # the heading
    doc_title: str  # what a browser tab shows
    meta: list[str]  # header lines: database, studies, baseline, prices
    callouts: list[Callout] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    first: int = 0  # sections shown before the header lines and callouts: the answer comes first


# -- building it -------------------------------------------------------------------------------------

# The summary on the page is two tables of at most 14 columns each, so that each fits a page 1200 px
# wide (all columns are in summary.csv): what the time is and how far to trust it, then what it costs.
KEY_COLUMNS = [("study", "study"), ("workload", "workload"), ("label", "config")]
TIME_COLUMNS = KEY_COLUMNS + [
    ("n_runs", "runs"), ("epochs", "epochs in full training"), ("epoch_time_s", "epoch s (median)"),
    ("epoch_time_iqr_s", "IQR over runs s"), ("within_run_iqr_s", "IQR within runs s"), ("unstable", "stability"),
    ("total_time_s", "total s"), ("projected", "projected"), ("pct_of_peak", "% of peak"),
    ("gpu_utilization", "GPU busy"), ("suspect", "suspect"),
]
COST_COLUMNS = KEY_COLUMNS + [
    ("total_time_s", "training s"), ("billed_s", "billed s"), ("time_rel_baseline", "time ×"), ("cost_usd", "cost USD"),
    ("cost_rel_baseline", "cost ×"), ("cost_per_million_samples_usd", "USD / M samples"), ("instance", "priced as"),
    ("price_kind", "rate"), ("baseline", "baseline"),
]


def _fmt(col: str, v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    if col == "unstable":
        return "unstable" if bool(v) else ""
    if col == "agrees":
        return "yes" if bool(v) else "no"
    if col == "ratio":
        return f"{float(v):.3f}"
    if isinstance(v, bool) or col == "projected":
        return "projected" if bool(v) else ""
    if col in ("pct_of_peak", "gpu_utilization"):
        return f"{float(v):.0f} %"
    if col == "suspect":
        return f"suspect: {v}" if v else ""
    if col in ("time_rel_baseline", "cost_rel_baseline"):
        return times(float(v))
    if col in ("cost_usd", "cost_per_million_samples_usd", "cost_per_epoch_usd"):
        return f"{float(v):.4g}"
    if col in ("epoch_time_s", "total_time_s", "billed_s"):
        return f"{float(v):,.1f}" if float(v) >= 100 else f"{float(v):.3g}"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _some_untimed(df: pd.DataFrame) -> bool:
    """Whether a configuration has runs that timed no epoch after the warm-up (its runs column says how many did)."""
    return "timed_runs" in df and bool((df["timed_runs"] < df["n_runs"]).any())


def _rows(df: pd.DataFrame, cols: list[tuple[str, str]]) -> list[list[str]]:
    def shown(c: str, r: pd.Series) -> str:
        timed = r["timed_runs"] if "timed_runs" in r else r.get("n_runs")
        if c == "epoch_time_iqr_s" and timed is not None and not (timed >= 2):
            return "n/a"  # a spread over runs needs two timed runs; 0 would claim none
        if c == "n_runs" and timed is not None and timed < r[c]:
            return f"{r[c]} ({timed} timed)"  # the epoch and total figures rest on the timed ones
        return _fmt(c, r[c])

    return [[shown(c, r) for c, _ in cols] for _, r in df.iterrows()]


def _software_rows(a: Analysis) -> tuple[list[str], list[list[str]]]:
    cols = ["study", "cpu_model", "machine", "logical_cpus", "device", "build", "tf_version", "keras_version",
            "keras_backend", "python_version", "onednn", "xla", "tf_missing_isa", "runs", "workloads"]
    header = ["study", "machine", "fingerprint", "logical CPUs", "device", "build", "TensorFlow", "Keras",
              "backend", "Python", "oneDNN", "XLA", "TF not compiled for", "runs", "workloads"]
    rows = [[_fmt(c, r[c]) for c in cols] for _, r in a.software.iterrows()]
    return header, rows


def _price_rows(a: Analysis) -> tuple[list[str], list[list[str]]]:
    header = ["instance", "region", "rate", "USD/h", "source", "as of"]
    table = [[str(r.instance), str(r.region), str(r.price_kind), f"{r.price_usd_per_hour:.6g}", str(r.price_source),
              str(r.price_as_of)] for r in rows(a.prices_used)]
    notes = sorted({n for n in a.summary["price_note"].dropna() if n})
    return header, table + [["", "", "", "", f"note: {n}", ""] for n in notes]


PROJECTION_COLUMNS = [
    ("study", "study"), ("workload", "workload"), ("build", "config"), ("vcpus", "vCPUs"),
    ("steps_per_epoch", "steps (capped)"), ("n_projected", "projected runs"), ("projected_s", "projected epoch s"),
    ("n_full", "full runs"), ("full_s", "full epoch s"), ("ratio", "projected / full"), ("verdict", "verdict (±5 %)"),
    ("pair_range", "paired repeats: projected / full"), ("full_stall_s", "stall in full epochs s"),
]


def _with_pair_range(check: pd.DataFrame) -> pd.DataFrame:
    """The projection check with its paired repeats' ratios as one text (:func:`projection.pair_range`)."""
    return check.assign(pair_range=[pair_range(r) for r in records(check)]) if not check.empty else check


def _model_file_rows(a: Analysis) -> tuple[list[str], list[list[str]]]:
    """One row per configuration of a model file or script: the file, its hash, what feeds its fit and its
    callbacks (a script's), its summary, its FLOPs and GFLOP/s."""
    import json

    header = ["workload", "config", "file", "content hash", "fed by", "callbacks", "parameters", "layers", "input",
              "MFLOP/sample", "GFLOP/s", "% of peak"]
    runs = a.runs[a.runs["model_hash"].notna()] if "model_hash" in a.runs else a.runs.iloc[0:0]
    table = []
    for r in rows(a.summary):
        mine = runs[(runs["workload_base"] == r.workload_base) & (runs["build"] == r.build)]
        if mine.empty:
            continue
        run = mine.iloc[-1]
        info = json.loads(run["model_summary"]) if isinstance(run.get("model_summary"), str) else {}
        flops = run.get("flops_per_sample")
        counted = flops is not None and not pd.isna(flops)
        fit = info.get("fit") or {}  # a script's first fit: its input and callbacks
        table.append([str(r.workload), str(r.label), ("script " if info.get("script") else "model file ") +
                      str(run.get("model_file")), str(run["model_hash"])[:12],
                      str(fit.get("input") or "arrays (load_data)"), ", ".join(fit.get("callbacks") or []) or "none",
                      f"{info.get('parameters', 0):,}", str(info.get("layers", "")),
                      " ".join(str(s) for s in info.get("input_shapes", [])),
                      f"{number(flops) / 1e6:.4g} ({run.get('flops_source')})" if counted else
                      str(run.get("flops_source") or "not counted"),
                      _fmt("gflops_per_s", r.gflops_per_s), _fmt("pct_of_peak", r.pct_of_peak)])
    return header, table


def _peak_rows(a: Analysis) -> tuple[list[str], list[list[str]]]:
    """One row per machine, device, build, vCPUs and precision that has a measured or a theoretical peak:
    the measured matmul peak (median of the kept ones), the instruction sets' theoretical peak (an
    estimate) and how they compare."""
    header = ["machine", "device", "build", "vCPUs", "precision", "measured peak GFLOP/s", "runs",
              "ISA peak GFLOP/s (estimate)", "measured / ISA", "how the ISA peak was reckoned"]
    runs = a.runs
    if runs.empty or not {"peak_gflops", "isa_peak_gflops"} & set(runs.columns):
        return header, []
    keys = ["cpu_model", "device", "build", "vcpus", "precision_policy"]
    frame = runs.assign(**{c: runs[c].fillna("") if c in runs else "" for c in keys if c != "vcpus"})
    table = []
    groups = identity.group(zip(frame.index, records(frame)), view="peak", on=lambda pair: pair[1]).values()
    for index in sorted(groups, key=lambda pairs: tuple(str(pairs[0][1].get(k)) for k in keys)):
        g = frame.loc[[i for i, _ in index]]
        key = tuple(g[k].iloc[0] for k in keys)
        measured, isa = (pd.to_numeric(g[c], errors="coerce").dropna() if c in g else pd.Series(dtype="float64")
                         for c in ("peak_gflops", "isa_peak_gflops"))
        if measured.empty and isa.empty:
            continue
        m = float(measured.median()) if not measured.empty else math.nan
        t = float(isa.median()) if not isa.empty else math.nan
        basis = g["isa_peak_basis"].dropna().iloc[0] if "isa_peak_basis" in g and g["isa_peak_basis"].notna().any() \
            else "not reckoned (a GPU, an unknown core or no native unit for the precision)"
        table.append([str(key[0]), str(key[1] or "cpu"), str(key[2]), str(key[3]), str(key[4] or "float32"),
                      "" if math.isnan(m) else f"{m:.1f}", str(len(measured)),
                      "" if math.isnan(t) else f"{t:.0f}",
                      "" if math.isnan(m) or math.isnan(t) else f"{m / t:.2f}", str(basis)])
    return header, table


def build_page(a: Analysis, charts: list[tuple[str, str, str]], facts: list[str]) -> Page:
    """The page of an analysis, its rendered charts ((section, stem, alt), in page order) and findings."""
    page = Page(title="Which CPU configuration trains fastest and cheapest?",
                doc_title=f"cpustudy report: {', '.join(a.studies)}", meta=header_lines(a))
    sus = suspect_notes(a)
    if sus:
        title = "Suspect GPU results." if any(" is suspect" in n for n in sus) else "GPU results: read with care."
        page.callouts.append(Callout("fallback", title, " ".join(sus)))
    fb = fallback_notes(a)
    if fb:
        # Not an error: the reference the ratios are taken against, said once per reason.
        page.callouts.append(Callout("note", "Baseline.", " ".join(fb)))
    if a.notes:
        page.callouts.append(Callout("note", "", " ".join(n + "." for n in a.notes)))
    page.sections += _answer(a, facts)
    page.first = len(page.sections)
    current: Charts | None = None
    for sec, stem, alt in charts:  # a section per study, as the charts come
        if current is None or page.sections[-1].title != sec:
            current = Charts([])
            page.sections.append(Section(sec, [current]))
        current.charts.append(Chart(stem, alt))
    page.sections += _tables(a)
    return page


def _answer(a: Analysis, facts: list[str]) -> list[Section]:
    """The answer's sections: the findings (else what held nothing), then the inconclusive comparisons, each saying
    why, or the figures' notes."""
    out: list[Section] = []
    open_ = [f for f in facts if f.startswith(INCONCLUSIVE)]
    said = set(figure_notes(a))
    notes = [f for f in facts if f in said]
    answer = [f for f in facts if f not in open_ and f not in said]
    if not answer:
        answer = [nothing_held(a)]  # notes on how figures were made are no answer
    out.append(Section("The answer", [Bullets(answer + [f for f in notes if f != PROJECTED_NOTE])]))
    notes = [f for f in notes if f == PROJECTED_NOTE]
    if open_:
        out.append(Section("Inconclusive comparisons", [
            Paragraph(["Not findings: the comparisons behind these do not hold up by the report's rules (runs on "
                       "a quiet machine, a difference of 5 % or more that a test on the runs shows among the page's "
                       "comparisons: see the machine-state line below), and each says why."]),
            Bullets(open_ + notes)]))
    elif notes:
        out.append(Section("Notes", [Bullets(notes)]))
    return out


def _tables(a: Analysis) -> list[Section]:
    """The sections after the charts: the summary's time and cost tables, the projections checked, the user's models,
    the peaks, the prices used and the machines."""
    out: list[Section] = []
    out.append(Section("Summary", [
        Paragraph(["Every figure is computed from stored results; all columns are in ",
                   Link("summary.csv", "summary.csv"), ". Repeats are aggregated by their median."]),
        Paragraph(["Time, and how far to trust it (unstable: the timed epochs of a run vary by more than 5 %, "
                   "as coefficient of variation" + ("; runs \"N (k timed)\": only k timed an epoch after the "
                   "warm-up, the others reached their target within it and count for the time to the target only; "
                   "the epoch and total figures rest on the timed ones" if _some_untimed(a.summary) else "") + "):"]),
        Table([h for _, h in TIME_COLUMNS], _rows(a.summary, TIME_COLUMNS)),
        Paragraph(["Cost, and against which baseline the ratios (×) are taken:"]),
        Table([h for _, h in COST_COLUMNS], _rows(a.summary, COST_COLUMNS)),
    ]))
    if not a.projection.empty:
        out.append(Section("Projections checked against full epochs", [
            Paragraph([f"A capped run's epoch time is projected from its steps. Where the same configuration also "
                       f"trained whole epochs (`cpustudy sweep --calibrate`), the projection agrees when its median "
                       f"is within ±{TOLERANCE:.0%} of the full epochs' median; the paired repeats (a repeat's capped cell and its "
                       f"full twin, run one after the other) show how far one pair can be off. It differs only when "
                       f"every pair misses the same way; otherwise the gap is within the noise between processes and "
                       f"the check is inconclusive. Idle stalls are left out of both."]),
            Table([h for _, h in PROJECTION_COLUMNS], _rows(_with_pair_range(a.projection), PROJECTION_COLUMNS)),
        ]))
    models = _model_file_rows(a)
    if models[1]:
        out.append(Section("Your models and scripts", [
            Paragraph(["Models measured from a user's model file (`cpustudy run ./my_model.py`) or training script "
                       "run as it is (`cpustudy run train.py`: its first fit, fed and called back as the script "
                       "says): what it is, its training FLOPs per sample as TensorFlow's cost analysis counted "
                       "them (or why not), and the GFLOP/s each configuration achieved with them:"]),
            Table(*models, wide=True)]))
    peaks = _peak_rows(a)
    if peaks[1]:
        out.append(Section("Peaks", [
            Paragraph(["A run's share of peak is taken against a matmul measured in the run's own build, threads "
                       "and precision (a peak measured on a busy machine, below the run's own rate, or below the "
                       "peak at fewer vCPUs is not kept). Beside it, the instruction sets' theoretical peak: cores "
                       "x FLOP per cycle x the reported clock, an estimate (turbo and vector clocks differ):"]),
            Table(*peaks, wide=True)]))
    out.append(Section("Prices used", [Table(*_price_rows(a), wide=True)]))
    out.append(Section("Machines and software", [Table(*_software_rows(a))]))
    return out

# -- HTML --------------------------------------------------------------------------------------------

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;
color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.7em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#555;font-size:.92em}.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.5em .8em}
.fallback{background:#fdecea;border-left:4px solid #d93025;padding:.5em .8em}
.charts{display:flex;flex-wrap:wrap;gap:1em}.charts figure{margin:0;flex:1 1 520px}
figure img{max-width:100%;height:auto;border:1px solid #eee}
table{border-collapse:collapse;font-size:.82em;margin:1em 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:right;white-space:nowrap}
th{background:#f4f4f4;white-space:normal;vertical-align:bottom;min-width:3.5em}td:nth-child(-n+3){text-align:left}
table.wide td{white-space:normal;text-align:left;max-width:40em}
td:last-child{white-space:normal;text-align:left;min-width:14em}
"""


def to_html(page: Page, out: Path) -> str:
    """The page as one self-contained HTML file; the charts' PNGs are read from ``out``."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(page.doc_title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(page.title)}</h1>",
    ]
    for i, section in enumerate(page.sections):
        if i == page.first:
            parts.append('<div class="meta">' + "<br>".join(e(line) for line in page.meta) + "</div>")
            for c in page.callouts:
                lead = f"<strong>{e(c.lead)}</strong> " if c.lead else ""
                parts.append(f'<p class="{c.style}">{lead}{e(c.text)}</p>')
        parts.append(f"<h2>{e(section.title)}</h2>")
        parts += [_html_block(block, out) for block in section.blocks]
    if page.first >= len(page.sections):
        parts.append('<div class="meta">' + "<br>".join(e(line) for line in page.meta) + "</div>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _html_block(block: Block, out: Path) -> str:
    e = html.escape
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{e(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Charts):
        return "\n".join(['<div class="charts">'] + [
            f'<figure><img src="{_image_uri(out / (c.stem + ".png"))}" alt="{e(c.alt)}">'
            + (f'<figcaption><a href="{e(c.stem)}.svg">{e(c.stem)}.svg</a></figcaption>'
               if (out / (c.stem + ".svg")).is_file() else "")  # rendered as PNG only: no link to a missing SVG
            + "</figure>"
            for c in block.charts] + ["</div>"])
    if isinstance(block, Paragraph):
        return "<p>" + "".join(f'<a href="{e(p.href)}">{e(p.text)}</a>' if isinstance(p, Link) else e(p)
                               for p in block.parts) + "</p>"
    head = "".join(f"<th>{e(h)}</th>" for h in block.header)
    body = "\n".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in block.rows)
    cls = "wide" if block.wide else ""
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>'


def _image_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


# -- Markdown ----------------------------------------------------------------------------------------


def to_markdown(page: Page) -> str:
    """The page as GitHub Markdown; charts are the PNGs beside it."""
    lines = [f"# {page.title}", ""]
    for i, section in enumerate(page.sections):
        if i == page.first:
            lines += [f"- {line}" for line in page.meta] + [""]
            for c in page.callouts:
                lead = f"**{c.lead}** " if c.lead else ""
                lines += [f"> {lead}{c.text}", ""]
        lines += [f"## {section.title}", ""]
        for block in section.blocks:
            lines += [_md_block(block), ""]
    if page.first >= len(page.sections):
        lines += [f"- {line}" for line in page.meta] + [""]
    return "\n".join(lines)


def _md_block(block: Block) -> str:
    if isinstance(block, Bullets):
        return "\n".join(f"- {item}" for item in block.items)
    if isinstance(block, Charts):
        return "\n\n".join(f"![{c.alt}]({c.stem}.png)" for c in block.charts)
    if isinstance(block, Paragraph):
        return "".join(f"[{p.text}]({p.href})" if isinstance(p, Link) else p for p in block.parts)
    esc = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in block.header) + " |", "|" + "---|" * len(block.header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in block.rows]
    return "\n".join(lines)


# -- writing -----------------------------------------------------------------------------------------


def write_report(a: Analysis, out_dir: Path, *, dpi: int = 110, formats: tuple[str, ...] = ("png", "svg"),
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Render every chart that applies into ``out_dir`` and write ``summary.csv``, ``index.html`` and
    ``report.md`` there."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = a.summary
    summary[SUMMARY_COLUMNS].to_csv(out_dir / "summary.csv", index=False)
    charts: list[tuple[str, str, str]] = []  # (section, stem, alt)
    skipped: list[str] = []
    for section, stem, alt, make in figures(a, a.options.deadline):
        fig = make()
        if fig is None:
            skipped.append(stem)
            continue
        if progress:
            progress(stem)
        render(fig, out_dir / stem, dpi=dpi, formats=formats)
        charts.append((section, stem, alt))
    facts = findings(a)
    page = build_page(a, charts, facts)
    (out_dir / "index.html").write_text(to_html(page, out_dir), encoding="utf-8")
    (out_dir / "report.md").write_text(to_markdown(page), encoding="utf-8")
    return {"out": out_dir, "charts": [c[1] for c in charts], "skipped": skipped, "findings": facts}
