"""``cpustudy report`` as one call: analyse a database and write its report into a folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from cpustudy.analysis import holdup
from cpustudy.analysis.summary import Options, analyze, judge_builds
from cpustudy.errors import UserError
from cpustudy.report.findings import fallback_notes, findings
from cpustudy.report.page import write_report
from cpustudy.store import Store


@dataclass
class Built:
    out: Path
    charts: int
    notes: list[str]  # for the terminal: fallback baselines, what the analysis had to say


def default_report_dir(db_path: Path, studies: list[str]) -> Path:
    """``reports/<study>/`` when the report holds one imported study (e.g. woolf2017), else
    ``reports/<database file stem>/``."""
    name = studies[0] if len(studies) == 1 and studies[0] != "cpustudy" else (db_path.stem or "report")
    return Path("reports") / name


def build_report(db: str | Path | None, opts: Options, out: Path | None = None, *, dpi: int = 110,
                 formats: tuple[str, ...] = ("png", "svg"), progress: Callable[[str], None] = lambda s: None) -> Built:
    """Analyse the database and write the report into ``out`` (default: ``default_report_dir``)."""
    progress("reading and analysing the runs")
    with Store.read(db) as store:
        result = analyze(store, opts)
        out = out or default_report_dir(Path(store.path), result.studies)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file: give a folder for the report")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the report folder {out} ({exc.strerror})") from None
    progress(f"{len(result.summary)} configurations from {len(result.runs)} runs: rendering charts into {out}/")
    # Every comparison the page states is judged together: a first pass collects their p-values, the
    # page's threshold is Benjamini-Hochberg's over them, and everything is judged again under it.
    page = holdup.page(result.noise, lambda: findings(result), references=holdup.blocks(result.summary))
    result.page = page
    try:
        with holdup.judging(page):
            result.summary = judge_builds(result.summary)
            written = write_report(result, out, dpi=dpi, formats=formats,
                                   progress=lambda stem: progress(f"rendering {stem} into {out}/"))
    except OSError as exc:
        raise UserError(f"cannot write the report into {out} ({exc.strerror or exc})") from None
    notes = [f"fallback baseline: {n}" for n in fallback_notes(result)]
    return Built(out, len(written["charts"]), notes + list(result.notes))
