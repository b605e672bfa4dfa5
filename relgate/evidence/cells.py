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
  bytes: the base is checked whole and keyed once, for one set of its keys (which also
  proves that it writes no cell twice); the candidate is compared with the base buffer to
  buffer, a window at a time, and only rows that differ are cut out, checked, put aside
  and, at the end, compared as sets of whole lines (the candidate writes a cell twice
  exactly when a row put aside shares its key with another, or with a base row that was
  matched); rows walked over as equal are the base's, so they need no check of their own.
  Anything else (another shape, a cell written twice, a bad candidate row) goes through the
  reference path above.
- ``relgate evidence accept`` and ``nox -s evidence`` never hold a whole capture: see
  :mod:`relgate.evidence.stream`.
"""

from __future__ import annotations

import gc
import io
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager, suppress
from itertools import chain, compress, count, islice, repeat
from operator import itemgetter, ne
from pathlib import Path
from typing import Any, TextIO

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.core.redact import MASK, any_secret_key, is_secret_key

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

Cell = tuple[str, str, str]
"""One evidence cell's identity: ``(suite, arm, key)``."""

HEADER = "# relgate evidence"
"""First line of every capture :func:`write_cells` writes."""

JSON_FORMAT = "relgate-evidence-diff"
"""The ``format`` member of :func:`diff_to_json`'s document."""

JSON_VERSION = 1
"""The ``version`` member of :func:`diff_to_json`'s document."""

_EXPECTED = "expected suite<TAB>arm<TAB>key<TAB>value"
_FIELD_NAMES = ("suite", "arm", "key")
_BOM = "\ufeff"
_BOM_BYTES = _BOM.encode("utf-8")
_ROW_SHAPE = b"\t\t\t\n"  # a well-formed row with everything but tabs and LF deleted
_NOT_TAB_OR_LF = bytes(b for b in range(256) if b not in (0x09, 0x0A))


# --------------------------------------------------------------------------- helpers


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while millions of acyclic objects are built and compared.

    A collection would only walk the big lists and find nothing to free; the previous
    state is restored on exit.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _prehash(items: Iterable[Any]) -> None:
    """Compute (and, for strings, cache) every item's hash in one sequential pass.

    Building or probing a big set then only waits on memory: measured, the pass plus
    the set operation take about two thirds of the set operation alone.
    """
    deque(map(hash, items), maxlen=0)


def _split_key(flat_key: str) -> Cell:
    suite, arm, key = flat_key.split("\t")
    return (suite, arm, key)


def _as_cell(key: Any) -> Cell:
    return key  # type: ignore[no-any-return]


def _split_line(line: str) -> tuple[str, str]:
    """A row's ``("suite\tarm\tkey", value)``: the value is everything after the third tab."""
    suite, arm, key, value = line.split("\t", 3)
    return f"{suite}\t{arm}\t{key}", value


def _pair(row: tuple[Any, str]) -> tuple[Any, str]:
    return row


@record(eq=False)
class _Side:
    """One capture, column-wise, for diffing.

    ``keys``: unique, in first-write order. ``rows[i]``: the row that holds ``keys[i]``'s
    effective (last-written) value, such that two sides' rows are equal exactly when
    key and value are: a line ``"suite\\tarm\\tkey\\tvalue"`` for parsed captures
    (keyed by ``"suite\\tarm\\tkey"``), a ``(cell, value)`` pair for mappings.
    ``index``: membership of ``keys``. ``split_row``: a row's ``(key, value)``.
    ``to_cell``: a key's ``(suite, arm, key)``.
    """

    keys: list[Any]
    rows: list[Any]
    index: AbstractSet[Any]
    split_row: Callable[[Any], tuple[Any, str]]
    to_cell: Callable[[Any], Cell]

    @classmethod
    def of_lines(cls, keys: list[str], lines: list[str], index: AbstractSet[str]) -> _Side:
        return cls(
            keys=keys, rows=lines, index=index, split_row=_split_line, to_cell=_split_key
        )

    @classmethod
    def of_mapping(cls, cells: Mapping[Cell, str]) -> _Side:
        rows = list(cells.items())
        return cls(
            keys=list(map(itemgetter(0), rows)),
            rows=rows,
            index=cells.keys(),
            split_row=_pair,
            to_cell=_as_cell,
        )

    def value_at(self, position: int) -> str:
        return self.split_row(self.rows[position])[1]

    def to_cells(self) -> dict[Cell, str]:
        """The capture as a ``{(suite, arm, key): value}`` mapping (rows are lines)."""
        with _gc_paused():
            return dict(
                zip(
                    map(tuple, map(str.split, self.keys, repeat("\t"))),
                    map(itemgetter(3), map(str.split, self.rows, repeat("\t"), repeat(3))),
                )
            )


