"""``expect_output``: does a regular expression match a step's output, in constant memory.

The output is searched in windows of whole lines as it arrives, with ``re.MULTILINE``
(``^`` and ``$`` at every line). Each window repeats the last :data:`OVERLAP` characters of
the one before, so a match spanning lines is found unless it is longer than that; once the
pattern matched, the rest of the output is not kept at all. Memory: one window
(:data:`WINDOW` + :data:`OVERLAP` characters), whatever the output's size.
"""

from __future__ import annotations

import re

__all__ = ["OutputMatcher", "WINDOW", "OVERLAP"]

WINDOW = 1 << 20
OVERLAP = 64 << 10


class OutputMatcher:
    """Feed output with :meth:`feed`; :meth:`finish` says whether the pattern matched."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._regex = re.compile(pattern, re.MULTILINE)
        self._carry = ""  # the overlap of the last window, then the lines not searched yet
        self._searched = 0  # how much of _carry was searched already (the overlap)
        self._pending: list[str] = []  # fed since the last search (joined once per window)
        self._pending_len = 0
        self.matched = False

    def feed(self, text: str) -> None:
        if self.matched or not text:
            return
        self._pending.append(text)
        self._pending_len += len(text)
        if self._pending_len >= WINDOW:
            self._search(final=False)

    def finish(self) -> bool:
        if not self.matched:
            self._search(final=True)
        self._carry = ""
        return self.matched

    def _search(self, *, final: bool) -> None:
        if self._pending:
            self._carry += "".join(self._pending)
            self._pending, self._pending_len = [], 0
        # Up to the last line end (not past it), so "$" never matches where the output goes
        # on; the rest waits for the next window. A line longer than a window is cut anyway.
        newline = self._carry.rfind("\n")
        end = len(self._carry) if final or newline < self._searched else newline
        if end <= self._searched and not final:
            return
        if self._regex.search(self._carry, 0, end):
            self.matched = True
            self._carry = ""
            return
        window = self._carry[:end]
        start = max(0, len(window) - OVERLAP)
        cut = window.find("\n", start)  # keep the overlap from a line start, so "^" stays true
        keep = window[cut + 1:] if cut != -1 and cut + 1 < len(window) else ""
        self._carry = keep + self._carry[end:]
        self._searched = len(keep)
