"""Text for the HTML page made inert before the template escapes it: control characters
(ANSI escapes among them) and bidirectional overrides shown as visible symbols, every line
capped, every text capped, log tails read in bounded memory. Escaping ``<``, ``&`` and
quotes is the template engine's (autoescape); this is what escaping does not cover."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

__all__ = ["LINE_CAP", "TEXT_CAP", "TAIL_CAP", "inert", "log_tail"]

LINE_CAP = 2_000  # characters of one line
TEXT_CAP = 20_000  # characters of one text (a note, a reason, a command)
TAIL_CAP = 16_384  # bytes of one log's tail with --embed-logs

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional controls that
# reorder what a reader sees ("Trojan Source"): each shown as a visible symbol.
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␍ for CR …
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\u27e8U+{code:04X}\u27e9"  # ⟨U+202E⟩


def inert(text: str | None, *, line_cap: int = LINE_CAP, text_cap: int = TEXT_CAP) -> str:
    """``text`` with every control character visible, each line at most ``line_cap``
    characters and the whole at most ``text_cap`` (each cut says how much it left out)."""
    if not text:
        return ""
    cut = ""
    if len(text) > text_cap:
        cut = f" … ({len(text) - text_cap:,} more characters not shown)"
        text = text[:text_cap]
    if "\n" in text or len(text) > line_cap:
        lines = []
        for line in text.split("\n"):
            if len(line) > line_cap:
                line = f"{line[:line_cap]} … ({len(line) - line_cap:,} more characters on this line)"
            lines.append(line)
        text = "\n".join(lines)
    return _HIDDEN.sub(_visible, text) + cut


def log_tail(path: Path | None, *, cap: int = TAIL_CAP) -> str | None:
    """The last ``cap`` bytes of a log (decoded leniently, made inert); None when it cannot be
    read. Only regular files are read: a FIFO or a device named by a row is not opened."""
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        start = max(0, st.st_size - cap)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, cap)
    except OSError:
        return None
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    if start:
        text = f"[… the first {start:,} bytes of the log are not shown]\n" + text
    return inert(text, text_cap=cap + 200)
