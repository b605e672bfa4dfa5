"""What every part of the ledger shares: the connection, the home, one write transaction,
paths stored relative to the home. :class:`relgate.ledger.store.Ledger` is made of the parts
built on it (:mod:`~relgate.ledger.steps`, :mod:`~relgate.ledger.artifacts`,
:mod:`~relgate.ledger.batches`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from relgate.core.errors import ExecutionError

UNFINISHED_REASON = "never finished: relgate stopped before the step ended"


class LedgerBase:
    """A connection to the ledger database under ``home``."""

    def __init__(self, conn: sqlite3.Connection, home: Path) -> None:
        self._conn = conn
        self.home = home

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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")

def _env_json(env: Mapping[str, str]) -> str:
    return json.dumps(dict(env), sort_keys=True)


def _where(pairs: Sequence[tuple[str, Any]]) -> tuple[str, list[Any]]:
    kept = [(column, value) for column, value in pairs if value is not None]
    return ((" WHERE " + " AND ".join(f"{c} = ?" for c, _ in kept)) if kept else ""), [v for _, v in kept]


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_.," else "_" for ch in name)
