"""Evidence captures in bounded memory: an external sort, a k-way merge and a merge-join diff.

``relgate evidence accept`` and ``nox -s evidence`` handle captures of any size: memory is
bounded by a chunk of the input (:data:`CHUNK_BYTES`), not by the capture.

- :class:`SortedCells` reads one or more capture files (a board's merged capture: a later
  file wins on a cell both hold) in line-aligned chunks. Each chunk is checked with the
  same rules and the same ``file:line`` messages as :mod:`relgate.evidence.cells` (an
  invalid UTF-8 byte anywhere in a file is reported before a malformed row of that file,
  as the whole-file parser does), sorted as whole rows and reduced to its last write per
  cell (keys are cut out once, to see whether one repeats). A capture that fits one chunk
  stays in memory; a bigger one is spilled as sorted runs to a temporary folder (the ledger
  home's ``tmp/``) and merged back block by block: every run's buffered rows up to the
  smallest "last buffered key" of the runs are sorted together (the later write wins).
- A file of :data:`EXTERNAL_MIN_BYTES` or more goes to GNU ``sort`` where it is on PATH
  (:mod:`relgate.evidence.stream_sort`). A file of *plain* rows (three tabs, no comment,
  blank line, CR or byte below TAB; a header of comments allowed when the rows are in order)
  is read by ``sort`` itself while it is checked here: ``sort -C -u`` proves a baseline in
  order (it is then read straight from where it is), ``sort -s`` sorts a capture (``sort -C
  -u`` of the output then shows whether a cell was written twice, and only then are the last
  writes picked, by ``tac | sort -m -s -u -r | tac``). Every group's sorts
  start before any file is checked to its end. Anything else is fed to ``sort`` newest row
  first, each chunk checked on the way; a bad row, a byte below TAB or a failing ``sort``
  leaves the file to the Python sort, whose answers and ``file:line`` errors are the reference.
- The stream's order is the cells' ``(suite, arm, key)`` order, the order
  :func:`~relgate.evidence.cells.write_cells` writes: bytes of ``suite\\tarm\\tkey``
  compared as they are, which is that order whenever no field holds a byte below TAB;
  when one does, every key is compared through a translation that keeps it exactly
  (fields' bytes + 1, TAB as 0x00).
- :func:`write_sorted` writes the stream as a capture file (the header, then the rows): the
  bytes :func:`~relgate.evidence.cells.render_capture` gives for the same cells.
- :func:`diff_sorted` merge-joins two streams: a block equal on both sides is compared
  as one list; only blocks that differ are split into sets of whole lines, and only lines
  that differ are parsed into cells. Two sorted files (GNU sort's, or a plain baseline) are
  compared as bytes a window at a time, and row by row only where a window differs.
"""

from __future__ import annotations

import io
import os
import subprocess
import tempfile
from bisect import bisect_right
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import compress, count, islice, repeat
from operator import eq, ge, itemgetter, methodcaller
from pathlib import Path
from typing import BinaryIO

from relgate.core.errors import InputError
from relgate.evidence.cells import (
    _EXPECTED,
    _FIELD_NAMES,
    HEADER,
    Cell,
    EvidenceDiff,
    _gc_paused,
    label,
)
from relgate.evidence.cells_parse import _BOM_BYTES, _cannot_read, _plain, _row_count, _well_formed
from relgate.evidence.cells_parse import _utf8 as _utf8_ok
from relgate.evidence.stream_sort import external_run, gnu_sort, last_writes, start_order_check, start_sort

__all__ = ["CHUNK_BYTES", "MERGE_BYTES", "SortedCells", "count_cells", "diff_sorted", "sorted_cells", "write_sorted"]

CHUNK_BYTES = 2 << 20
"""Input bytes parsed at once (a sorted run); its rows take about eight times that in objects."""

MERGE_BYTES = 2 << 20
"""Bytes buffered from all runs of one stream together while they are merged."""

MAX_RUNS = 64
"""Runs merged at once; more are first merged in groups of this many (open files stay few)."""

