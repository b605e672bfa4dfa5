"""The ledger's schema: its version, the migrations that build it step by step, and making a
new ledger file (built in a temporary file, linked into place) and connecting to one."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from relgate.core.errors import InputError

__all__ = ["SCHEMA_VERSION"]

SCHEMA_VERSION = 9

# Each entry upgrades the schema from version i to i + 1.
_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        session TEXT NOT NULL,
        argv TEXT NOT NULL,
        project TEXT NOT NULL,
        project_root TEXT NOT NULL,
        commit_sha TEXT NOT NULL,
        branch TEXT,
        dirty INTEGER NOT NULL,
        started TEXT NOT NULL,
        finished TEXT,
        outcome TEXT
    );
    CREATE TABLE steps (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id),
        session TEXT NOT NULL,
        step TEXT NOT NULL,
        lane TEXT,
        target TEXT,
        host TEXT NOT NULL,
        board TEXT,
        driver TEXT,
        toolkit TEXT,
        commit_sha TEXT NOT NULL,
        dirty INTEGER NOT NULL,
        command TEXT NOT NULL,
        cwd TEXT,
        env TEXT NOT NULL DEFAULT '{}',
        started TEXT NOT NULL,
        duration REAL,
        exit_code INTEGER,
        verdict TEXT NOT NULL,
        reason TEXT,
        warning_count INTEGER NOT NULL DEFAULT 0,
        warnings TEXT NOT NULL DEFAULT '[]',
        log_path TEXT,
        log_sha256 TEXT,
        tail TEXT
    );
    CREATE INDEX steps_by_commit ON steps(commit_sha, session, step);
    CREATE TABLE artifacts (
        sha256 TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        created TEXT NOT NULL
    );
    """,
    # 2: evidence captured by a step, and steps that reuse an earlier identical pass.
    """
    ALTER TABLE steps ADD COLUMN reused_from INTEGER REFERENCES steps(id);
    CREATE TABLE evidence (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        step_id INTEGER NOT NULL REFERENCES steps(id),
        run_id TEXT NOT NULL REFERENCES runs(id),
        commit_sha TEXT NOT NULL,
        dirty INTEGER NOT NULL,
        host TEXT NOT NULL,
        board TEXT,
        toolkit TEXT,
        lane TEXT,
        target TEXT,
        sha256 TEXT NOT NULL,
        path TEXT NOT NULL,
        created TEXT NOT NULL
    );
    CREATE INDEX evidence_by_commit ON evidence(commit_sha, board, lane, target);
    """,
    # 3: accepted evidence baselines, one merged capture per release and board.
    """
    CREATE TABLE baselines (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        release TEXT NOT NULL,
        board TEXT NOT NULL,
        commit_sha TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        path TEXT NOT NULL,
        cells INTEGER NOT NULL,
        accepted TEXT NOT NULL
    );
    CREATE INDEX baselines_by_board ON baselines(board, id);
    """,
    # 4: the project a row belongs to (relgate.ledger.identity); rows written before stay
    # NULL: readable, never matched by a reuse, an evidence merge or a baseline lookup.
    """
    ALTER TABLE runs ADD COLUMN project_key TEXT;
    ALTER TABLE steps ADD COLUMN project_key TEXT;
    ALTER TABLE evidence ADD COLUMN project_key TEXT;
    ALTER TABLE baselines ADD COLUMN project_key TEXT;
    CREATE INDEX steps_by_project ON steps(project_key, commit_sha);
    """,
    # 5 (sign-off): measurement batches with their rows, and checklist decisions.
    """
    CREATE TABLE measure_batches (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        project TEXT NOT NULL,  -- the project's identity key (relgate.ledger.identity)
        measure TEXT NOT NULL,
        kind TEXT NOT NULL,
        side TEXT NOT NULL,
        release TEXT,
        commit_sha TEXT,
        dirty INTEGER NOT NULL,
        board TEXT NOT NULL,
        host TEXT,
        metadata TEXT NOT NULL,
        warmup INTEGER NOT NULL,
        run_id TEXT,
        source TEXT NOT NULL,
        sha256 TEXT,
        path TEXT,
        created TEXT NOT NULL
    );
    CREATE INDEX measure_batches_by_name ON measure_batches(project, measure, board, id);
    CREATE TABLE measure_rows (
        batch_id INTEGER NOT NULL REFERENCES measure_batches(id),
        run INTEGER NOT NULL,
        key TEXT NOT NULL,
        metrics TEXT NOT NULL,
        metadata TEXT NOT NULL
    );
    CREATE INDEX measure_rows_by_batch ON measure_rows(batch_id);
    CREATE TABLE decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        project TEXT NOT NULL,
        commit_sha TEXT NOT NULL,
        dirty INTEGER NOT NULL,
        item TEXT NOT NULL,
        kind TEXT NOT NULL,
        by TEXT,
        note TEXT,
        step_id INTEGER REFERENCES steps(id),
        created TEXT NOT NULL
    );
    CREATE INDEX decisions_by_item ON decisions(project, item, id);
    """,
    # 6: the unfinished steps by an index (the sign-off's fingerprint counted them by reading every step)
    """
    CREATE INDEX steps_unfinished ON steps(verdict, reason) WHERE verdict = 'error';
    """,
    # 7: a batch's samples packed beside its rows (the compare of 10k rows × 15 runs read
    # 150k JSON rows a side): one row per batch (its runs, its rows' keys in run order and
    # their metadata in the last run) and one float64 column per metric. Written only for a
    # rectangular batch of finite floats; batches written before, and any other, are read
    # from measure_rows as before.
    """
    CREATE TABLE measure_packed (
        batch_id INTEGER PRIMARY KEY REFERENCES measure_batches(id),
        runs INTEGER NOT NULL,  -- runs 0 … runs-1, every one with the same rows in the same order
        keys TEXT NOT NULL,  -- JSON: the rows' keys, in that order
        metadata TEXT NOT NULL  -- JSON: each row's metadata in the last run, in that order
    );
    CREATE TABLE measure_columns (
        batch_id INTEGER NOT NULL REFERENCES measure_packed(batch_id),
        metric TEXT NOT NULL,
        vals BLOB NOT NULL,  -- float64, little-endian, run-major: run r, row i at r × rows + i
        PRIMARY KEY (batch_id, metric)
    );
    """,
    # 8: what a step's test runner said it ran (relgate.core.counts.TestCounts as JSON: passed,
    # failed, skipped …); NULL where no runner's summary was read (a build, a plain script, and
    # every step recorded before). scanned: 1 when the step's output was scanned for compiler
    # warnings to its end (NULL before: unknown).
    """
    ALTER TABLE steps ADD COLUMN tests TEXT;
    ALTER TABLE steps ADD COLUMN scanned INTEGER;
    """,
    # 9: a step's own host facts, as JSON: the GPUs it ran on (index, uuid), the Slurm node, job id
    # and sacct state, the probes of its host (name, passed, output)
    """
    ALTER TABLE steps ADD COLUMN facts TEXT NOT NULL DEFAULT '{}';
    """,
)


