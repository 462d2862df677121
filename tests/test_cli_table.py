"""Terminal tables: the columns that fit, numbers never cut, COLUMNS honoured."""

from __future__ import annotations

import pytest

from cpustudy.cli.output import cell
from cpustudy.cli.table import fit, render

ROWS = [{"run_id": i, "workload": "imdb_bidirectional_lstm", "build": "tf-onednn+tfdata", "epoch_time_s": 1234.5678 * i,
         "samples_per_s": 98765.4321, "error": "worker exited with code 1: " + "x" * 80} for i in range(1, 4)]
COLUMNS = ["run_id", "workload", "build", "epoch_time_s", "samples_per_s", "error"]


def _lines(width: int) -> list[str]:
    from rich.console import Console

    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    console.print(render(ROWS, COLUMNS, width, cell, title="runs"))
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_a_table_fits_its_width_and_never_cuts_a_number(width):
    lines = _lines(width)
    assert max(len(line) for line in lines) <= width
    shown, left = fit(ROWS, COLUMNS, width, cell)
    assert shown[0] == "run_id" and shown + left == [c for c in COLUMNS if c in shown + left]
    text = "\n".join(lines)
    for c in shown:
        if c != "error":
            for r in ROWS:
                assert cell(r[c]) in text  # whole: 1,235 not 1,2…
    if left:
        assert f"not shown at {width} columns: {', '.join(left)}" in " ".join(x.strip() for x in lines)


def test_narrow_drops_later_columns_and_wide_shows_all():
    assert fit(ROWS, COLUMNS, 60, cell)[1]  # something left out at 60
    assert fit(ROWS, COLUMNS, 400, cell) == (COLUMNS, [])


def test_piped_output_honours_COLUMNS(run_cli, db, monkeypatch):
    monkeypatch.setenv("COLUMNS", "70")
    r = run_cli("workloads")
    assert r.code == 0 and max(len(line) for line in r.out.splitlines()) <= 70
    assert "not shown at 70 columns" in r.out
    monkeypatch.setenv("COLUMNS", "300")
    wide = run_cli("workloads")
    assert "not shown" not in wide.out and "train_mflops_per_sample" in wide.out


def test_many_rows_are_measured_by_their_widest_cells():
    # thousands of rows: the widest cell of a column, wherever it is, still decides what fits
    rows = [{"run_id": i, "workload": "mnist_mlp", "build": "tf", "error": "short"} for i in range(3000)]
    rows[2777]["workload"] = "imdb_bidirectional_lstm_with_a_very_long_name"
    columns = ["run_id", "workload", "build", "error"]
    assert fit(rows, columns, 40, cell) == (["run_id", "build", "error"], ["workload"])
    assert fit(rows, columns, 80, cell) == (columns, [])


def test_the_footer_suggests_format_only_where_the_command_has_it(run_cli, monkeypatch):
    hint = render(ROWS, COLUMNS, 60, cell, formats=False).caption
    assert hint.startswith("not shown at 60 columns:") and "--format" not in hint and "COLUMNS=..." in hint
    assert "--format csv or json" in render(ROWS, COLUMNS, 60, cell).caption
    monkeypatch.setenv("COLUMNS", "50")
    dry = run_cli("sweep", "--dry-run", "--vcpus", "1", "--workloads", "mnist_mlp", "--builds", "tf")  # no --format
    assert dry.code == 0, dry.err
    text = " ".join(dry.out.split())
    assert "not shown at 50 columns" in text and "--format" not in text
    listed = run_cli("workloads")  # has --format
    assert "--format csv or json" in " ".join(listed.out.split())


@pytest.mark.parametrize("build", ["tf", "tf-onednn"])
def test_results_at_80_columns_marks_a_projected_epoch_time_in_its_cell(run_cli, db, monkeypatch, build):
    import reportdb

    from cpustudy.store import Store

    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 16})
        reportdb.add_run(s, m, "imdb_bidirectional_lstm", build, 16, [123.4], projected=True)
        reportdb.add_run(s, m, "imdb_bidirectional_lstm", build, 8, [234.5])
    monkeypatch.setenv("COLUMNS", "80")
    r = run_cli("results", "--db", db)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert max(len(line) for line in lines) <= 80
    rows = {line.split()[0]: line.split() for line in lines if line.split() and line.split()[0] in {"1", "2"}}
    assert "123.4*" in rows["1"] and "234.5" in rows["2"] and "234.5*" not in rows["2"]
    assert "* projected to a full epoch from the steps run" in r.out
    csv_out = run_cli("results", "--db", db, "--format", "csv").out
    assert "123.4*" not in csv_out and "projected" in csv_out.splitlines()[0]  # the data itself is unmarked


def test_results_tell_a_gpu_run_and_where_augmentation_ran_from_a_cpu_run(run_cli, db, monkeypatch):
    import reportdb

    from cpustudy.store import Store

    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 16})
        reportdb.add_run(s, m, "cifar10_cnn", "jax-here", 16, [3.4], device="gpu", options={"augment": "host"})
        reportdb.add_run(s, m, "cifar10_cnn", "jax-here", 16, [3.5], options={"augment": "none"})
    monkeypatch.setenv("COLUMNS", "160")
    r = run_cli("results", "--db", db)
    assert r.code == 0, r.err
    rows = {line.split()[0]: line.split() for line in r.out.splitlines() if line.split()[:1] in (["1"], ["2"])}
    assert {"gpu", "host"} <= set(rows["1"]) and "gpu" not in rows["2"]
    assert {"cpu", "none"} <= set(rows["2"])
