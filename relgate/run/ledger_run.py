"""One ledger run, opened and closed in one place: the local flow, the fleet and the
measuring stage all go through :class:`LedgerRun`::

    with LedgerRun(ws, session="gate", argv=argv, facts=facts, pool=pool, out=out) as run:
        run.steps(steps, reporter=ConsoleReporter(out))     # or run.record(outcomes)

Entering opens the ledger, begins the run (its steps carry the project's identity) and writes
the "running" reports ``options`` asks for; leaving finishes the run (``ok``/``failed`` by its
summary, ``interrupted`` when a signal stopped it), closes the ledger and the host pool (SSH
connections, host locks) and, when nothing went wrong, prints the summary table.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TextIO

from relgate.ledger.gitfacts import GitFacts
from relgate.ledger.identity import ProjectIdentity, project_identity
from relgate.ledger.store import Ledger
from relgate.manifest.options import RunOptions
from relgate.manifest.workspace import Workspace
from relgate.run.console import render_summary
from relgate.run.executor import Interrupted
from relgate.run.plan import PlannedStep
from relgate.run.recorder import StepOutcome, StepRecorder
from relgate.run.runner import HostPool, Reporter, RunSummary, run_steps

__all__ = ["LedgerRun", "start_reports", "per_session"]


class LedgerRun:
    """One run of ``session`` in the ledger under ``ws.home``, for the candidate ``facts``."""

    def __init__(self, ws: Workspace, *, session: str, argv: Sequence[str], facts: GitFacts, pool: HostPool,
                 out: TextIO, options: RunOptions | None = None, close_pool: bool = True) -> None:
        self.ws, self.session, self.argv, self.facts, self.pool = ws, session, argv, facts, pool
        self.out, self.options, self.close_pool = out, options, close_pool

    def __enter__(self) -> LedgerRun:
        self.ledger = Ledger.open(self.ws.home)
        try:
            self.identity: ProjectIdentity = project_identity(self.ws, self.facts)
            self.run_id = self.ledger.begin_run(
                session=self.session, argv=self.argv, project=self.ws.project.name,
                project_root=self.ws.project.root, commit=self.facts.commit, branch=self.facts.branch,
                dirty=self.facts.dirty, identity=self.identity)
            self.summary = RunSummary(run_id=self.run_id, session=self.session, facts=self.facts)
            self.recorder = StepRecorder(self.ledger, run_id=self.run_id, session=self.session, facts=self.facts)
            start_reports(self.options, run_id=self.run_id, session=self.session, facts=self.facts,
                          ledger=self.ledger)
        except BaseException:
            self._close()
            raise
        return self

    def steps(self, steps: Sequence[PlannedStep], *, reporter: Reporter, reuse: bool = False,
              facts: GitFacts | None = None) -> RunSummary:
        """Run ``steps`` in this run (:func:`relgate.run.runner.run_steps`) and keep their
        outcomes; ``facts``: the commit they run at, when not the candidate's (a measure's
        previous release)."""
        part = run_steps(steps, session=self.session, run_id=self.run_id, facts=facts or self.facts, pool=self.pool,
                         ledger=self.ledger, reporter=reporter, reuse=reuse)
        self.record(part.outcomes)
        return part

    def record(self, outcomes: Sequence[StepOutcome]) -> None:
        """Outcomes recorded elsewhere in this run (the fleet's workers) join its summary."""
        self.summary.outcomes.extend(outcomes)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if exc is None:
                self.ledger.finish_run(self.run_id, "ok" if self.summary.ok() else "failed")
            elif isinstance(exc, (Interrupted, KeyboardInterrupt)):
                if self.summary.interrupted is None:
                    self.summary.interrupted = _signame(exc)
                self.ledger.finish_run(self.run_id, "interrupted")
        finally:
            self._close()
        if exc is None:
            render_summary(self.summary, self.out)

    def _close(self) -> None:
        try:
            self.ledger.close()
        finally:
            close = getattr(self.pool, "close", None) if self.close_pool else None
            if close is not None:
                close()


def _signame(exc: BaseException) -> str:
    if isinstance(exc, Interrupted):
        try:
            return signal.Signals(exc.signum).name
        except ValueError:
            return f"signal {exc.signum}"
    return "SIGINT"


def start_reports(options: RunOptions | None, *, run_id: str | None, session: str, facts: GitFacts,
                  ledger: Ledger | None = None) -> None:
    """The reports ``options`` asks for, saying "running" (never green) until
    :func:`relgate.run.flow.finish` replaces them: an interrupted run leaves no earlier run's
    green report behind. A report that cannot be written stops the run before any step, and
    ``ledger``'s run is closed."""
    if options is not None and (options.report or options.junit):
        from relgate.run.reports import write_running

        try:
            write_running(json_path=options.report and per_session(options.report, session),
                          junit_path=options.junit and per_session(options.junit, session), run_id=run_id,
                          session=session, facts=facts)
        except BaseException:
            if ledger is not None and run_id is not None:
                ledger.finish_run(run_id, "failed")
            raise


def per_session(path: Path, session: str) -> Path:
    """``{session}`` in a report's name: one file per session of `nox -s host gate contract`."""
    return Path(str(path).replace("{session}", session))
