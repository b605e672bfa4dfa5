"""Evidence cells: parse, merge, write and diff captures.

A project's tests append *evidence cells* to the file named by its evidence env var,
one row per line::

    suite<TAB>arm<TAB>key<TAB>value

File rules (a *capture*):

- UTF-8, an optional BOM at the start; LF or CRLF line ends.
- A line whose first non-space character is ``#`` is a comment; a line of only
  whitespace (no tab) is blank; both are skipped.
- Every other line is a row of exactly four tab-separated fields. ``suite``, ``arm`` and
  ``key`` must be non-empty; ``value`` may be empty; no field holds a tab. Fields are
  kept exactly as written (no trimming).
- The last write of a ``(suite, arm, key)`` wins.

A malformed row or invalid UTF-8 raises :class:`~relgate.errors.InputError` naming
``file:line``.

The diff compares a candidate capture with the last accepted (base) one, cell by cell.
:func:`diff_command` backs ``relgate evidence diff BASE CANDIDATE [--json]``: it reads
both files, writes the report and returns 0 when identical, 1 on any difference; bad
input raises ``InputError`` (the CLI maps it to exit 2).

Speed: a capture holds up to millions of cells, so the reader avoids per-row Python
work. Rows that are well formed (the overwhelming case) are checked and split with C-level
string and dict operations; anything unusual (a tab-led or space-led line, an empty field,
a line with the wrong tab count) sends the whole text through a plain line-by-line parser,
which is the reference semantics and produces the ``file:line`` error. Internally a cell
is keyed by the string ``"suite\\tarm\\tkey"`` (two objects per cell instead of five);
only cells that differ are turned into ``(suite, arm, key)`` tuples.
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from itertools import compress, count, filterfalse, islice, repeat
from operator import itemgetter, ne
from pathlib import Path
from typing import Any, TextIO

from relgate.errors import InputError

__all__ = [
    "Cell",
    "EvidenceDiff",
    "HEADER",
    "JSON_FORMAT",
    "JSON_VERSION",
    "diff_cells",
    "diff_command",
    "diff_to_json",
    "merge_captures",
    "parse_cells",
    "read_cells",
    "render_diff",
    "write_cells",
]

Cell = tuple[str, str, str]
"""One evidence cell's identity: ``(suite, arm, key)``."""

HEADER = "# relgate evidence"
"""First line of every capture :func:`write_cells` writes."""

JSON_FORMAT = "relgate-evidence-diff"
JSON_VERSION = 1

_EXPECTED = "expected suite<TAB>arm<TAB>key<TAB>value"
_FIELD_NAMES = ("suite", "arm", "key")
_BOM = "\ufeff"


