"""The ledger: one SQLite row per executed step, logs stored by content hash.

Layout under the ledger home (``.relgate/`` or ``RELGATE_HOME``)::

    ledger.sqlite3                  runs, steps, artifacts (WAL)
    logs/<commit>/<sha256>.log      complete step logs, content-addressed, never overwritten
    logs/<commit>/partial/…         logs of steps still running (or cut short by a crash)

A step row is written *before* the step runs, as ``error`` ("never finished"), and
updated when it ends; a crash or a kill therefore leaves an error, never a pass.
The schema carries a version (``PRAGMA user_version``) and migrates forward.

This module holds the queries (:class:`Ledger`); the schema and its migrations are in
:mod:`relgate.ledger.schema`, the rows in :mod:`relgate.ledger.rows`, the file's health (the
full check, the clean-close stamp, damaged files reported in one line) in
:mod:`relgate.ledger.integrity`. The names they held here are still importable from here.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import stat
import sys
import time
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from operator import itemgetter
from pathlib import Path
from typing import Any

from relgate.core.counts import TestCounts
from relgate.core.errors import ExecutionError, InputError
from relgate.core.redact import redact_argv
from relgate.core.verdict import Verdict
from relgate.ledger.identity import ProjectIdentity

# Ledger.open reads these names here (tests replace _quick_check and SETTLED_NS on this module).
from relgate.ledger.integrity import (
    SETTLED_NS,
    _check_header,
    _file_state,
    _quick_check,
    _sqlite_errors_reported,
    _stamp,
    _unhealthy,
    _verified,
)
from relgate.ledger.rows import BaselineRow, BatchRow, DecisionRow, EvidenceRow, RunRow, StepRow
from relgate.ledger.schema import (  # noqa: F401
    _MIGRATIONS,
    SCHEMA_VERSION,
    _apply,
    _check_schema,
    _connect,
    _create,
    _split_sql,
    _token,
)

__all__ = ["SCHEMA_VERSION", "Ledger", "DuplicateBatch", "StepRow", "RunRow", "EvidenceRow", "BaselineRow", "UNFINISHED_REASON",
           "BatchRow", "DecisionRow"]

UNFINISHED_REASON = "never finished: relgate stopped before the step ended"


def _not_a_database(db: Path) -> None:
    """A ledger path that is a directory, a dangling symlink or no regular file is named as it
    is, with how to move it aside (not "cannot create the ledger home")."""
    try:
        st = os.lstat(db)
    except OSError:
        return  # absent (a new ledger), or its home is the problem: said where the home is made
    what = None
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(db)
        if not os.path.exists(db):
            what = f"a symlink to {target}, which does not exist"
        elif os.path.isdir(db):
            what = f"a symlink to the directory {target}"
        elif not os.path.isfile(db):
            what = f"a symlink to {target}, which is not a regular file"
    elif stat.S_ISDIR(st.st_mode):
        what = "a directory"
    elif not stat.S_ISREG(st.st_mode):
        what = "not a regular file"
    if what is not None:
        raise InputError(f"{db}: {what}, not a ledger database; relgate writes nothing into it. Move it aside "
                         f"(mv {db} {db}.moved) and run again to start a fresh ledger")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _by_key(keys: list[str], parsed: list[dict[str, Any]] | None,
            columns: dict[str, list[Any]] | None = None, runs: int = 0) -> dict[str, dict[str, tuple[float, ...]]]:
    """Rows grouped by key, in first-seen order, from per-row dicts (``parsed``) or one
    metric's column. A batch is usually rectangular (every run has the same rows in the same
    order): then each row's values are a slice of a column, taken in C, not a Python loop
    over every row. A value SQLite found missing (None) is left out."""
    width = len(keys) // runs if runs and len(keys) % runs == 0 else len(dict.fromkeys(keys))
    first = keys[:width]
    rectangular = width and len(keys) % width == 0 and len(set(first)) == width and all(
        keys[i: i + width] == first for i in range(width, len(keys), width))
    if columns is not None:
        (metric, column), = columns.items()
        if rectangular and None not in column:
            return {k: {metric: tuple(column[i::width])} for i, k in enumerate(first)}
        parsed = [{metric: v} if v is not None else {} for v in column]
    assert parsed is not None
    if rectangular:
        names = list(parsed[0])
        if set(map(len, parsed)) == {len(names)}:
            try:
                columns = {m: [d[m] for d in parsed] for m in names}
            except KeyError:  # a row with other metrics: grouped row by row below
                columns = None
            if columns is not None:
                return {k: {m: tuple(col[i::width]) for m, col in columns.items()} for i, k in enumerate(first)}
    grouped: dict[str, dict[str, list[float]]] = {}
    for key, row in zip(keys, parsed):
        per = grouped.setdefault(key, {})
        for metric, value in row.items():
            per.setdefault(metric, []).append(value)
    return {k: {m: tuple(v) for m, v in per.items()} for k, per in grouped.items()}


def _packed(rows: Sequence[tuple[int, Any, Any, Any]], keys: Sequence[str]
            ) -> tuple[int, int, dict[str, bytes]] | None:
    """A batch's rows as (runs, rows a run, metric → float64 column, run-major) when it is
    rectangular — runs 0, 1, … in order, each with the same keys (``keys``: the rows' key
    JSON) in the same order, once each — and every row has the same metrics, all finite
    floats; else None (the batch is read from its rows)."""
    if not rows or rows[0][0] != 0:
        return None
    width = next((i for i, row in enumerate(rows) if row[0] != 0), len(rows))
    first = keys[:width]
    if len(rows) % width or len(set(first)) != width:
        return None
    runs = len(rows) // width
    for r in range(1, runs):
        if keys[r * width: (r + 1) * width] != first or any(row[0] != r for row in rows[r * width: (r + 1) * width]):
            return None
    names = rows[0][2].keys()
    columns = {m: array("d") for m in sorted(names)}
    isfinite = math.isfinite
    for _, _, metrics, _ in rows:
        if metrics.keys() != names:
            return None
        for m, v in metrics.items():
            if type(v) is not float or not isfinite(v):
                return None
            columns[m].append(v)
    if sys.byteorder != "little":
        for column in columns.values():
            column.byteswap()
    return runs, width, {m: column.tobytes() for m, column in columns.items()}


class DuplicateBatch(InputError):
    """:meth:`Ledger.add_batch` with ``once``: these bytes are batch ``existing`` already."""

    def __init__(self, existing: int, source: str) -> None:
        self.existing, self.source = existing, source
        super().__init__(f"batch #{existing} holds these runs already ({source})")


@_sqlite_errors_reported
class Ledger:
    """A connection to the ledger database under ``home``; use :meth:`open`."""

    def __init__(self, conn: sqlite3.Connection, home: Path) -> None:
        self._conn = conn
        self.home = home

    @classmethod
    def open(cls, home: Path, *, check: bool = False) -> "Ledger":
        """Open (or create) the ledger under ``home``.

        A new ledger is built in a temporary file and linked into place, so concurrent
        first runs never race on the schema. An existing file must be a healthy SQLite
        database (header, ``PRAGMA quick_check``): anything else is refused before anything
        writes into it, with a message that says how to move it aside. The full check reads
        every page, so it runs only where the file is not, to the inode, size and change time,
        the one the last clean close (or an earlier check) left (see :func:`_file_state`):
        after an unclean shutdown, a write by anything else, or with ``check`` (on demand)."""
        home = Path(home)
        db = home / "ledger.sqlite3"
        _not_a_database(db)
        try:
            home.mkdir(parents=True, exist_ok=True)
            if not db.exists():
                _create(db)
            _check_header(db)
            before = _file_state(db)
            if check or before is None or before != _verified(home):
                _check_schema(db)  # a healthy SQLite file is not yet a relgate ledger: read it, write nothing
            conn = _connect(db)
            state = _file_state(db)  # as the connection found it (journal_mode=WAL may have written)
        except sqlite3.DatabaseError as exc:
            raise _unhealthy(db, str(exc)) from None
        except OSError as exc:
            raise InputError(f"{home}: cannot create the ledger home: {exc.strerror or exc}") from None
        ledger = cls(conn, home)
        try:
            if check or state is None or state != _verified(home):
                problems = _quick_check(conn)
                if problems != ["ok"]:
                    raise _unhealthy(db, "; ".join(problems[:3]))
                if state is not None and state == _file_state(db) and time.time_ns() - state[-1] > SETTLED_NS:
                    _stamp(home, state)
            ledger._migrate()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _unhealthy(db, str(exc)) from None
        except BaseException:
            conn.close()
            raise
        return ledger

    @staticmethod
    def exists(home: Path) -> bool:
        """Whether a ledger is under ``home`` (:meth:`open` would not create one)."""
        return (Path(home) / "ledger.sqlite3").exists()

    def close(self) -> None:
        """Close the connection; the last one out (no frames left in the WAL) stamps the file's
        state as cleanly closed, so the next open skips the full check."""
        self._conn.close()
        state = _file_state(self.home / "ledger.sqlite3")
        if state is not None and state != _verified(self.home):
            _stamp(self.home, state)

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema ------------------------------------------------------------------------
    def _migrate(self) -> None:
        if self.schema_version == SCHEMA_VERSION:  # the usual case: no write transaction to read it
            return
        while True:  # one step per transaction, the version read inside it: safe under concurrency
            with self._tx():
                version = self._conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise InputError(f"{self.home / 'ledger.sqlite3'}: schema version {version} is newer than "
                                     f"this relgate understands ({SCHEMA_VERSION}); upgrade relgate")
                if version == SCHEMA_VERSION:
                    return
                _apply(self._conn, version + 1)

    @property
    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    @contextmanager
    def _tx(self) -> Iterator[None]:
        """One write transaction; a database that cannot be written (a full disk, a
        read-only file) is an :class:`ExecutionError` naming the file, never a traceback.
        Inside another one, it is part of that one (one commit for both)."""
        if self._conn.in_transaction:
            yield
            return
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._conn.in_transaction:
                try:
                    self._conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            raise ExecutionError(f"{self.home / 'ledger.sqlite3'}: cannot write the ledger: {exc}") from None

    # -- runs --------------------------------------------------------------------------
    def begin_run(self, *, session: str, argv: Sequence[str], project: str, project_root: Path,
                  commit: str, branch: str | None, dirty: bool, identity: ProjectIdentity | None = None) -> str:
        """A new run; its steps (and their evidence) carry ``identity``, the project they belong to.
        ``argv`` is stored with its secrets masked, as a step's command is (``--password=***``)."""
        run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + _token()
        with self._tx():
            self._conn.execute(
                "INSERT INTO runs (id, session, argv, project, project_root, commit_sha, branch, dirty, started,"
                " project_key) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, session, json.dumps(redact_argv(argv)), project, str(project_root), commit, branch,
                 int(dirty), _now(), identity.key if identity else None),
            )
        return run_id

    def finish_run(self, run_id: str, outcome: str) -> None:
        with self._tx():
            self._conn.execute("UPDATE runs SET finished = ?, outcome = ? WHERE id = ?", (_now(), outcome, run_id))

    # -- steps -------------------------------------------------------------------------
    def begin_step(self, *, run_id: str, session: str, step: str, lane: str | None, target: str | None,
                   host: str, board: str | None, driver: str | None, toolkit: str | None,
                   commit: str, dirty: bool, command: str, cwd: str | None,
                   env: Mapping[str, str], log_path: Path | None) -> int:
        with self._tx():
            cur = self._conn.execute(
                "INSERT INTO steps (run_id, session, step, lane, target, host, board, driver, toolkit,"
                " commit_sha, dirty, command, cwd, env, started, verdict, reason, log_path, project_key)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,(SELECT project_key FROM runs WHERE id = ?))",
                (run_id, session, step, lane, target, host, board, driver, toolkit, commit, int(dirty),
                 command, cwd, _env_json(env), _now(), Verdict.ERROR.value,
                 UNFINISHED_REASON, self._rel(log_path), run_id),
            )
        return int(cur.lastrowid)

    def finish_step(self, step_id: int, *, verdict: Verdict, reason: str | None, exit_code: int | None,
                    duration: float | None, warnings: Sequence[Mapping[str, Any]] = (),
                    warning_count: int | None = None, log_path: Path | None = None,
                    log_sha256: str | None = None, tail: str | None = None,
                    command: str | None = None, tests: str | None = None, scanned: bool | None = None) -> None:
        """``tests``: the runner's counts (``TestCounts.to_json()``), when they were read."""
        with self._tx():
            self._conn.execute(
                "UPDATE steps SET verdict = ?, reason = ?, exit_code = ?, duration = ?, warnings = ?,"
                " warning_count = ?, log_path = COALESCE(?, log_path), log_sha256 = ?, tail = ?,"
                " command = COALESCE(?, command), tests = ?, scanned = ? WHERE id = ?",
                (verdict.value, reason, exit_code, duration, json.dumps(list(warnings)),
                 len(warnings) if warning_count is None else warning_count, self._rel(log_path),
                 log_sha256, tail, command, tests, None if scanned is None else int(scanned), step_id),
            )

    def note_step_host(self, step_id: int, *, facts: Mapping[str, Any], board: str | None = None,
                       driver: str | None = None, toolkit: str | None = None) -> None:
        """The step's own host facts (JSON: its GPUs, the Slurm node, job and state, its host's
        probes); ``board``/``driver``/``toolkit`` where they were learnt only when it ran (the
        Slurm node's) replace the host's, before its evidence is stored with them."""
        with self._tx():
            self._conn.execute(
                "UPDATE steps SET facts = ?, board = COALESCE(?, board), driver = COALESCE(?, driver),"
                " toolkit = COALESCE(?, toolkit) WHERE id = ?",
                (json.dumps(dict(facts), sort_keys=True, default=str), board, driver, toolkit, step_id))

    def record_step(self, **kw: Any) -> int:
        """A step decided without running anything (skip, not-run): one row, final at once."""
        finish = {k: kw.pop(k) for k in ("verdict", "reason") if k in kw}
        with self._tx():
            step_id = self.begin_step(log_path=None, **kw)
            self.finish_step(step_id, exit_code=None, duration=0.0, **finish)
        return step_id

    def steps(self, *, commit: str | None = None, run_id: str | None = None,
              project: str | None = None) -> list[StepRow]:
        """Step rows, oldest first; ``project`` keeps those of the projects with that name."""
        where, args = [], []
        if project is not None:
            prefix = ProjectIdentity.name_prefix(project)
            where.append("substr(project_key, 1, ?) = ?")
            args += [len(prefix), prefix]
        if commit is not None:
            where.append("commit_sha = ?")
            args.append(commit)
        if run_id is not None:
            where.append("run_id = ?")
            args.append(run_id)
        sql = "SELECT * FROM steps" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id"
        return [_step_row(r) for r in self._conn.execute(sql, args)]

    def runs(self, *, commit: str | None = None) -> list[RunRow]:
        sql = "SELECT * FROM runs" + (" WHERE commit_sha = ?" if commit else "") + " ORDER BY started"
        return [RunRow(**{**dict(r), "dirty": bool(r["dirty"])})
                for r in self._conn.execute(sql, (commit,) if commit else ())]

    def reusable_pass(self, *, run_id: str, commit: str, session: str, step: str, host: str, command: str,
                      env: Mapping[str, str], board: str | None, driver: str | None,
                      toolkit: str | None, any_node: bool = False) -> StepRow | None:
        """The latest pass of this exact step on a clean tree: same project (the one of run
        ``run_id``), commit, command, env, host and host facts. Rows without a project never match.
        ``any_node``: the host is a cluster whose scheduler picks any node with ``board`` (a
        fresh run could land on any of them), so the node's driver and toolkit are not compared."""
        nodes = "" if any_node else " AND driver IS ? AND toolkit IS ?"
        row = self._conn.execute(
            "SELECT * FROM steps WHERE project_key = (SELECT project_key FROM runs WHERE id = ?)"
            " AND commit_sha = ? AND session = ? AND step = ? AND host = ? AND command = ? AND env = ?"
            f" AND board IS ?{nodes} AND dirty = 0 AND verdict = ?"
            " ORDER BY id DESC LIMIT 1",
            (run_id, commit, session, step, host, command, _env_json(env), board,
             *(() if any_node else (driver, toolkit)), Verdict.PASS.value)).fetchone()
        return None if row is None else _step_row(row)

    def reuse_step(self, *, run_id: str, original: StepRow) -> int:
        """Record that ``original`` stands for this run too (a new row pointing at it)."""
        source = original.reused_from or original.id
        with self._tx():
            cur = self._conn.execute(
                "INSERT INTO steps (run_id, session, step, lane, target, host, board, driver, toolkit, commit_sha,"
                " dirty, command, cwd, env, started, duration, exit_code, verdict, reason, warning_count, warnings,"
                " log_path, log_sha256, tail, reused_from, project_key, tests, scanned, facts)"
                " SELECT ?, session, step, lane, target, host, board, driver, toolkit, commit_sha, dirty, command,"
                " cwd, env, ?, 0, exit_code, verdict, ?, warning_count, warnings, log_path, log_sha256, tail, ?,"
                " project_key, tests, scanned, facts FROM steps WHERE id = ?",
                (run_id, _now(), f"reused: passed as step #{source}", source, source))
            new_id = int(cur.lastrowid)
            self._conn.execute(
                "INSERT INTO evidence (step_id, run_id, commit_sha, dirty, host, board, toolkit, lane, target,"
                " sha256, path, created, project_key) SELECT ?, ?, commit_sha, dirty, host, board, toolkit, lane,"
                " target, sha256, path, ?, project_key FROM evidence WHERE step_id = ?",
                (new_id, run_id, _now(), source))
        return new_id

    # -- evidence --------------------------------------------------------------------------
    def evidence_path(self, run_id: str, step: str) -> Path:
        """A fresh file a step's tests append evidence cells to."""
        path = self.home / "evidence" / "runs" / run_id / f"{_safe(step)}.cells"
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        return path

    def store_evidence(self, captured: Path, *, step_id: int) -> EvidenceRow:
        """Keep a capture by content hash and index it by the step's commit, host, board, lane, target."""
        sha, path = self.store_file(captured, kind="evidence", suffix=".cells")
        with self._tx():
            cur = self._conn.execute(
                "INSERT INTO evidence (step_id, run_id, commit_sha, dirty, host, board, toolkit, lane, target,"
                " sha256, path, created, project_key) SELECT id, run_id, commit_sha, dirty, host, board, toolkit,"
                " lane, target, ?, ?, ?, project_key FROM steps WHERE id = ?", (sha, path, _now(), step_id))
            row_id = int(cur.lastrowid)
        return self.evidence(row_id=row_id)[0]

    def store_blob(self, data: bytes, *, kind: str, suffix: str) -> tuple[str, str]:
        """Keep bytes by content hash under ``objects/``; returns (sha256, path relative to home)."""
        sha = hashlib.sha256(data).hexdigest()
        final = self.home / "objects" / sha[:2] / f"{sha}{suffix}"
        if not final.exists():
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = final.with_name(f".{final.name}.{_token()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, final)
        with self._tx():
            self._conn.execute(
                "INSERT OR IGNORE INTO artifacts (sha256, kind, path, size, created) VALUES (?,?,?,?,?)",
                (sha, kind, self._rel(final), len(data), _now()))
        return sha, str(self._rel(final))

    def store_file(self, source: Path, *, kind: str, suffix: str, move: bool = False) -> tuple[str, str]:
        """:meth:`store_blob` of a file's bytes, read in blocks (memory stays bounded). With
        ``move``, ``source`` (a file of the caller's, written and closed) is hashed and then
        renamed into the store, not copied; copied where a rename cannot do it."""
        objects = self.home / "objects"
        objects.mkdir(parents=True, exist_ok=True)
        if move:
            digest = hashlib.sha256()
            with open(source, "rb") as src:
                for block in iter(lambda: src.read(1 << 20), b""):
                    digest.update(block)
            sha = digest.hexdigest()
            final = objects / sha[:2] / f"{sha}{suffix}"
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                if final.exists():
                    source.unlink()
                else:
                    os.replace(source, final)
            except OSError:
                pass  # another file system, say: copied below
            else:
                return self._stored(final, sha, kind)
        digest = hashlib.sha256()
        tmp = objects / f".incoming.{_token()}.tmp"
        try:
            with open(source, "rb") as src, open(tmp, "wb") as out:
                for block in iter(lambda: src.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
            sha = digest.hexdigest()
            final = objects / sha[:2] / f"{sha}{suffix}"
            final.parent.mkdir(parents=True, exist_ok=True)
            if not final.exists():
                os.replace(tmp, final)
        finally:
            if tmp.exists():
                tmp.unlink()
        return self._stored(final, sha, kind)

    def _stored(self, final: Path, sha: str, kind: str) -> tuple[str, str]:
        with self._tx():
            self._conn.execute(
                "INSERT OR IGNORE INTO artifacts (sha256, kind, path, size, created) VALUES (?,?,?,?,?)",
                (sha, kind, self._rel(final), final.stat().st_size, _now()))
        return sha, str(self._rel(final))

    def add_baselines(self, rows: Sequence[Mapping[str, Any]]) -> list[BaselineRow]:
        """Record accepted baselines (release, board, commit_sha, sha256, path, cells, project_key) at once."""
        ids = []
        with self._tx():
            for r in rows:
                cur = self._conn.execute(
                    "INSERT INTO baselines (release, board, commit_sha, sha256, path, cells, accepted, project_key)"
                    " VALUES (?,?,?,?,?,?,?,?)",
                    (r["release"], r["board"], r["commit_sha"], r["sha256"], r["path"], r["cells"], _now(),
                     r["project_key"]))
                ids.append(int(cur.lastrowid))
        return [b for b in self.baselines() if b.id in ids]

    def baselines(self, *, board: str | None = None, project_key: str | None = None) -> list[BaselineRow]:
        """Accepted baselines, oldest first; with ``project_key``, only that project's."""
        where, args = _where((("board", board), ("project_key", project_key)))
        return [BaselineRow(**dict(r)) for r in self._conn.execute(f"SELECT * FROM baselines{where} ORDER BY id",
                                                                   args)]

    def evidence(self, *, commit: str | None = None, row_id: int | None = None,
                 step_id: int | None = None, project_key: str | None = None) -> list[EvidenceRow]:
        """Evidence index rows; with ``project_key``, only that project's (rows without one never match)."""
        where, args = [], []
        for column, value in (("commit_sha", commit), ("id", row_id), ("step_id", step_id),
                              ("project_key", project_key)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = "SELECT * FROM evidence" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id"
        return [EvidenceRow(**{**dict(r), "dirty": bool(r["dirty"])}) for r in self._conn.execute(sql, args)]

    # -- sign-off: measurement batches and decisions ---------------------------------------
    def add_batch(self, batch: Mapping[str, Any], rows: Sequence[tuple[int, Any, Any, Any]], *,
                  once: bool = False) -> int:
        """One batch (the ``measure_batches`` columns) and its rows ``(run, key, metrics, metadata)``, at once.
        ``once``: a batch of the same bytes (``sha256``) for the same project, measure, side, board,
        release and commit is refused with :class:`DuplicateBatch` — looked for inside the write
        transaction, so that of several processes adding the same file at once exactly one records it."""
        cols = ("project", "measure", "kind", "side", "release", "commit_sha", "dirty", "board", "host", "metadata",
                "warmup", "run_id", "source", "sha256", "path")
        values = [json.dumps(batch[c], sort_keys=True) if c == "metadata" else batch.get(c) for c in cols]
        values[cols.index("dirty")] = int(bool(batch.get("dirty")))
        with self._tx():
            if once:
                same = self._conn.execute(
                    "SELECT * FROM measure_batches WHERE project = ? AND measure = ? AND sha256 IS ? AND side IS ?"
                    " AND board IS ? AND release IS ? AND commit_sha IS ? ORDER BY id LIMIT 1",
                    tuple(batch.get(c) for c in ("project", "measure", "sha256", "side", "board", "release",
                                                 "commit_sha"))).fetchone()
                if same is not None:
                    raise DuplicateBatch(int(same["id"]), str(same["source"] or ""))
            cur = self._conn.execute(f"INSERT INTO measure_batches ({', '.join(cols)}, created) VALUES"
                                     f" ({', '.join('?' * len(cols))}, ?)", (*values, _now()))
            batch_id = int(cur.lastrowid)
            keys = [json.dumps(key) for _, key, _, _ in rows]
            metas = [json.dumps(meta, sort_keys=True) for _, _, _, meta in rows]
            self._conn.executemany(
                "INSERT INTO measure_rows (batch_id, run, key, metrics, metadata) VALUES (?,?,?,?,?)",
                [(batch_id, run, key, json.dumps(metrics, sort_keys=True), meta)
                 for (run, _, metrics, _), key, meta in zip(rows, keys, metas)])
            packed = _packed(rows, keys)
            if packed is not None:
                runs, width, columns = packed
                self._conn.execute("INSERT INTO measure_packed (batch_id, runs, keys, metadata) VALUES (?,?,?,?)",
                                   (batch_id, runs, "[" + ",".join(keys[:width]) + "]",
                                    "[" + ",".join(metas[-width:]) + "]"))
                self._conn.executemany("INSERT INTO measure_columns (batch_id, metric, vals) VALUES (?,?,?)",
                                       [(batch_id, m, v) for m, v in columns.items()])
        return batch_id

    def batches(self, *, project: str, measure: str | None = None) -> list[BatchRow]:
        sql = "SELECT * FROM measure_batches WHERE project = ?" + (" AND measure = ?" if measure else "") + " ORDER BY id"
        args = (project, measure) if measure else (project,)
        return [BatchRow(**{**dict(r), "dirty": bool(r["dirty"]), "metadata": json.loads(r["metadata"])})
                for r in self._conn.execute(sql, args)]

    def batch_metric_names(self, batch_id: int) -> list[str]:
        """The metrics the batch's rows carry (every row carries the same ones), from its first row."""
        row = self._conn.execute("SELECT metrics FROM measure_rows WHERE batch_id = ? ORDER BY rowid LIMIT 1",
                                 (batch_id,)).fetchone()
        return sorted(json.loads(row["metrics"])) if row is not None else []

    def batch_rows(self, batch_id: int) -> list[tuple[int, list[str], dict[str, Any], dict[str, str]]]:
        return [(r["run"], json.loads(r["key"]), json.loads(r["metrics"]), json.loads(r["metadata"]))
                for r in self._conn.execute("SELECT * FROM measure_rows WHERE batch_id = ? ORDER BY rowid", (batch_id,))]

    def batch_samples(self, batch_id: int, *, first_run: int = 0, metrics: Sequence[str] = ()
                      ) -> tuple[dict[tuple[str, ...], dict[str, tuple[float, ...]]],
                                 dict[tuple[str, ...], dict[str, str]], int]:
        """A batch's runs from ``first_run`` on, by row: key → metric → every run's value (in
        run order), key → the metadata of its row in the last run, and how many runs there
        were. ``metrics``: only these, taken out of each row's JSON by SQLite itself (10k
        rows × 15 runs in a fraction of the time of parsing them here); else every metric,
        parsed in one JSON parse. Metadata is read for the last run only."""
        cur = self._conn.cursor()
        cur.row_factory = None
        names = [m for m in dict.fromkeys(metrics) if '"' not in m and "\\" not in m]
        packed = self._packed_samples(cur, batch_id, first_run, names if names and len(names) == len(metrics) else None)
        if packed is not None:
            return packed
        if names and len(names) == len(metrics):
            picks = ", ".join(f"json_extract(metrics, '$.\"{m}\"')" for m in names)
            found = cur.execute(f"SELECT key, run, {picks} FROM measure_rows WHERE batch_id = ? AND run >= ?"
                                " ORDER BY rowid", (batch_id, first_run)).fetchall()
            if not found:
                return {}, {}, 0
            parsed = [{m: v for m, v in zip(names, row[2:]) if v is not None} for row in found] \
                if len(names) > 1 else None
            columns = {names[0]: list(map(itemgetter(2), found))} if parsed is None else None
        else:
            found = cur.execute("SELECT key, run, metrics FROM measure_rows WHERE batch_id = ? AND run >= ?"
                                " ORDER BY rowid", (batch_id, first_run)).fetchall()
            if not found:
                return {}, {}, 0
            parsed = json.loads("[" + ",".join(map(itemgetter(2), found)) + "]")
            columns = None
        keys = list(map(itemgetter(0), found))
        runs = set(map(itemgetter(1), found))
        last_run, count = max(runs), len(runs)
        values = _by_key(keys, parsed, columns, count)
        meta = {k: m for k, m in cur.execute("SELECT key, metadata FROM measure_rows WHERE batch_id = ? AND run = ?",
                                             (batch_id, last_run))}
        decoded = json.loads("[" + ",".join(values) + "]")
        out = {tuple(k): per for k, per in zip(decoded, values.values())}
        meta_keys = json.loads("[" + ",".join(meta) + "]")
        meta_values = json.loads("[" + ",".join(meta.values()) + "]")
        return out, {tuple(k): m for k, m in zip(meta_keys, meta_values)}, int(count)

    def _packed_samples(self, cur: sqlite3.Cursor, batch_id: int, first_run: int, names: list[str] | None
                        ) -> tuple[dict[tuple[str, ...], dict[str, tuple[float, ...]]],
                                   dict[tuple[str, ...], dict[str, str]], int] | None:
        """:meth:`batch_samples` from the batch's packed columns (``names``: these metrics, in
        this order, those the batch has; None: every one, by name); None: not packed."""
        head = cur.execute("SELECT runs, keys, metadata FROM measure_packed WHERE batch_id = ?", (batch_id,)).fetchone()
        if head is None:
            return None
        runs, keys_text, meta_text = head
        start = max(first_run, 0)
        if start >= runs:
            return {}, {}, 0
        if names is None:
            found = dict(cur.execute("SELECT metric, vals FROM measure_columns WHERE batch_id = ?", (batch_id,)))
            order = sorted(found)
        else:
            found = dict(cur.execute(f"SELECT metric, vals FROM measure_columns WHERE batch_id = ? AND metric IN"
                                     f" ({','.join('?' * len(names))})", (batch_id, *names)))
            order = [m for m in names if m in found]
        keys = json.loads(keys_text)
        width = len(keys)
        columns = []
        for m in order:
            column = array("d")
            column.frombytes(found[m])
            if sys.byteorder != "little":
                column.byteswap()
            columns.append((m, column[start * width:].tolist()))
        values = {tuple(k): {m: tuple(col[i::width]) for m, col in columns} for i, k in enumerate(keys)}
        meta = {tuple(k): m for k, m in zip(keys, json.loads(meta_text))}
        return values, meta, runs - start

    def add_decision(self, *, project: str, commit: str, dirty: bool, item: str, kind: str, by: str | None,
                     note: str | None, step_id: int | None = None) -> int:
        with self._tx():
            cur = self._conn.execute(
                "INSERT INTO decisions (project, commit_sha, dirty, item, kind, by, note, step_id, created)"
                " VALUES (?,?,?,?,?,?,?,?,?)", (project, commit, int(dirty), item, kind, by, note, step_id, _now()))
        return int(cur.lastrowid)

    def decisions(self, *, project: str) -> list[DecisionRow]:
        return [DecisionRow(**{**dict(r), "dirty": bool(r["dirty"])}) for r in self._conn.execute(
            "SELECT * FROM decisions WHERE project = ? ORDER BY id", (project,))]

    def fingerprint(self) -> tuple[int, ...]:
        """Changes whenever a row is added or a step finishes (sign-off re-runs with nothing new).
        The unfinished steps are counted through ``steps_unfinished`` (the query names
        ``verdict = 'error'`` as the partial index does), not by reading every step."""
        row = self._conn.execute(_FINGERPRINT, (UNFINISHED_REASON,)).fetchone()
        return tuple(int(v) for v in row)

    def project_steps(self, *, project: str, commits: Sequence[str], latest: bool = False) -> list[StepRow]:
        """The steps of the project (its identity key) at any of ``commits``, in id order; with
        ``latest``, only the last row of each step per host, board, commit and tree state."""
        if not commits:
            return []
        marks = ",".join("?" * len(commits))
        where = f"project_key = ? AND commit_sha IN ({marks})"
        sql = f"SELECT * FROM steps WHERE {where} ORDER BY id"
        if latest:
            sql = (f"SELECT * FROM steps WHERE id IN (SELECT MAX(id) FROM steps WHERE {where} GROUP BY session, lane,"
                   f" step, target, host, board, commit_sha, dirty) ORDER BY id")
        return [_step_row(r) for r in self._conn.execute(sql, (project, *commits))]

    def steps_with_ids(self, ids: Sequence[int]) -> list[StepRow]:
        marks = ",".join("?" * len(ids))
        return [_step_row(r) for r in self._conn.execute(f"SELECT * FROM steps WHERE id IN ({marks}) ORDER BY id",
                                                         tuple(ids))] if ids else []

    def project_commits(self, *, project: str) -> list[str]:
        """Every commit the project has runs, batches or decisions at."""
        return [r[0] for r in self._conn.execute(
            "SELECT commit_sha FROM runs WHERE project_key = ? UNION SELECT commit_sha FROM decisions WHERE project = ?"
            " UNION SELECT commit_sha FROM measure_batches WHERE project = ? AND commit_sha IS NOT NULL",
            (project, project, project))]

    # -- logs as content-addressed artifacts --------------------------------------------------
    def partial_log_path(self, commit: str, run_id: str, step: str) -> Path:
        path = self.home / "logs" / commit / "partial" / f"{run_id}-{_safe(step)}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def store_log(self, partial: Path, commit: str) -> tuple[Path, str]:
        """Move a finished log to ``logs/<commit>/<sha256>.log``; same content, same file."""
        digest = hashlib.sha256()
        with open(partial, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        sha = digest.hexdigest()
        final = self.home / "logs" / commit / f"{sha}.log"
        if final.exists():
            partial.unlink()
        else:
            os.replace(partial, final)
        with self._tx():
            self._conn.execute(
                "INSERT OR IGNORE INTO artifacts (sha256, kind, path, size, created) VALUES (?,?,?,?,?)",
                (sha, "log", self._rel(final), final.stat().st_size, _now()),
            )
        return final, sha

    def _rel(self, path: Path | None) -> str | None:
        if path is None:
            return None
        try:
            return str(Path(path).relative_to(self.home))
        except ValueError:
            return str(path)

    def resolve(self, stored: str | None) -> Path | None:
        """The absolute path of a ``log_path`` stored in a row."""
        return None if stored is None else self.home / stored


_FINGERPRINT = (
    "SELECT (SELECT COALESCE(MAX(id), 0) FROM steps), (SELECT COUNT(*) FROM steps WHERE verdict = 'error'"
    " AND reason = ?), (SELECT COALESCE(MAX(id), 0) FROM evidence), (SELECT COALESCE(MAX(id), 0) FROM"
    " baselines), (SELECT COALESCE(MAX(id), 0) FROM measure_batches), (SELECT COALESCE(MAX(id), 0) FROM"
    " decisions), (SELECT COUNT(*) FROM runs WHERE finished IS NULL)")




def _step_row(r: sqlite3.Row) -> StepRow:
    d = dict(r)
    d["dirty"] = bool(d["dirty"])
    d["verdict"] = Verdict(d["verdict"])
    d["env"] = json.loads(d["env"] or "{}")
    d["warnings"] = json.loads(d["warnings"] or "[]")
    d["tests"] = TestCounts.from_json(d.get("tests"))
    d["scanned"] = None if d.get("scanned") is None else bool(d["scanned"])
    d["facts"] = json.loads(d.get("facts") or "{}")
    return StepRow(**d)


def _env_json(env: Mapping[str, str]) -> str:
    return json.dumps(dict(env), sort_keys=True)


def _where(pairs: Sequence[tuple[str, Any]]) -> tuple[str, list[Any]]:
    kept = [(column, value) for column, value in pairs if value is not None]
    return ((" WHERE " + " AND ".join(f"{c} = ?" for c, _ in kept)) if kept else ""), [v for _, v in kept]


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_.," else "_" for ch in name)
