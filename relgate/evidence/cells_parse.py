"""Evidence cells, reading: the capture rules and both parsers (the whole-buffer fast path and
the line-by-line reference that names the first bad ``file:line``), merging captures.

The rules and how the fast paths work: :mod:`relgate.evidence.cells`.
"""

from __future__ import annotations

import gc
import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

from relgate.core.errors import InputError
from relgate.core.readers import MAX_INPUT_BYTES, MAX_LINE_BYTES, check_line_lengths, kind_of
from relgate.core.record import record

__all__ = ["Cell", "HEADER", "merge_captures", "parse_cells", "read_cells"]

Cell = tuple[str, str, str]
"""One evidence cell's identity: ``(suite, arm, key)``."""

HEADER = "# relgate evidence"
"""First line of every capture :func:`write_cells` writes."""

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


def _plain(data: bytes, *, first: bool, last: bool) -> bytes:
    """Whole lines of a capture without its BOM (``first``: they start the file) and the CR of
    each CRLF (and, ``last``: they end the file, the CR that ends it)."""
    if first and data.startswith(_BOM_BYTES):
        data = data[len(_BOM_BYTES) :]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
        if last and data.endswith(b"\r"):  # a CR-terminated last line without LF
            data = data[:-1]
    return data


def _normalized(data: bytes) -> tuple[bytes, int, int]:
    """A capture's bytes without BOM and CRs before LF, how many header lines (comments and
    empty lines before the first row) it starts with, and where its rows start."""
    data = _plain(data, first=True, last=True)
    start = header_lines = 0
    while data.startswith((b"#", b"\n"), start):
        end = data.find(b"\n", start)
        start = len(data) if end < 0 else end + 1
        header_lines += 1
    return data, header_lines, start


def _well_formed(data: bytes, start: int) -> bool:
    """Whether the rows from ``start`` on (at least one) are all well formed: exactly three
    tabs, no empty suite, arm or key, no comment. Whole-buffer checks; no copy is made."""
    return _row_count(data, start) is not None


def _row_count(data: bytes, start: int) -> int | None:
    """How many rows there are from ``start`` on, when there is at least one and every one is
    well formed (see :func:`_well_formed`); None otherwise."""
    if start >= len(data):
        return None
    header_shape = data[:start].translate(None, _NOT_TAB_OR_LF)
    tabs_and_lfs = data.translate(None, _NOT_TAB_OR_LF)
    # LFs counted in the tabs and LFs alone: a tenth of the bytes to scan
    rows = tabs_and_lfs.count(b"\n") - header_shape.count(b"\n") + (not data.endswith(b"\n"))
    shape = _ROW_SHAPE * rows
    if not data.endswith(b"\n"):
        shape = shape[:-1]
    well_formed = (
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
    return rows if well_formed else None


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


def _cannot_read(path: Path, exc: OSError) -> InputError:
    """The one-line error for a capture that cannot be read."""
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{path}: no such evidence file")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{path}: is a directory, not an evidence file")
    return InputError(f"{path}: cannot read evidence file: {exc.strerror or exc}")


def _regular(path: Path) -> None:
    """A capture is a regular file within :data:`MAX_INPUT_BYTES`: a FIFO or a device would hang
    the read (or never end), a 2 GiB sparse file is refused from its size."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _cannot_read(path, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory, not an evidence file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: {kind_of(st.st_mode)}, not an evidence file")
    if st.st_size > MAX_INPUT_BYTES:
        raise InputError(f"{path}: {st.st_size} bytes, over the {MAX_INPUT_BYTES}-byte limit of an evidence capture")


def _read_bytes(path: Path) -> bytes:
    _regular(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _cannot_read(path, exc) from None
    check_line_lengths(data, path, what="an evidence capture")
    return data


_BLOCK = 1 << 18  # bytes a capture is read in, for a diff of two files (256 KiB: 4 MiB less peak than 1 MiB, no slower)


class _Blocks:
    """A capture file's rows read forward in blocks of whole lines, normalized as
    :func:`_normalized` normalizes a whole capture: the BOM dropped, each CR before an LF
    removed, a last line without LF given one (a CR at the very end dropped first).
    :meth:`first` reads past the header (comments and empty lines before the first row) into
    ``header``; :meth:`more` reads on. A read error is an :class:`InputError` naming the file,
    as :func:`_read_bytes`'s."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done = False  # nothing is left to read
        self.header = b""
        self._block = _BLOCK
        self._carry = b""  # what followed the last LF read: part of a line
        _regular(path)
        try:
            self._handle = open(path, "rb")  # noqa: SIM115 (closed by close())
        except OSError as exc:
            raise _cannot_read(path, exc) from None
        self._stat = os.fstat(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def unchanged(self) -> bool:
        """Whether the file is still the one opened, as it was (size and modification time):
        a diff reads the base twice and trusts the first pass's checks in the second."""
        now = os.fstat(self._handle.fileno())
        return (now.st_size, now.st_mtime_ns) == (self._stat.st_size, self._stat.st_mtime_ns)

    def _read(self) -> bytes:
        try:
            return self._handle.read(self._block)
        except OSError as exc:
            raise _cannot_read(self.path, exc) from None

    def more(self) -> bytes:
        """The next block of whole, normalized lines (at least one); b"" at the end."""
        data = self._carry
        while not self.done:
            raw = self._read()
            if not raw:
                self.done = True
                self._carry = b""
                data = _plain(data, first=False, last=True)
                return data + b"\n" if data and not data.endswith(b"\n") else data
            data += raw
            cut = data.rfind(b"\n") + 1  # a partial last line waits for the rest of it
            if cut:
                self._carry = data[cut:]
                return _plain(data[:cut], first=False, last=False)
            if len(data) > MAX_LINE_BYTES:  # a line with no end (a sparse file, a stream of NULs)
                raise InputError(f"{self.path}: a line over the {MAX_LINE_BYTES}-byte line limit of an evidence "
                                 "capture")
        return b""

    def first(self) -> bytes:
        """Rewind, read the header into ``header`` and return the first block of rows (b"" when
        there is none)."""
        self._handle.seek(0)
        self.done, self._carry = False, b""
        while len(self._carry) < len(_BOM_BYTES) and not self.done:  # the BOM is whole first
            raw = self._read()
            self._carry += raw
            self.done = not raw
        self._carry = self._carry.removeprefix(_BOM_BYTES)
        self.done = False
        head: list[bytes] = []
        while data := self.more():
            start = 0
            while data.startswith((b"#", b"\n"), start) and start < len(data):
                start = data.find(b"\n", start) + 1  # whole lines: there is one
            head.append(data[:start])
            if start < len(data):
                self.header = b"".join(head)
                return data[start:]
        self.header = b"".join(head)
        return b""


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
