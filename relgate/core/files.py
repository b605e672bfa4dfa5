"""Files: writing an output file (a report, a sign-off file) so that it is whole or absent,
and a file's sha256 read in blocks.

A regular file (or a new one) is written to a temporary file beside it and renamed into
place. A device or a pipe (``/dev/stdout``, ``/dev/null``, a FIFO) is written into, never
replaced: renaming over ``/dev/full`` would swap a device node for a regular file and report
success. Every failure (``/dev/full``'s "No space left on device", a folder, a read-only
place) is an :class:`InputError` naming the file: exit 2, never a green run.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from relgate.core.errors import InputError

__all__ = ["write_output", "sha256_file"]


def sha256_file(path: Path) -> str:
    """The hex sha256 of ``path``'s bytes, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_output(path: Path, data: bytes, *, what: str = "the report") -> None:
    path = Path(path)
    try:
        try:
            mode = os.stat(path).st_mode  # through a symlink: what a write would reach
        except FileNotFoundError:
            mode = None
        if mode is not None and stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory")
        if mode is not None and not stat.S_ISREG(mode):
            with open(path, "wb") as fh:  # a device or a pipe: written into; close() flushes and reports
                fh.write(data)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise InputError(f"{path}: cannot write {what}: {exc.strerror or exc}") from None
