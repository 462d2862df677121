"""Results in SQLite, with a versioned schema.

One file holds machines, runs (one measurement each: configuration, software, status, summary) and
epochs (committed as they finish, so an interrupted run keeps what it measured). The file is marked
with SQLite's ``application_id`` so a file that is not a cpustudy database is refused, never altered,
and ``user_version`` carries the schema version for migrations.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from cpustudy.errors import UserError

APPLICATION_ID = 0x43505553  # "CPUS"
SCHEMA_VERSION = 4
DEFAULT_DB = "cpustudy.sqlite"

# Each entry upgrades the schema from version i to i + 1.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE machines (
        id INTEGER PRIMARY KEY,
        fingerprint TEXT NOT NULL UNIQUE,
        hostname TEXT,
        cpu_model TEXT,
        cpu_vendor TEXT,
        arch TEXT,
        flags TEXT,               -- space-separated, as Linux names them
        isa TEXT,                 -- JSON: {flag: bool} for the instruction sets that matter
        physical_cores INTEGER,
        logical_cpus INTEGER,
        threads_per_core INTEGER,
        sockets INTEGER,
        numa_nodes INTEGER,
        memory_bytes INTEGER,
        os TEXT,
        info TEXT,                -- JSON: everything collected
        created_at TEXT NOT NULL
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        uuid TEXT NOT NULL UNIQUE,
        machine_id INTEGER REFERENCES machines(id),
        study TEXT NOT NULL DEFAULT 'cpustudy',
        status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed')),
        workload TEXT NOT NULL,
        device TEXT NOT NULL DEFAULT 'cpu',
        build TEXT NOT NULL,
        vcpus INTEGER,
        cpu_list TEXT,
        oversubscribed INTEGER NOT NULL DEFAULT 0,
        intra_threads INTEGER,
        inter_threads INTEGER,
        batch_size INTEGER,
        epochs INTEGER,
        steps_per_epoch INTEGER,      -- steps run per epoch
        full_steps_per_epoch INTEGER, -- steps of a full epoch of the workload
        data TEXT,                    -- real | synthetic
        seed INTEGER,
        repeat INTEGER NOT NULL DEFAULT 0,
        cell_key TEXT,                -- identifies the configuration, for sweeps to resume
        settings TEXT,                -- JSON: every setting of the measurement
        software TEXT,                -- JSON: Python, TF, Keras, backend, oneDNN, XLA, ISA report
        python_version TEXT,
        tf_version TEXT,
        keras_version TEXT,
        keras_backend TEXT,
        onednn INTEGER,
        xla INTEGER,
        tf_missing_isa TEXT,          -- what TF says it was not compiled for ("AVX2 FMA")
        flops_per_sample INTEGER,     -- analytic training FLOPs (forward + backward)
        epoch_time_s REAL,            -- full-epoch time: median of timed epochs, or projected
        measured_epoch_time_s REAL,   -- median wall time of the timed epochs as run
        step_time_s REAL,
        samples_per_s REAL,
        startup_s REAL,               -- worker spawn -> first training step
        projected INTEGER NOT NULL DEFAULT 0,
        timed_epochs INTEGER,
        exit_code INTEGER,
        error TEXT,
        created_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX runs_cell ON runs(cell_key, status);
    CREATE INDEX runs_workload ON runs(workload, build, vcpus);
    CREATE TABLE epochs (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        epoch INTEGER NOT NULL,
        elapsed_s REAL NOT NULL,
        steps INTEGER,
        samples_per_s REAL,
        loss REAL,
        accuracy REAL,
        warmup INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, epoch)
    );
    """,
    # v2: spread and stability of the timed epochs, the input pipeline and warm-up steps, this
    # machine's measured FP32 peak and memory bandwidth at the run's threads, the machine's state
    # when the run started; peaks measured once per configuration; tuner results.
    """
    ALTER TABLE runs ADD COLUMN epoch_time_iqr_s REAL;
    ALTER TABLE runs ADD COLUMN epoch_time_cv REAL;
    ALTER TABLE runs ADD COLUMN unstable INTEGER;
    ALTER TABLE runs ADD COLUMN warmup_steps INTEGER;
    ALTER TABLE runs ADD COLUMN input_pipeline TEXT;
    ALTER TABLE runs ADD COLUMN peak_gflops REAL;
    ALTER TABLE runs ADD COLUMN mem_bandwidth_gbs REAL;
    ALTER TABLE runs ADD COLUMN machine_state TEXT;
    CREATE TABLE peaks (
        machine_id INTEGER NOT NULL REFERENCES machines(id),
        config_key TEXT NOT NULL,     -- build, interpreter, switches, CPU list and threads
        peak_gflops REAL,             -- FP32 matmul through the build's framework
        mem_bandwidth_gbs REAL,       -- streaming read + write through the build's framework
        details TEXT,
        measured_at TEXT NOT NULL,
        PRIMARY KEY (machine_id, config_key)
    );
    CREATE TABLE tunings (
        id INTEGER PRIMARY KEY,
        machine_id INTEGER REFERENCES machines(id),
        workload TEXT NOT NULL,
        build TEXT NOT NULL,
        vcpus INTEGER NOT NULL,
        setting TEXT NOT NULL,        -- JSON: the fastest setting found
        default_time_s REAL,          -- full-epoch time of the default, projected from the trials
        best_time_s REAL,             -- full-epoch time of the best setting, likewise
        gain REAL,                    -- default / best, median over paired repeats
        gain_low REAL,
        gain_high REAL,
        trials INTEGER,
        created_at TEXT NOT NULL
    );
    """,
    # v3: where an epoch's time goes. Process CPU time per epoch, the time inside its training steps
    # and the time outside them (the data iterator's set-up and tear-down, a per-epoch cost that
    # must not be scaled with the steps when a capped epoch is projected to a full one).
    """
    ALTER TABLE epochs ADD COLUMN cpu_s REAL;
    ALTER TABLE epochs ADD COLUMN steps_s REAL;
    ALTER TABLE epochs ADD COLUMN boundary_s REAL;
    ALTER TABLE runs ADD COLUMN epoch_boundary_s REAL;
    ALTER TABLE runs ADD COLUMN cpu_utilization REAL;
    """,
    # v4: the study's per-epoch validation, timed apart from training (an epoch's elapsed_s stays
    # its training time); GPU utilisation sampled during training; the device and float32 precision
    # the run's peak was measured on and at (a % of peak is computed only against the same device);
    # the precision the framework really used for float32 work. Runs on JAX or PyTorch whose capped
    # epochs were projected from the time between step starts measured only the steps' dispatch (the
    # compute drained at the epoch's end): they are projected again from their whole epochs, the
    # conservative way older runs were.
    """
    ALTER TABLE epochs ADD COLUMN validation_s REAL;
    ALTER TABLE epochs ADD COLUMN validation_steps INTEGER;
    ALTER TABLE epochs ADD COLUMN validation_steps_s REAL;
    ALTER TABLE epochs ADD COLUMN val_loss REAL;
    ALTER TABLE epochs ADD COLUMN val_accuracy REAL;
    ALTER TABLE epochs ADD COLUMN gpu_util REAL;
    ALTER TABLE runs ADD COLUMN validation TEXT;
    ALTER TABLE runs ADD COLUMN validation_time_s REAL;
    ALTER TABLE runs ADD COLUMN val_loss REAL;
    ALTER TABLE runs ADD COLUMN val_accuracy REAL;
    ALTER TABLE runs ADD COLUMN gpu_utilization REAL;
    ALTER TABLE runs ADD COLUMN peak_device TEXT;
    ALTER TABLE runs ADD COLUMN peak_precision TEXT;
    ALTER TABLE runs ADD COLUMN precision TEXT;
    ALTER TABLE runs ADD COLUMN augment TEXT;
    UPDATE runs SET validation = 'none' WHERE study != 'woolf2017';
    UPDATE runs SET augment = CASE json_extract(settings, '$.options.augment')
        WHEN 1 THEN 'model' WHEN 0 THEN 'none' END WHERE workload = 'cifar10_cnn';
    UPDATE runs SET
        epoch_time_s = measured_epoch_time_s * full_steps_per_epoch / steps_per_epoch,
        samples_per_s = steps_per_epoch * batch_size / measured_epoch_time_s,
        step_time_s = measured_epoch_time_s / steps_per_epoch,
        epoch_time_iqr_s = NULL, epoch_boundary_s = NULL
        WHERE projected = 1 AND (keras_backend IN ('jax', 'torch') OR device = 'gpu') AND measured_epoch_time_s > 0
        AND steps_per_epoch > 0
    """,
]

