"""A regex compiled when it is first used, not when its module is imported.

Compiling the redaction and harness patterns at import cost a few milliseconds of every
relgate start, also of the runs whose output never needs them (most lines name no secret
and no known harness message: the cheap tests before them decide). :class:`Folded` is
those cheap tests' word search over a whole chunk of output."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["Folded", "LazyPattern"]


class LazyPattern:
    """Stands for ``re.compile(pattern, flags)``: every attribute (``search``, ``sub``,
    ``pattern`` …) is the compiled pattern's, compiled on the first use."""

    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source, self._flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled(), name)


class Folded:
    """A chunk of output, for the live scanners' cheap tests of a whole chunk: does it hold a
    word, ASCII case ignored? A word with a letter the chunk lacks in either case is not in
    it (a ``memchr`` per case, ~50× faster than a substring search); only otherwise is the
    chunk lower-cased, once, the copy shared by every test and every scanner given this
    object (the runner's tee hands one to the warning and the harness scanner alike).
    Non-ASCII text is never lower-cased here: the callers use their IGNORECASE regex there
    (it folds a few non-ASCII letters onto ASCII ones, as ``str.lower`` does not)."""

    __slots__ = ("text", "ascii", "_lower")

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()
        self._lower: str | None = None

    def has_word(self, word: str) -> bool:
        """Whether ``word`` (lower-case ASCII) is in the text, ASCII case ignored (ASCII text only)."""
        text = self.text
        for letter in word:
            if letter.isalpha() and letter not in text and letter.upper() not in text:
                return False
        if self._lower is None:
            self._lower = text.lower()
        return word in self._lower
