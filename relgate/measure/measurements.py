"""Measurement rows: read them as the project writes them (CSV/TSV with a BOM and CRLF,
JSON lines, scorer ``kv`` lines), check the required metadata, record them as one batch.

A row is named by its key columns; its metrics are numbers; every other column is
metadata. relgate fills what it knows (board, driver, toolkit, host, commit, dirty); a
row still missing a required field is refused, naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from relgate.core.errors import InputError
from relgate.core.readers import read_user_file
from relgate.core.record import record
from relgate.core.text import check_line, check_name, inert, line_problem
from relgate.ledger.store import DuplicateBatch, Ledger
from relgate.manifest.measures import MeasureSpec, QualitySpec
from relgate.measure.specs import source_hash, spec_of

__all__ = ["Row", "parse_records", "parse_rows", "record_batch", "metrics_of", "add_measurements", "check_meta", "FILLED"]

Spec = MeasureSpec | QualitySpec


@record
class Row:
    line: int
    key: tuple[str, ...]
    metrics: Mapping[str, float]
    metadata: Mapping[str, str]


def metrics_of(spec: Spec) -> tuple[str, ...]:
    return tuple(spec.metrics) if isinstance(spec, MeasureSpec) else tuple(b.metric for b in spec.bands)


def _text(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")  # a UTF-8 BOM is read as it is
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 (byte {exc.start})") from None


def parse_records(data: bytes, *, fmt: str, source: str, select: Sequence[str] = (),
                  merge: bool = False, unique: Sequence[str] = ()) -> list[tuple[int, dict[str, str]]]:
    """``(line, column → text)`` per record; CRLF and LF alike, ``#`` and blank lines skipped.
    ``merge``: every record folded into one (a scorer's summary lines make one row); a name of
    ``unique`` given twice with two values is refused, as is a JSON key or a kv name repeated
    within one record."""
    lines = _text(data, source).splitlines()
    out: list[tuple[int, dict[str, str]]] = []
    if fmt in ("csv", "tsv"):
        body = [(n, line) for n, line in enumerate(lines, 1) if line.strip() and not line.lstrip().startswith("#")]
        if not body:
            return []
        rows: list[list[str]] = []
        try:
            rows.extend(csv.reader([line for _, line in body], delimiter="," if fmt == "csv" else "\t"))
        except csv.Error as exc:  # a field over csv's limit (128 KiB), a NUL byte …
            raise InputError(f"{source}:{body[len(rows)][0]}: not {fmt.upper()}: {exc}") from None
        header = [h.strip() for h in rows[0]]
        if len(set(header)) != len(header) or not all(header):
            raise InputError(f"{source}:{body[0][0]}: the header names a column twice or leaves one unnamed")
        for (n, _), cells in zip(body[1:], rows[1:]):
            if len(cells) != len(header):
                raise InputError(f"{source}:{n}: {len(cells)} columns, the header has {len(header)}")
            out.append((n, {h: c.strip() for h, c in zip(header, cells)}))
    elif fmt == "jsonl":
        for n, line in enumerate(lines, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                obj = json.loads(line, object_pairs_hook=_unique_pairs)
            except json.JSONDecodeError as exc:
                raise InputError(f"{source}:{n}: not JSON: {exc.msg}") from None
            except RecursionError:
                raise InputError(f"{source}:{n}: a value nested too deeply to read") from None
            except _Repeated as exc:
                raise InputError(f'{source}:{n}: the key "{inert(str(exc))}" appears twice in one object '
                                 "(which one counts?)") from None
            if not isinstance(obj, dict):
                raise InputError(f"{source}:{n}: expected a JSON object per line")
            out.append((n, {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in obj.items()}))
    else:  # kv: `summary cases=100 first_match=95 …`; the first bare word says what the line is
        for n, line in enumerate(lines, 1):
            words = line.split()
            pairs = [w.split("=", 1) for w in words if "=" in w]
            if not pairs:
                continue
            kind = words[0] if "=" not in words[0] else ""
            if select and kind not in select:
                continue
            fields: dict[str, str] = {}
            for k, v in pairs:
                if k in fields:
                    raise InputError(f'{source}:{n}: "{inert(k)}" appears twice on one line (which one counts?)')
                fields[k] = v
            out.append((n, fields))
    if merge and out:
        merged: dict[str, str] = {}
        first: dict[str, int] = {}
        for n, fields in out:
            for k, v in fields.items():
                if k in unique and k in merged and merged[k] != v:
                    raise InputError(f'{source}:{n}: "{inert(k)}" again (first on line {first[k]}, another '
                                     "value): which one counts?")
                merged[k] = v
                first.setdefault(k, n)
        return [(out[0][0], merged)]
    return out


class _Repeated(Exception):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Repeated(k)
        out[k] = v
    return out


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _number(text: str) -> float | None:
    """A finite decimal number as a CSV, JSON or a scorer writes one (``float`` alone also takes
    ``1_000``, ``nan``, ``infinity`` and non-ASCII digits)."""
    text = text.strip()
    if not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def parse_rows(data: bytes, spec: Spec, *, source: str, known: Mapping[str, str]) -> list[Row]:
    """The rows of one run's output; ``known`` is what relgate fills (board, commit, …) and
    what the batch was given (``--meta``); a row's own column wins over neither: a row that
    contradicts the board it was measured on is refused too."""
    metrics = metrics_of(spec)
    records = parse_records(data, fmt=spec.format, source=source, select=spec.select, merge=not spec.key,
                            unique=(*spec.key, *metrics))
    directions = spec.metrics if isinstance(spec, MeasureSpec) else {}
    rows = []
    seen: dict[tuple[str, ...], int] = {}
    for n, row_fields in records:
        where = f"{source}:{n}"
        for column in spec.key:
            if not row_fields.get(column, "").strip():
                raise InputError(f'{where}: missing key column "{column}" (the key is {", ".join(spec.key)})')
        for column, text in row_fields.items():
            why = line_problem(column) or line_problem(text)
            if why is not None:
                raise InputError(f'{where}: column "{inert(column)}" {why}')
        key = tuple(row_fields[k] for k in spec.key)
        if spec.key and key in seen:
            raise InputError(f"{where}: the row {', '.join(f'{c}={v}' for c, v in zip(spec.key, key))} again "
                             f"(first on line {seen[key]}): one row per key in a run (which one counts?)")
        seen[key] = n
        values: dict[str, float] = {}
        for metric in metrics:
            if metric not in row_fields:
                raise InputError(f'{where}: missing metric "{metric}"')
            value = _number(row_fields[metric])
            if value is None:
                raise InputError(f'{where}: metric "{metric}" is not a finite number: "{row_fields[metric]}"')
            if directions.get(metric) in ("lower", "higher") and not value > 0:
                raise InputError(f'{where}: metric "{metric}" is {row_fields[metric]}: a time or a rate '
                                 f'("{directions[metric]}" is better) must be above 0')
            values[metric] = value
        meta = {k: v for k, v in row_fields.items() if k not in spec.key and k not in metrics}
        if "board" in meta and known.get("board") and meta["board"] != known["board"]:
            raise InputError(f'{where}: board "{meta["board"]}" but the batch is for board "{known["board"]}" '
                             "(boards are never merged)")
        meta = {**{k: v for k, v in known.items() if v}, **{k: v for k, v in meta.items() if v}}
        for field in spec.metadata:
            if not meta.get(field, "").strip():
                raise InputError(f'{where}: missing required metadata "{field}" '
                                 f"(a column, or --meta {field}=…)")
        rows.append(Row(line=n, key=key, metrics=values, metadata=meta))
    if not rows:
        raise InputError(f"{source}: no measurement rows"
                         + (f" (lines starting with {', '.join(spec.select)})" if spec.select else ""))
    return rows


def record_batch(ledger: Ledger, spec: Spec, runs: Sequence[Sequence[Row]], *, project: str, side: str,
                 board: str, release: str | None, commit: str | None, dirty: bool, host: str | None,
                 metadata: Mapping[str, str], warmup: int, source: str, run_id: str | None = None,
                 raw: bytes | None = None, once: bool = False) -> int:
    """Store one batch: ``runs[i]`` are the rows of run ``i`` (warm-up runs included, marked by index)."""
    sha = path = None
    if raw is not None:
        sha, path = ledger.store_blob(raw, kind="measurement", suffix=".rows")
    batch: dict[str, Any] = dict(project=project, measure=spec.name,
                                 kind="measure" if isinstance(spec, MeasureSpec) else "quality", side=side,
                                 release=release, commit_sha=commit, dirty=dirty, board=board, host=host,
                                 metadata=dict(metadata), warmup=warmup, run_id=run_id, source=source,
                                 sha256=sha, path=path)
    rows = [(i, list(r.key), dict(r.metrics), dict(r.metadata)) for i, run in enumerate(runs) for r in run]
    return ledger.add_batch(batch, rows, once=once)


def add_measurements(ws: Any, name: str, files: Sequence[Path], *, board: str, release: str | None,
                     candidate: bool, meta: Mapping[str, str]) -> tuple[int, int]:
    """``relgate measure add``: rows measured elsewhere (a tracked baseline CSV of the last
    release, or the candidate measured on another machine) as one batch, each file one run
    of it (so runs measured elsewhere keep their spread); returns (batch id, rows per run)."""
    from relgate.ledger.gitfacts import read_git_facts
    from relgate.ledger.identity import project_identity

    spec = spec_of(ws, name)
    if (release is None) == (not candidate):
        raise InputError("measure add: say whose rows these are: --release VERSION or --candidate")
    board = check_name(board, "measure add --board")
    if release is not None:
        release = check_name(release, "measure add --release")
    meta = check_meta(meta)
    files = [Path(f) for f in files]
    if not files:
        raise InputError("measure add: name at least one FILE (each file is one run of the batch)")
    datas = [read_user_file(file, what="measurement rows") for file in files]
    known = {"board": board, **meta}
    commit, dirty = None, False
    facts = read_git_facts(ws.project.root)
    if candidate:
        commit, dirty = facts.commit, facts.dirty
        known.update(commit=commit, dirty="yes" if dirty else "no",
                     source_hash=source_hash(Path(facts.toplevel), commit, ws.project.root) or "")
    else:
        known["release"] = release or ""
    runs = [parse_rows(data, spec, source=str(file), known=known) for file, data in zip(files, datas)]
    raw = b"".join(datas)
    side = "candidate" if candidate else "release"
    project = project_identity(ws, facts).key
    with Ledger.open(ws.home) as ledger:
        try:  # the duplicate check and the insert are one write transaction: concurrent adds record it once
            batch = record_batch(ledger, spec, runs, project=project, side=side, board=board, release=release,
                                 commit=commit, dirty=dirty, host=None,
                                 metadata={k: v for k, v in known.items() if v}, warmup=0,
                                 source=f"relgate measure add {', '.join(f.name for f in files)}", raw=raw, once=True)
        except DuplicateBatch as exc:
            raise InputError(f"{files[0]}: these runs are batch #{exc.existing} already ({exc.source}); recording "
                             "them again would count the same runs twice in the pooled comparison") from None
    return batch, len(runs[0])


#: Metadata relgate fills itself: ``--meta`` may not say otherwise (``--board`` names the board).
FILLED = ("board", "release", "commit", "dirty", "source_hash")


def check_meta(meta: Mapping[str, str]) -> dict[str, str]:
    """``--meta KEY=VALUE`` pairs: one safe line each, no key relgate fills itself."""
    out = {}
    for k, v in meta.items():
        check_line(k, f"measure add --meta {inert(k)}=…", max_length=200)
        check_line(v, f"measure add --meta {k}", max_length=2000)
        if k in FILLED:
            raise InputError(f"measure add --meta {k}={v}: relgate fills {k} itself"
                             + (" (--board names the board)" if k == "board" else
                                " (--release names the release)" if k == "release" else ""))
        out[k] = v
    return out