EXTERNAL_MIN_BYTES = 16 << 20
"""A capture file at least this big is sorted by GNU sort where it is on PATH
(:mod:`relgate.evidence.stream_sort`); a smaller one costs less sorted here."""

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


def _state(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def _ended(proc: subprocess.Popen[bytes]) -> None:
    """Kill a sort this process started when it still runs, and reap it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _in_order(keys: list[bytes], after: bytes | None, order: Callable[[bytes], bytes] | None) -> bool:
    """``keys`` strictly increasing, and all after ``after``."""
    seq = keys if order is None else list(map(order, keys))
    if after is not None and seq and not (after < seq[0]):
        return False
    return not any(map(ge, seq, islice(seq, 1, None)))


class SortedCells:
    """A capture (one file, or several merged: a later file wins), as a sorted stream of unique cells.

    Use as a context manager: spilled runs live in a temporary folder under ``tmp`` until it
    exits. :meth:`blocks` may be called more than once (each call merges the runs again).
    A file already in cell order (a baseline relgate wrote) is checked once and then merged
    straight from where it is; at most one chunk of parsed rows is kept in memory.
    """

    def __init__(self, paths: Iterable[Path], *, tmp: Path | None = None, shifted: bool = False,
                 chunk_bytes: int | None = None) -> None:
        self.paths = [Path(p) for p in paths]
        self.shifted = shifted
        self.order = _order(shifted)
        self._tmp = tmp
        self._chunk = chunk_bytes or CHUNK_BYTES
        self._stack = ExitStack()
        self._folder: Path | None = None
        self._runs: list[Block | Path | _InPlace | _Plain] = []  # in priority order: a later run wins
        self.rows = 0  # unique cells, once written or counted
        self._small = True  # the files fit one chunk: their sorted rows stay in memory
        self.three_tabs = True  # every row seen so far has exactly three tabs (no tab in a value)
        self._begun: list[Generator[None, None, bool] | bool | None] = []  # per path: see begin()

    def __enter__(self) -> SortedCells:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def begin(self) -> SortedCells:
        """Start GNU sort on every big plain file (see :meth:`_sort_plain`), so that it works
        while other files are checked; :meth:`sort` then finishes each. Raises nothing: a file
        that cannot be read is left to :meth:`sort`, which names it in its turn."""
        self._small = sum(_size(p) for p in self.paths) <= self._chunk
        for path in self.paths:
            steps = self._sort_plain(path)
            try:
                next(steps)
            except StopIteration as decided:
                self._begun.append(decided.value)
            except (InputError, OSError):
                self._begun.append(False)
            else:
                self._begun.append(steps)
                self._stack.callback(steps.close)  # a sort still running is killed, its output removed
        return self

    def sort(self) -> SortedCells:
        """Read, check and sort every file into runs. Raises ``InputError`` naming ``file:line``,
        or :class:`_NeedsShift` (callers use :func:`sorted_cells`)."""
        if not self._begun:
            self.begin()
        with _gc_paused():
            for path, begun in zip(self.paths, self._begun):
                if begun is not None and not isinstance(begun, bool):
                    try:
                        next(begun)
                    except StopIteration as done:
                        begun = done.value
                if begun:
                    continue
                if not self._sort_file(path, in_place=True) and not self._sort_external(path):
                    self._sort_file(path, in_place=False)
            while len(self._runs) > MAX_RUNS:  # merge consecutive groups: a later run still wins
                groups = [self._runs[i:i + MAX_RUNS] for i in range(0, len(self._runs), MAX_RUNS)]
                self._runs = [self._spill_stream(self._merged(group)) for group in groups]
                for run in (run for group in groups for run in group if isinstance(run, Path)):
                    run.unlink()
        return self

    def _sort_file(self, path: Path, *, in_place: bool) -> bool:
        """Check and sort one file. With ``in_place``, give up (False) at the first chunk out of
        order after the first one (the file is then read again and spilled)."""
        source = str(path)
        row_error: str | None = None
        last: bytes | None = None
        held: Block | None = None
        chunks = 0
        for data, lineno, first, _last in _chunks(path, self._chunk):
            if row_error is not None:  # a UTF-8 error later in the file is reported first
                _utf8(data, source, lineno)
                continue
            try:
                rows, three_tabs = _parse_chunk(data, source, lineno, first=first, last=_last, shifted=self.shifted)
            except _RowError as exc:
                row_error = str(exc)
                continue
            del data
            if not rows:
                continue
            self.three_tabs = self.three_tabs and three_tabs
            chunks += 1
            if in_place:
                keys = _keys_of(rows, three_tabs)
                if _in_order(keys, last, self.order):  # strictly increasing keys: rows in order too
                    last = keys[-1] if self.order is None else self.order(keys[-1])
                    held = rows if chunks == 1 else None
                    continue
                del keys
                if chunks > 1 or self._external_for(path):
                    return False  # read it again from the start, sorting every chunk (or GNU sort does)
                in_place = False
            self._add(_unique_sorted(rows, self.order, three_tabs))
            del rows
        if row_error is not None:
            raise InputError(row_error)
        if in_place and chunks == 1 and held is not None:
            self._add(held)
        elif in_place and chunks:
            self._runs.append(_InPlace(path))
        return True

    def _external_for(self, path: Path) -> bool:
        """Whether GNU sort is to sort this file (big, the plain order, GNU sort on PATH)."""
        return not self.shifted and not self._small and _size(path) >= EXTERNAL_MIN_BYTES and gnu_sort() is not None

    def _sort_plain(self, path: Path) -> Generator[None, None, bool]:
        """A big capture of plain rows (see :func:`_plain_rows`; a header of comments allowed when
        it is in order) checked here while GNU sort reads the file itself: ``sort -C -u`` proves a
        file in order (a baseline relgate wrote: then merged straight from the file), ``sort -s``
        sorts one that is not (``sort -C -u`` of its output then shows whether a cell was written
        twice, and :func:`~relgate.evidence.stream_sort.last_writes` keeps each cell's last
        write). False where that is not for this file or not conclusive: a row that is not
        plain, the file changing meanwhile, ``sort`` or ``tac`` failing or missing. The
        reference path then reads the file from the start, and its answers and errors stand.

        Steps: up to starting sort (on the first chunk), then, when resumed, the rest."""
        if not self._external_for(path):
            return False
        with ExitStack() as procs:
            before = _state(path)
            chunks = _chunks(path, self._chunk)
            data, _lineno, _first, _last = next(chunks)
            start = _rows_start(data)
            rows = None if start is None else _plain_rows(data, start)
            if start is None or rows is None:
                return False
            head = data[start:].split(b"\n")
            if not head[-1]:
                head.pop()
            in_order = _in_order(_keys_of(head, True), None, None)
            del head
            if not in_order and start:
                return False  # rows behind a header: sort would sort the header in
            runs: list[Path] = []  # sort's output files, removed unless the last one is kept
            kept: list[Path] = []
            procs.callback(lambda: [run.unlink(missing_ok=True) for run in runs if run not in kept])

            def started(run: Path | None, checked: Path = path) -> subprocess.Popen[bytes] | None:
                """``sort -C -u`` of ``checked`` (no ``run``), or ``sort -s`` of the file into ``run``."""
                if run is not None:
                    runs.append(run)
                proc = start_order_check(checked) if run is None else start_sort(path, run, tmp=run.parent)
                if proc is not None:
                    procs.callback(_ended, proc)
                return proc

            proc = started(None if in_order else self._spill([]))
            if proc is None:
                return False
            del data
            yield
            for data, _lineno, _first, _last in chunks:
                more = _plain_rows(data, 0)
                if more is None:
                    return False
                rows += more
            code = proc.wait()
            if in_order and code != 0 and not start:  # out of order after its first chunk: sort it
                proc = started(self._spill([]))
                code = 1 if proc is None else proc.wait()
            if code != 0 or _state(path) != before:
                return False
            if not runs:
                self._runs.append(_Plain(path, start, rows))
                return True
            repeats = started(None, runs[-1])  # sort -C -u of the sorted rows: is a key written twice?
            code = 2 if repeats is None else repeats.wait()
            if code == 0:
                kept.append(runs[-1])
                self._runs.append(_Plain(runs[-1], 0, rows))
                return True
            if code != 1:
                return False
            unique = self._spill([])
            runs.append(unique)
            if not last_writes(runs[-2], unique, tmp=unique.parent):
                return False
            kept.append(unique)
            self._runs.append(_Plain(unique))
            return True

    def _sort_external(self, path: Path) -> bool:
        """Sort a big file with GNU sort (:mod:`relgate.evidence.stream_sort`) into one run;
        False where that is not for this file (small, the shifted order, no GNU sort) or it
        gave up (a bad row, a byte below TAB, sort failing): the Python sort then reads it."""
        if not self._external_for(path):
            return False
        source, three_tabs = str(path), True

        def rows_of(data: bytes, first: bool, last: bool) -> bytes | None:
            """The chunk's rows as whole lines, last first (BOM, CRs, comments and blanks gone), or None."""
            nonlocal three_tabs
            plain = _plain(data, first=first, last=last)
            if plain and not plain.endswith(b"\n"):
                plain += b"\n"
            if not plain or plain.translate(None, _NOT_LOW):
                return None if plain else b""  # a byte below TAB: the shifted order, Python's
            if _well_formed(plain, 0) and _utf8_ok(plain):  # rows of exactly three tabs, nothing else
                rows = plain.split(b"\n")
                rows.pop()
            else:
                try:
                    rows, whole = _parse_chunk(plain, source, 1, first=False, last=False, shifted=False)
                except (_RowError, _NeedsShift, InputError):
                    return None  # the Python sort names the line
                three_tabs = three_tabs and whole
            if rows:
                rows.reverse()  # newest first
                rows.append(b"")
            return b"\n".join(rows)

        run = self._spill([])
        if not external_run(path, run, tmp=run.parent, chunk=self._chunk, rows_of=rows_of):
            run.unlink()
            return False
        self.three_tabs = self.three_tabs and three_tabs
        self._runs.append(run)
        return True

    def _add(self, block: Block) -> None:
        """Keep a sorted chunk as a run: in memory when the files fit one chunk, else spilled."""
        self._runs.append(block if self._small else self._spill(block))

    def _spill(self, block: Block) -> Path:
        if self._folder is None:
            if self._tmp is not None:
                self._tmp.mkdir(parents=True, exist_ok=True)
            self._folder = Path(self._stack.enter_context(
                tempfile.TemporaryDirectory(prefix="evidence-sort-", dir=self._tmp)))
        fd, name = tempfile.mkstemp(prefix="run-", suffix=".cells", dir=self._folder)
        with os.fdopen(fd, "wb") as out:
            out.write(b"\n".join(block))
            out.write(b"\n")
        return Path(name)

    def _spill_stream(self, blocks: Iterator[Block]) -> Path:
        """Write a sorted stream as one run."""
        path = self._spill([])
        with open(path, "wb") as out:  # (truncated: the empty block wrote one newline)
            for rows in blocks:
                out.write(b"\n".join(rows))
                out.write(b"\n")
        return path

    def single_run(self) -> _Plain | None:
        """The one sorted run file these cells are, when they are exactly that (GNU sort's run of
        one file, or a plain file in order): its bytes are the rows in order, one per line."""
        if len(self._runs) != 1:
            return None
        run = self._runs[0]
        return _Plain(run) if isinstance(run, Path) else run if isinstance(run, _Plain) else None

    def blocks(self) -> Iterator[Block]:
        """The cells in order, unique, in blocks of sorted rows."""
        if len(self._runs) == 1 and isinstance(self._runs[0], list):
            yield self._runs[0]
            return
        yield from self._merged(self._runs)

    def _merged(self, runs: list[Block | Path | _InPlace]) -> Iterator[Block]:
        with ExitStack() as stack:
            per_run = max(64 << 10, MERGE_BYTES // max(1, len(runs)))
            streams: list[Iterator[Block]] = []
            for run in runs:
                if isinstance(run, list):
                    streams.append(iter([run]))
                elif isinstance(run, _InPlace):
                    streams.append(_reparse(run.path, per_run, self.shifted))
                else:  # a run file: a spilled one, GNU sort's, or a plain capture in order
                    plain = run if isinstance(run, _Plain) else _Plain(run)
                    streams.append(_read_blocks(stack.enter_context(_opened(plain)), per_run))
            yield from _merge(streams, self.order, self.three_tabs)


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


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # reading it says what is wrong


def _reparse(path: Path, size: int, shifted: bool) -> Iterator[Block]:
    """A checked, in-order capture file, parsed again in blocks."""
    for data, lineno, first, last in _chunks(path, size):
        rows, _three_tabs = _parse_chunk(data, str(path), lineno, first=first, last=last, shifted=shifted)
        if rows:
            yield rows


def sorted_cells(stack: ExitStack, groups: list[list[Path]], *, tmp: Path | None,
                 chunk_bytes: int | None = None) -> list[SortedCells]:
    """Sort each group of files (a board's merged capture), all in one order: plain byte order,
    or the shifted one when any file holds a byte below TAB."""
    for shifted in (False, True):
        attempt = ExitStack()
        try:
            out = [attempt.enter_context(SortedCells(g, tmp=tmp, shifted=shifted, chunk_bytes=chunk_bytes)).begin()
                   for g in groups]  # every group's GNU sorts start before any file is checked to the end
            for cells in out:
                cells.sort()
        except _NeedsShift:
            attempt.close()
            continue
        except BaseException:
            attempt.close()
            raise
        stack.enter_context(attempt)
        return out
    raise AssertionError("unreachable: the shifted order takes every byte")


def _cell(key: bytes) -> Cell:
    suite, arm, name = key.decode("utf-8").split("\t")
    return (suite, arm, name)


def _value(key: bytes, row: bytes) -> str:
    return row[len(key) + 1:].decode("utf-8")


def write_sorted(cells: SortedCells, out: BinaryIO) -> int:
    """Write the cells as a capture (the header, then one row per cell); returns how many.

    A value ending with a carriage return would not read back as written: ``InputError``,
    as :func:`~relgate.evidence.cells.write_cells` says it.
    """
    out.write(f"{HEADER}\n".encode())
    written = 0
    ends_cr = methodcaller("endswith", b"\r")
    with _gc_paused():
        run = cells.single_run()
        if run is None:
            written = _write_blocks(cells.blocks(), out, ends_cr)
        else:  # one sorted run on disk: copied as it is, its rows counted, not split
            written = _copy_run(run, out, ends_cr)
    cells.rows = written
    return written


def _copy_run(run: _Plain, out: BinaryIO, ends_cr: Callable[[bytes], bool]) -> int:
    """Write a run's rows (each ending with LF) to ``out``; how many. Read once for a CR (a
    value ending with one: the row-wise writer raises, naming it) and the count, then copied by
    the kernel where both are files (``copy_file_range``)."""
    rows, ends_lf = 0, True
    with _opened(run) as handle:
        while block := handle.read(MERGE_BYTES):
            if b"\r" in block:
                return _write_run(run, out, ends_cr)
            if run.rows is None:
                rows += block.count(b"\n")
            ends_lf = block.endswith(b"\n")
        end = handle.tell()
        if run.rows is not None:
            rows = run.rows
        elif not ends_lf:
            rows += 1
        out.flush()
        copied = _kernel_copy(handle.fileno(), out, run.offset, end - run.offset)
        handle.seek(run.offset + copied)
        while block := handle.read(MERGE_BYTES):
            out.write(block)
    if not ends_lf:
        out.write(b"\n")
    return rows


def _kernel_copy(source: int, out: BinaryIO, offset: int, length: int) -> int:
    """Bytes copied from ``source`` at ``offset`` to ``out`` (flushed) by ``copy_file_range``:
    all of them, or as many as it copied before it was not possible (another file system, an
    ``out`` that is not a file: the caller writes the rest)."""
    copy = getattr(os, "copy_file_range", None)
    try:
        target = out.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        return 0
    done = 0
    while copy is not None and done < length:
        try:
            n = copy(source, target, length - done, offset + done)
        except OSError:
            break
        if n <= 0:
            break
        done += n
    return done


def _write_run(run: _Plain, out: BinaryIO, ends_cr: Callable[[bytes], bool]) -> int:
    """A run holding a CR, written row-wise: a value that ends with one raises, naming its cell."""
    written = 0
    for data in _run_bytes(run):
        if b"\r\n" in data:
            _write_blocks(iter([data.split(b"\n")[:-1]]), out, ends_cr)
        out.write(data)
        written += data.count(b"\n")
    return written


def _run_bytes(run: _Plain) -> Iterator[bytes]:
    """A run's bytes in blocks of whole lines, each ending with LF."""
    with _opened(run) as handle:
        carry = b""
        while block := handle.read(MERGE_BYTES):
            data = carry + block if carry else block
            cut = data.rfind(b"\n") + 1
            data, carry = data[:cut], data[cut:]
            if data:
                yield data
        if carry:
            yield carry + b"\n"


def _write_blocks(blocks: Iterator[Block], out: BinaryIO, ends_cr: Callable[[bytes], bool]) -> int:
    written = 0
    for rows in blocks:
        bad = next(compress(count(), map(ends_cr, rows)), None)
        if bad is not None:
            key = _key(rows[bad])
            raise InputError(f"evidence cell {label(_cell(key))}: value {_value(key, rows[bad])!r} "
                             "ends with a carriage return")
        out.write(b"\n".join(rows))
        out.write(b"\n")
        written += len(rows)
    return written


def count_cells(cells: SortedCells) -> int:
    """How many unique cells the capture holds."""
    run = cells.single_run()
    with _gc_paused():
        if run is None:
            cells.rows = sum(map(len, cells.blocks()))
        elif run.rows is not None:
            cells.rows = run.rows
        else:  # one run on disk: its lines, counted without splitting them
            cells.rows = sum(map(methodcaller("count", b"\n"), _run_bytes(run)))
    return cells.rows


class _Tally:
    """The diff's answer, block by block."""

    def __init__(self, base_three_tabs: bool, cand_three_tabs: bool) -> None:
        self.identical = 0
        self.moved: list[tuple[Cell, str, str]] = []
        self.only_base: list[tuple[Cell, str]] = []
        self.only_cand: list[tuple[Cell, str]] = []
        self._tabs = (base_three_tabs, cand_three_tabs)

    def compare(self, brows: Block, crows: Block) -> None:
        """The rows of both sides up to one key bound (each in order, unique)."""
        if brows == crows:
            self.identical += len(brows)
            return
        bk, ck = _keys_of(brows, self._tabs[0]), _keys_of(crows, self._tabs[1])
        if bk == ck:  # the same cells: compare row by row
            differ = list(compress(count(), map(bytes.__ne__, brows, crows)))
            self.identical += len(brows) - len(differ)
            for i in differ:
                self.moved.append((_cell(bk[i]), _value(bk[i], brows[i]), _value(ck[i], crows[i])))
            return
        gone = set(brows).difference(crows)  # rows of changed or removed cells
        new = set(crows).difference(brows)
        self.identical += len(brows) - len(gone)
        new_rows, gone_rows = list(new), list(gone)
        new_by_key = dict(zip(_keys_of(new_rows, self._tabs[1]), new_rows))
        for key, row in zip(_keys_of(gone_rows, self._tabs[0]), gone_rows):
            other = new_by_key.pop(key, None)
            if other is None:
                self.only_base.append((_cell(key), _value(key, row)))
            else:
                self.moved.append((_cell(key), _value(key, row), _value(key, other)))
        self.only_cand.extend((_cell(k), _value(k, r)) for k, r in new_by_key.items())

    def answer(self) -> EvidenceDiff:
        by_cell = itemgetter(0)
        return EvidenceDiff(identical=self.identical, moved=tuple(sorted(self.moved, key=by_cell)),
                            only_base=tuple(sorted(self.only_base, key=by_cell)),
                            only_candidate=tuple(sorted(self.only_cand, key=by_cell)))


def diff_sorted(base: SortedCells, candidate: SortedCells) -> EvidenceDiff:
    """Compare two sorted captures cell by cell (the same result as ``diff_cells`` of their cells)."""
    order = base.order
    if (candidate.order is None) != (order is None):
        raise ValueError("both captures must be sorted in the same order")
    tally = _Tally(base.three_tabs, candidate.three_tabs)
    brun, crun = base.single_run(), candidate.single_run()
    with _gc_paused():
        if order is None and brun is not None and crun is not None:
            _diff_runs(brun, crun, tally)
            return tally.answer()
        b, c = _Cursor(base.blocks()), _Cursor(candidate.blocks())
        while True:
            b.fill()
            c.fill()
            if b.pos >= len(b.rows) and c.pos >= len(c.rows):
                break
            bound = _boundary((b, c), order)
            tally.compare(b.take(bound, order), c.take(bound, order))
    return tally.answer()


_RAW_WINDOW = 256 << 10
"""Bytes of both runs compared at once as bytes; a window that differs is compared row by row."""


class _RunBytes:
    """A run file read as bytes from its first row: a buffer of whole lines, each ending with LF
    (one is added after a last line without it), and where the next row starts."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.buf = b""
        self.pos = 0
        self.eof = False

    def want(self, n: int) -> int:
        """Buffer at least ``n`` bytes from the position on (fewer at the end); how many there are."""
        while len(self.buf) - self.pos < n and not self.eof:
            block = self._handle.read(max(MERGE_BYTES, n))
            if not block:
                self.eof = True
                if self.buf and not self.buf.endswith(b"\n"):
                    self.buf += b"\n"
                break
            self.buf = self.buf[self.pos:] + block
            self.pos = 0
        return len(self.buf) - self.pos

    def window(self, n: int) -> tuple[Block, bool]:
        """The rows that start in the next ``n`` bytes (at least one while any is left), and
        whether they are the last ones."""
        if not self.want(n):
            return [], True
        end = self.buf.rfind(b"\n", self.pos, self.pos + n) + 1
        while not end:  # a row longer than the window
            n *= 2
            self.want(n)
            end = self.buf.rfind(b"\n", self.pos, self.pos + n) + 1
        return self.buf[self.pos:end - 1].split(b"\n"), self.eof and end >= len(self.buf)


def _diff_runs(brun: _Plain, crun: _Plain, tally: _Tally) -> None:
    """Two runs in the plain order, compared as bytes where they are the same (a window equal on
    both sides up to its last LF is rows equal on both), row by row where they are not. After a
    row-wise step both sides stand at the first row after the same key, so the bytes that
    follow are compared again."""
    with _opened(brun) as bh, _opened(crun) as ch:
        b, c = _RunBytes(bh), _RunBytes(ch)
        while True:
            n = min(b.want(_RAW_WINDOW), c.want(_RAW_WINDOW), _RAW_WINDOW)
            if n and b.buf[b.pos:b.pos + n] == c.buf[c.pos:c.pos + n]:
                cut = b.buf.rfind(b"\n", b.pos, b.pos + n) + 1
                if cut:
                    tally.identical += b.buf.count(b"\n", b.pos, cut)
                    c.pos += cut - b.pos
                    b.pos = cut
                    continue
            (brows, b_last), (crows, c_last) = b.window(_RAW_WINDOW), c.window(_RAW_WINDOW)
            if not brows and not crows:
                return
            lasts = [_key(rows[-1]) for rows, last in ((brows, b_last), (crows, c_last)) if rows and not last]
            if lasts:  # the rows up to the smaller last key of a side that goes on
                bound = _bound(min(lasts), None)
                brows = brows[:bisect_right(brows, bound)]
                crows = crows[:bisect_right(crows, bound)]
            b.pos += sum(map(len, brows)) + len(brows)
            c.pos += sum(map(len, crows)) + len(crows)
            tally.compare(brows, crows)
