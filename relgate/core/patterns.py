"""A regex compiled when it is first used, not when its module is imported.

Compiling the redaction and harness patterns at import cost a few milliseconds of every
relgate start, also of the runs whose output never needs them (most lines name no secret
and no known harness message: the cheap tests before them decide)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["LazyPattern"]


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