RUN_SUMMARY_FIELDS = (
    "epoch_time_iqr_s",
    "epoch_time_cv",
    "unstable",
    "peak_gflops",
    "mem_bandwidth_gbs",
    "epoch_time_s",
    "measured_epoch_time_s",
    "step_time_s",
    "samples_per_s",
    "startup_s",
    "projected",
    "timed_epochs",
    "epoch_boundary_s",
    "cpu_utilization",
    "gpu_utilization",
    "validation_time_s",
    "val_loss",
    "val_accuracy",
    "peak_device",
    "peak_precision",
)

SOFTWARE_FIELDS = (
    "python_version",
    "tf_version",
    "keras_version",
    "keras_backend",
    "onednn",
    "xla",
    "tf_missing_isa",
    "precision",
)


EPOCH_V4_FIELDS = ("validation_s", "validation_steps", "validation_steps_s", "val_loss", "val_accuracy", "gpu_util")


def row_id(cur: sqlite3.Cursor) -> int:
    """The id of the row an INSERT just wrote (SQLite always sets it after an INSERT)."""
    assert cur.lastrowid is not None
    return int(cur.lastrowid)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def default_path() -> Path:
    return Path(os.environ.get("CPUSTUDY_DB") or DEFAULT_DB)


def _header_is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


