"""The ledger's measurement batches (rows, and packed float columns for rectangular batches)
and sign-off decisions."""

from __future__ import annotations

import json
import math
import sqlite3
import sys
from array import array
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

from relgate.core.errors import InputError
from relgate.ledger.base import LedgerBase, _now
from relgate.ledger.integrity import _sqlite_errors_reported
from relgate.ledger.rows import BatchRow, DecisionRow


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
class BatchStore(LedgerBase):
    """Measurement batches and decisions."""

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
