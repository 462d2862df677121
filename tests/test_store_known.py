"""What a comparison knows of its database (cpustudy.store.Known): read once, read back as the store reads, kept up
to date run by run."""

from __future__ import annotations

import pytest

from cpustudy.store import Known, Store

MACHINE = {"fingerprint": "fp", "cpu_model": "Test CPU", "logical_cpus": 2}


def _run(s: Store, mid: int, key: str, status: str = "ok", epochs: int = 2) -> int:
    rid = s.start_run(mid, {"workload": "mnist_mlp", "build": "tf", "vcpus": 1, "cell_key": key})
    for k in range(1, epochs + 1):
        s.add_epoch(rid, {"epoch": k, "elapsed_s": 1.0 + rid + k / 10, "loss": 1.0 / k})
    s.finish_run(rid, status, {"epoch_time_s": 1.0 + rid})
    return rid


def _queries(x) -> list:
    """Every read the analysis makes of runs, epochs, checks and machines."""
    return [x.runs(), x.runs(status="ok"), x.runs(status="failed"), x.runs(run_ids=[3, 1, 1, 99]),
            x.runs(cell_keys=["a", "c"]), x.runs(status="ok", cell_keys=["a", "b"], run_ids=[2, 1]), x.runs(run_ids=[]),
            x.epochs(), x.epochs([2, 1]), x.epochs([]), x.checks(), x.checks(1), x.checks(2), x.machines(),
            x.count("runs"), x.count("epochs"), x.count("machines"), str(x.path)]


def test_known_reads_as_the_store_reads_and_learns_a_run_by_its_id(tmp_path):
    with Store.open(tmp_path / "db.sqlite") as s:
        mid = s.machine_id(MACHINE)
        ids = [_run(s, mid, "a"), _run(s, mid, "b", "failed"), _run(s, mid, "c", epochs=3)]
        s.add_check({"run_id": ids[2], "machine_id": mid, "candidate": "here:1", "level": 0.9, "low_s": 1.0,
                     "high_s": 2.0, "billed_s": 1.5, "inside": True})
        known = Known(s)
        assert _queries(known) == _queries(s)
        new = _run(s, mid, "a")  # measured: not known until learned
        assert [r["id"] for r in known.runs()] == ids and not known.epochs([new])
        assert known.learn(new) == s.runs(run_ids=[new])[0]
        assert _queries(known) == _queries(s)
        s.conn.execute("UPDATE runs SET status = 'ok' WHERE id = ?", (ids[1],))  # read back again: replaced, not added
        assert known.runs(status="failed") and known.learn(ids[1]) is not None and not known.runs(status="failed")
        assert _queries(known) == _queries(s)
        assert known.learn(12345) is None and len(known.runs()) == 4
        with pytest.raises(ValueError):
            known.count("checks")


def test_what_known_gives_is_a_copy(tmp_path):
    with Store.open(tmp_path / "db.sqlite") as s:
        _run(s, s.machine_id(MACHINE), "a")
        known = Known(s)
        known.runs()[0]["status"] = "changed"
        known.epochs()[0]["elapsed_s"] = -1.0
        known.machines()[0]["cpu_model"] = "changed"
        assert _queries(known) == _queries(s)
