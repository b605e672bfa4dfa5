"""The ledger's runs, steps and their logs: a step row is written before the step runs (an
unfinished ``error``) and finished when it ends; logs are kept by content hash."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from relgate.core.counts import TestCounts
from relgate.core.redact import redact_argv
from relgate.core.verdict import Verdict
from relgate.ledger.base import UNFINISHED_REASON, LedgerBase, _env_json, _now, _safe
from relgate.ledger.identity import ProjectIdentity
from relgate.ledger.integrity import _sqlite_errors_reported
from relgate.ledger.rows import RunRow, StepRow
from relgate.ledger.schema import _token


@_sqlite_errors_reported
class StepStore(LedgerBase):
    """Runs, steps and logs."""

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
