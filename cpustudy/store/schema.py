"""The database's schema: its migrations, its version, and what marks a file as a cpustudy database.

A cpustudy database is an SQLite file whose ``application_id`` is :data:`APPLICATION_ID`; its
``user_version`` is the schema version, the number of migrations applied. Each migration is a function
that takes the connection and upgrades the schema from version *i* to *i* + 1; adding one means
appending a function to :data:`MIGRATIONS`. A migration runs its statements one by one with
``execute`` (never ``executescript``, which would commit the caller's transaction, and never a script
split on ``;``, which breaks on a ``;`` inside a string or a trigger).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

from cpustudy import identity
from cpustudy.errors import UserError

APPLICATION_ID = 0x43505553  # "CPUS"
SQLITE_HEADER = b"SQLite format 3\x00"

Migration = Callable[[sqlite3.Connection], None]


def v1_machines_runs_epochs(conn: sqlite3.Connection) -> None:
    """Machines, runs (one measurement each: configuration, software, status, summary) and epochs.
    Longer than 60 lines because it is the first schema's three CREATE TABLE statements, one column a
    line, as every existing database was made (never edited: later versions add migrations)."""
    conn.execute("""CREATE TABLE machines (
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
    )""")
    conn.execute("""CREATE TABLE runs (
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
    )""")
    conn.execute("CREATE INDEX runs_cell ON runs(cell_key, status)")
    conn.execute("CREATE INDEX runs_workload ON runs(workload, build, vcpus)")
    conn.execute("""CREATE TABLE epochs (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        epoch INTEGER NOT NULL,
        elapsed_s REAL NOT NULL,
        steps INTEGER,
        samples_per_s REAL,
        loss REAL,
        accuracy REAL,
        warmup INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, epoch)
    )""")


def v2_spread_peaks_tunings(conn: sqlite3.Connection) -> None:
    """Spread and stability of the timed epochs, the input pipeline and warm-up steps, this machine's
    measured FP32 peak and memory bandwidth at the run's threads, the machine's state when the run
    started; peaks measured once per configuration; tuner results."""
    for column in ("epoch_time_iqr_s REAL", "epoch_time_cv REAL", "unstable INTEGER", "warmup_steps INTEGER",
                   "input_pipeline TEXT", "peak_gflops REAL", "mem_bandwidth_gbs REAL", "machine_state TEXT"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    conn.execute("""CREATE TABLE peaks (
        machine_id INTEGER NOT NULL REFERENCES machines(id),
        config_key TEXT NOT NULL,     -- build, interpreter, switches, CPU list and threads
        peak_gflops REAL,             -- FP32 matmul through the build's framework
        mem_bandwidth_gbs REAL,       -- streaming read + write through the build's framework
        details TEXT,
        measured_at TEXT NOT NULL,
        PRIMARY KEY (machine_id, config_key)
    )""")
    conn.execute("""CREATE TABLE tunings (
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
    )""")


def v3_epoch_time_split(conn: sqlite3.Connection) -> None:
    """Where an epoch's time goes. Process CPU time per epoch, the time inside its training steps and
    the time outside them (the data iterator's set-up and tear-down, a per-epoch cost that must not be
    scaled with the steps when a capped epoch is projected to a full one)."""
    for column in ("cpu_s REAL", "steps_s REAL", "boundary_s REAL"):
        conn.execute(f"ALTER TABLE epochs ADD COLUMN {column}")
    for column in ("epoch_boundary_s REAL", "cpu_utilization REAL"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")


def v4_validation_gpu_precision(conn: sqlite3.Connection) -> None:
    """The study's per-epoch validation, timed apart from training (an epoch's elapsed_s stays its
    training time); GPU utilisation sampled during training; the device and float32 precision the
    run's peak was measured on and at (a % of peak is computed only against the same device); the
    precision the framework really used for float32 work.

    Runs on JAX or PyTorch (or a GPU) whose capped epochs were projected from the time between step
    starts measured only the steps' dispatch (the compute drained at the epoch's end): they are
    projected again from their whole epochs, the conservative way older runs were."""
    for column in ("validation_s REAL", "validation_steps INTEGER", "validation_steps_s REAL", "val_loss REAL",
                   "val_accuracy REAL", "gpu_util REAL"):
        conn.execute(f"ALTER TABLE epochs ADD COLUMN {column}")
    for column in ("validation TEXT", "validation_time_s REAL", "val_loss REAL", "val_accuracy REAL",
                   "gpu_utilization REAL", "peak_device TEXT", "peak_precision TEXT", "precision TEXT",
                   "augment TEXT"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    conn.execute("UPDATE runs SET validation = 'none' WHERE study != 'woolf2017'")
    conn.execute("""UPDATE runs SET augment = CASE json_extract(settings, '$.options.augment')
        WHEN 1 THEN 'model' WHEN 0 THEN 'none' END WHERE workload = 'cifar10_cnn'""")
    conn.execute("""UPDATE runs SET
        epoch_time_s = measured_epoch_time_s * full_steps_per_epoch / steps_per_epoch,
        samples_per_s = steps_per_epoch * batch_size / measured_epoch_time_s,
        step_time_s = measured_epoch_time_s / steps_per_epoch,
        epoch_time_iqr_s = NULL, epoch_boundary_s = NULL
        WHERE projected = 1 AND (keras_backend IN ('jax', 'torch') OR device = 'gpu') AND measured_epoch_time_s > 0
        AND steps_per_epoch > 0""")


def v5_precision_and_target(conn: sqlite3.Connection) -> None:
    """The Keras precision policy a run trained with (mixed_bfloat16...; older runs: float32), and the
    time to a target accuracy: the target, whether it was reached, after how many epochs and how much
    training time."""
    for column in ("precision_policy TEXT", "target_accuracy REAL", "target_reached INTEGER",
                   "epochs_to_target INTEGER", "time_to_target_s REAL"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    conn.execute("UPDATE runs SET precision_policy = 'float32' WHERE study != 'woolf2017'")


def v6_configuration_columns(conn: sqlite3.Connection) -> None:
    """Every field of a run's configuration in a column of its name (``Configuration.columns()``):
    the workload's version, XLA as asked, workload switches and hyper-parameters, the worker's
    environment and the tuning applied (JSON text where a mapping), and the priced instance a cloud
    run ran on (``gcp:n2-highcpu-8``). Earlier runs get theirs from their stored settings."""
    for column in ("workload_version INTEGER", "jit_compile INTEGER", "options TEXT", "params TEXT", "env TEXT",
                   "tuning_id INTEGER", "instance TEXT"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    conn.execute("""UPDATE runs SET
        workload_version = coalesce(json_extract(settings, '$.workload_version'), 1),
        jit_compile = json_extract(settings, '$.jit_compile'),
        options = json(coalesce(json_extract(settings, '$.options'), '{}')),
        params = json(coalesce(json_extract(settings, '$.params'), '{}')),
        env = json(coalesce(json_extract(settings, '$.env'), '{}')),
        tuning_id = json_extract(settings, '$.tuning_id'),
        instance = CASE WHEN json_extract(settings, '$.cloud.instance_type') IS NOT NULL THEN
            json_extract(settings, '$.cloud.cloud') || ':' || json_extract(settings, '$.cloud.instance_type') END
        WHERE json_valid(settings)""")


def v7_model_files(conn: sqlite3.Connection) -> None:
    """A user's model file measured as a workload: its path, its content's SHA-256 (part of the
    configuration: an edited file is never pooled with its earlier runs) and its summary (JSON:
    parameters, layers, input shapes, optimizer, loss); and where every run's FLOPs per sample came from
    (``analytic`` for the study's workloads, ``tensorflow cost analysis`` for a model file, or ``not
    counted: why``). Earlier runs had analytic FLOPs where they had any."""
    for column in ("model_file TEXT", "model_hash TEXT", "model_summary TEXT", "flops_source TEXT"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    conn.execute("UPDATE runs SET flops_source = 'analytic' WHERE flops_per_sample IS NOT NULL")


def v8_idle_stalls(conn: sqlite3.Connection) -> None:
    """Idle stalls kept apart from the figures: per epoch, the wall time outside its steps that no CPU
    time covers (``idle_s``); per run, the stall left out of its epoch time (``stall_s``, the median over
    its timed epochs) and the longest (``stall_max_s``). Earlier runs have none recorded (NULL)."""
    conn.execute("ALTER TABLE epochs ADD COLUMN idle_s REAL")
    for column in ("stall_s REAL", "stall_max_s REAL"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")


def v9_isa_peak(conn: sqlite3.Connection) -> None:
    """The theoretical peak of the CPUs' instruction sets beside the measured one (an estimate, with how
    it was reckoned: cores, FLOP per cycle, clock); NULL where it cannot be reckoned and for older runs."""
    for column in ("isa_peak_gflops REAL", "isa_peak_basis TEXT"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")


def v10_cpu_wait(conn: sqlite3.Connection) -> None:
    """Time the worker's threads were ready to run but had no CPU: per epoch, inside its training steps
    (``wait_s``); per run, its median share of the time inside the steps (``wait_share``). NULL for older
    runs and where the kernel does not report it."""
    conn.execute("ALTER TABLE epochs ADD COLUMN wait_s REAL")
    conn.execute("ALTER TABLE runs ADD COLUMN wait_share REAL")


def v11_targets_and_scripts(conn: sqlite3.Connection) -> None:
    """A target on any metric ``fit`` logs (``--target val_loss<=0.3``, as its text; NULL: none or
    ``--target-accuracy``); per epoch, every metric logged (JSON) and the target's metric (``target_value``);
    per run, the tail of a user script's own output (stdout and stderr). NULL for older runs."""
    conn.execute("ALTER TABLE runs ADD COLUMN target TEXT")
    conn.execute("ALTER TABLE runs ADD COLUMN output_tail TEXT")
    conn.execute("ALTER TABLE epochs ADD COLUMN metrics TEXT")
    conn.execute("ALTER TABLE epochs ADD COLUMN target_value REAL")


