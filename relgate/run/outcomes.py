"""What an in-process step raises to give its own verdict: not-run or fail (with the reason).

Kept apart from :mod:`relgate.run.plan` (which re-exports both) so that the modules of
in-process steps it plans can raise them without importing the planner.
"""

from __future__ import annotations

__all__ = ["StepNotRun", "StepFailed"]


class StepNotRun(Exception):
    """Raised by an in-process action that found nothing it could check (verdict not-run)."""


class StepFailed(Exception):
    """Raised by an in-process action that checked and found the code under test wrong
    (verdict fail); the message is the step's reason (the details are already in its log)."""
