"""The ledger's health: the file's header and SQLite's full check (``PRAGMA quick_check``), the
stamp of a cleanly closed file that spares the next open that check, and SQLite's word that a
file is damaged or unusable turned into the one line that names it."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import FunctionType
from typing import Any

from relgate.core.errors import ExecutionError, InputError, RelgateError
from relgate.ledger.schema import _token

__all__: list[str] = []

def _sqlite_errors_reported(cls: type) -> type:
    """Every public method of ``cls``: SQLite's word that the file is damaged or cannot be
    used, wherever it comes (a page found broken mid-run, a disk that failed), becomes the
    one line that names the ledger (:func:`_as_relgate_error`) instead of a traceback."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and isinstance(value, FunctionType):
            setattr(cls, name, _reporting_sqlite_errors(value))
    return cls


def _reporting_sqlite_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:  # self: a Ledger
        try:
            return func(self, *args, **kwargs)
        except sqlite3.Error as exc:
            reported = _as_relgate_error(self.home / "ledger.sqlite3", exc)
            if reported is None:
                raise
            raise reported from None

    method.__name__, method.__qualname__, method.__doc__ = func.__name__, func.__qualname__, func.__doc__
    method.__wrapped__ = func  # type: ignore[attr-defined]
    return method


# SQLite's result codes (sqlite3.Error.sqlite_errorname) for a file that is damaged, and for
# one that cannot be read or written now; any other error is relgate's own bug: a traceback.
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_UNUSABLE = ("SQLITE_IOERR", "SQLITE_FULL", "SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_BUSY",
             "SQLITE_LOCKED")


def _as_relgate_error(db: Path, exc: sqlite3.Error) -> RelgateError | None:
    name = getattr(exc, "sqlite_errorname", None) or ""
    if type(exc) is sqlite3.DatabaseError or name.startswith(_DAMAGED):
        return _unhealthy(db, str(exc))
    if name.startswith(_UNUSABLE):
        return ExecutionError(f"{db}: cannot use the ledger: {exc}")
    return None



_HEADER = b"SQLite format 3\x00"


# The full check (``PRAGMA quick_check``) reads every page: on a ledger of 10,000 steps it
# cost more than the rest of a sign-off re-run. It is skipped when the file is the one an
# earlier check passed, by ``ledger.verified`` in the home: device, inode, size, mtime and
# ctime of ``ledger.sqlite3``, written only after a passed check, only while no WAL holds
# frames, and only for a state older than SETTLED_NS. Every write to the file (relgate's own,
# a truncation, garbage written over pages, even with the mtime put back) sets its ctime to
# the clock's now, which user space cannot set back; a state stamped only once it is that
# old can therefore never be confused with a later one on a file system whose clock ticks
# coarsely (a write in the same tick as the stamped one would keep the ctime). relgate's
# own runs change the file; a clean close (the last connection out: SQLite checkpoints the
# WAL into the file and empties it) stamps the state it leaves, so the next open is spared the
# check too. What is checked: a ledger after an unclean shutdown (a killed process leaves
# frames in its WAL, or a checkpointed write and no stamp), one anything else wrote to, and
# any on demand (``Ledger.open(check=True)``, ``relgate check --ledger``). A stamp written at
# close is not settled: a foreign write in the same tick of a coarse file-system clock as the
# close would go unseen until the next check on demand.
SETTLED_NS = 2_000_000_000
_VERIFIED = "ledger.verified"


def _quick_check(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("PRAGMA quick_check")]


def _file_state(db: Path) -> list[int] | None:
    """What identifies the ledger's content without reading it; None while a WAL file holds
    frames (another process is writing, or one crashed): such a ledger is always checked."""
    try:
        st = os.stat(db)
    except OSError:
        return None
    try:
        if os.stat(f"{db}-wal").st_size:
            return None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


#: Ends a stamp written after the schema check too (issue 23): an older stamp is checked again.
_STAMP_TAG = "schema-checked"


def _verified(home: Path) -> list[int] | None:
    try:
        data = json.loads((home / _VERIFIED).read_text())
    except (OSError, ValueError):
        return None
    return data[:-1] if isinstance(data, list) and data[-1:] == [_STAMP_TAG] else None


def _stamp(home: Path, state: list[int]) -> None:
    tmp = home / f".{_VERIFIED}.{_token()}.tmp"
    try:
        tmp.write_text(json.dumps([*state, _STAMP_TAG]))
        os.replace(tmp, home / _VERIFIED)
    except OSError:  # a read-only home: the next open checks again
        tmp.unlink(missing_ok=True)


def _check_header(db: Path) -> None:
    with open(db, "rb") as fh:
        head = fh.read(len(_HEADER))
    if not head:
        raise _unhealthy(db, "the file is empty (0 bytes)")
    if head != _HEADER:
        raise _unhealthy(db, "the file does not start with the SQLite header")


def _unhealthy(db: Path, why: str) -> InputError:
    return InputError(f"{db}: not a healthy SQLite ledger ({why}); relgate writes nothing into it. Move it "
                      f"aside (mv {db} {db}.broken, and any {db.name}-wal and -shm with it) and run again "
                      "to start a fresh ledger")
