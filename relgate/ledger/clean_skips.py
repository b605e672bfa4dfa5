"""The skipped-test counts of the latest clean run of each lane target at a commit: what
``relgate init`` writes as ``max_skipped`` and what ``init --check`` holds the manifest to.

A clean run here is a step of a lane target that passed, on a clean tree, in a run of the
project at ``root``, with the runner's counts read. Plain data comes back (target → counts
and where they came from): the manifest floor, below this one, only writes it out.
"""

from __future__ import annotations

from pathlib import Path

from relgate.core.errors import InputError
from relgate.core.record import record
from relgate.core.verdict import Verdict

__all__ = ["CleanSkips", "clean_skips"]


@record
class CleanSkips:
    skipped: int
    total: int
    run_id: str
    commit: str

    @property
    def source(self) -> str:
        """Which run the count came from, for a comment or a report line."""
        return f"run {self.run_id} at {self.commit[:12]}: {self.skipped} of {self.total} skipped"


def clean_skips(home: Path, root: Path) -> dict[str, CleanSkips] | None:
    """target → its latest clean run's counts at the HEAD of ``root``; None when the ledger at
    ``home`` holds no such run (no ledger, not a git tree, or no passing lane step with counts
    on a clean tree at HEAD)."""
    from relgate.ledger.gitfacts import resolve_commit
    from relgate.ledger.store import Ledger

    if not Ledger.exists(home):
        return None
    try:
        head = resolve_commit(root, "HEAD")
    except InputError:
        return None
    root = Path(root).resolve()
    with Ledger.open(home) as ledger:
        runs = {r.id for r in ledger.runs(commit=head) if not r.dirty and _same(r.project_root, root)}
        rows = [s for s in ledger.steps(commit=head) if s.run_id in runs]
    out: dict[str, CleanSkips] = {}
    for s in rows:  # oldest first: the latest clean run of a target wins
        if s.lane is None or s.target is None or s.dirty or s.tests is None or s.verdict is not Verdict.PASS:
            continue
        out[s.target] = CleanSkips(skipped=s.tests.skipped, total=s.tests.total, run_id=s.run_id, commit=head)
    return out or None


def _same(recorded: str, root: Path) -> bool:
    try:
        return Path(recorded).resolve() == root
    except (OSError, ValueError):
        return False
