"""Verdicts, with exactly the meanings DESIGN.md gives them."""

from __future__ import annotations

from enum import Enum

__all__ = ["Verdict"]


class Verdict(str, Enum):
    PASS = "pass"  # it ran and showed what it must
    FAIL = "fail"  # the code under test is wrong
    ERROR = "error"  # the harness, host or network broke (or relgate was interrupted)
    SKIP = "skip"  # a person or manifest chose not to run it, with a reason
    NOT_RUN = "not-run"  # nothing could run it, with the reason

    @property
    def blocks(self) -> bool:
        """Whether this verdict makes a session exit non-zero."""
        return self in (Verdict.FAIL, Verdict.ERROR)

    def __str__(self) -> str:
        return self.value
