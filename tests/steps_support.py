"""Planned steps run on a host pool for a real one-commit repository, recorded in a real ledger:
the set-up the GPU-slot and probe tests share."""

from __future__ import annotations

from pathlib import Path

from conftest import git
from relgate.ledger.gitfacts import read_git_facts
from relgate.ledger.rows import StepRow
from relgate.ledger.store import Ledger
from relgate.run.plan import PlannedStep
from relgate.run.runner import HostPool, RunSummary, run_steps

__all__ = ["Quiet", "one_commit_repo", "run_in_repo"]


class Quiet:
    """A reporter that prints nothing."""

    def step_started(self, step, host) -> None:  # type: ignore[no-untyped-def]
        pass

    def step_finished(self, outcome) -> None:  # type: ignore[no-untyped-def]
        pass


def one_commit_repo(tmp: Path) -> Path:
    """``tmp/repo``: a git repository on ``main`` with one empty commit."""
    repo = tmp / "repo"
    repo.mkdir(exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    return repo


def run_in_repo(tmp: Path, steps: list[PlannedStep], pool: HostPool, *, session: str
                ) -> tuple[RunSummary, dict[str, StepRow]]:
    """``steps`` run on ``pool`` as session ``session`` for ``tmp/repo``'s commit, in a ledger under
    ``tmp/home``: the run's summary and the ledger's step rows by step name."""
    facts = read_git_facts(one_commit_repo(tmp))
    with Ledger.open(tmp / "home") as ledger:
        run_id = ledger.begin_run(session=session, argv=[], project="t", project_root=tmp, commit=facts.commit,
                                  branch="main", dirty=False)
        summary = run_steps(steps, session=session, run_id=run_id, facts=facts, pool=pool, ledger=ledger,
                            reporter=Quiet())
        rows = {r.step: r for r in ledger.steps(run_id=run_id)}
    return summary, rows
