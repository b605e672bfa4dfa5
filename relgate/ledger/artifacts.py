"""The ledger's evidence captures and accepted baselines, and the content-addressed objects
they (and other artifacts) are kept in."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from relgate.ledger.base import LedgerBase, _now, _safe, _where
from relgate.ledger.integrity import _sqlite_errors_reported
from relgate.ledger.rows import BaselineRow, EvidenceRow
from relgate.ledger.schema import _token


@_sqlite_errors_reported
class EvidenceStore(LedgerBase):
    """Evidence, baselines and stored objects."""

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
