"""A step's evidence capture before it is stored: checked, its secrets masked, its cells counted.

The project's tests append ``suite<TAB>arm<TAB>key<TAB>value`` rows to the file named by the
evidence variable (the rules of :mod:`relgate.evidence.cells`: a UTF-8 BOM and CRLF are fine,
``#`` lines and blank lines are comments, the value is everything after the third tab, an empty
suite, arm or key is malformed). What comes back is judged here, once, in one bounded pass:

- a malformed row or an invalid UTF-8 byte is an ``error`` naming the file and line;
- a capture with no row (only comments or blank lines) holds no evidence;
- a cell whose key names a secret (``api_token``, ``password``, ``*_key`` …:
  :func:`~relgate.core.redact.is_secret_key`) is stored with the value ``***``, and every
  secret the step's environment knows is masked wherever it shows up (``redact``).

This module sits below :mod:`relgate.evidence` (the runner may not import it), so the row rules
are restated here; tests/test_evidence_captures.py holds both to the same table of rows.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from itertools import repeat
from pathlib import Path

from relgate.core.readers import MAX_INPUT_BYTES, MAX_LINE_BYTES
from relgate.core.record import record
from relgate.core.redact import MASK, is_secret_key

__all__ = ["CaptureCheck", "check_capture"]

_CHUNK = 1 << 20
#: The largest capture, and the longest line in one, stored as evidence (core/readers' limits).
MAX_CAPTURE = MAX_INPUT_BYTES
MAX_LINE = MAX_LINE_BYTES
_EXPECTED = "expected suite<TAB>arm<TAB>key<TAB>value"
_FIELDS = ("suite", "arm", "key")
# Every key is_secret_key accepts holds one of these (lower case): a chunk without any is not split.
_KEY_HINTS = ("passw", "pwd", "secret", "token", "credential", "apikey", "cookie", "key")


@record
class CaptureCheck:
    cells: int  # rows (a cell written twice counts twice: at least one cell when > 0)
    masked: int  # cells whose key names a secret, stored as ***
    error: str | None  # "FILE:LINE: malformed evidence row: …" or invalid UTF-8; nothing is stored then


class _TooLong(Exception):
    pass


def _chunks(path: Path) -> Iterator[tuple[bytes, int]]:
    """Whole lines, about ``_CHUNK`` bytes at a time, with the first one's line number; a line
    longer than :data:`MAX_LINE` raises :class:`_TooLong` (its line number)."""
    with open(path, "rb") as handle:
        lineno, carry = 1, b""
        while True:
            block = handle.read(_CHUNK)
            data = carry + block if carry else block
            if not block:
                if data:
                    yield data, lineno
                return
            cut = data.rfind(b"\n") + 1
            if not cut:
                if len(data) > MAX_LINE:  # a line with no end: a sparse file, a stream of NULs
                    raise _TooLong(lineno)
                carry = data
                continue
            data, carry = data[:cut], data[cut:]
            yield data, lineno
            lineno += data.count(b"\n")


def _rows(lines: list[str], source: str, lineno: int) -> tuple[list[int], str | None]:
    """The positions of the rows among ``lines`` (comments and blanks skipped), or the first bad line."""
    rows = []
    for n, line in enumerate(lines):
        if line[:1] == "#" or ("\t" not in line and not line.strip()):
            continue
        fields = line.split("\t", 3)
        if len(fields) != 4:
            return rows, f"{source}:{lineno + n}: malformed evidence row: {_EXPECTED}, got {len(fields)} fields"
        for name, field in zip(_FIELDS, fields):
            if not field:
                return rows, f"{source}:{lineno + n}: malformed evidence row: {_EXPECTED}, got an empty {name}"
        rows.append(n)
    return rows, None


def _mask(lines: list[str], rows: list[int]) -> int:
    """Replace the value of every row whose key names a secret with ``***``; how many."""
    masked = 0
    for n in rows:
        suite, arm, key, value = lines[n].split("\t", 3)
        if is_secret_key(key):  # cached: key names repeat
            end = "\r" if value.endswith("\r") else ""
            if value != MASK + end:
                lines[n] = f"{suite}\t{arm}\t{key}\t{MASK}{end}"
            masked += 1
    return masked


def check_capture(path: Path, redact: Callable[[str], str], *, shown: str | None = None) -> CaptureCheck:
    """Check ``path`` (named ``shown`` in messages) and rewrite it, atomically, with its secrets
    masked; the file is left alone when nothing in it needed hiding. Memory: one chunk."""
    path = Path(path)
    source = shown or str(path)
    cells = masked = 0
    changed = False
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        return CaptureCheck(cells=0, masked=0, error=f"{source}: not a regular file: not evidence")
    if st.st_size > MAX_CAPTURE:
        return CaptureCheck(cells=0, masked=0, error=(
            f"{source}: {st.st_size} bytes, over the {MAX_CAPTURE}-byte limit of an evidence capture: not stored"))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            chunks = _chunks(path)
            while True:
                try:
                    data, lineno = next(chunks)
                except StopIteration:
                    break
                except _TooLong as exc:
                    return CaptureCheck(cells=cells, masked=masked, error=(
                        f"{source}:{exc.args[0]}: a line over the {MAX_LINE}-byte line limit of an evidence "
                        "capture: not stored"))
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    where = lineno + data.count(b"\n", 0, exc.start)
                    return CaptureCheck(cells=cells, masked=masked, error=(
                        f"{source}:{where}: evidence is not valid UTF-8 (byte 0x{data[exc.start]:02x}: {exc.reason})"))
                if lineno == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                lines = text.split("\n")
                tail = lines.pop() if not lines[-1] else None  # "" after the last LF
                # the usual shape, at C speed: no comment, no blank, no empty name, three tabs or more
                if (lines and not text.startswith(("#", "\t")) and "\n#" not in text and "\n\t" not in text
                        and "\t\t" not in text and "\n\n" not in text and "\n\r\n" not in text
                        and min(map(str.count, lines, repeat("\t"))) >= 3):
                    rows = list(range(len(lines)))
                else:
                    rows, error = _rows(lines, source, lineno)
                    if error is not None:
                        return CaptureCheck(cells=cells, masked=masked, error=error)
                cells += len(rows)
                lower = text.lower()
                if rows and any(hint in lower for hint in _KEY_HINTS):
                    found = _mask(lines, rows)
                    masked += found
                    changed = changed or bool(found)
                if tail is not None:
                    lines.append(tail)
                body = "\n".join(lines)
                shown_text = redact(body)
                changed = changed or shown_text != text
                out.write(shown_text.encode("utf-8"))
        if changed:
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return CaptureCheck(cells=cells, masked=masked, error=None)
