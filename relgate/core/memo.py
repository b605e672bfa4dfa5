"""Facts worth reading once per invocation (host detection, HEAD), kept by key.

A :class:`Memo` lives on the loaded workspace; the nox layer loads the workspace once
per process, so ``nox -s host gate contract`` detects the local host once. ``counts``
says how often each key was computed (tests and ``relgate check`` read it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["Memo"]

T = TypeVar("T")


class Memo:
    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}
        self.counts: dict[Hashable, int] = {}

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        if key not in self._values:
            self._values[key] = compute()
            self.counts[key] = self.counts.get(key, 0) + 1
        return self._values[key]