# --------------------------------------------------------------------------- parsing


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building millions of acyclic objects; restore after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _decode(data: bytes, source: str) -> str:
    """Decode UTF-8 once; an invalid byte is an error naming ``source:line``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = data.count(b"\n", 0, exc.start) + 1
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
    """Comment (first non-space character ``#``) or blank (only whitespace, no tab)."""
    if line.lstrip(" ")[:1] == "#":
        return True
    return "\t" not in line and not line.strip()


def _parse_slow(text: str, source: str) -> dict[str, str]:
    """Reference parser, one line at a time; raises on the first malformed row."""
    cells: dict[str, str] = {}
    for lineno, line in enumerate(text.split("\n"), 1):
        if _is_skipped(line):
            continue
        fields = line.split("\t")
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
        cells[line[: line.rindex("\t")]] = fields[3]
    return cells


@dataclass(frozen=True, kw_only=True, eq=False)
class _Side:
    """One capture, column-wise: unique keys in first-write order, their effective
    (last-write) values at the same positions, and a membership index over the keys.

    The diff walks two sides position by position, so two captures written in the
    same order (the usual case: the same tests, run again) compare with sequential
    C-level passes instead of a hash lookup per cell.
    """

    keys: Sequence[Any]
    values: Sequence[str]
    index: Container[Any]

    @classmethod
    def of(cls, cells: Mapping[Any, str]) -> _Side:
        return cls(keys=list(cells), values=list(cells.values()), index=cells.keys())


def _parse_flat(text: str, source: str) -> _Side:
    """Parse a capture keyed by ``"suite\\tarm\\tkey"`` (last write wins)."""
    text = _normalize(text)
    # Lines led by a space (maybe an indented comment) or a tab (an empty suite), and
    # rows with an empty arm or key ("\t\t"), are left to the reference parser.
    if text[:1] in (" ", "\t") or "\n " in text or "\n\t" in text or "\t\t" in text:
        return _Side.of(_parse_slow(text, source))
    n_comments = text.count("\n#") + (text[:1] == "#")
    lines = list(filter(None, text.split("\n")))  # drop empty lines
    if n_comments:
        if all(line[0] == "#" for line in lines[:n_comments]):
            del lines[:n_comments]  # the usual case: comments form a header
        else:
            lines = [line for line in lines if line[0] != "#"]
    if not lines:
        return _Side.of({})
    if set(map(str.count, lines, repeat("\t"))) != {3}:
        return _Side.of(_parse_slow(text, source))  # raises, naming the bad line
    del text
    with _gc_paused():
        parts = list(map(str.rpartition, lines, repeat("\t")))
        del lines
        keys = list(map(itemgetter(0), parts))
        values = list(map(itemgetter(2), parts))
        del parts
        index = set(keys)
        if len(index) == len(keys):
            return _Side(keys=keys, values=values, index=index)
        # A key written more than once: the last write wins, the first sets the order.
        return _Side.of(dict(zip(keys, values)))


def _split_key(flat_key: str) -> Cell:
    suite, arm, key = flat_key.split("\t")
    return (suite, arm, key)


def _side_to_cells(side: _Side) -> dict[Cell, str]:
    with _gc_paused():
        return dict(
            zip(map(tuple, map(str.split, side.keys, repeat("\t"))), side.values)
        )


def _read_flat(path: Path) -> _Side:
    path = Path(path)
    source = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{source}: no such evidence file") from None
    except IsADirectoryError:
        raise InputError(f"{source}: is a directory, not an evidence file") from None
    except OSError as exc:
        raise InputError(
            f"{source}: cannot read evidence file: {exc.strerror or exc}"
        ) from None
    text = _decode(data, source)
    del data
    return _parse_flat(text, source)


def parse_cells(text: str, *, source: str) -> dict[Cell, str]:
    """Parse a capture's text; ``source`` names it in error messages.

    Raises ``InputError("SOURCE:LINE: malformed evidence row: ...")`` on a bad row.
    """
    return _side_to_cells(_parse_flat(text, source))


def read_cells(path: Path) -> dict[Cell, str]:
    """Read and parse one capture file; a missing file is an ``InputError``."""
    return _side_to_cells(_read_flat(path))


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
    for name, field in zip((*_FIELD_NAMES, "value"), (*cell, value)):
        if "\t" in field or "\n" in field:
            return f"{name} {field!r} holds a tab or a newline"
    if cell[0].lstrip(" ").startswith("#"):
        return f"suite {cell[0]!r} would read as a comment"
    if value.endswith("\r"):
        return f"value {value!r} ends with a carriage return"
    return None


def _render_capture(cells: Mapping[Cell, str]) -> str:
    rows = sorted(cells.items(), key=itemgetter(0))
    body = "\n".join(["\t".join((*cell, value)) for cell, value in rows])
    # One pass over the whole text instead of a check per cell; the per-cell
    # check runs only to name the first offender.
    if rows and (
        body.count("\t") != 3 * len(rows)
        or body.count("\n") != len(rows) - 1
        or "\t\t" in body
        or "\n\t" in body
        or body.startswith(("\t", " ", "#"))
        or "\n#" in body
        or "\n " in body
        or "\r\n" in body
        or body.endswith("\r")
    ):
        for cell, value in rows:
            problem = _check_writable(cell, value)
            if problem:
                raise InputError(f"evidence cell {' / '.join(cell)}: {problem}")
    return f"{HEADER}\n{body}\n" if rows else f"{HEADER}\n"


def write_cells(path: Path, cells: Mapping[Cell, str]) -> None:
    """Write a capture, sorted by cell, under a ``# relgate evidence`` header.

    Atomic: the text goes to a temporary file in the same directory, which then
    replaces ``path``; on failure no temporary file is left behind. A cell that would
    not read back as written (a tab or newline in a field, an empty name, a suite that
    reads as a comment) is an ``InputError`` and nothing is written.
    """
    path = Path(path)
    text = _render_capture(cells)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{path}: evidence cannot be encoded as UTF-8: {exc}") from None
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o644
    try:
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


@dataclass(frozen=True, kw_only=True)
class EvidenceDiff:
    """A candidate capture compared with the base, cell by cell.

    Every tuple is sorted by cell. ``moved`` holds ``(cell, old, new)``; ``only_base``
    and ``only_candidate`` hold ``(cell, value)``.
    """

    identical: int
    moved: tuple[tuple[Cell, str, str], ...]
    only_base: tuple[tuple[Cell, str], ...]
    only_candidate: tuple[tuple[Cell, str], ...]

    @property
    def clean(self) -> bool:
        """True when the captures hold the same cells with the same values."""
        return not (self.moved or self.only_base or self.only_candidate)


def _common_run(a: Sequence[Any], i: int, b: Sequence[Any], j: int) -> int:
    """How many items ``a[i:]`` and ``b[j:]`` share, position by position, from the start.

    One sequential C-level pass (list iterators positioned with ``__setstate__``,
    no slicing), which stops at the first difference.
    """
    it_a, it_b = iter(a), iter(b)
    if i:
        it_a.__setstate__(i)  # type: ignore[attr-defined]
    if j:
        it_b.__setstate__(j)  # type: ignore[attr-defined]
    first = next(compress(count(), map(ne, it_a, it_b)), None)
    return min(len(a) - i, len(b) - j) if first is None else first


def _positions_differing(
    a: Sequence[str], i: int, b: Sequence[str], j: int, run: int
) -> Iterator[int]:
    """Offsets ``k < run`` where ``a[i + k] != b[j + k]`` (C-level scan)."""
    it_a, it_b = iter(a), iter(b)
    if i:
        it_a.__setstate__(i)  # type: ignore[attr-defined]
    if j:
        it_b.__setstate__(j)  # type: ignore[attr-defined]
    return compress(count(), map(ne, islice(it_a, run), it_b))


def _diff_sides(base: _Side, cand: _Side, to_cell: Callable[[Any], Cell]) -> EvidenceDiff:
    """Diff two sides: walk them in step while their keys line up; at a key that is
    only on one side, step past it; when the orders really disagree (or the walk keeps
    stopping), hash the rest. Python-level work is per differing cell, not per cell.
    """
    bk, bv, b_index = base.keys, base.values, base.index
    ck, cv, c_index = cand.keys, cand.values, cand.index
    nb, nc = len(bk), len(ck)
    moved: list[tuple[Any, str, str]] = []
    only_base: list[tuple[Any, str]] = []
    only_cand: list[tuple[Any, str]] = []
    i = j = 0
    steps_left = 256 + (nb + nc) // 32  # then hashing the rest is cheaper
    while i < nb and j < nc:
        run = _common_run(bk, i, ck, j)
        if run:
            for k in _positions_differing(bv, i, cv, j, run):
                moved.append((bk[i + k], bv[i + k], cv[j + k]))
            i += run
            j += run
            continue
        if not steps_left:
            break
        steps_left -= 1
        if bk[i] not in c_index:
            only_base.append((bk[i], bv[i]))
            i += 1
        elif ck[j] not in b_index:
            only_cand.append((ck[j], cv[j]))
            j += 1
        else:
            break  # the same keys in another order
    if i < nb and j < nc:
        # Keys before (i, j) are settled: each matched its partner or is on one side
        # only, so every key still shared lies in both remainders.
        rest_c = dict(zip(ck[j:], cv[j:]))
        rest_c_items = rest_c.items()
        for key, old in filterfalse(rest_c_items.__contains__, zip(bk[i:], bv[i:])):
            if key in rest_c:
                moved.append((key, old, rest_c[key]))
            else:
                only_base.append((key, old))
        only_cand.extend(
            (key, rest_c[key]) for key in filterfalse(b_index.__contains__, ck[j:])
        )
    else:
        only_base.extend(zip(bk[i:], bv[i:]))
        only_cand.extend(zip(ck[j:], cv[j:]))
    by_cell = itemgetter(0)
    return EvidenceDiff(
        identical=nb - len(moved) - len(only_base),
        moved=tuple(
            sorted(((to_cell(k), old, new) for k, old, new in moved), key=by_cell)
        ),
        only_base=tuple(sorted(((to_cell(k), v) for k, v in only_base), key=by_cell)),
        only_candidate=tuple(
            sorted(((to_cell(k), v) for k, v in only_cand), key=by_cell)
        ),
    )


def _as_cell(key: Any) -> Cell:
    return key  # type: ignore[no-any-return]


def diff_cells(base: Mapping[Cell, str], candidate: Mapping[Cell, str]) -> EvidenceDiff:
    """Compare two captures cell by cell."""
    return _diff_sides(_Side.of(base), _Side.of(candidate), _as_cell)


def _label(cell: Cell) -> str:
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
        yield f"MOVED {_label(cell)} | {old} -> {new}"
    for cell, value in d.only_base:
        yield f"ONLY-BASE {_label(cell)} | {value}"
    for cell, value in d.only_candidate:
        yield f"ONLY-CANDIDATE {_label(cell)} | {value}"
    yield (
        f"{d.identical} identical, {len(d.moved)} moved, "
        f"{len(d.only_base)} only in base, {len(d.only_candidate)} only in candidate"
    )


def diff_to_json(d: EvidenceDiff) -> dict[str, Any]:
    """The diff as JSON-ready data. Shape (version 1; keys are stable)::

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
    }


def diff_command(base: Path, candidate: Path, *, as_json: bool, out: TextIO) -> int:
    """``relgate evidence diff``: compare two capture files and write the report.

    Returns 0 when identical, 1 on any difference. A missing file, invalid UTF-8 or a
    malformed row raises ``InputError`` (exit 2 in the CLI) before anything is written.
    """
    # The cyclic GC stays paused while the big, acyclic containers live: a collection
    # would only walk millions of strings and find nothing to free.
    with _gc_paused():
        base_side = _read_flat(base)
        candidate_side = _read_flat(candidate)
        d = _diff_sides(base_side, candidate_side, _split_key)
        del base_side, candidate_side
    if as_json:
        json.dump(diff_to_json(d), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write("\n".join(render_diff(d)))
        out.write("\n")
    return 0 if d.clean else 1
