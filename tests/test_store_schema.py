"""The schema: its version and mark, and its migrations (functions, applied one after another)."""

from __future__ import annotations

import sqlite3

import pytest

from cpustudy import store
from cpustudy.errors import UserError
from cpustudy.store import Store, schema

SEMICOLONS = "a; b;"  # a value the old split-on-";" migrations could not have carried in a statement




def test_schema_is_versioned(db):
    Store.open(db).close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == store.APPLICATION_ID
    conn.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="newer"):
        Store.read(db)


def v3_database(path):
    """A database at schema version 3, written by the migrations themselves."""
    conn = sqlite3.connect(path)
    for migrate in store.MIGRATIONS[:3]:
        migrate(conn)
    conn.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 3")
    return conn


def test_v4_reprojects_jax_and_torch_runs_and_marks_old_runs_unvalidated(tmp_path):
    """Capped JAX/PyTorch epochs were projected from step-start times that measured only the steps'
    dispatch; the upgrade projects them again from whole epochs. TensorFlow runs stay as they were."""
    path = tmp_path / "old.sqlite"
    conn = v3_database(path)
    cols = ("uuid, status, workload, build, keras_backend, projected, steps_per_epoch, full_steps_per_epoch, "
            "batch_size, measured_epoch_time_s, epoch_time_s, samples_per_s, settings, created_at")
    conn.execute(f"INSERT INTO runs ({cols}) VALUES ('a','ok','cifar10_cnn','jax-here','jax',1,20,1563,32,"
                 "2.0,30.0,999.0,'{\"options\": {\"augment\": true}}','x')")
    conn.execute(f"INSERT INTO runs ({cols}) VALUES ('b','ok','mnist_mlp','tf','tensorflow',1,20,469,128,"
                 "1.0,20.0,3000.0,'{}','x')")
    conn.commit()
    conn.close()
    with store.Store.open(path) as s:
        jax, tf = s.runs()
    assert jax["epoch_time_s"] == pytest.approx(2.0 * 1563 / 20)
    assert jax["samples_per_s"] == pytest.approx(20 * 32 / 2.0)
    assert jax["augment"] == "model" and jax["validation"] == "none"
    assert tf["epoch_time_s"] == 20.0 and tf["samples_per_s"] == 3000.0 and tf["augment"] is None



def _shape(conn: sqlite3.Connection) -> dict:
    """Every table's columns (name, type, not null, default, key) and every index, as SQLite reports them."""
    objects = conn.execute("SELECT type, name, tbl_name FROM sqlite_master ORDER BY name").fetchall()
    columns = {name: [tuple(c)[1:] for c in conn.execute(f"PRAGMA table_info({name})")]
               for kind, name, _ in objects if kind == "table"}
    return {"objects": [tuple(o) for o in objects], "columns": columns}


