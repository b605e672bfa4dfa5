"""A test runner's counts for one step, as read from its own output: the frozen record the
ledger keeps beside the verdict (``relgate.run.testcounts`` reads them)."""

from __future__ import annotations

import json
import re
from typing import Any

from relgate.core.record import record

__all__ = ["TestCounts", "parse_max_skipped", "skip_limit_text"]


@record
class TestCounts:
    """What a runner said it executed. ``passed`` counts what ran and did not fail (cargo's
    ``measured`` benches, pytest's ``xfailed``/``xpassed`` too), ``failed`` what failed (pytest's
    errors too), ``skipped`` what it listed and did not run (cargo's ``ignored``, pytest's
    ``skipped``, ctest's Skipped / Not Run / Disabled); ``filtered`` what a name filter left
    out (cargo's ``filtered out``, pytest's ``deselected``): not a test of this step. Cargo's
    doc-tests are counted apart (``doc_passed`` …): a doc-test is not a target's test."""

    __test__ = False  # not a pytest class, whatever its name says

    runner: str  # cargo, pytest, ctest
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    filtered: int = 0
    doc_passed: int = 0
    doc_failed: int = 0
    doc_skipped: int = 0
    binaries: int = 0  # cargo: the test binaries whose summary was read (doc-tests apart); others: 0
    note: str | None = None  # what the runner said about an empty run ("No tests were found!!!")

    @property
    def ran(self) -> int:
        return self.passed + self.failed

    @property
    def total(self) -> int:
        """The tests the runner knew of (ran or skipped), the filtered ones not counted."""
        return self.ran + self.skipped

    def text(self) -> str:
        """``39 passed, 41 skipped`` (zeros left out but for passed); ``0 tests ran`` when nothing ran."""
        if not self.total:
            return "0 tests ran"
        parts = [f"{self.passed} passed"]
        parts += [f"{n} {what}" for n, what in ((self.failed, "failed"), (self.skipped, "skipped")) if n]
        return ", ".join(parts)

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in self.__dict__.items() if v not in (0, None) or k == "runner"},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> "TestCounts | None":
        """The record a ledger row holds (None: no count was read for that step)."""
        if not text:
            return None
        try:
            data: dict[str, Any] = json.loads(text)
            return cls(**data)
        except (ValueError, TypeError):
            return None


def parse_max_skipped(value: object) -> tuple[int | None, float | None] | str:
    """``max_skipped`` as (count, share): ``3`` is a count, ``"10%"`` a share of the tests;
    a string saying what is wrong otherwise."""
    if isinstance(value, bool):
        return "expected a count (an integer, 0 or more) or a share (\"10%\")"
    if isinstance(value, int):
        return (value, None) if value >= 0 else "a count of skipped tests is 0 or more"
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*", value)
        if match and float(match.group(1)) <= 100:
            return None, float(match.group(1)) / 100
        return f"expected a share like \"10%\" (0 to 100), got {value!r}"
    return "expected a count (an integer, 0 or more) or a share (\"10%\")"


def skip_limit_text(limit: tuple[int | None, float | None]) -> str:
    count, share = limit
    return str(count) if count is not None else f"{(share or 0) * 100:g}%"
