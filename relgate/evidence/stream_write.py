"""An evidence stream written as a capture file, or counted.

:func:`write_sorted` writes the sorted cells of :class:`~relgate.evidence.stream_read.SortedCells`
as a capture (the header, then the rows): the bytes
:func:`~relgate.evidence.cells.render_capture` gives for the same cells. One sorted run on disk
is copied as it is (by the kernel where both ends are files), its rows counted, not split.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from itertools import compress, count
from operator import methodcaller
from typing import BinaryIO

from relgate.core.errors import InputError
from relgate.evidence.cells import HEADER, _gc_paused, label
from relgate.evidence.stream_read import SortedCells
from relgate.evidence.stream_rows import MERGE_BYTES, Block, _cell, _key, _opened, _Plain, _value

__all__ = ["write_sorted", "count_cells"]


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
