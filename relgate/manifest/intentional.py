"""``intentional.toml``: evidence cells a release re-records on purpose, each with a reason.

    [[change]]
    suite = "scan"                      # required
    arm = "parity"                      # optional: without it, the whole suite
    key = "f32_max_abs_err_4096"        # optional (needs arm): one cell
    board = "H100"                      # optional: only on this board
    reason = "blocked summation since 0.5: error bound halves"
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from relgate.core.record import record
from relgate.core.schema import Checker
from relgate.manifest.keys import INTENTIONAL

__all__ = ["IntentionalChange", "parse_intentional"]

Cell = tuple[str, str, str]  # suite, arm, key (relgate.evidence.cells.Cell)


@record
class IntentionalChange:
    """Cells this release re-records on purpose: one cell, or every cell under a suite (/ arm)."""

    index: int
    suite: str
    arm: str | None = None
    key: str | None = None
    board: str | None = None
    reason: str

    def matches(self, cell: Cell, board: str) -> bool:
        if self.board is not None and self.board != board:
            return False
        wanted = (self.suite, self.arm, self.key)
        return all(w is None or w == have for w, have in zip(wanted, cell))

    def describe(self) -> str:
        parts = [p for p in (self.suite, self.arm, self.key) if p is not None]
        what = " / ".join(parts) + ("" if self.key is not None else " / …")
        return what + (f" on {self.board}" if self.board else "")


def parse_intentional(data: Mapping[str, Any], *, path: Path) -> list[IntentionalChange]:
    c = Checker(path)
    c.keys(data, "", INTENTIONAL.names())
    change = INTENTIONAL.top("change")
    out = []
    for i, t in c.array_of_tables(data, "", "change").items():
        prefix = f"change[{i}]"
        c.keys(t, prefix, change.names(), required=change.required_names())
        reason = c.get(t, prefix, "reason", str, "")
        if "reason" in t and isinstance(reason, str) and not reason.strip():
            c.problem(f"{prefix}.reason", "must say why this change is intended")
        arm, key = c.get(t, prefix, "arm", str), c.get(t, prefix, "key", str)
        if key is not None and arm is None:
            c.problem(f"{prefix}.key", "a key needs its arm (suite, arm, key name one cell)")
        out.append(IntentionalChange(index=i, suite=c.get(t, prefix, "suite", str, ""), arm=arm, key=key,
                                     board=c.get(t, prefix, "board", str), reason=reason))
    c.raise_if_problems()
    return out