class Store:
    """A cpustudy database. Use ``Store.open`` (writes, creating it) or ``Store.read`` (never creates)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, readonly: bool) -> None:
        self.conn = conn
        self.path = path
        self.readonly = readonly

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
        try:
            conn = sqlite3.connect(path, timeout=60, isolation_level=None)
        except sqlite3.Error as exc:
            raise UserError(f"cannot open {path} ({exc}): check the path and its permissions") from None
        store = cls(conn, path, readonly=False)
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
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
        store = cls(conn, path, readonly=True)
        store._configure()
        version = store.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UserError(
                f"{path} has schema version {version}, newer than this cpustudy knows "
                f"({SCHEMA_VERSION}): upgrade cpustudy"
            )
        if version < SCHEMA_VERSION:
            # An old file: read an upgraded copy in memory and leave the file as it is (reading
            # never writes; the next measuring command upgrades the file in place).
            memory = sqlite3.connect(":memory:")
            conn.backup(memory)
            conn.close()
            store = cls(memory, path, readonly=True)
            store._configure()
            store._migrate()
        return store

    @staticmethod
    def _check_file(path: Path) -> None:
        try:
            ok = _header_is_sqlite(path)
        except OSError as exc:
            raise UserError(f"cannot read {path} ({exc.strerror}): check the path and permissions") from None
        if ok:
            try:
                conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
                app_id = conn.execute("PRAGMA application_id").fetchone()[0]
                tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                conn.close()
            except sqlite3.Error:
                ok = False
            else:
                ok = app_id == APPLICATION_ID or (app_id == 0 and tables == 0)
        if not ok:
            raise UserError(
                f"{path} is not a cpustudy database: pass --db with a new file name or an existing "
                "cpustudy database"
            )

    def _configure(self) -> None:
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.execute("PRAGMA busy_timeout = 60000")

    def _migrate(self) -> None:
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UserError(
                f"{self.path} has schema version {version}, newer than this cpustudy knows "
                f"({SCHEMA_VERSION}): upgrade cpustudy"
            )
        if version == SCHEMA_VERSION:
            return
        self.conn.execute("PRAGMA journal_mode = WAL")
        with self.transaction():
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]  # re-read under lock
            for i in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[i].split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def transaction(self) -> "_Transaction":
        return _Transaction(self.conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------

    def machine_id(self, machine: Mapping[str, Any]) -> int:
        """The id of this machine, inserting it the first time it is seen."""
        fp = machine["fingerprint"]
        row = self.conn.execute("SELECT id FROM machines WHERE fingerprint = ?", (fp,)).fetchone()
        if row:
            return int(row[0])
        with self.transaction():
            cur = self.conn.execute(
                """INSERT OR IGNORE INTO machines (fingerprint, hostname, cpu_model, cpu_vendor, arch,
                flags, isa, physical_cores, logical_cpus, threads_per_core, sockets, numa_nodes,
                memory_bytes, os, info, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (
                    fp,
                    machine.get("hostname"),
                    machine.get("cpu_model"),
                    machine.get("cpu_vendor"),
                    machine.get("arch"),
                    " ".join(machine.get("flags") or []),
                    json.dumps(machine.get("isa") or {}),
                    machine.get("physical_cores"),
                    machine.get("logical_cpus"),
                    machine.get("threads_per_core"),
                    machine.get("sockets"),
                    machine.get("numa_nodes"),
                    machine.get("memory_bytes"),
                    machine.get("os"),
                    json.dumps(dict(machine), default=str),
                    now(),
                ),
            )
            if cur.rowcount:
                return row_id(cur)
        row = self.conn.execute("SELECT id FROM machines WHERE fingerprint = ?", (fp,)).fetchone()
        return int(row[0])

    def start_run(self, machine_id: int, config: Mapping[str, Any]) -> int:
        """Record a measurement about to start (status ``running``)."""
        cols = {
            "uuid": config.get("uuid") or uuid.uuid4().hex,
            "machine_id": machine_id,
            "study": config.get("study", "cpustudy"),
            "status": "running",
            "workload": config["workload"],
            "device": config.get("device", "cpu"),
            "build": config.get("build", "tf"),
            "vcpus": config.get("vcpus"),
            "cpu_list": config.get("cpu_list"),
            "oversubscribed": int(bool(config.get("oversubscribed"))),
            "intra_threads": config.get("intra_threads"),
            "inter_threads": config.get("inter_threads"),
            "batch_size": config.get("batch_size"),
            "epochs": config.get("epochs"),
            "steps_per_epoch": config.get("steps_per_epoch"),
            "full_steps_per_epoch": config.get("full_steps_per_epoch"),
            "data": config.get("data"),
            "seed": config.get("seed"),
            "repeat": config.get("repeat", 0),
            "cell_key": config.get("cell_key"),
            "settings": json.dumps(dict(config), default=str, sort_keys=True),
            "flops_per_sample": config.get("flops_per_sample"),
            "warmup_steps": config.get("warmup_steps"),
            "input_pipeline": config.get("input_pipeline", "numpy"),
            "validation": config.get("validation"),
            "augment": (config.get("options") or {}).get("augment"),
            "machine_state": json.dumps(config.get("machine_state")) if config.get("machine_state") else None,
            "created_at": now(),
        }
        with self.transaction():
            cur = self.conn.execute(
                f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                tuple(cols.values()),
            )
        return row_id(cur)

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

    def set_xla(self, run_id: int, xla: bool) -> None:
        """Whether the model was compiled with XLA, as Keras resolved it."""
        with self.transaction():
            self.conn.execute("UPDATE runs SET xla = ? WHERE id = ?", (int(xla), run_id))

    def add_epoch(self, run_id: int, epoch: Mapping[str, Any]) -> None:
        with self.transaction():
            self.conn.execute(
                """INSERT OR REPLACE INTO epochs (run_id, epoch, elapsed_s, steps, samples_per_s, loss,
                accuracy, warmup, cpu_s, steps_s, boundary_s, validation_s, validation_steps,
                validation_steps_s, val_loss, val_accuracy, gpu_util)
                VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (
                    run_id,
                    epoch["epoch"],
                    epoch["elapsed_s"],
                    epoch.get("steps"),
                    epoch.get("samples_per_s"),
                    epoch.get("loss"),
                    epoch.get("accuracy"),
                    int(bool(epoch.get("warmup"))),
                    epoch.get("cpu_s"),
                    epoch.get("steps_s"),
                    epoch.get("boundary_s"),
                    *(epoch.get(k) for k in EPOCH_V4_FIELDS),
                ),
            )

    def finish_run(
        self,
        run_id: int,
        status: str,
        summary: Mapping[str, Any] | None = None,
        *,
        exit_code: int | None = None,
        error: str | None = None,
    ) -> None:
        summary = dict(summary or {})
        values = {k: summary.get(k) for k in RUN_SUMMARY_FIELDS}
        values["projected"] = int(bool(values["projected"]))
        if values["unstable"] is not None:
            values["unstable"] = int(bool(values["unstable"]))
        with self.transaction():
            self.conn.execute(
                f"""UPDATE runs SET status = ?, exit_code = ?, error = ?, finished_at = ?,
                {', '.join(f'{k} = ?' for k in values)} WHERE id = ?""",
                (status, exit_code, error, now(), *values.values(), run_id),
            )

    def peak(self, machine_id: int, config_key: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM peaks WHERE machine_id = ? AND config_key = ?",
                                (machine_id, config_key)).fetchone()
        return dict(row) if row else None

    def set_peak(self, machine_id: int, config_key: str, peak_gflops: float | None,
                 bandwidth_gbs: float | None, details: Mapping[str, Any]) -> None:
        with self.transaction():
            self.conn.execute(
                """INSERT OR REPLACE INTO peaks (machine_id, config_key, peak_gflops, mem_bandwidth_gbs,
                details, measured_at) VALUES (?,?,?,?,?,?)""",
                (machine_id, config_key, peak_gflops, bandwidth_gbs, json.dumps(dict(details)), now()),
            )

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

    def tuning(self, machine_id: int, workload: str, build: str, vcpus: int) -> dict[str, Any] | None:
        """The latest tuner result for this configuration on this machine."""
        row = self.conn.execute(
            """SELECT * FROM tunings WHERE machine_id = ? AND workload = ? AND build = ? AND vcpus = ?
            ORDER BY id DESC LIMIT 1""", (machine_id, workload, build, vcpus)).fetchone()
        if not row:
            return None
        out = dict(row)
        out["setting"] = json.loads(out["setting"])
        return out

    def fail_stale_running(self) -> int:
        """Mark runs left ``running`` by a killed process as failed (call only under the sweep lock)."""
        with self.transaction():
            cur = self.conn.execute(
                "UPDATE runs SET status = 'failed', finished_at = ?, error = ? WHERE status = 'running'",
                (now(), "interrupted: the process measuring it was killed before it finished"),
            )
        return cur.rowcount

    # -- reading -----------------------------------------------------------------------------

    def runs(
        self,
        *,
        run_ids: Iterable[int] | None = None,
        status: str | None = None,
        cell_keys: Iterable[str] | None = None,
    ) -> list[dict[str, Any]]:
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
                 m.physical_cores, m.threads_per_core, m.flags AS cpu_flags
                 FROM runs r LEFT JOIN machines m ON m.id = r.machine_id"""
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.id"
        return [dict(row) for row in self.conn.execute(sql, args)]

    def epochs(self, run_ids: Iterable[int] | None = None) -> list[dict[str, Any]]:
        sql = """SELECT e.*, r.workload, r.build, r.vcpus, r.device, r.status
                 FROM epochs e JOIN runs r ON r.id = e.run_id"""
        args: list[Any] = []
        if run_ids is not None:
            ids = list(run_ids)
            sql += f" WHERE e.run_id IN ({', '.join('?' * len(ids))})"
            args = ids
        sql += " ORDER BY e.run_id, e.epoch"
        return [dict(row) for row in self.conn.execute(sql, args)]

    def machines(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute("SELECT * FROM machines ORDER BY id")]

    def count(self, table: str) -> int:
        if table not in {"runs", "epochs", "machines"}:
            raise ValueError(table)
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


@dataclass
class _Transaction:
    conn: sqlite3.Connection

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")

