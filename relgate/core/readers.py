"""Reading a file a person names: a regular file of bounded size, or a one-line error.

A FIFO, a device (``/dev/zero``, ``/dev/stdin``), a directory or a socket is refused before a
byte is read (a FIFO is opened without waiting for a writer), and so is a file larger than the
cap: a 2 GiB sparse file is refused from its size, never read. Nothing here hangs.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from relgate.core.errors import InputError

__all__ = ["MAX_INPUT_BYTES", "MAX_LINE_BYTES", "kind_of", "regular_size", "read_user_file", "check_line_lengths"]

#: The most a user-named input file (measurement rows, an evidence capture to diff) may hold.
MAX_INPUT_BYTES = 1 << 30
#: The longest line such a file may hold.
MAX_LINE_BYTES = 1 << 20


def kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def regular_size(path: Path, *, what: str = "the file", limit: int = MAX_INPUT_BYTES) -> int:
    """The size of ``path`` when it is a regular file within ``limit`` (:class:`InputError` if not)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: {kind_of(st.st_mode)}, not a regular file: cannot read it as {what}")
    if st.st_size > limit:
        raise InputError(f"{path}: {st.st_size} bytes, over the {limit}-byte limit for {what}")
    return st.st_size


def read_user_file(path: Path, *, what: str = "the file", limit: int = MAX_INPUT_BYTES,
                   line_limit: int | None = MAX_LINE_BYTES) -> bytes:
    """The bytes of ``path``: a regular file of at most ``limit`` bytes, lines of at most
    ``line_limit`` bytes; anything else an :class:`InputError` naming the file."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: {kind_of(st.st_mode)}, not a regular file: cannot read it as {what}")
        if st.st_size > limit:
            raise InputError(f"{path}: {st.st_size} bytes, over the {limit}-byte limit for {what}")
        chunks, total = [], 0
        while True:
            block = os.read(fd, min(1 << 20, limit + 1 - total))
            if not block:
                break
            chunks.append(block)
            total += len(block)
            if total > limit:
                raise InputError(f"{path}: more than {limit} bytes (it grew while read), over the limit for {what}")
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if line_limit is not None:
        check_line_lengths(data, path, line_limit=line_limit, what=what)
    return data


def check_line_lengths(data: bytes, path: Path | str, *, line_limit: int = MAX_LINE_BYTES,
                       what: str = "the file") -> None:
    """An :class:`InputError` naming the first line of ``data`` longer than ``line_limit``."""
    if len(data) <= line_limit:
        return
    lines = data.split(b"\n")
    if max(map(len, lines)) <= line_limit:
        return
    for n, text in enumerate(lines, 1):
        if len(text) > line_limit:
            raise InputError(f"{path}:{n}: a line of {len(text)} bytes, over the {line_limit}-byte "
                             f"line limit for {what}")
