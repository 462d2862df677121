"""The report page: ``summary.csv``, ``index.html`` (self-contained: images embedded as data URIs, no
external fonts or scripts) and ``report.md`` (for GitHub, images next to it), and ``write_report``,
which renders the charts and writes them all.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from cpustudy.analysis.summary import SUMMARY_COLUMNS, Analysis
from cpustudy.report.figures import figures, render
from cpustudy.report.findings import fallback_notes, findings, header_lines, suspect_notes, times

TABLE_COLUMNS = [
    ("study", "study"), ("workload", "workload"), ("label", "config"), ("n_runs", "runs"),
    ("epochs", "epochs"), ("epoch_time_s", "epoch s (median)"), ("epoch_time_iqr_s", "IQR over runs s"),
    ("within_run_iqr_s", "IQR within runs s"), ("unstable", "stability"), ("pct_of_peak", "% of FP32 peak"),
    ("total_time_s", "total s"), ("gpu_utilization", "GPU busy"), ("suspect", "suspect"),
    ("time_rel_baseline", "time ×"), ("cost_usd", "cost USD"), ("cost_rel_baseline", "cost ×"),
    ("cost_per_million_samples_usd", "USD / M samples"), ("instance", "priced as"), ("price_kind", "rate"),
    ("baseline", "baseline"), ("projected", "projected"),
]


def _fmt(col: str, v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    if col == "unstable":
        return "unstable: CV > 5 %" if bool(v) else ""
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
    if col in ("epoch_time_s", "total_time_s"):
        return f"{float(v):,.1f}" if float(v) >= 100 else f"{float(v):.3g}"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _rows(df: pd.DataFrame, cols: list[tuple[str, str]]) -> list[list[str]]:
    return [[_fmt(c, r[c]) for c, _ in cols] for _, r in df.iterrows()]


def _html_table(header: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>'


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


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
th{background:#f4f4f4}td:nth-child(-n+3){text-align:left}
table.wide td{white-space:normal;text-align:left;max-width:40em}
"""


def write_report(a: Analysis, out_dir: Path, *, dpi: int = 110, formats: tuple[str, ...] = ("png", "svg"),
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
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
    _write_html(a, out_dir, charts, facts)
    _write_md(a, out_dir, charts, facts)
    return {"out": out_dir, "charts": [c[1] for c in charts], "skipped": skipped, "findings": facts}


def _image_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _software_rows(a: Analysis) -> tuple[list[str], list[list[str]]]:
    cols = ["study", "cpu_model", "machine", "logical_cpus", "device", "build", "tf_version", "keras_version",
            "keras_backend", "python_version", "onednn", "xla", "tf_missing_isa", "runs", "workloads"]
    header = ["study", "machine", "fingerprint", "logical CPUs", "device", "build", "TensorFlow", "Keras",
              "backend", "Python", "oneDNN", "XLA", "TF not compiled for", "runs", "workloads"]
    rows = [[_fmt(c, r[c]) for c in cols] for _, r in a.software.iterrows()]
    return header, rows


def _price_rows(a: Analysis) -> tuple[list[str], list[list[str]]]:
    header = ["instance", "region", "rate", "USD/h", "source", "as of"]
    rows = [[str(r.instance), str(r.region), str(r.price_kind), f"{r.price_usd_per_hour:.6g}", str(r.price_source),
             str(r.price_as_of)] for r in a.prices_used.itertuples()]
    notes = sorted({n for n in a.summary["price_note"].dropna() if n})
    return header, rows + [["", "", "", "", f"note: {n}", ""] for n in notes]


def _write_html(a: Analysis, out: Path, charts: list[tuple[str, str, str]], facts: list[str]) -> None:
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>cpustudy report: {e(', '.join(a.studies))}</title><style>{CSS}</style></head><body>",
        "<h1>Which CPU configuration trains fastest and cheapest?</h1>",
        '<div class="meta">' + "<br>".join(e(line) for line in header_lines(a)) + "</div>",
    ]
    sus = suspect_notes(a)
    if sus:
        parts.append('<p class="fallback"><strong>Suspect GPU results.</strong> ' + " ".join(e(x) for x in sus) + "</p>")
    fb = fallback_notes(a)
    if fb:
        parts.append('<p class="fallback"><strong>Fallback baseline.</strong> ' + " ".join(e(x) for x in fb) + "</p>")
    if a.notes:
        parts.append('<p class="note">' + " ".join(e(n) + "." for n in a.notes) + "</p>")
    parts.append("<h2>Findings</h2><ul>" + "".join(f"<li>{e(f)}</li>" for f in facts) + "</ul>")
    section = None
    for sec, stem, alt in charts:
        if sec != section:
            if section is not None:
                parts.append("</div>")
            parts.append(f"<h2>{e(sec)}</h2><div class=\"charts\">")
            section = sec
        parts.append(f'<figure><img src="{_image_uri(out / (stem + ".png"))}" alt="{e(alt)}">'
                     f'<figcaption><a href="{e(stem)}.svg">{e(stem)}.svg</a></figcaption></figure>')
    if section is not None:
        parts.append("</div>")
    header = [h for _, h in TABLE_COLUMNS]
    parts.append("<h2>Summary</h2><p>Every figure is computed from stored results; all columns are in "
                 '<a href="summary.csv">summary.csv</a>. Repeats are aggregated by their median.</p>')
    parts.append(_html_table(header, _rows(a.summary, TABLE_COLUMNS)))
    h, rows = _price_rows(a)
    parts.append("<h2>Prices used</h2>" + _html_table(h, rows, "wide"))
    h, rows = _software_rows(a)
    parts.append("<h2>Machines and software</h2>" + _html_table(h, rows))
    parts.append("</body></html>")
    (out / "index.html").write_text("\n".join(parts), encoding="utf-8")


def _write_md(a: Analysis, out: Path, charts: list[tuple[str, str, str]], facts: list[str]) -> None:
    lines = ["# Which CPU configuration trains fastest and cheapest?", ""]
    lines += [f"- {line}" for line in header_lines(a)] + [""]
    sus = suspect_notes(a)
    if sus:
        lines += ["> **Suspect GPU results.** " + " ".join(sus), ""]
    fb = fallback_notes(a)
    if fb:
        lines += ["> **Fallback baseline.** " + " ".join(fb), ""]
    if a.notes:
        lines += ["> " + " ".join(n + "." for n in a.notes), ""]
    lines += ["## Findings", ""] + [f"- {f}" for f in facts] + [""]
    section = None
    for sec, stem, alt in charts:
        if sec != section:
            lines += [f"## {sec}", ""]
            section = sec
        lines += [f"![{alt}]({stem}.png)", ""]
    header = [h for _, h in TABLE_COLUMNS]
    lines += ["## Summary", "", "Every figure is computed from stored results; all columns are in "
              "[summary.csv](summary.csv). Repeats are aggregated by their median.", ""]
    lines += [_md_table(header, _rows(a.summary, TABLE_COLUMNS)), ""]
    h, rows = _price_rows(a)
    lines += ["## Prices used", "", _md_table(h, rows), ""]
    h, rows = _software_rows(a)
    lines += ["## Machines and software", "", _md_table(h, rows), ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