def test_migrations_upgrade_a_version_1_database_step_by_step(tmp_path):
    """Each function upgrades one version; applied in turn they give the schema a new database gets,
    and the rows (values with ";" in them included) come through with the data migrations applied."""
    conn = sqlite3.connect(tmp_path / "old.sqlite")
    schema.upgrade(conn, schema.MIGRATIONS[:1])
    assert schema.user_version(conn) == 1
    conn.execute("INSERT INTO machines (fingerprint, flags, info, created_at) VALUES ('fp', ?, ?, 'x')",
                 (SEMICOLONS, f'{{"note": "{SEMICOLONS}"}}'))
    conn.execute("INSERT INTO runs (uuid, machine_id, status, workload, build, error, settings, created_at) "
                 "VALUES ('u1', 1, 'failed', 'mnist_mlp', 'tf', ?, ?, 'x')", (SEMICOLONS, '{"s": "x;y"}'))
    conn.execute("INSERT INTO epochs (run_id, epoch, elapsed_s) VALUES (1, 1, 2.5)")
    new_in = {2: ("runs", "epoch_time_cv"), 3: ("epochs", "cpu_s"), 4: ("runs", "validation"),
              5: ("runs", "time_to_target_s"), 6: ("runs", "workload_version"), 7: ("runs", "model_hash"),
              8: ("epochs", "idle_s"), 9: ("runs", "isa_peak_gflops"),
              10: ("epochs", "wait_s"), 11: ("epochs", "target_value"), 12: ("runs", "method_version"),
              13: ("checks", "later_session"), 14: ("checks", "kind"), 15: ("statements", "convergence"),
              16: ("statements", "rules"), 17: ("checks", "factor"), 18: ("statements", "place_key")}
    for version in range(2, schema.SCHEMA_VERSION + 1):
        table, column = new_in[version]
        assert column not in [c[0] for c in _shape(conn)["columns"].get(table, [])]
        schema.upgrade(conn, schema.MIGRATIONS[:version])  # exactly one more function
        assert schema.user_version(conn) == version
        assert column in [c[0] for c in _shape(conn)["columns"][table]]
    conn.commit()
    assert conn.execute("PRAGMA application_id").fetchone()[0] == store.APPLICATION_ID
    with Store.open(tmp_path / "new.sqlite") as fresh:
        assert _shape(conn) == _shape(fresh.conn)
    conn.close()
    with Store.read(tmp_path / "old.sqlite") as s:
        (run,) = s.runs()
        (machine,) = s.machines()
        (epoch,) = s.epochs()
    assert run["error"] == SEMICOLONS and run["settings"] == '{"s": "x;y"}' and run["validation"] == "none"
    assert run["precision_policy"] == "float32"  # what every run before version 5 trained with
    assert run["workload_version"] == 1 and run["env"] == "{}" and run["instance"] is None  # from its settings
    assert run["model_hash"] is None and run["flops_source"] is None  # no model file, no FLOPs stored
    assert machine["flags"] == SEMICOLONS and machine["info"] == f'{{"note": "{SEMICOLONS}"}}'
    assert epoch["elapsed_s"] == 2.5 and epoch["cpu_s"] is None


def test_a_value_with_semicolons_survives_the_upgrade_of_the_file(db):
    """The path a measuring command takes: Store.open upgrades a version 1 file in place."""
    conn = sqlite3.connect(db)
    store.MIGRATIONS[0](conn)
    conn.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO runs (uuid, status, workload, build, error, created_at) "
                 "VALUES ('u1', 'ok', 'cifar10_cnn', 'tf', ?, 'x')", (SEMICOLONS,))
    conn.commit()
    conn.close()
    Store.open(db).close()
    with Store.read(db) as s:
        (run,) = s.runs()
    assert run["error"] == SEMICOLONS and run["validation"] == "none"
    conn = sqlite3.connect(db)
    assert schema.user_version(conn) == store.SCHEMA_VERSION
    conn.close()


def test_a_migration_is_a_function_appended_to_the_list(tmp_path):
    """A later version is one more function; its statements may hold ";" (a trigger's body, a string)."""

    def v_next_trigger(conn: sqlite3.Connection) -> None:
        conn.execute("""CREATE TRIGGER runs_note AFTER UPDATE OF status ON runs BEGIN
            UPDATE runs SET error = 'status changed; see ' || NEW.status WHERE id = NEW.id;
            SELECT 1;
        END""")

    conn = sqlite3.connect(tmp_path / "x.sqlite")
    schema.upgrade(conn)
    conn.execute("INSERT INTO runs (uuid, status, workload, build, created_at) VALUES ('u', 'running', 'w', 'tf', 'x')")
    schema.upgrade(conn, (*schema.MIGRATIONS, v_next_trigger))
    assert schema.user_version(conn) == schema.SCHEMA_VERSION + 1
    conn.execute("UPDATE runs SET status = 'ok'")
    assert conn.execute("SELECT error FROM runs").fetchone()[0] == "status changed; see ok"
    conn.close()