# --------------------------------------------------------------------------- parsing


def _decode(data: bytes, source: str) -> str:
    """Decode UTF-8; an invalid byte is an error naming ``source:line``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = 1 + data.count(b"\n", 0, exc.start)
        raise InputError(
            f"{source}:{lineno}: evidence is not valid UTF-8 "
            f"(byte 0x{data[exc.start]:02x}: {exc.reason})"
        ) from None


def _normalize(text: str) -> str:
    """Drop a leading BOM and turn CRLF into LF (line numbers are unchanged)."""
    if text.startswith(_BOM):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if text.endswith("\r"):  # a CR-terminated last line without LF
            text = text[:-1]
    return text


def _is_skipped(line: str) -> bool:
    """A comment (starts with ``#``) or a blank line (whitespace only, no tab)."""
    return line[:1] == "#" or ("\t" not in line and not line.strip())


def _parse_reference(text: str, source: str) -> _Side:
    """The reference parser, one line at a time; raises on the first malformed row."""
    lines: dict[str, str] = {}
    for lineno, line in enumerate(text.split("\n"), 1):
        if _is_skipped(line):
            continue
        fields = line.split("\t", 3)  # the value is everything after the third tab
        if len(fields) != 4:
            raise InputError(
                f"{source}:{lineno}: malformed evidence row: {_EXPECTED}, "
                f"got {len(fields)} fields"
            )
        for name, field in zip(_FIELD_NAMES, fields):
            if not field:
                raise InputError(
                    f"{source}:{lineno}: malformed evidence row: {_EXPECTED}, "
                    f"got an empty {name}"
                )
        lines["\t".join(fields[:3])] = line
    return _Side.of_lines(list(lines), list(lines.values()), lines.keys())


def _side_from_rows(lines: list[str]) -> _Side:
    """Key well-formed rows (exactly three tabs, no empty name); last write wins."""
    with _gc_paused():
        # Streamed: each (key, tab, value) triple is freed as soon as its key is taken.
        keys = list(map(itemgetter(0), map(str.rpartition, lines, repeat("\t"))))
        _prehash(keys)
        index = set(keys)
        if len(index) == len(keys):
            return _Side.of_lines(keys, lines, index)
        # A key written more than once: the first write sets the position, the last
        # one the value.
        latest = dict(zip(keys, lines))
        return _Side.of_lines(list(latest), list(latest.values()), latest.keys())


def _parse_text(text: str, source: str) -> _Side:
    """Parse normalized text: filter comments and blank lines, check, key."""
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()
    if text.startswith("#") or "\n#" in text or "" in lines:
        lines = [line for line in lines if line and line[0] != "#"]
    if (
        lines
        and text[:1] != "\t"
        and "\n\t" not in text
        and "\t\t" not in text
        and set(map(str.count, lines, repeat("\t"))) == {3}
    ):
        return _side_from_rows(lines)
    return _parse_reference(text, source)  # rows with tabs in values; a bad row: names the first bad line


def _normalized(data: bytes) -> tuple[bytes, int, int]:
    """A capture's bytes without BOM and CRs before LF, how many header lines (comments and
    empty lines before the first row) it starts with, and where its rows start."""
    if data.startswith(_BOM_BYTES):
        data = data[len(_BOM_BYTES) :]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
        if data.endswith(b"\r"):
            data = data[:-1]
    start = header_lines = 0
    while data.startswith((b"#", b"\n"), start):
        end = data.find(b"\n", start)
        start = len(data) if end < 0 else end + 1
        header_lines += 1
    return data, header_lines, start


def _well_formed(data: bytes, start: int) -> bool:
    """Whether the rows from ``start`` on (at least one) are all well formed: exactly three
    tabs, no empty suite, arm or key, no comment. Whole-buffer checks; no copy is made."""
    if start >= len(data):
        return False
    header_shape = data[:start].translate(None, _NOT_TAB_OR_LF)
    tabs_and_lfs = data.translate(None, _NOT_TAB_OR_LF)
    # LFs counted in the tabs and LFs alone: a tenth of the bytes to scan
    rows = tabs_and_lfs.count(b"\n") - header_shape.count(b"\n") + (not data.endswith(b"\n"))
    shape = _ROW_SHAPE * rows
    if not data.endswith(b"\n"):
        shape = shape[:-1]
    return (
        # exactly three tabs on every line
        len(tabs_and_lfs) == len(header_shape) + len(shape)
        and tabs_and_lfs.endswith(shape)
        # no empty suite, arm or key (rfind: a backward search skips faster here)
        and not data.startswith(b"\t", start)
        and data.rfind(b"\n\t", start) < 0
        and data.rfind(b"\t\t", start) < 0
        # no comment among the rows (the first one included: ``start`` may be any row's)
        and not data.startswith(b"#", start)
        and (data.find(b"#", start) < 0 or data.rfind(b"\n#", start) < 0)
    )


def _utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parse_bytes(data: bytes, source: str) -> _Side:
    """Parse a capture's bytes; the fast path takes a header of comments, then rows."""
    data, header_lines, start = _normalized(data)
    fast = _well_formed(data, start)
    text = _decode(data, source)
    del data
    if not fast:
        return _parse_text(text, source)
    lines = text.split("\n")
    del text, lines[:header_lines]
    if not lines[-1]:
        lines.pop()
    return _side_from_rows(lines)


def _base_body(data: bytes) -> tuple[bytes, int] | None:
    """A capture's bytes (ending with LF) and where its rows start, when it has the usual
    shape (a header, then well-formed rows) and is valid UTF-8; None for anything else (the
    reference parser then reads it)."""
    data, _header_lines, start = _normalized(data)
    if not _well_formed(data, start) or not _utf8(data):
        return None
    return (data if data.endswith(b"\n") else data + b"\n"), start


def _candidate_body(data: bytes) -> tuple[bytes, int]:
    """The candidate's bytes (ending with LF) and where its rows start, *not* checked: the
    diff checks only the rows that differ from the base's (a row equal to a base row is
    well formed and valid UTF-8, as every base row is)."""
    data, _header_lines, start = _normalized(data)
    return (data if data.endswith(b"\n") or not data else data + b"\n"), start


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such evidence file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not an evidence file") from None
    except OSError as exc:
        raise InputError(
            f"{path}: cannot read evidence file: {exc.strerror or exc}"
        ) from None


def _read_meanwhile(path: Path) -> Callable[..., bytes]:
    """Start reading ``path`` in a thread (a read releases the GIL: the copy out of the page
    cache runs beside whatever this thread does); the call returned waits for the bytes and
    raises :func:`_read_bytes`'s error (with ``keep=False`` it only waits, and drops both)."""
    import threading

    got: list[bytes] = []
    failed: list[InputError] = []

    def read() -> None:
        try:
            got.append(_read_bytes(path))
        except InputError as exc:
            failed.append(exc)

    reader = threading.Thread(target=read, name="relgate-read-candidate", daemon=True)
    reader.start()

    def wait(keep: bool = True) -> bytes:
        reader.join()
        if not keep:
            got.clear()
            return b""
        if failed:
            raise failed[0]
        return got.pop()

    return wait


def _read_side(path: Path) -> _Side:
    path = Path(path)
    # The bytes are passed on, not kept here, so the parser can free them early.
    return _parse_bytes(_read_bytes(path), str(path))


def parse_cells(text: str, *, source: str) -> dict[Cell, str]:
    """Parse a capture's text; ``source`` names it in error messages.

    Raises ``InputError("SOURCE:LINE: malformed evidence row: ...")`` on a bad row.
    """
    return _parse_text(_normalize(text), source).to_cells()


def read_cells(path: Path) -> dict[Cell, str]:
    """Read and parse one capture file; a missing file is an ``InputError``."""
    return _read_side(path).to_cells()


def merge_captures(captures: Iterable[Mapping[Cell, str]]) -> dict[Cell, str]:
    """Merge several captures into one; for a cell in several, the later one wins."""
    merged: dict[Cell, str] = {}
    for capture in captures:
        merged.update(capture)
    return merged


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


# --------------------------------------------------------------------------- diffing


@record
class EvidenceDiff:
    """A candidate capture compared with the base, cell by cell.

    Every tuple is sorted by cell. ``moved`` holds ``(cell, old, new)``; ``only_base``
    and ``only_candidate`` hold ``(cell, value)``.
    """

    identical: int
    moved: tuple[tuple[Cell, str, str], ...]
    only_base: tuple[tuple[Cell, str], ...]
    only_candidate: tuple[tuple[Cell, str], ...]
    redacted: tuple[Cell, ...] = ()  # on both sides, a secret: not compared (:func:`redact_diff`)

    @property
    def clean(self) -> bool:
        """True when the captures hold the same cells with the same values (redacted ones aside)."""
        return not (self.moved or self.only_base or self.only_candidate)


def _iter_from(seq: list[Any], start: int) -> Iterator[Any]:
    """An iterator over ``seq[start:]``, positioned in O(1) without copying."""
    it = iter(seq)
    if start:
        it.__setstate__(start)  # type: ignore[attr-defined]
    return it


def _common_run(a: list[Any], i: int, b: list[Any], j: int) -> int:
    """How many leading items ``a[i:]`` and ``b[j:]`` share, position by position."""
    first = next(compress(count(), map(ne, _iter_from(a, i), _iter_from(b, j))), None)
    return min(len(a) - i, len(b) - j) if first is None else first


def _diff_sides(base: _Side, cand: _Side) -> EvidenceDiff:
    """Diff two sides; Python-level work is per differing cell, not per cell.

    Walk both in step while their keys line up (rows compared in the same pass); at a
    key that is on one side only, step past it. When the orders disagree (or stepping
    keeps failing), compare the rest through a set of the candidate's rows.
    """
    bk, brows, b_index = base.keys, base.rows, base.index
    ck, crows, c_index = cand.keys, cand.rows, cand.index
    nb, nc = len(bk), len(ck)
    moved: list[tuple[Any, str, str]] = []  # (key, old, new)
    only_base: list[tuple[Any, str]] = []  # (key, value)
    only_cand: list[tuple[Any, str]] = []
    i = j = 0
    steps_left = 256 + (nb + nc) // 32  # past this, hashing the rest is cheaper
    while i < nb and j < nc:
        run = _common_run(bk, i, ck, j)
        if run:
            differing = map(ne, islice(_iter_from(brows, i), run), _iter_from(crows, j))
            for k in compress(count(), differing):
                moved.append((bk[i + k], base.value_at(i + k), cand.value_at(j + k)))
            i += run
            j += run
        elif not steps_left:
            break
        elif bk[i] not in c_index:
            only_base.append((bk[i], base.value_at(i)))
            i += 1
            steps_left -= 1
        elif ck[j] not in b_index:
            only_cand.append((ck[j], cand.value_at(j)))
            j += 1
            steps_left -= 1
        else:
            break  # the same keys in another order
    if i < nb and j < nc:
        # Every key before (i, j) matched its partner or is on one side only, so a
        # key still shared lies in both remainders. Candidate rows left over after
        # removing the base's rows are the new values of moved cells and the cells
        # only in the candidate.
        _prehash(_iter_from(crows, j))
        _prehash(_iter_from(brows, i))
        leftover = set(_iter_from(crows, j))
        leftover.difference_update(_iter_from(brows, i))
        wanted: dict[Any, str | None] = {}  # key: its new value, or None if gone
        only_cand_before = len(only_cand)
        for row in leftover:
            key, value = cand.split_row(row)
            if key in b_index:
                wanted[key] = value
            else:
                only_cand.append((key, value))
        del leftover
        shared = (nc - j) - (len(only_cand) - only_cand_before)
        if (nb - i) - shared:  # some keys of the base's remainder are gone
            wanted.update(dict.fromkeys(b_index - c_index))  # settled ones included
        if wanted:
            found = compress(count(i), map(wanted.__contains__, _iter_from(bk, i)))
            for p in found:
                new = wanted[bk[p]]
                if new is None:
                    only_base.append((bk[p], base.value_at(p)))
                else:
                    moved.append((bk[p], base.value_at(p), new))
    else:
        only_base.extend((bk[p], base.value_at(p)) for p in range(i, nb))
        only_cand.extend((ck[q], cand.value_at(q)) for q in range(j, nc))
    b_cell, c_cell = base.to_cell, cand.to_cell
    by_cell = itemgetter(0)
    return EvidenceDiff(
        identical=nb - len(moved) - len(only_base),
        moved=tuple(
            sorted(((b_cell(k), old, new) for k, old, new in moved), key=by_cell)
        ),
        only_base=tuple(sorted(((b_cell(k), v) for k, v in only_base), key=by_cell)),
        only_candidate=tuple(
            sorted(((c_cell(k), v) for k, v in only_cand), key=by_cell)
        ),
    )


_WINDOW = 4096  # bytes compared at once while two captures agree
_NEAR = 32  # how close the binary search comes to a difference; rows are compared from there


def _common_prefix(a: bytes, i: int, b: bytes, j: int) -> int:
    """How many bytes ``a[i:]`` and ``b[j:]`` share from the start, window by window, then by a
    binary search inside the first window that differs: exact when one of them ends there,
    else up to ``_NEAR`` bytes short of the first difference."""
    n = 0
    while True:
        w = min(_WINDOW, len(a) - i - n, len(b) - j - n)
        if w <= 0:
            return n
        if a.startswith(b[j + n : j + n + w], i + n):
            n += w
            continue
        lo, hi = 0, w  # a prefix of lo bytes is shared, one of hi bytes is not
        while hi - lo > _NEAR:
            mid = (lo + hi) // 2
            if a.startswith(b[j + n : j + n + mid], i + n):
                lo = mid
            else:
                hi = mid
        return n + lo


def _key_of(row: bytes) -> bytes:
    return row.rpartition(b"\t")[0]


def _row_cell(row: bytes) -> Cell:
    suite, arm, key, _value = row.decode("utf-8").split("\t")
    return (suite, arm, key)


def _row_value(row: bytes) -> str:
    return row.rpartition(b"\t")[2].decode("utf-8")


def _take_matched(rows: set[bytes], others: Iterable[bytes]) -> list[bytes]:
    """Remove from ``rows`` every one of ``others`` it holds (``others`` has no row twice) and
    return the others it does not hold. One probe of the set per row: a membership test and a
    removal after it probe twice, and with rows in another order than the set's each probe is a
    cache miss (shuffled captures: 0.23 instead of 0.43 s for 1,000,000 rows)."""
    missing: list[bytes] = []
    remove, keep = rows.remove, missing.append
    for row in others:
        try:
            remove(row)
        except KeyError:
            keep(row)
    return missing


def _diff_bodies(bodies: list[tuple[bytes, int]]) -> EvidenceDiff | None:
    """Diff two captures (``[(base, start), (candidate, start)]``: the bytes, ending with LF,
    and where their rows start; the list is emptied, so the buffers are freed as soon as they
    have served); None when a capture writes a cell twice (the reference path applies "the
    last write wins") or a candidate row it looks at is not well formed (the reference path
    names the line).

    The base's rows were checked (:func:`_base_body`). Only the base is keyed, once, for one
    set of its keys (each key once, or None). The two buffers are then compared
    as they are, a window at a time, and only where they differ is a row cut out: a moved
    value (the same key on both sides) is put aside with its partner and the walk goes on; a
    row only the candidate has, or a base row that is gone here, is put aside and the walk
    steps past it; where the orders disagree, the rest of both is put aside. The candidate's
    rows walked over as equal are the base's, so well formed; the ones put aside and the rest
    are checked. The rows put aside are compared as sets of whole lines, and only the ones
    left are split into cells. The candidate writes a cell twice exactly when two of its rows
    put aside share a key, or one's key is a base key whose base row was matched (and so is
    in the candidate too).
    """
    (base, ib), (cand, ic) = bodies
    bodies.clear()
    base_start, cand_start = ib, ic
    rows: list[bytes] | None = None
    if _key_of(base[ib : base.find(b"\n", ib)]) == _key_of(cand[ic : cand.find(b"\n", ic)]):  # in step, as usual
        lines = io.BytesIO(base)  # one line at a time: each is freed as soon as its key is cut out
        lines.seek(base_start)
        keys = list(map(itemgetter(0), map(bytes.rpartition, lines, repeat(b"\t"))))
        del lines
    else:  # the orders may disagree from the start: the rows are kept for the sets below
        rows = base.split(b"\n")
        rows.pop()
        del rows[: base.count(b"\n", 0, base_start)]
        keys = list(map(itemgetter(0), map(bytes.rpartition, rows, repeat(b"\t"))))
    nb = len(keys)
    _prehash(keys)
    base_keys = set(keys)
    del keys
    if len(base_keys) != nb:
        return None
    gone: list[bytes] = []  # base rows not matched by an equal candidate row (yet)
    new: list[bytes] = []  # candidate rows not matched by an equal base row (yet)
    lb, lc = len(base), len(cand)
    steps_left = 256 + nb // 16  # past this many one-sided rows, the sets are cheaper
    while ib < lb and ic < lc:
        n = _common_prefix(base, ib, cand, ic)
        if ib + n >= lb or ic + n >= lc:  # one side ends inside the shared bytes (at a row's end)
            ib, ic = ib + n, ic + n
            break
        cut = base.rfind(b"\n", ib, ib + n)  # rows up to the last shared LF are equal
        if cut >= 0:
            ic += cut + 1 - ib
            ib = cut + 1
        while True:  # the first row that differs is at most a few rows on
            eb, ec = base.find(b"\n", ib), cand.find(b"\n", ic)
            if eb - ib != ec - ic or not base.startswith(cand[ic:ec], ib):
                break
            ib, ic = eb + 1, ec + 1
        rb, rc = base[ib:eb], cand[ic:ec]
        kc = _key_of(rc)
        if _key_of(rb) == kc:  # a moved value: the walk stays in step
            gone.append(rb)
            new.append(rc)
            ib, ic = eb + 1, ec + 1
            continue
        if not steps_left:
            break
        steps_left -= 1
        if kc not in base_keys:  # a cell only the candidate has
            new.append(rc)
            ic = ec + 1
            continue
        after = base.find(b"\n", eb + 1)
        if after > 0 and _key_of(base[eb + 1 : after]) == kc:  # the base row's cell is gone here
            gone.append(rb)
            ib = eb + 1
            continue
        break  # the orders disagree: compare the rest as sets
    # The candidate's rows that are not the base's must be well formed, or the reference
    # parser reads both (and names the first bad line).
    if new:
        aside = b"\n".join(new) + b"\n"
        if not (_well_formed(aside, 0) and _utf8(aside)):
            return None
        del aside
    if ic < lc:
        if ic == cand_start:  # the whole candidate (its header included: comments are UTF-8 too)
            if not (_well_formed(cand, ic) and _utf8(cand)):
                return None
            rest_c = cand.split(b"\n")
            del rest_c[: cand.count(b"\n", 0, cand_start)]
        else:
            if not (_well_formed(cand, ic) and (cand.isascii() or _utf8(cand[ic:]))):
                return None
            rest_c = cand[ic:].split(b"\n")
        rest_c.pop()
    else:
        rest_c = []
    if cand_start and not _utf8(cand[:cand_start]):
        return None
    del cand
    # Every base row is walked over as equal, put aside, or left in the rest.
    if ib == base_start and rows is not None:
        rest_b = rows
    elif ib == base_start:  # the whole base, its header dropped
        rest_b = base.split(b"\n")
        rest_b.pop()
        del rest_b[: base.count(b"\n", 0, base_start)]
    else:
        rest_b = base[ib:].split(b"\n")
        rest_b.pop()
    del base, rows
    identical = nb - len(gone) - len(rest_b)
    if len(rest_b) > 1024 or len(rest_c) > 1024:
        _prehash(rest_b)
        _prehash(rest_c)
    new_set = set(chain(new, rest_c))
    if len(new_set) != len(new) + len(rest_c):
        return None  # the candidate writes a row twice
    only_gone = _take_matched(new_set, chain(gone, rest_b))
    identical += len(gone) + len(rest_b) - len(only_gone)
    del gone, new, rest_b, rest_c
    gone_by_key = {_key_of(row): row for row in only_gone}
    new_by_key: dict[bytes, bytes] = {}
    for row in new_set:
        key = _key_of(row)
        if key in new_by_key or (key in base_keys and key not in gone_by_key):
            return None  # the candidate writes this cell twice
        new_by_key[key] = row
    del base_keys
    moved, only_base = [], []
    for key, row in gone_by_key.items():
        other = new_by_key.pop(key, None)
        if other is None:
            only_base.append((_row_cell(row), _row_value(row)))
        else:
            moved.append((_row_cell(row), _row_value(row), _row_value(other)))
    only_cand = [(_row_cell(row), _row_value(row)) for row in new_by_key.values()]
    by_cell = itemgetter(0)
    return EvidenceDiff(identical=identical, moved=tuple(sorted(moved, key=by_cell)),
                        only_base=tuple(sorted(only_base, key=by_cell)),
                        only_candidate=tuple(sorted(only_cand, key=by_cell)))


def _diff_files(base: Path, candidate: Path) -> EvidenceDiff:
    """Diff two capture files: through :func:`_diff_bodies` when the base has the usual shape,
    no cell is written twice and the candidate's rows that differ are well formed, else
    through the reference parser (which also names a bad line)."""
    with _gc_paused():
        bodies: list[tuple[bytes, int]] = []
        candidate_bytes = _read_meanwhile(Path(candidate))  # while the base is read and checked
        try:
            body = _base_body(_read_bytes(Path(base)))
        except BaseException:
            candidate_bytes(keep=False)  # the base's error is the one to report
            raise
        if body is None:  # the reference path reads both, the base's errors first
            candidate_bytes(keep=False)
        else:
            bodies.append(body)
            bodies.append(_candidate_body(candidate_bytes()))
        del body
        d = _diff_bodies(bodies) if len(bodies) == 2 else None
        bodies.clear()
        if d is None:
            base_side = _read_side(base)
            candidate_side = _read_side(candidate)
            d = _diff_sides(base_side, candidate_side)
            del base_side, candidate_side
    return d


def diff_cells(base: Mapping[Cell, str], candidate: Mapping[Cell, str]) -> EvidenceDiff:
    """Compare two captures cell by cell."""
    with _gc_paused():
        return _diff_sides(_Side.of_mapping(base), _Side.of_mapping(candidate))


def label(cell: Cell) -> str:
    """``suite / arm / key``, as the diff prints a cell."""
    return " / ".join(cell)


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
        yield f"MOVED {label(cell)} | {old} -> {new}"
    for cell, value in d.only_base:
        yield f"ONLY-BASE {label(cell)} | {value}"
    for cell, value in d.only_candidate:
        yield f"ONLY-CANDIDATE {label(cell)} | {value}"
    for cell in d.redacted:
        yield f"REDACTED {label(cell)} | the value is a secret: redacted, not compared"
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


# --------------------------------------------------------------------------- secrets


def _masked_keys(path: Path) -> set[bytes]:
    """``suite\tarm\tkey`` of the rows whose value is the mask ``***`` (a secret the runner
    redacted); one C-level search of the file when it holds none."""
    import mmap

    try:
        with open(path, "rb") as handle:
            if not os.fstat(handle.fileno()).st_size:
                return set()
            view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return set()
    needle = MASK.encode()
    keys: set[bytes] = set()
    with view:
        at = view.find(b"*")  # one byte: memchr, and "*" is rare in captures (a tab is on every row)
        while at >= 0:
            end = at + len(needle)
            if view[at - 1:end] == b"\t" + needle and view[end:end + 1] in (b"", b"\n", b"\r"):
                fields = view[view.rfind(b"\n", 0, at) + 1:end].split(b"\t", 3)
                if len(fields) == 4 and fields[3] == needle and fields[0][:1] != b"#":
                    keys.add(b"\t".join(fields[:3]))
            at = view.find(b"*", max(end, at + 1) if view[at:end] == needle else at + 1)
    return keys


def redact_diff(d: EvidenceDiff, base: Iterable[Path], candidate: Iterable[Path]) -> EvidenceDiff:
    """The diff with secrets taken out of the comparison: a cell whose key names a secret
    (:func:`~relgate.core.redact.is_secret_key`), or whose value is the mask on either side, is
    ``redacted`` rather than moved; a secret only one side holds keeps its place with its value
    masked; a masked cell on both sides is redacted, not identical. Only the cells that differ
    are looked at, and the files only searched for the mask."""
    differ = [c for c, *_ in d.moved] + [c for c, _ in d.only_base] + [c for c, _ in d.only_candidate]
    secret = any_secret_key(c[2] for c in differ)
    masked = [set().union(*map(_masked_keys, paths)) for paths in (base, candidate)]
    if not secret and not masked[0] and not masked[1]:
        return d  # the usual case: two C-level searches of the files, one of the differing keys
    moved, redacted = [], []
    for cell, old, new in d.moved:
        (redacted if MASK in (old, new) or (secret and is_secret_key(cell[2])) else moved).append((cell, old, new))
    differs = set(differ)
    both = [cell for cell in map(_row_cell_of_key, masked[0] & masked[1]) if cell not in differs]
    cells = sorted({*(c for c, *_ in redacted), *both})
    if not cells and not secret:
        return d

    def hide(rows: tuple[tuple[Cell, str], ...]) -> tuple[tuple[Cell, str], ...]:
        return tuple((c, MASK if is_secret_key(c[2]) else v) for c, v in rows)

    return EvidenceDiff(identical=d.identical - len(both), moved=tuple(moved), only_base=hide(d.only_base),
                        only_candidate=hide(d.only_candidate), redacted=tuple(cells))


def _row_cell_of_key(key: bytes) -> Cell:
    suite, arm, name = key.decode("utf-8", "replace").split("\t")
    return (suite, arm, name)
