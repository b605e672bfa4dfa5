"""A comparison's words: a row's, a suite's and a board's verdict, and what makes a board compared."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["PASS", "RERUN", "SLOWER", "BLOCK", "UNDECIDED", "MISSING", "compared", "missing_verdict"]

PASS, RERUN, SLOWER, BLOCK, UNDECIDED = "pass", "rerun", "slower", "block", "undecided"
MISSING = "missing"  # a board whose candidate left rows or metrics of the previous release unmeasured


def compared(verdict: str) -> bool:
    """Whether a board's verdict is a judgement of every row (not ``not measured: …``, not ``missing: …``)."""
    return verdict in (PASS, SLOWER, RERUN, BLOCK) or verdict.startswith(UNDECIDED)


def missing_verdict(missing: Sequence[str]) -> str:
    shown = "; ".join(missing[:3]) + (f"; … {len(missing) - 3} more" if len(missing) > 3 else "")
    return (f"{MISSING}: {len(missing)} row × metric{'s' if len(missing) != 1 else ''} of the previous release "
            f"not validly measured for the candidate ({shown}); measure them, or skip the item with a reason")