def test_a_version_1_database_is_upgraded_without_losing_rows(db):
    conn = sqlite3.connect(db)
    store.MIGRATIONS[0](conn)
    conn.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO runs (uuid, status, workload, build, created_at) VALUES ('u1', 'ok', 'mnist_mlp', 'tf', 'now')")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with Store.read(db) as s:  # reading sees the upgraded schema, in memory
        (run,) = s.runs()
        assert run["uuid"] == "u1" and "epoch_time_cv" in run and run["unstable"] is None
    assert db.read_bytes() == before  # ... and leaves the file as it was
    db.chmod(0o444)
    with Store.read(db) as s:  # so a read-only old file can be read
        assert [r["uuid"] for r in s.runs()] == ["u1"]
    db.chmod(0o644)
    Store.open(db).close()  # a measuring command upgrades it in place
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM tunings").fetchone()[0] == 0
    conn.close()


def test_a_version_15_database_opens_and_its_statements_read_with_no_rules(tmp_path):
    """Statements stored before the rules were (schema v15) read back with ``rules`` None, read-only or upgraded."""
    db = tmp_path / "v15.sqlite"
    conn = sqlite3.connect(db)
    schema.upgrade(conn, schema.MIGRATIONS[:15])
    conn.execute("INSERT INTO statements (stated_at, workload, target_accuracy, convergence, place, candidate, level, "
                 "low_s, high_s) VALUES ('x', 'mnist_mlp', 0.5, '{}', 'here:2', 'here:2', 0.9, 1.0, 3.0)")
    conn.commit()
    conn.close()
    with Store.read(db) as s:
        (said,) = s.statements()
    assert said["rules"] is None and said["level"] == 0.9
    with Store.open(db) as s:
        assert [x["rules"] for x in s.statements()] == [None]
        s.add_statement({**said, "rules": {"level": 0.8}})
        assert [x["rules"] for x in s.statements()] == [None, {"level": 0.8}]
    assert schema.file_version(db) == schema.SCHEMA_VERSION == 18


def test_v18_keys_an_old_statement_by_the_runs_behind_it_where_its_name_fits_two_places(tmp_path):
    """A GPU's name says no vCPUs ("the GPU on ..."): where the machine also has a GPU run of the workload at other
    vCPUs (here one at 8 beside the statement's at 16, and one after the statement), the statement takes the key
    most of the runs behind it give, and a merge of the two databases (keyed alike) stores it once."""
    import json
    import shutil
    from pathlib import Path

    from cpustudy.store.importers import merge

    src = Path(__file__).resolve().parent.parent / "reports" / "h200-gpu" / "h200-2026-11-28-later.sqlite"
    db = tmp_path / "h200.sqlite"
    shutil.copy(src, db)
    assert schema.file_version(db) == 17
    conn = sqlite3.connect(db)
    cols = [c[1] for c in conn.execute("PRAGMA table_info(runs)") if c[1] not in ("id", "uuid")]
    for vcpus, when in ((8, None), (16, "2099-01-01T00:00:00+0000")):  # at 8 vCPUs behind it; at 16 after it
        row = dict(zip(cols, conn.execute(f"SELECT {', '.join(cols)} FROM runs WHERE id = 3").fetchone()))
        row.update(vcpus=vcpus, created_at=when or row["created_at"])
        conn.execute(f"INSERT INTO runs (uuid, {', '.join(row)}) VALUES (?, {', '.join('?' * len(row))})",
                     (f"clone-{vcpus}", *row.values()))
    conn.commit()
    conn.close()
    with Store.read(db) as s:
        gpu = next(x for x in s.statements() if x["candidate"] == "here:gpu")
    assert gpu["place_key"] is not None and gpu["place_key"]["vcpus"] == 16 and gpu["place_key"]["device"] == "gpu"
    with Store.open(tmp_path / "into.sqlite") as into:
        merge.merge(into, db)
        merge.merge(into, src)  # the same statements, keyed in memory from the unmodified file
        said = [(x["session"], x["candidate"], json.dumps(x["place_key"])) for x in into.statements()]
    assert len(said) == 3 and len(set(said)) == 3
