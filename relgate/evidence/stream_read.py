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
- The stream's order, its rows and their merge: :mod:`relgate.evidence.stream_rows`. The
  stream written as a capture file: :mod:`relgate.evidence.stream_write`; two streams
  compared: :mod:`relgate.evidence.stream_diff`.
"""


from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Generator, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path

from relgate.core.errors import InputError
from relgate.evidence.cells import _gc_paused
from relgate.evidence.cells_parse import _plain, _well_formed
from relgate.evidence.cells_parse import _utf8 as _utf8_ok
from relgate.evidence.stream_rows import (
    _NOT_LOW,
    MERGE_BYTES,
    Block,
    _chunks,
    _in_order,
    _InPlace,
    _keys_of,
    _merge,
    _NeedsShift,
    _opened,
    _order,
    _parse_chunk,
    _Plain,
    _plain_rows,
    _read_blocks,
    _reparse,
    _RowError,
    _rows_start,
    _unique_sorted,
    _utf8,
)
from relgate.evidence.stream_sort import external_run, gnu_sort, last_writes, start_order_check, start_sort

__all__ = ["CHUNK_BYTES", "EXTERNAL_MIN_BYTES", "MAX_RUNS", "SortedCells", "sorted_cells"]

CHUNK_BYTES = 2 << 20
"""Input bytes parsed at once (a sorted run); its rows take about eight times that in objects."""

MAX_RUNS = 64
"""Runs merged at once; more are first merged in groups of this many (open files stay few)."""

EXTERNAL_MIN_BYTES = 16 << 20
"""A capture file at least this big is sorted by GNU sort where it is on PATH
(:mod:`relgate.evidence.stream_sort`); a smaller one costs less sorted here."""

def _state(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def _ended(proc: subprocess.Popen[bytes]) -> None:
    """Kill a sort this process started when it still runs, and reap it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()


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


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # reading it says what is wrong


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
