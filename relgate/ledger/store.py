"""The ledger: one SQLite row per executed step, logs stored by content hash.

Layout under the ledger home (``.relgate/`` or ``RELGATE_HOME``)::

    ledger.sqlite3                  runs, steps, artifacts (WAL)
    logs/<commit>/<sha256>.log      complete step logs, content-addressed, never overwritten
    logs/<commit>/partial/…         logs of steps still running (or cut short by a crash)

A step row is written *before* the step runs, as ``error`` ("never finished"), and
updated when it ends; a crash or a kill therefore leaves an error, never a pass.
The schema carries a version (``PRAGMA user_version``) and migrates forward.

This module opens and closes the ledger (:class:`Ledger`); its queries are in its parts, by
what they store: :mod:`relgate.ledger.steps` (runs, steps, logs), :mod:`relgate.ledger.artifacts`
(evidence, baselines, stored objects), :mod:`relgate.ledger.batches` (measurement batches,
decisions), on :mod:`relgate.ledger.base`; the schema and its migrations are in
:mod:`relgate.ledger.schema`, the rows in :mod:`relgate.ledger.rows`, the file's health (the
full check, the clean-close stamp, damaged files reported in one line) in
:mod:`relgate.ledger.integrity`. The names they held here are still importable from here.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path

from relgate.core.errors import InputError
from relgate.ledger.artifacts import EvidenceStore
from relgate.ledger.base import UNFINISHED_REASON
from relgate.ledger.batches import BatchStore, DuplicateBatch

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
from relgate.ledger.steps import _FINGERPRINT, StepStore  # noqa: F401

__all__ = ["SCHEMA_VERSION", "Ledger", "DuplicateBatch", "StepRow", "RunRow", "EvidenceRow", "BaselineRow", "UNFINISHED_REASON",
           "BatchRow", "DecisionRow"]


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


@_sqlite_errors_reported
class Ledger(StepStore, EvidenceStore, BatchStore):
    """A connection to the ledger database under ``home``; use :meth:`open`. Its queries are
    those of its parts, by what they store: runs, steps and logs (:class:`StepStore`); evidence
    and baselines (:class:`EvidenceStore`); measurement batches and decisions (:class:`BatchStore`)."""

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
