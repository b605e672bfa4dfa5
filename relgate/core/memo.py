"""Facts worth reading once per invocation (host detection, HEAD), kept by key.

A :class:`Memo` lives on the loaded workspace; the nox layer loads the workspace once
per process, so ``nox -s host gate contract`` detects the local host once. ``counts``
says how often each key was computed (tests and ``relgate check`` read it).

:meth:`Memo.start` begins a computation without waiting for it (the detection's and git's
processes run while the plan is made); the first :meth:`Memo.get` of the key waits for it,
and raises what it raised.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["Memo"]

T = TypeVar("T")


class Memo:
    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}
        self._pending: dict[Hashable, Callable[[], Any]] = {}
        self.counts: dict[Hashable, int] = {}

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values

    def start(self, key: Hashable, begin: Callable[[], Callable[[], Any]]) -> None:
        """Begin computing ``key`` now: ``begin`` starts the work and returns what waits for
        its value. Nothing happens for a key already known or begun."""
        if key not in self._values and key not in self._pending:
            self._pending[key] = begin()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        if key not in self._values:
            compute = self._pending.pop(key, compute)
            self._values[key] = compute()
            self.counts[key] = self.counts.get(key, 0) + 1
        return self._values[key]
