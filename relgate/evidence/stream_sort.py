"""Big capture files sorted by the system's GNU ``sort``: the rows checked here, the sorting and
the "last write wins" done in C.

:class:`~relgate.evidence.stream_read.SortedCells` uses it for a capture of
:data:`~relgate.evidence.stream_read.EXTERNAL_MIN_BYTES` or more when GNU ``sort`` is on PATH,
in one of two ways:

- A file of plain rows is read by ``sort`` itself (much faster than through a pipe) while
  the caller checks it: :func:`start_order_check` (``sort -C -u``) proves it in order, or
  :func:`start_sort` (``sort -s -o RUN``) sorts it, and ``sort -C -u`` of the output shows
  whether a cell was written twice; :func:`last_writes` then keeps each cell's last write.
- Any other file goes through :func:`external_run`: it is read backwards, a line-aligned chunk
  at a time, so ``sort`` reads while the file is still being checked; the caller's
  ``rows_of`` checks each chunk by the same rules as the Python sort (a chunk of plain rows in
  whole-buffer tests, any other through the parser) and gives its rows last first, and they
  go to ``LC_ALL=C sort -s -u -t TAB -k1,3``; ``-u`` keeps the first row of each key in its
  input, and the input runs newest first, so the last write wins.

Byte order of ``suite TAB arm TAB key`` is the cells' order when no field holds a byte below
TAB (such a file is refused, and the Python sort then takes it in the shifted order).
Anything else (a bad row, an odd byte, ``sort`` failing or missing) returns False and the
Python sort reads the file from the start: its answers and its ``file:line`` errors are the
reference.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

__all__ = ["external_run", "gnu_sort", "last_writes", "start_order_check", "start_sort"]


def _c_locale(**extra: str) -> dict[str, str]:
    """This process's environment with ``LC_ALL=C``: bytes compared as bytes (and ``extra``)."""
    return {**os.environ, "LC_ALL": "C", **extra}


@lru_cache(maxsize=1)
def gnu_sort() -> str | None:
    """The path of GNU ``sort`` on PATH (its ``-s -u`` keep the first of equal lines), or None."""
    found = shutil.which("sort")
    if found is None:
        return None
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=10,
                              env=_c_locale())
    except (OSError, subprocess.SubprocessError):
        return None
    return found if done.returncode == 0 and "GNU coreutils" in done.stdout else None


def _buffer_mib(size: int) -> int:
    """GNU sort's own memory for a capture of ``size`` bytes: a quarter of it (16 MiB at least,
    512 at most), so that sort and this process together stay under half the capture."""
    return max(16, min(size // 4, 512 << 20) >> 20)


def _start(argv: list[str]) -> subprocess.Popen[bytes] | None:
    sort = gnu_sort()
    if sort is None:
        return None
    try:
        return subprocess.Popen([sort, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=_c_locale())
    except OSError:
        return None


def start_order_check(path: Path) -> subprocess.Popen[bytes] | None:
    """``sort -C -u`` of the file, started: it exits 0 when the key of every line (``suite TAB
    arm TAB key``, compared as bytes) is greater than the one before, 1 at the first that is not."""
    return _start(["-C", "-u", "-t", "\t", "-k1,3", "--", str(path)])


def start_sort(path: Path, out: Path, *, tmp: Path) -> subprocess.Popen[bytes] | None:
    """``sort -s`` of the file into ``out``, started: its lines in byte order of their key, the
    lines of a key written twice side by side in the file's order (:func:`last_writes` keeps
    the last). ``sort`` reads the file itself, which is much faster than through a pipe."""
    size = max(path.stat().st_size, 1)
    return _start(["-s", "-t", "\t", "-k1,3", "-S", f"{_buffer_mib(size)}M", "-T", str(tmp),
                   "-o", str(out), "--", str(path)])


def last_writes(path: Path, out: Path, *, tmp: Path) -> bool:
    """The lines of a sorted file (:func:`start_sort`'s: a repeated key's lines side by side, in
    write order) into ``out``, one per key, its last: ``tac`` turns the file around (each key's
    last write first, the keys descending), ``sort -m -s -u -r`` keeps the first line of each
    key, and ``tac`` turns it back. False where a tool is missing or fails."""
    sort, tac = gnu_sort(), shutil.which("tac")
    if sort is None or tac is None:
        return False
    env = _c_locale(TMPDIR=str(tmp))
    descending = out.with_suffix(".descending")
    turn: subprocess.Popen[bytes] | None = None
    try:
        with open(descending, "wb") as sink:
            turn = subprocess.Popen([tac, "--", str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=env)
            assert turn.stdout is not None
            with turn.stdout:
                merge = subprocess.run([sort, "-m", "-s", "-u", "-r", "-t", "\t", "-k1,3"], stdin=turn.stdout,
                                       stdout=sink, stderr=subprocess.DEVNULL, env=env)
            if turn.wait() != 0 or merge.returncode != 0:
                return False
        with open(out, "wb") as sink:
            back = subprocess.run([tac, "--", str(descending)], stdin=subprocess.DEVNULL, stdout=sink,
                                  stderr=subprocess.DEVNULL, env=env)
        return back.returncode == 0
    except OSError:
        return False
    finally:
        if turn is not None and turn.poll() is None:  # the merge failed to start, or an interrupt
            turn.kill()
            turn.wait()
        descending.unlink(missing_ok=True)


def backward_chunks(path: Path, size: int) -> Iterator[tuple[bytes, bool, bool]]:
    """``(data, is the file's first chunk, is its last)``: whole lines, about ``size`` bytes each,
    from the end of the file to its start (a line longer than a chunk is read whole)."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        pos, tail, last = end, b"", True
        while pos > 0:
            start = max(0, pos - size)
            handle.seek(start)
            data = handle.read(pos - start) + tail
            pos = start
            if start > 0:
                cut = data.find(b"\n") + 1  # the line this chunk starts inside belongs to the one before
                if not cut or cut == len(data):
                    tail = data
                    continue
                tail, data = data[:cut], data[cut:]
            else:
                tail = b""
            yield data, start == 0, last
            last = False
        if last:  # an empty file: one empty chunk, as the forward reader gives
            yield b"", True, True


def external_run(path: Path, out: Path, *, tmp: Path, chunk: int,
                 rows_of: Callable[[bytes, bool, bool], bytes | None]) -> bool:
    """Sort ``path``'s rows into ``out`` (one per line, unique by key, the last write winning,
    in byte order of the key) with GNU sort, fed the file's chunks from its end to its start;
    ``rows_of(data, first, last)`` gives a chunk's rows as whole lines, *last row first*
    (comments and blank lines dropped, line ends normalized), or None to give up. False when
    it gave up or sort failed (``out`` is then left empty)."""
    sort = gnu_sort()
    if sort is None:
        return False
    size = max(path.stat().st_size, 1)
    env = _c_locale()
    ok = False
    with open(out, "wb") as sink:
        order = subprocess.Popen([sort, "-s", "-u", "-t", "\t", "-k1,3", "-S", f"{_buffer_mib(size)}M", "-T", str(tmp)],
                                 stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.DEVNULL, env=env)
        assert order.stdin is not None
        try:
            for data, first, last in backward_chunks(path, chunk):
                rows = rows_of(data, first, last)
                if rows is None:
                    break
                order.stdin.write(rows)
            else:
                ok = True
            order.stdin.close()
        except OSError:  # sort went away (a full temporary folder): the Python sort says why
            ok = False
        finally:
            if not ok and order.poll() is None:
                order.kill()
            code = order.wait()
    if ok and code == 0:
        return True
    out.write_bytes(b"")
    return False