def v12_provenance_memory(conn: sqlite3.Connection) -> None:
    """Which cpustudy measured a run (its version, the commit of its source, the method version:
    :mod:`cpustudy.provenance`), and the memory the run's worker needed: its peak resident set
    (``peak_rss_bytes``) and, on a GPU, the peak of the device's memory the framework allocated
    (``gpu_peak_bytes``). NULL for older runs (and the memory where it could not be read)."""
    for column in ("cpustudy_version TEXT", "cpustudy_commit TEXT", "method_version INTEGER", "peak_rss_bytes INTEGER",
                   "gpu_peak_bytes INTEGER"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")


def v13_checks(conn: sqlite3.Connection) -> None:
    """``compare --check``'s fresh trainings, each with the interval stated before it: the backtest of this
    machine's statements of certainty. ``stated_session``: the measuring session of the comparison that stated it;
    ``data_sessions``: the sessions of the runs behind the interval (JSON); ``later_session``: whether the check
    trained in none of them."""
    conn.execute("""CREATE TABLE checks (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        machine_id INTEGER REFERENCES machines(id),
        candidate TEXT NOT NULL,
        level REAL NOT NULL,
        low_s REAL,
        high_s REAL,
        billed_s REAL,
        inside INTEGER NOT NULL,
        stated_session TEXT,
        data_sessions TEXT,
        later_session INTEGER NOT NULL DEFAULT 0,
        stated_at TEXT NOT NULL
    )""")


def v14_held_out_checks(conn: sqlite3.Connection) -> None:
    """How a check's interval was stated: ``kind`` ``check`` (``compare --check``: stated by the comparison before
    the training) or ``held out`` (``cpustudy backtest``: the interval the runs stored before the training give, as
    ``compare`` states it from a database; the training is not among them); ``median_s``, the interval's middle."""
    conn.execute("ALTER TABLE checks ADD COLUMN kind TEXT NOT NULL DEFAULT 'check'")
    conn.execute("ALTER TABLE checks ADD COLUMN median_s REAL")


def v15_statements(conn: sqlite3.Connection) -> None:
    """What ``compare`` stated, per local candidate: its ``level`` prediction interval (``low_s``, ``median_s``,
    ``high_s``) of one training's billed time to ``target_accuracy``, for trainings of the ``convergence`` key
    (:mod:`cpustudy.identity`'s view, JSON) at ``place`` (``names.place_name``: its name in words; v18 adds its key);
    ``session``, the comparison's measuring session; ``data_sessions``, the sessions of the runs behind it (JSON);
    ``cpustudy``, the version that stated it. The backtest holds later trainings against it as it was stated,
    whatever cpustudy computes today."""
    conn.execute("""CREATE TABLE statements (
        id INTEGER PRIMARY KEY,
        machine_id INTEGER REFERENCES machines(id),
        session TEXT,
        stated_at TEXT NOT NULL,
        workload TEXT NOT NULL,
        target_accuracy REAL NOT NULL,
        convergence TEXT NOT NULL,
        place TEXT NOT NULL,
        candidate TEXT NOT NULL,
        level REAL NOT NULL,
        low_s REAL NOT NULL,
        median_s REAL,
        high_s REAL NOT NULL,
        data_sessions TEXT,
        cpustudy TEXT
    )""")


def v16_statement_rules(conn: sqlite3.Connection) -> None:
    """``rules``: the rules (``cpustudy.rules.Rules``, JSON: the level, draws, budget and the decision's
    thresholds) the comparison that stated it ran under; NULL in statements stored before."""
    conn.execute("ALTER TABLE statements ADD COLUMN rules TEXT")


def v17_recalibration_factor(conn: sqlite3.Connection) -> None:
    """``factor``: the backtest's recalibration (:mod:`cpustudy.analysis.recalibration`) the interval of a statement
    or check was stated with, so that later checks are scored against the model's raw interval (a score times its
    factor) and the factor never feeds on itself; NULL where stored before (taken as 1: as stated)."""
    conn.execute("ALTER TABLE statements ADD COLUMN factor REAL")
    conn.execute("ALTER TABLE checks ADD COLUMN factor REAL")


def v18_statement_place_key(conn: sqlite3.Connection) -> None:
    """``place_key``: where a statement's candidate measured, as the identity's ``place`` view (JSON), by which the
    backtest joins it to later trainings (``place`` stays its name in words, a label). Filled for statements stored
    before from the runs behind them that bear their ``place`` name (:func:`_v15_place_name`): their machine's ok
    runs of their workload, in the sessions the statement names, stored before it; where those runs give two keys
    (a GPU's name says no vCPUs), the one most of them give; NULL where none does (the statement matches no
    training, as its name matched none)."""
    conn.execute("ALTER TABLE statements ADD COLUMN place_key TEXT")
    cols = ("device", "vcpus", "build", "instance", "cpu_model", "machine", "settings")
    said = conn.execute("SELECT id, machine_id, workload, place, data_sessions, session, stated_at FROM statements")
    for sid, machine_id, workload, place, sessions, session, stated_at in said.fetchall():
        behind = set(json.loads(sessions or "[]")) | {session}
        runs = conn.execute("""SELECT r.device, r.vcpus, r.build, r.instance, m.cpu_model, m.fingerprint, r.settings
                               FROM runs r LEFT JOIN machines m ON m.id = r.machine_id
                               WHERE r.workload = ? AND r.status = 'ok' AND (? IS NULL OR r.machine_id = ?)
                               AND r.created_at <= ?""", (workload, machine_id, machine_id, stated_at)).fetchall()
        keys = [json.dumps(identity.values(run, "place"), sort_keys=True) for run in (dict(zip(cols, r)) for r in runs)
                if _v15_place_name(run) == place and _session(run["settings"]) in behind]
        ranked = Counter(keys).most_common(2)
        if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
            conn.execute("UPDATE statements SET place_key = ? WHERE id = ?", (ranked[0][0], sid))


def _session(settings: str | None) -> str | None:
    """The measuring session a run's stored settings name (None: none, or unreadable)."""
    try:
        found = json.loads(settings or "{}")
    except ValueError:
        return None
    return str(found["session"]) if isinstance(found, dict) and found.get("session") else None


def _v15_place_name(run: dict[str, object]) -> str:
    """A place's name as schema versions 15-17 stored it in a statement (the analysis' words then: ``2 vCPUs tf on
    CPU MODEL``, ``the GPU on ...``), kept here as it was so that the v18 migration reads what they wrote."""
    vcpus = run.get("vcpus")
    if (run.get("device") or "cpu") == "gpu":
        what = "the GPU"
    else:
        v = int(vcpus) if isinstance(vcpus, (int, float)) else None
        build = str(run.get("build"))
        what = f"{v} vCPU{'s' if v != 1 else ''} {({'pip': 'pip', 'compiled': 'compiled', 'gpu': 'GPU'}).get(build, build)}"
    return f"{what} on {run.get('instance') or str(run.get('cpu_model') or run.get('machine'))[:40]}"


#: In order: ``MIGRATIONS[i]`` upgrades the schema from version ``i`` to ``i + 1``.
MIGRATIONS: tuple[Migration, ...] = (
    v1_machines_runs_epochs,
    v2_spread_peaks_tunings,
    v3_epoch_time_split,
    v4_validation_gpu_precision,
    v5_precision_and_target,
    v6_configuration_columns,
    v7_model_files,
    v8_idle_stalls,
    v9_isa_peak,
    v10_cpu_wait,
    v11_targets_and_scripts,
    v12_provenance_memory,
    v13_checks,
    v14_held_out_checks,
    v15_statements,
    v16_statement_rules,
    v17_recalibration_factor,
    v18_statement_place_key,
)
SCHEMA_VERSION = len(MIGRATIONS)
TABLES = ("machines", "runs", "epochs", "peaks", "tunings", "checks", "statements")


def user_version(conn: sqlite3.Connection) -> int:
    """The schema version of an open database (0 for a new one)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def check_version(path: str | Path, version: int, remedy: str = "upgrade cpustudy") -> None:
    """Refuse a database written by a newer cpustudy (a schema this one does not know)."""
    if version > SCHEMA_VERSION:
        raise UserError(
            f"{path} has schema version {version}, newer than this cpustudy knows ({SCHEMA_VERSION}): {remedy}"
        )


def upgrade(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> None:
    """Apply the migrations the database lacks, one after another, and mark it as cpustudy's.

    Each step records its version as it finishes. The caller holds one write transaction around the
    whole upgrade, so it happens entirely or not at all.
    """
    for version in range(user_version(conn), len(migrations)):
        migrations[version](conn)
        conn.execute(f"PRAGMA user_version = {version + 1}")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def file_version(path: Path) -> int | None:
    """The schema version of the cpustudy database at ``path``, or None when the file is not one.

    Not one: not an SQLite file, or one marked by another application, or one with tables and no mark.
    An SQLite file with nothing in it yet is version 0. The one place that tells a cpustudy database
    from other files: ``OSError`` when the file cannot be read, ``sqlite3.Error`` when it starts as
    an SQLite file but SQLite cannot read it (each caller says what that means for its command).
    """
    with open(path, "rb") as f:
        if f.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            return None
    conn = connect_reading(path)
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = user_version(conn)
        objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    finally:
        conn.close()
    if app_id == APPLICATION_ID:
        return version
    if app_id == 0 and objects == 0:
        return 0
    return None


def unwritable(path: Path) -> str | None:
    """Why SQLite could not write ``path`` (the file, or the -wal/-shm files beside it), or None."""
    parent = path.parent if str(path.parent) else Path(".")
    try:
        if path.exists():
            with open(path, "r+b"):
                pass
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def connect_reading(path: Path) -> sqlite3.Connection:
    """A connection that never writes and leaves no -wal/-shm files behind.

    Where the file can be written, a normal connection with ``query_only`` (as the last connection
    to close, SQLite removes the -wal and -shm files, which a ``mode=ro`` connection would leave);
    where nobody can (a read-only mount, an immutable file), an immutable one.
    """
    if unwritable(path):
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, timeout=60)
    conn = sqlite3.connect(path, timeout=60)
    conn.execute("PRAGMA query_only = ON")
    return conn
