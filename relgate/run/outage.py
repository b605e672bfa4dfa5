"""A registry outage is one ``error`` per host: after a step found cargo's registry unreachable
on a host, that host's later cargo steps in the same run are recorded as the same error at once
(cargo would retry for minutes and say it again). Shared by every path that runs steps: the
runner's loop, its GPU-slot side-by-side path and the fleet's host workers (thread-safe)."""

from __future__ import annotations

import threading

from relgate.core.verdict import Verdict
from relgate.run.harness import REGISTRY_DOWN
from relgate.run.hosts import Host
from relgate.run.plan import PlannedStep
from relgate.run.recorder import StepOutcome, StepRecorder

__all__ = ["REGISTRY_DOWN", "RegistryOutages", "runs_cargo"]

def runs_cargo(step: PlannedStep) -> bool:
    """Whether ``step`` runs cargo (a command whose program is ``cargo``)."""
    return step.action is None and any((c.argv or ())[:1] == ("cargo",) or (c.shell or "").lstrip().startswith("cargo ")
                                       for c in step.commands)


class RegistryOutages:
    """Per host of one run: the step that found cargo's registry unreachable there."""

    def __init__(self) -> None:
        self._found: dict[str, str] = {}
        self._lock = threading.Lock()

    def known(self, step: PlannedStep, host: Host) -> str | None:
        """The step that found the outage on ``host``, when ``step`` runs cargo there; else None."""
        if not runs_cargo(step):
            return None
        with self._lock:
            return self._found.get(host.name)

    def note(self, outcome: StepOutcome, host: Host) -> None:
        """Remember ``outcome`` when it is the first registry outage found on ``host``."""
        if outcome.verdict is Verdict.ERROR and (outcome.reason or "").startswith(REGISTRY_DOWN):
            with self._lock:
                self._found.setdefault(host.name, outcome.step.name)

    @staticmethod
    def record(step: PlannedStep, host: Host, first: str, rec: StepRecorder) -> StepOutcome:
        """``step`` recorded as the outage ``first`` found on ``host``, without running it."""
        reason = f"{REGISTRY_DOWN} (found by {first} on {host.name} in this run; not retried)"
        return rec.decided(step, verdict=Verdict.ERROR, reason=reason, host=host)