def _token() -> str:
    """8 random hex digits (a run id's tail, a temporary file's name)."""
    return os.urandom(4).hex()


def _connect(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: never corrupt, one fsync per checkpoint
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _apply(conn: sqlite3.Connection, version: int) -> None:
    for statement in _split_sql(_MIGRATIONS[version - 1]):
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")


def _create(db: Path) -> None:
    """A complete ledger in a temporary file, linked into place; the loser of a race keeps
    the winner's file (a 0-byte ``ledger.sqlite3`` is therefore never relgate's own)."""
    tmp = db.with_name(f".{db.name}.{_token()}.tmp")
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN IMMEDIATE")
            for version in range(1, SCHEMA_VERSION + 1):
                _apply(conn, version)
            conn.execute("COMMIT")
        finally:
            conn.close()
        try:
            os.link(tmp, db)
        except FileExistsError:
            pass
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
            if leftover.exists():
                leftover.unlink()



def _split_sql(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


# --- is it a relgate ledger? (issue 23: another program's SQLite file is never adopted) -------


def _expected_schema(version: int) -> dict[str, set[str]]:
    """table → columns of a ledger at schema ``version``, as its migrations make it."""
    cached = _EXPECTED.get(version)
    if cached is None:
        conn = sqlite3.connect(":memory:")
        try:
            for step in range(1, version + 1):
                _apply(conn, step)
            cached = _EXPECTED[version] = _schema_of(conn)
        finally:
            conn.close()
    return cached


_EXPECTED: dict[int, dict[str, set[str]]] = {}


def _schema_of(conn: sqlite3.Connection) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for table, column in conn.execute("SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) "
                                      "AS p WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'"):
        found.setdefault(table, set()).add(column)
    return found


def _check_schema(db: Path) -> None:
    """The file is a relgate ledger: a schema version relgate wrote, and every table and column
    that version has. Anything else is refused before anything (even ``journal_mode=WAL``, which
    rewrites the header) is written into it: this reads through a connection of its own."""
    conn = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        found = _schema_of(conn)
    finally:
        conn.close()
    if version <= 0:  # relgate links a complete ledger into place: a version-0 file is never its own
        held = f"it holds tables relgate never made: {', '.join(sorted(found)[:5])}" if found else "it has no tables"
        raise _foreign(db, f"schema version {version}, {held}")
    if version > SCHEMA_VERSION:
        return  # _migrate says: upgrade relgate
    expected = _expected_schema(version)
    missing = sorted(set(expected) - set(found))
    if missing:
        raise _foreign(db, f"schema version {version} but the table{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(missing)} {'are' if len(missing) > 1 else 'is'} missing")
    for table in sorted(expected):
        lacking = sorted(expected[table] - found[table])
        if lacking:
            raise _foreign(db, f"schema version {version} but table {table} lacks the column"
                               f"{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}")


def _foreign(db: Path, why: str) -> InputError:
    return InputError(f"{db}: an SQLite file but not a relgate ledger ({why}); relgate writes nothing into it. "
                      f"Move it aside (mv {db} {db}.foreign, and any {db.name}-wal and -shm with it) and run again "
                      "to start a fresh ledger")
