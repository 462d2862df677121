"""`cpustudy report` as a command: bad options and databases are one-line errors, and the CLI stays
light (pandas, plotnine and matplotlib are imported only when a report is made)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import reportdb

from cpustudy.store import Store


@pytest.mark.parametrize(
    "args,message",
    [
        (["--baseline", "gpu"], "no GPU runs in the results"),
        (["--baseline", "tf@64"], "--baseline tf@64: no such configuration"),
        (["--baseline", "banana"], "write gpu, or BUILD@VCPUS"),
        (["--deadline", "-5"], "'-5': a deadline must be positive, e.g. 5"),
        (["--deadline", "-5m"], "'-5m': a deadline must be positive, e.g. 5m"),
        (["--deadline", "5 minutes"], "write a duration like 90s"),
        (["--study", "nope"], "no finished runs of study 'nope'"),
        (["--gpu-instance", "gcp:nope"], "no instance 'gcp:nope'"),
    ],
)
def test_bad_report_options_are_one_line_errors(run_cli, tmp_path, args, message):
    db = reportdb.make_local_db(tmp_path / "local.sqlite")
    r = run_cli("report", "--db", db, "--out", tmp_path / "out", *args)
    assert r.code == 2
    assert r.err.count("\n") == 1 and message in r.err and "Traceback" not in r.err
    assert not (tmp_path / "out" / "index.html").exists()


def test_empty_and_missing_databases(run_cli, tmp_path):
    empty = tmp_path / "empty.sqlite"
    Store.open(empty).close()
    r = run_cli("report", "--db", empty)
    assert r.code == 2 and "no finished runs" in r.err and r.err.count("\n") == 1
    r = run_cli("report", "--db", tmp_path / "absent.sqlite")
    assert r.code == 2 and "no database at" in r.err
    not_ours = tmp_path / "notes.sqlite"
    not_ours.write_text("hello")
    r = run_cli("report", "--db", not_ours)
    assert r.code == 2 and "not a cpustudy database" in r.err


def test_cli_report_does_not_import_heavy_modules():
    code = (
        "import sys; from cpustudy import cli; cli.build_parser(); "
        "print(sorted(m for m in ('pandas', 'plotnine', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_results_and_price_checks_do_not_import_pandas():
    """cpustudy.analysis imports nothing itself, so the results command's rows and the price catalog
    stay light."""
    code = (
        "import sys; from cpustudy import prices; from cpustudy.analysis import peakshare, suspect; "
        "from cpustudy.cli.commands import results; "
        "print(sorted(m for m in ('pandas', 'plotnine', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_plain_progress_says_each_stage_after_a_quiet_start():
    from cpustudy.cli.output import PlainProgress

    lines: list[str] = []
    p = PlainProgress("report", "reading the runs", quiet_s=0, every_s=0, write=lines.append)  # not entered: no timer
    p.update("rendering a into out/")
    p.update("rendering a into out/")  # the same stage is said once
    p.update("writing the page")
    assert [line.split("] ", 1)[1] for line in lines] == ["rendering a into out/", "writing the page"]
    assert all(line.startswith("report: [") for line in lines)
    quiet: list[str] = []
    with PlainProgress("report", "reading the runs", quiet_s=60, write=quiet.append) as p:
        p.update("rendering a into out/")
    assert quiet == []  # work done within the quiet start says nothing (a refused input stays one line)


def test_report_says_its_progress_in_plain_lines_where_stderr_is_not_a_terminal(run_cli, tmp_path, monkeypatch):
    """A 17-31 s report printed nothing to a log or CI: the spinner shows only on a terminal."""
    from cpustudy.cli import output

    class Prompt(output.PlainProgress):  # no quiet start: the test's report takes a second or two
        def __init__(self, name, first, **kw):
            super().__init__(name, first, quiet_s=0, every_s=0)

    monkeypatch.setattr(output, "PlainProgress", Prompt)
    db = reportdb.make_local_db(tmp_path / "local.sqlite")
    r = run_cli("report", "--db", db, "--out", tmp_path / "out", "--no-svg")
    assert r.code == 0, r.err
    said = [line for line in r.err.splitlines() if line.startswith("report: [")]
    assert any("reading and analysing the runs" in line for line in said)
    assert any(f"rendering charts into {tmp_path / 'out'}/" in line for line in said)
    assert "wrote " in r.out
