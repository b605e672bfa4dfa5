"""Rows of an evidence capture as bytes, the floor under the reader, the writer and the diff
(:mod:`relgate.evidence.stream_read`, :mod:`~relgate.evidence.stream_write`,
:mod:`~relgate.evidence.stream_diff`): a chunk of whole lines parsed and checked, keys cut out of
rows, and sorted blocks of rows merged k ways (a later stream wins on a key both hold).

The stream's order is the cells' ``(suite, arm, key)`` order, the order
:func:`~relgate.evidence.cells.write_cells` writes: bytes of ``suite\\tarm\\tkey`` compared as
they are, which is that order whenever no field holds a byte below TAB; when one does, every
key is compared through a translation that keeps it exactly (fields' bytes + 1, TAB as 0x00).
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice, repeat
from operator import eq, ge, itemgetter, methodcaller
from pathlib import Path
from typing import BinaryIO

from relgate.core.errors import InputError
from relgate.evidence.cells import _EXPECTED, _FIELD_NAMES, Cell
from relgate.evidence.cells_parse import _BOM_BYTES, _cannot_read, _plain, _row_count
from relgate.evidence.cells_parse import _utf8 as _utf8_ok

__all__ = ["MERGE_BYTES", "Block"]

MERGE_BYTES = 2 << 20
"""Bytes buffered from all runs of one stream together while they are merged."""

_NOT_LOW = bytes(range(0x09, 0x100))  # deleting these leaves the bytes that sort below TAB
_SHIFT = bytes([0x00 if b == 0x09 else min(b + 1, 0xFF) for b in range(256)])

Block = list[bytes]
"""Rows (whole lines) in cell order, one per cell. Sorting whole rows sorts them by their key
``suite\\tarm\\tkey`` (TAB ends a key and sorts below every byte of a field, shifted or not), so
a block is searched and merged as rows; keys are cut out only where cells must be told apart."""


class _NeedsShift(Exception):
    """A field holds a byte below TAB: plain byte order is not cell order, start again."""


class _RowError(Exception):
    """A malformed row (the message names ``file:line``)."""


def _order(shifted: bool) -> Callable[[bytes], bytes] | None:
    return methodcaller("translate", _SHIFT) if shifted else None


def _utf8(data: bytes, source: str, lineno: int) -> None:
    if data.isascii():
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = lineno + data.count(b"\n", 0, exc.start)
        raise InputError(f"{source}:{where}: evidence is not valid UTF-8 "
                         f"(byte 0x{data[exc.start]:02x}: {exc.reason})") from None


def _reference_rows(lines: list[bytes], source: str, lineno: int) -> list[bytes]:
    """Line by line, as ``cells_parse._parse_reference`` (a row's key is up to its third tab)."""
    rows = []
    for n, line in enumerate(lines, lineno):
        if line[:1] == b"#" or (b"\t" not in line and not line.decode("utf-8").strip()):
            continue
        fields = line.split(b"\t", 3)
        if len(fields) != 4:
            raise _RowError(f"{source}:{n}: malformed evidence row: {_EXPECTED}, got {len(fields)} fields")
        for name, value in zip(_FIELD_NAMES, fields):
            if not value:
                raise _RowError(f"{source}:{n}: malformed evidence row: {_EXPECTED}, got an empty {name}")
        rows.append(line)
    return rows


def _keys_of(rows: list[bytes], three_tabs: bool = False) -> list[bytes]:
    """Keys of well-formed rows (three tabs at C speed; a value with tabs, one by one).
    ``three_tabs``: the caller knows every row has exactly three (the parse counted them)."""
    if three_tabs or set(map(bytes.count, rows, repeat(b"\t"))) <= {3}:
        return list(map(itemgetter(0), map(bytes.rpartition, rows, repeat(b"\t"))))
    return list(map(_key, rows))


def _key(row: bytes) -> bytes:
    """The key of one well-formed row."""
    return b"\t".join(row.split(b"\t", 3)[:3])


def _bound(key: bytes, order: Callable[[bytes], bytes] | None) -> bytes:
    """A row-order bound above every row of ``key`` and below every row of a greater key: a row
    is ``key TAB value``, and no byte of a UTF-8 value is 0xFF (shifted: at most 0xF5)."""
    return key + b"\t\xff" if order is None else order(key + b"\t") + b"\xff"


def _parse_chunk(data: bytes, source: str, lineno: int, *, first: bool, last: bool, shifted: bool
                 ) -> tuple[list[bytes], bool]:
    """The rows of a chunk of whole lines whose first line is ``lineno`` (comments and blanks
    dropped), and whether every row was seen to have exactly three tabs."""
    data = _plain(data, first=first, last=last)
    _utf8(data, source, lineno)
    if not shifted and data.translate(None, _NOT_LOW):
        raise _NeedsShift
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()
    rows = lines
    if data.startswith(b"#") or b"\n#" in data or b"" in lines:  # comments or blank lines: drop them
        rows = [line for line in lines if line and line[0] != 0x23]
    if (rows and not data.startswith(b"\t") and b"\n\t" not in data and b"\t\t" not in data
            and set(map(bytes.count, rows, repeat(b"\t"))) == {3}):
        return rows, True
    return _reference_rows(lines, source, lineno), False  # tabs in values, blanks of spaces, or a bad row


def _chunks(path: Path, size: int) -> Iterator[tuple[bytes, int, bool, bool]]:
    """``(data, first line number, is first, is last)``: whole lines, about ``size`` bytes each."""
    try:
        with open(path, "rb") as handle:
            lineno, first, carry = 1, True, b""
            while True:
                block = handle.read(size)
                data = carry + block if carry else block
                if not block:
                    if data or first:
                        yield data, lineno, first, True
                    return
                cut = data.rfind(b"\n") + 1
                if not cut:  # a line longer than a chunk: read on
                    carry = data
                    continue
                chunk, carry = data[:cut], data[cut:]
                yield chunk, lineno, first, False
                lineno += chunk.count(b"\n")
                first = False
    except OSError as exc:
        raise _cannot_read(path, exc) from None


def _read_blocks(handle: BinaryIO, size: int) -> Iterator[Block]:
    """A run file (sorted, unique, well-formed rows, one per line) in blocks."""
    carry = b""
    while True:
        block = handle.read(size)
        data = carry + block if carry else block
        if not block:
            if data:
                rows = data.split(b"\n")
                if not rows[-1]:
                    rows.pop()
                yield rows
            return
        cut = data.rfind(b"\n") + 1
        if not cut:
            carry = data
            continue
        rows, carry = data[:cut - 1].split(b"\n"), data[cut:]
        yield rows


@dataclass
class _Cursor:
    """A sorted stream of blocks, consumed up to a boundary (blocks are never modified)."""

    blocks: Iterator[Block]
    rows: list[bytes] = field(default_factory=list)
    pos: int = 0
    done: bool = False
    _last: bytes = b""  # the key of the block's last row

    def fill(self) -> bool:
        """Buffer at least one row unless the stream is over; True when rows are buffered."""
        while self.pos >= len(self.rows) and not self.done:
            try:
                self.rows = next(self.blocks)
                self.pos = 0
                if self.rows:
                    self._last = _key(self.rows[-1])
            except StopIteration:
                self.done = True
        return self.pos < len(self.rows)

    @property
    def last(self) -> bytes | None:
        """The last buffered key, when rows may follow it (None: nothing bounds the merge here)."""
        return self._last if self.pos < len(self.rows) and not self.done else None

    def take(self, bound: bytes | None, order: Callable[[bytes], bytes] | None) -> Block:
        """The buffered rows up to ``bound`` (a :func:`_bound`; all of them for None)."""
        n = len(self.rows) if bound is None else bisect_right(self.rows, bound, lo=self.pos, key=order)
        taken = self.rows if self.pos == 0 and n == len(self.rows) else self.rows[self.pos:n]
        self.pos = n
        return taken


def _boundary(cursors: Iterable[_Cursor], order: Callable[[bytes], bytes] | None) -> bytes | None:
    """The row bound of the smallest last buffered key among streams that go on (None: take everything)."""
    lasts = [c.last for c in cursors if c.last is not None]
    if not lasts:
        return None
    return _bound(min(lasts, key=order) if order is not None else min(lasts), order)


def _merge(streams: list[Iterator[Block]], order: Callable[[bytes], bytes] | None, three_tabs: bool
           ) -> Iterator[Block]:
    """Merge sorted streams of unique keys; on a key several hold, the later stream wins."""
    if len(streams) == 1:
        yield from streams[0]
        return
    cursors = [_Cursor(s) for s in streams]
    while True:
        live = [c for c in cursors if c.fill()]
        if not live:
            return
        bound = _boundary(live, order)
        parts = [part for part in (cursor.take(bound, order) for cursor in live) if part]
        # in stream order, so a later stream's row of a key comes later and wins
        yield parts[0] if len(parts) == 1 else _unique_sorted([r for rows in parts for r in rows], order, three_tabs)


def _unique_sorted(rows: list[bytes], order: Callable[[bytes], bytes] | None, three_tabs: bool) -> Block:
    """Rows (in write order) sorted, one per key: the last write wins. Only when a key repeats
    does a dict pick the winners."""
    in_order = sorted(rows, key=order)
    if not _repeats(_keys_of(in_order, three_tabs)):
        return in_order
    latest = dict(zip(_keys_of(rows, three_tabs), rows))  # in write order: the last write of a cell wins
    return list(map(latest.__getitem__, sorted(latest, key=order)))


def _repeats(keys: list[bytes]) -> bool:
    """Two neighbours of a sorted key list are equal."""
    return any(map(eq, keys, islice(keys, 1, None)))


@dataclass(frozen=True)
class _InPlace:
    """A capture file already in cell order with unique cells: merged straight from the file."""

    path: Path


@dataclass(frozen=True)
class _Plain:
    """A file whose bytes from ``offset`` on are rows in cell order, one per key, well formed,
    each on its own line (the last may lack its LF): GNU sort's output of a plain capture, or a
    plain capture proven in order. Read back by splitting lines, no parsing."""

    path: Path
    offset: int = 0
    rows: int | None = None  # how many, where known


def _plain_rows(data: bytes, start: int) -> int | None:
    """How many rows ``data`` (whole lines) holds from ``start`` on when they are plain: well
    formed (three tabs, no empty suite, arm or key, no comment or blank line), valid UTF-8, no
    CR and no byte below TAB; None otherwise (the reference path then reads the file)."""
    if b"\r" in data or data.translate(None, _NOT_LOW) or not _utf8_ok(data):
        return None
    return _row_count(data, start)


def _rows_start(data: bytes) -> int | None:
    """Where the rows of a file's first chunk start: after a BOM and the comment lines before the
    first row (a header such as a baseline's); None when the chunk holds no row."""
    start = len(_BOM_BYTES) if data.startswith(_BOM_BYTES) else 0
    while data.startswith(b"#", start):
        end = data.find(b"\n", start)
        if end < 0:
            return None
        start = end + 1
    return start if start < len(data) else None


def _in_order(keys: list[bytes], after: bytes | None, order: Callable[[bytes], bytes] | None) -> bool:
    """``keys`` strictly increasing, and all after ``after``."""
    seq = keys if order is None else list(map(order, keys))
    if after is not None and seq and not (after < seq[0]):
        return False
    return not any(map(ge, seq, islice(seq, 1, None)))


def _opened(run: _Plain) -> BinaryIO:
    """The run's file, at its first row."""
    try:
        handle = open(run.path, "rb")
    except OSError as exc:
        raise _cannot_read(run.path, exc) from None
    handle.seek(run.offset)
    return handle


def _ends_lf(path: Path) -> bool:
    """Whether the file's last byte is LF (or it is empty)."""
    with open(path, "rb") as handle:
        if handle.seek(0, os.SEEK_END) == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _reparse(path: Path, size: int, shifted: bool) -> Iterator[Block]:
    """A checked, in-order capture file, parsed again in blocks."""
    for data, lineno, first, last in _chunks(path, size):
        rows, _three_tabs = _parse_chunk(data, str(path), lineno, first=first, last=last, shifted=shifted)
        if rows:
            yield rows


def _cell(key: bytes) -> Cell:
    suite, arm, name = key.decode("utf-8").split("\t")
    return (suite, arm, name)


def _value(key: bytes, row: bytes) -> str:
    return row[len(key) + 1:].decode("utf-8")
