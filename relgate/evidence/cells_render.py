"""Evidence cells, writing and reporting: a capture rendered and written atomically, a diff as
text lines or JSON, and ``relgate evidence diff`` (:func:`diff_command`).

The rules and how the fast paths work: :mod:`relgate.evidence.cells`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import suppress
from operator import itemgetter
from pathlib import Path
from typing import Any, TextIO

from relgate.core.errors import InputError
from relgate.core.text import inert
from relgate.evidence.cells_diff import EvidenceDiff, _diff_files
from relgate.evidence.cells_parse import _FIELD_NAMES, HEADER, Cell
from relgate.evidence.cells_secrets import redact_diff

__all__ = ["JSON_FORMAT", "JSON_VERSION", "diff_command", "diff_to_json", "label", "render_capture", "render_diff",
           "write_cells"]

JSON_FORMAT = "relgate-evidence-diff"
"""The ``format`` member of :func:`diff_to_json`'s document."""

JSON_VERSION = 1
"""The ``version`` member of :func:`diff_to_json`'s document."""


# --------------------------------------------------------------------------- writing


def _check_writable(cell: Cell, value: str) -> str | None:
    """Why ``cell = value`` would not read back as written, or None."""
    for name, field in zip(_FIELD_NAMES, cell):
        if not field:
            return f"empty {name}"
    for name, field in zip(_FIELD_NAMES, cell):
        if "\t" in field or "\n" in field:
            return f"{name} {field!r} holds a tab or a newline"
    if "\n" in value:  # a tab in a value is data: it reads back as written
        return f"value {value!r} holds a newline"
    if cell[0].startswith("#"):
        return f"suite {cell[0]!r} would read as a comment"
    if value.endswith("\r"):
        return f"value {value!r} ends with a carriage return"
    return None


def render_capture(cells: Mapping[Cell, str]) -> str:
    """A capture as the text :func:`write_cells` writes (sorted, with the header line)."""
    rows = sorted(cells.items(), key=itemgetter(0))
    body = "\n".join(["\t".join((*cell, value)) for cell, value in rows])
    # One pass over the whole text instead of a check per cell; the per-cell check
    # runs only to name the first offender.
    if rows and (
        body.count("\t") != 3 * len(rows)
        or body.count("\n") != len(rows) - 1
        or body.startswith(("\t", "#"))
        or "\n\t" in body
        or "\t\t" in body
        or "\n#" in body
        or "\r\n" in body
        or body.endswith("\r")
    ):
        for cell, value in rows:
            problem = _check_writable(cell, value)
            if problem:
                raise InputError(f"evidence cell {label(cell)}: {problem}")
    return f"{HEADER}\n{body}\n" if rows else f"{HEADER}\n"


def write_cells(path: Path, cells: Mapping[Cell, str]) -> None:
    """Write a capture, sorted by cell, under a ``# relgate evidence`` header.

    Atomic: the text goes to a temporary file in the same directory, which then
    replaces ``path``; on failure no temporary file is left behind. A cell that would
    not read back as written (a tab or newline in a field, an empty name, a suite that
    reads as a comment) is an ``InputError``, and nothing is written.
    """
    path = Path(path)
    text = render_capture(cells)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{path}: evidence cannot be encoded as UTF-8: {exc}") from None
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o644
    try:
        import tempfile  # only a capture that is written needs it

        fd, tmp = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
        )
    except OSError as exc:
        raise InputError(
            f"{path}: cannot write evidence file: {exc.strerror or exc}"
        ) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        with suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputError(
                f"{path}: cannot write evidence file: {exc.strerror or exc}"
            ) from None
        raise



def label(cell: Cell) -> str:
    """``suite / arm / key``, as the diff prints a cell."""
    return " / ".join(cell)


def _shown(text: str) -> str:
    """A cell's name or value on a console: a CR, an ANSI escape or a bidi control is shown as
    its escape (``\\r``, ``\\x1b``), so that no value can rewrite the line or forge the summary."""
    return inert(text, keep="\t")  # a tab inside a value is data, and rewrites nothing


def render_diff(d: EvidenceDiff) -> Iterator[str]:
    """The text report, one line at a time (no line ends)::

        MOVED suite / arm / key | old -> new
        ONLY-BASE suite / arm / key | value
        ONLY-CANDIDATE suite / arm / key | value
        N identical, M moved, B only in base, C only in candidate

    All MOVED lines first, then ONLY-BASE, then ONLY-CANDIDATE, each sorted by cell;
    the summary line is always last.
    """
    for cell, old, new in d.moved:
        yield _shown(f"MOVED {label(cell)} | {old} -> {new}")
    for cell, value in d.only_base:
        yield _shown(f"ONLY-BASE {label(cell)} | {value}")
    for cell, value in d.only_candidate:
        yield _shown(f"ONLY-CANDIDATE {label(cell)} | {value}")
    for cell in d.redacted:
        yield _shown(f"REDACTED {label(cell)} | the value is a secret: redacted, not compared")
    yield (
        f"{d.identical} identical, {len(d.moved)} moved, "
        f"{len(d.only_base)} only in base, {len(d.only_candidate)} only in candidate"
        + (f", {len(d.redacted)} redacted (not compared)" if d.redacted else "")
    )


def diff_to_json(d: EvidenceDiff) -> dict[str, Any]:
    """The diff as JSON-ready data. Shape (version 1; members are stable)::

        {
          "format": "relgate-evidence-diff",
          "version": 1,
          "clean": false,
          "counts": {"identical": N, "moved": M, "only_base": B, "only_candidate": C},
          "moved": [{"suite": s, "arm": a, "key": k, "old": v0, "new": v1}, ...],
          "only_base": [{"suite": s, "arm": a, "key": k, "value": v}, ...],
          "only_candidate": [{"suite": s, "arm": a, "key": k, "value": v}, ...]
        }

    Lists are sorted by (suite, arm, key), as in :func:`render_diff`.
    """
    return {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "clean": d.clean,
        "counts": {
            "identical": d.identical,
            "moved": len(d.moved),
            "only_base": len(d.only_base),
            "only_candidate": len(d.only_candidate),
        },
        "moved": [
            {"suite": s, "arm": a, "key": k, "old": old, "new": new}
            for (s, a, k), old, new in d.moved
        ],
        "only_base": [
            {"suite": s, "arm": a, "key": k, "value": v} for (s, a, k), v in d.only_base
        ],
        "only_candidate": [
            {"suite": s, "arm": a, "key": k, "value": v}
            for (s, a, k), v in d.only_candidate
        ],
        **({"redacted": [{"suite": s, "arm": a, "key": k} for s, a, k in d.redacted]} if d.redacted else {}),
    }


def diff_command(base: Path, candidate: Path, *, as_json: bool, out: TextIO) -> int:
    """``relgate evidence diff``: compare two capture files and write the report.

    Writes :func:`render_diff`'s lines (or, with ``as_json``, :func:`diff_to_json`'s
    document) to ``out``. Returns 0 when identical, 1 on any difference. A missing
    file, invalid UTF-8 or a malformed row raises ``InputError`` (exit 2 in the CLI)
    before anything is written.
    """
    d = redact_diff(_diff_files(base, candidate), [Path(base)], [Path(candidate)])
    if as_json:
        import json

        json.dump(diff_to_json(d), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write("\n".join(render_diff(d)))
        out.write("\n")
    return 0 if d.clean else 1
