"""The Store: the only code that writes a cpustudy database, and the queries that read it.

One file holds machines, runs (one measurement each: configuration, software, status, summary) and
epochs (committed as they finish, so an interrupted run keeps what it measured), with the peaks and
tunings measured for them. A file that is not a cpustudy database is refused, never altered; an older
one is upgraded by a measuring command and read through an upgraded copy in memory (see ``schema``).

Somewhat over 400 lines, on purpose: it is one class, whose writes share one connection and one
transaction; the schema and the importers, which need no access to either, live in modules of their own.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, cast

import cpustudy.store.schema as schema
from cpustudy import precision, provenance
from cpustudy.errors import UserError
from cpustudy.store.rows import JSON, CheckRow, EpochRow, MachineRow, PeakRow, RunRow, StatementRow, TuningRow
from cpustudy.store.schema import SCHEMA_VERSION

DEFAULT_DB = "cpustudy.sqlite"

#: The runs columns ``finish_run`` sets from a run's summary (one it is not given becomes NULL).
RUN_SUMMARY_FIELDS = (
    "epoch_time_iqr_s", "epoch_time_cv", "unstable", "peak_gflops", "mem_bandwidth_gbs", "epoch_time_s",
    "measured_epoch_time_s", "step_time_s", "samples_per_s", "startup_s", "projected", "timed_epochs",
    "epoch_boundary_s", "cpu_utilization", "gpu_utilization", "validation_time_s", "val_loss", "val_accuracy",
    "peak_device", "peak_precision", "target_reached", "epochs_to_target", "time_to_target_s",
    "stall_s", "stall_max_s", "isa_peak_gflops", "isa_peak_basis", "wait_share", "peak_rss_bytes", "gpu_peak_bytes",
)
#: The runs columns ``set_software`` copies out of the software report (one it is not given stays as it is).
SOFTWARE_FIELDS = (
    "python_version", "tf_version", "keras_version", "keras_backend", "onednn", "xla", "tf_missing_isa", "precision",
)
EPOCH_V4_FIELDS = ("validation_s", "validation_steps", "validation_steps_s", "val_loss", "val_accuracy", "gpu_util")


#: Columns a run's own record fills, never a configuration's field of the same name.
RUN_OWN_COLUMNS = frozenset({"id", "uuid", "machine_id", "study", "status", "settings", "cell_key", "created_at",
                             "finished_at", "machine_state"})


def _column_value(value: Any) -> Any:
    """A field as its column holds it: a mapping as JSON text, a boolean as 0/1."""
    if isinstance(value, Mapping):
        return json.dumps(dict(value), sort_keys=True, default=str)
    return int(value) if isinstance(value, bool) else value


def row_id(cur: sqlite3.Cursor) -> int:
    """The id of the row an INSERT just wrote (SQLite always sets it after an INSERT)."""
    assert cur.lastrowid is not None
    return int(cur.lastrowid)


#: Seconds added to the wall clock where runs are stamped (and where ``compare`` asks how long ago a reference was
#: timed): 0, except while a rehearsal (``compare --simulate``) plays a later period (``Scenario.earlier``).
CLOCK_OFFSET_S = 0.0


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(time.time() + CLOCK_OFFSET_S))


def default_path() -> Path:
    return Path(os.environ.get("CPUSTUDY_DB") or DEFAULT_DB)


class Store:
    """A cpustudy database. Use ``Store.open`` (writes, creating it) or ``Store.read`` (never creates)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        #: The measuring session (one ``sweep``, ``run`` or ``compare`` call) that runs started now belong to,
        #: kept in each run's settings: the statistics tell sweeps apart by it.
        self.session: str | None = None
        self._columns: dict[str, tuple[str, ...]] = {}
        # Called after a run starts or finishes, once committed (``sweep --snapshot-to`` copies the
        # database there, so a cut job resumes from it).
        self.on_run_change: Callable[[], None] | None = None

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path | None = None) -> "Store":
        path = Path(path) if path is not None else default_path()
        if path.is_dir():
            raise UserError(f"{path} is a folder: give --db a file path such as {path / DEFAULT_DB}")
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise UserError(f"folder {parent} does not exist: create it or pass another --db path")
        fresh = not path.exists() or path.stat().st_size == 0
        if not fresh:
            cls._check_file(path)
        why = schema.unwritable(path)
        if why:
            raise UserError(f"{path} cannot be written ({why}): measure into a writable copy (`cp {path} COPY` "
                            "and pass --db COPY) or make it writable; nothing was changed")
        try:
            conn = sqlite3.connect(path, timeout=60, isolation_level=None)
        except sqlite3.Error as exc:
            raise UserError(f"cannot open {path} ({exc}): check the path and its permissions") from None
        store = cls(conn, path)
        try:
            store._configure()
            store._migrate()
        except sqlite3.OperationalError as exc:
            conn.close()
            raise UserError(f"cannot write to {path} ({exc}): check its permissions and free space") from None
        return store

    @classmethod
    def read(cls, path: str | Path | None = None) -> "Store":
        path = Path(path) if path is not None else default_path()
        if not path.is_file():
            raise UserError(
                f"no database at {path}: run a measurement first (`cpustudy run ...`) or pass --db "
                "with an existing file"
            )
        if path.stat().st_size:  # an empty file is a database another process is creating now
            cls._check_file(path)
        conn = schema.connect_reading(path)
        store = cls(conn, path)
        store._configure()
        version = schema.user_version(store.conn)
        schema.check_version(path, version)
        if version < SCHEMA_VERSION:
            # An old file: read an upgraded copy in memory and leave the file as it is (reading
            # never writes; the next measuring command upgrades the file in place).
            memory = sqlite3.connect(":memory:")
            conn.backup(memory)
            conn.close()
            store = cls(memory, path)
            store._configure()
            store._migrate()
        return store

    @staticmethod
    def _check_file(path: Path) -> None:
        try:
            version = schema.file_version(path)
        except OSError as exc:
            raise UserError(f"cannot read {path} ({exc.strerror}): check the path and permissions") from None
        except sqlite3.Error as exc:
            raise UserError(f"{path} is damaged: it starts as an SQLite file but SQLite cannot read it ({exc}); "
                            "nothing was changed: use a backup or a snapshot, or recover what SQLite can read "
                            f"with `sqlite3 {path} .recover | sqlite3 NEW.sqlite`") from None
        if version is None:
            raise UserError(
                f"{path} is not a cpustudy database: pass --db with a new file name or an existing "
                "cpustudy database"
            )

    def _configure(self) -> None:
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.execute("PRAGMA busy_timeout = 60000")

    def _migrate(self) -> None:
        version = schema.user_version(self.conn)
        schema.check_version(self.path, version)
        if version == SCHEMA_VERSION:
            return
        self.conn.execute("PRAGMA journal_mode = WAL")
        with self.transaction():
            # Re-read under the write lock: another process may have upgraded it meanwhile.
            schema.check_version(self.path, schema.user_version(self.conn))
            schema.upgrade(self.conn)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: ``BEGIN IMMEDIATE``, then ``COMMIT``, or ``ROLLBACK`` on an error.

        Inside another one it is part of the outer one, so an importer makes many of the methods below
        one all-or-nothing write by holding a transaction around them.
        """
        if self.conn.in_transaction:
            yield self.conn
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            if self.conn.in_transaction:  # SQLite may have rolled back already (a full disk, say)
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def columns(self, table: str) -> tuple[str, ...]:
        """The columns of one of the database's tables, in order."""
        if table not in self._columns:
            if table not in schema.TABLES:
                raise ValueError(table)
            self._columns[table] = tuple(r[1] for r in self.conn.execute(f"PRAGMA table_info({table})"))
        return self._columns[table]

    def _insert(self, table: str, row: Mapping[str, Any], verb: str = "INSERT") -> sqlite3.Cursor:
        unknown = set(row) - set(self.columns(table))
        if unknown:
            raise ValueError(f"not columns of {table}: {', '.join(sorted(unknown))}")
        return self.conn.execute(
            f"{verb} INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
        )

    # -- writing what is measured here -----------------------------------------------------------

    def machine_id(self, machine: Mapping[str, Any]) -> int:
        """The id of this machine (as ``environment.machine`` describes it), inserting it the first
        time it is seen."""
        fp = machine["fingerprint"]
        known = self.find_machine(fp)
        if known is not None:
            self._add_evidence(known, machine)
            return known
        row = {
            "fingerprint": fp,
            **{k: machine.get(k) for k in ("hostname", "cpu_model", "cpu_vendor", "arch")},
            "flags": " ".join(machine.get("flags") or []),
            "isa": json.dumps(machine.get("isa") or {}),
            **{k: machine.get(k) for k in ("physical_cores", "logical_cpus", "threads_per_core", "sockets",
                                          "numa_nodes", "memory_bytes", "os")},
            "info": json.dumps(dict(machine), default=str),
            "created_at": now(),
        }
        with self.transaction():
            cur = self._insert("machines", row, "INSERT OR IGNORE")
            if cur.rowcount:
                return row_id(cur)
        known = self.find_machine(fp)  # another process inserted it first
        assert known is not None
        return known

    def start_run(self, machine_id: int, config: Mapping[str, Any],
                  configuration: Mapping[str, Any] | None = None) -> int:
        """Record a measurement about to start (status ``running``): ``config`` is the whole run
        configuration (stored as ``settings``), ``configuration`` its identity and platform
        (``Configuration.columns()``), each field stored in the column of its name (the CPU model is
        the machine's column, not the run's)."""
        columns = set(self.columns("runs"))
        identity = configuration if configuration is not None else config
        cols = {k: _column_value(v) for k, v in identity.items() if k in columns and k not in RUN_OWN_COLUMNS}
        cols.update({
            "uuid": config.get("uuid") or uuid.uuid4().hex,
            "machine_id": machine_id,
            "study": config.get("study", "cpustudy"),
            "status": "running",
            "cpu_list": config.get("cpu_list"),
            "oversubscribed": int(bool(config.get("oversubscribed"))),
            "full_steps_per_epoch": config.get("full_steps_per_epoch"),
            "cell_key": config.get("cell_key"),
            "settings": json.dumps({**config, **({"session": self.session} if self.session else {})}, default=str,
                                   sort_keys=True),
            "flops_per_sample": config.get("flops_per_sample"),
            "flops_source": config.get("flops_source") or ("analytic" if config.get("flops_per_sample") else None),
            "model_file": config.get("model_file"),
            "model_summary": json.dumps(config["model_summary"], sort_keys=True) if config.get("model_summary") else None,
            "augment": (config.get("options") or {}).get("augment"),
            "machine_state": json.dumps(config.get("machine_state")) if config.get("machine_state") else None,
            "created_at": now(),
            **provenance.record(),
        })
        for k, default in (("device", "cpu"), ("build", "tf"), ("repeat", 0), ("input_pipeline", "numpy"),
                           ("precision_policy", precision.DEFAULT)):
            if cols.get(k) is None:
                cols[k] = default
        with self.transaction():
            cur = self._insert("runs", cols)
        self._changed()
        return row_id(cur)

    def _changed(self) -> None:
        if self.on_run_change is not None and not self.conn.in_transaction:
            self.on_run_change()

    def set_software(self, run_id: int, software: Mapping[str, Any]) -> None:
        values = {k: software[k] for k in SOFTWARE_FIELDS if k in software}  # others stay as they are
        for k in ("onednn", "xla"):
            if values.get(k) is not None:
                values[k] = int(bool(values[k]))
        with self.transaction():
            self.conn.execute(
                f"UPDATE runs SET {', '.join(['software = ?'] + [f'{k} = ?' for k in values])} WHERE id = ?",
                (json.dumps(dict(software), default=str, sort_keys=True), *values.values(), run_id),
            )

    def add_check(self, check: Mapping[str, Any]) -> int:
        """One fresh training held against an interval stated without it (``schema.v13_checks``, ``v14``): a
        ``compare --check`` training, or (``kind="held out"``) one ``cpustudy backtest`` held out."""
        row = {k: check.get(k) for k in ("run_id", "machine_id", "candidate", "level", "low_s", "high_s", "billed_s",
                                         "stated_session", "median_s", "factor")}
        row["kind"] = check.get("kind") or "check"
        row.update(inside=int(bool(check["inside"])), later_session=int(bool(check.get("later_session"))),
                   data_sessions=json.dumps(sorted(check.get("data_sessions") or [])),
                   stated_at=check.get("stated_at") or now())
        with self.transaction():
            return row_id(self._insert("checks", row))

    def add_statement(self, statement: Mapping[str, Any]) -> int:
        """One interval ``compare`` stated (``schema.v15_statements``) and the rules it ran under (``rules``, a dict),
        stamped with the cpustudy stating it."""
        row = {k: statement.get(k) for k in ("machine_id", "session", "workload", "target_accuracy", "place",
                                             "candidate", "level", "low_s", "median_s", "high_s", "factor")}
        made = provenance.record()
        row["cpustudy"] = statement.get("cpustudy") or f"{made['cpustudy_version']} {made['cpustudy_commit'] or '-'}"
        row.update(convergence=json.dumps(statement["convergence"], sort_keys=True, default=str),
                   data_sessions=json.dumps(sorted(statement.get("data_sessions") or [])),
                   rules=None if statement.get("rules") is None else json.dumps(statement["rules"], sort_keys=True),
                   place_key=json.dumps(statement["place_key"], sort_keys=True),
                   stated_at=statement.get("stated_at") or now())
        with self.transaction():
            return row_id(self._insert("statements", row))

    def statements(self) -> list[StatementRow]:
        """The stored statements, oldest first (``convergence``, ``data_sessions``, ``rules`` and ``place_key`` read back
        from JSON; ``rules`` None where stored before they were, ``place_key`` where no run bore its place's name)."""
        out = []
        for row in self.conn.execute("SELECT * FROM statements ORDER BY stated_at, id"):
            d = dict(row)
            d["convergence"] = json.loads(d["convergence"])
            d["data_sessions"] = json.loads(d["data_sessions"] or "[]")
            d["rules"] = json.loads(d["rules"]) if d.get("rules") else None
            d["place_key"] = json.loads(d["place_key"]) if d.get("place_key") else None
            out.append(cast(StatementRow, d))
        return out

    def checks(self, machine_id: int | None = None) -> list[CheckRow]:
        """The stored checks (of one machine), oldest first, with the session their run trained in."""
        sql = """SELECT c.*, r.settings AS run_settings FROM checks c JOIN runs r ON r.id = c.run_id"""
        args: list[Any] = []
        if machine_id is not None:
            sql += " WHERE c.machine_id = ?"
            args.append(machine_id)
        return [cast(CheckRow, dict(row)) for row in self.conn.execute(sql + " ORDER BY c.id", args)]

    def set_xla(self, run_id: int, xla: bool) -> None:
        """Whether the model was compiled with XLA, as Keras resolved it."""
        with self.transaction():
            self.conn.execute("UPDATE runs SET xla = ? WHERE id = ?", (int(xla), run_id))

    def add_epoch(self, run_id: int, epoch: Mapping[str, Any]) -> None:
        row = {
            "run_id": run_id,
            "epoch": epoch["epoch"],
            "elapsed_s": epoch["elapsed_s"],
            **{k: epoch.get(k) for k in ("steps", "samples_per_s", "loss", "accuracy")},
            "warmup": int(bool(epoch.get("warmup"))),
            **{k: epoch.get(k) for k in ("cpu_s", "steps_s", "boundary_s", *EPOCH_V4_FIELDS, "idle_s", "wait_s",
                                         "target_value")},
            "metrics": json.dumps(epoch["metrics"], sort_keys=True) if epoch.get("metrics") else None,
        }
        with self.transaction():
            self._insert("epochs", row, "INSERT OR REPLACE")

    def finish_run(
        self,
        run_id: int,
        status: str,
        summary: Mapping[str, Any] | None = None,
        *,
        exit_code: int | None = None,
        error: str | None = None,
        output_tail: str | None = None,
    ) -> None:
        summary = dict(summary or {})
        values = {k: summary.get(k) for k in RUN_SUMMARY_FIELDS}
        values["projected"] = int(bool(values["projected"]))
        for flag in ("unstable", "target_reached"):
            if values[flag] is not None:
                values[flag] = int(bool(values[flag]))
        with self.transaction():
            self.conn.execute(
                f"""UPDATE runs SET status = ?, exit_code = ?, error = ?, finished_at = ?, output_tail = ?,
                {', '.join(f'{k} = ?' for k in values)} WHERE id = ?""",
                (status, exit_code, error, now(), output_tail, *values.values(), run_id),
            )
        self._changed()

    def peak(self, machine_id: int, config_key: str) -> PeakRow | None:
        row = self.conn.execute("SELECT * FROM peaks WHERE machine_id = ? AND config_key = ?",
                                (machine_id, config_key)).fetchone()
        return cast(PeakRow, dict(row)) if row else None

    def set_peak(self, machine_id: int, config_key: str, peak_gflops: float | None,
                 bandwidth_gbs: float | None, details: Mapping[str, Any]) -> None:
        row = {"machine_id": machine_id, "config_key": config_key, "peak_gflops": peak_gflops,
               "mem_bandwidth_gbs": bandwidth_gbs, "details": json.dumps(dict(details)), "measured_at": now()}
        with self.transaction():
            self._insert("peaks", row, "INSERT OR REPLACE")

    def add_tuning(self, machine_id: int, tuning: Mapping[str, Any]) -> int:
        cols = ("workload", "build", "vcpus", "setting", "default_time_s", "best_time_s", "gain",
                "gain_low", "gain_high", "trials")
        values = [json.dumps(tuning[c], sort_keys=True) if c == "setting" else tuning.get(c) for c in cols]
        with self.transaction():
            cur = self.conn.execute(
                f"INSERT INTO tunings (machine_id, {', '.join(cols)}, created_at) "
                f"VALUES (?, {', '.join('?' * len(cols))}, ?)",
                (machine_id, *values, now()),
            )
        return row_id(cur)

    def tuning(self, machine_id: int, workload: str, build: str, vcpus: int) -> TuningRow | None:
        """The latest tuner result for this configuration on this machine."""
        row = self.conn.execute(
            """SELECT * FROM tunings WHERE machine_id = ? AND workload = ? AND build = ? AND vcpus = ?
            ORDER BY id DESC LIMIT 1""", (machine_id, workload, build, vcpus)).fetchone()
        if not row:
            return None
        out = dict(row)
        out["setting"] = json.loads(out["setting"])
        return cast(TuningRow, out)

    def fail_stale_running(self, reason: str = "the process measuring it was killed before it finished") -> int:
        """Mark runs left ``running`` by a killed process as failed (call only under the sweep lock)."""
        with self.transaction():
            cur = self.conn.execute(
                "UPDATE runs SET status = 'failed', finished_at = ?, error = ? WHERE status = 'running'",
                (now(), f"interrupted: {reason}"),
            )
        return cur.rowcount

    # -- writing what was measured elsewhere (the importers) -----------------------------------

    def insert_machine_row(self, row: Mapping[str, Any]) -> int:
        """Insert a machines row as given (a machine another database or a study describes; the
        machine measuring here goes through ``machine_id``). Returns its id."""
        with self.transaction():
            return row_id(self._insert("machines", row))

    def insert_run_row(self, row: Mapping[str, Any]) -> int:
        """Insert a runs row as given (a finished run measured elsewhere; a run measured here goes
        through ``start_run`` and ``finish_run``). Returns its id."""
        with self.transaction():
            return row_id(self._insert("runs", row))

    def insert_epoch_rows(self, run_id: int, rows: Iterable[Mapping[str, Any]]) -> int:
        """Insert epochs rows as given, for this run. Returns how many."""
        n = 0
        with self.transaction():
            for row in rows:
                self._insert("epochs", {**row, "run_id": run_id})
                n += 1
        return n

    # -- reading -----------------------------------------------------------------------------

    def runs(
        self,
        *,
        run_ids: Iterable[int] | None = None,
        status: str | None = None,
        cell_keys: Iterable[str] | None = None,
    ) -> list[RunRow]:
        where: list[str] = []
        args: list[Any] = []
        if run_ids is not None:
            ids = list(run_ids)
            where.append(f"r.id IN ({', '.join('?' * len(ids))})")
            args += ids
        if status is not None:
            where.append("r.status = ?")
            args.append(status)
        if cell_keys is not None:
            keys = list(cell_keys)
            where.append(f"r.cell_key IN ({', '.join('?' * len(keys))})")
            args += keys
        sql = """SELECT r.*, m.cpu_model, m.hostname, m.fingerprint AS machine, m.logical_cpus,
                 m.physical_cores, m.threads_per_core, m.flags AS cpu_flags, m.cpu_vendor, m.arch,
                 m.info AS machine_info
                 FROM runs r LEFT JOIN machines m ON m.id = r.machine_id"""
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.id"
        return [cast(RunRow, dict(row)) for row in self.conn.execute(sql, args)]

    def workload_names(self) -> list[str]:
        """The workloads stored runs measured (the study's, and model files by their NAME)."""
        return [r[0] for r in self.conn.execute("SELECT DISTINCT workload FROM runs ORDER BY workload")]

    def epochs(self, run_ids: Iterable[int] | None = None) -> list[EpochRow]:
        sql = """SELECT e.*, r.workload, r.build, r.vcpus, r.device, r.status
                 FROM epochs e JOIN runs r ON r.id = e.run_id"""
        args: list[Any] = []
        if run_ids is not None:
            ids = list(run_ids)
            sql += f" WHERE e.run_id IN ({', '.join('?' * len(ids))})"
            args = ids
        sql += " ORDER BY e.run_id, e.epoch"
        return [cast(EpochRow, dict(row)) for row in self.conn.execute(sql, args)]

    def run_id_of(self, run_uuid: str) -> int:
        """The id of the run with this uuid stored here (see :meth:`has_run`)."""
        return int(self.conn.execute("SELECT id FROM runs WHERE uuid = ?", (run_uuid,)).fetchone()[0])

    def insert_row(self, table: str, row: Mapping[str, Any]) -> int:
        """Insert a ``checks`` or ``statements`` row as given (one stored elsewhere, its run and machine ids already
        this database's)."""
        if table not in ("checks", "statements"):
            raise ValueError(f"insert_row: {table} rows go through their own method")
        with self.transaction():
            return row_id(self._insert(table, row))

    def has_run(self, run_uuid: str) -> bool:
        """Whether a run with this uuid is stored here."""
        return self.conn.execute("SELECT 1 FROM runs WHERE uuid = ?", (run_uuid,)).fetchone() is not None

    def find_machine(self, fingerprint: str) -> int | None:
        """The id of the machine with this fingerprint, or None when it has no row here."""
        row = self.conn.execute("SELECT id FROM machines WHERE fingerprint = ?", (fingerprint,)).fetchone()
        return int(row[0]) if row else None

    def _add_evidence(self, machine_id: int, machine: Mapping[str, Any]) -> None:
        """Keep what a newer cpustudy learns of a machine stored before it did (``extra``'s CPUID evidence and
        platform): added where the stored record lacks it, never replacing what it has."""
        info = self.machine_info(machine_id)
        extra = dict(info.get("extra") or {})
        new = {k: v for k, v in (machine.get("extra") or {}).items() if k not in extra}
        if not new or not info:
            return
        info["extra"] = {**extra, **new}
        with self.transaction():
            self.conn.execute("UPDATE machines SET info = ? WHERE id = ?", (json.dumps(info, default=str), machine_id))

    def machine_fingerprint(self, machine_id: int) -> str:
        """The fingerprint of a machine stored here (``KeyError`` when there is no such id)."""
        row = self.conn.execute("SELECT fingerprint FROM machines WHERE id = ?", (machine_id,)).fetchone()
        if row is None:
            raise KeyError(machine_id)
        return str(row[0])

    def machine_info(self, machine_id: int) -> dict[str, JSON]:
        """Everything collected about a machine stored here (``Machine.as_dict()``); {} where unreadable."""
        row = self.conn.execute("SELECT info FROM machines WHERE id = ?", (machine_id,)).fetchone()
        try:
            info = json.loads(row[0]) if row and row[0] else {}
        except ValueError:
            info = {}
        return info if isinstance(info, dict) else {}

    def machines(self) -> list[MachineRow]:
        return [cast(MachineRow, dict(r)) for r in self.conn.execute("SELECT * FROM machines ORDER BY id")]

    def count(self, table: str) -> int:
        if table not in {"runs", "epochs", "machines"}:
            raise ValueError(table)
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
