"""Evidence cells: parse, merge, write and diff captures.

A project's tests append *evidence cells* to the file named by its evidence env var,
one row per line::

    suite<TAB>arm<TAB>key<TAB>value

File rules (a *capture*):

- UTF-8 throughout (an invalid byte is an error, comments included), an optional BOM
  at the start; LF or CRLF line ends.
- A line that starts with ``#`` is a comment; an empty line, or one of spaces only (no
  tab), is blank; both are skipped.
- Every other line is a row: ``suite``, ``arm`` and ``key`` up to the third tab, and the
  value is *everything after the third tab* — tabs inside it are data, as the crate's own
  evidence diff reads it. ``suite``, ``arm`` and ``key`` must be non-empty (relgate is
  stricter there); ``value`` may be empty. Fields are kept exactly as written (no trimming).
- The last write of a ``(suite, arm, key)`` wins.

A malformed row or invalid UTF-8 raises :class:`~relgate.errors.InputError` naming
``file:line``.

The diff compares a candidate capture with the last accepted (base) one, cell by cell.
:func:`diff_command` backs ``relgate evidence diff BASE CANDIDATE [--json]``: it reads
both files, writes the report and returns 0 when identical, 1 on any difference; bad
input raises ``InputError`` (the CLI maps it to exit 2).

Speed. A capture holds up to millions of cells, so nothing here does Python work per
cell when it can be avoided:

- Reading: a capture shaped the usual way (a comment header, then rows) is checked with
  whole-buffer byte operations (every line holds exactly three tabs: delete all other
  bytes and compare with ``b"\\t\\t\\t\\n" * rows``), split once, and keyed with
  C-level ``map``s. Anything else (comments or blank lines among the rows, an empty
  field, a wrong tab count) goes to a line-filtering parser and, when a row is bad, to
  the line-by-line reference parser, which names the first bad ``file:line``.
- Cells are keyed internally by the string ``"suite\\tarm\\tkey"``; only cells that
  differ become ``(suite, arm, key)`` tuples.
- Diffing walks both captures position by position while their keys line up (a capture
  of the same tests run again is written in the same order), so equal stretches compare
  in sequential C-level passes; a key present on one side only is stepped over; where
  the orders disagree, the rest is compared through a hash set of whole rows.
- ``relgate evidence diff`` (:func:`diff_command`) of a usually-shaped base stays in
  bytes and holds neither file whole: both are read a block of whole lines at a time
  (:class:`~relgate.evidence.cells_parse._Blocks`). The base is read twice: first checked
  block by block and keyed once, for one set of its keys (which also proves that it writes
  no cell twice), then compared with the candidate block to block, a window at a time; only rows
  that differ are cut out, checked, put aside and, at the end, compared as sets of whole
  lines (the candidate writes a cell twice exactly when a row put aside shares its key
  with another, or with a base row that was matched); rows walked over as equal are the
  base's, so they need no check of their own. Anything else (another shape, a cell written
  twice, a bad candidate row, a base that changed between the two reads) goes through the
  reference path above.
- ``relgate evidence accept`` and ``nox -s evidence`` never hold a whole capture: see
  :mod:`relgate.evidence.stream_read` (written by ``stream_write``, compared by ``stream_diff``).

Four modules, one concern each, imported one way: :mod:`relgate.evidence.cells_parse`
(reading), :mod:`relgate.evidence.cells_diff` (diffing), :mod:`relgate.evidence.cells_secrets`
(secrets taken out of a diff) and :mod:`relgate.evidence.cells_render` (writing captures,
reporting diffs); this module is their face and keeps the import paths.
"""

from __future__ import annotations

from relgate.evidence.cells_diff import EvidenceDiff, diff_cells
from relgate.evidence.cells_parse import (  # the private ones: relgate.evidence.stream_rows reads by the same rules
    _EXPECTED,  # noqa: F401
    _FIELD_NAMES,  # noqa: F401
    HEADER,
    Cell,
    _gc_paused,  # noqa: F401
    merge_captures,
    parse_cells,
    read_cells,
)
from relgate.evidence.cells_render import (
    JSON_FORMAT,
    JSON_VERSION,
    diff_command,
    diff_to_json,
    label,
    render_capture,
    render_diff,
    write_cells,
)
from relgate.evidence.cells_secrets import redact_diff

__all__ = [
    "Cell",
    "EvidenceDiff",
    "HEADER",
    "JSON_FORMAT",
    "JSON_VERSION",
    "diff_cells",
    "render_capture",
    "label",
    "diff_command",
    "diff_to_json",
    "merge_captures",
    "parse_cells",
    "read_cells",
    "redact_diff",
    "render_diff",
    "write_cells",
]
