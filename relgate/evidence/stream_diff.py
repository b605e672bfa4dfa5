"""Two evidence streams compared cell by cell (the answer ``diff_cells`` gives for their cells).

:func:`diff_sorted` merge-joins two :class:`~relgate.evidence.stream_read.SortedCells`: a
block equal on both sides is compared as one list; only blocks that differ are split into sets
of whole lines, and only lines that differ are parsed into cells. Two sorted files (GNU sort's,
or a plain baseline) are compared as bytes a window at a time, and row by row only where a
window differs.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import compress, count
from operator import itemgetter
from typing import BinaryIO

from relgate.evidence.cells import Cell, EvidenceDiff, _gc_paused
from relgate.evidence.stream_read import SortedCells
from relgate.evidence.stream_rows import (
    MERGE_BYTES,
    Block,
    _bound,
    _boundary,
    _cell,
    _Cursor,
    _key,
    _keys_of,
    _opened,
    _Plain,
    _value,
)

__all__ = ["diff_sorted"]


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
