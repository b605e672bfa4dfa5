"""The stages a session or the CLI runs, each one call into the engine."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from .console import ConsoleReporter, render_summary
from .executor import LocalExecutor
from .gitfacts import read_git_facts
from .hosts import Host, detect_local
from .ledger import Ledger
from .plan import plan_host_checks
from .runner import RunSummary, run_steps
from .workspace import Workspace

__all__ = ["local_host", "run_host_checks"]


def local_host(ws: Workspace) -> Host:
    spec = ws.local_host
    return Host(spec=spec, facts=detect_local(spec))


def run_host_checks(ws: Workspace, *, argv: Sequence[str], session: str = "host",
                    out: TextIO = sys.stdout) -> RunSummary:
    """Warning-free release builds, tests, renders, ``git diff --check``: on the local host."""
    facts = read_git_facts(ws.project.root)
    steps = plan_host_checks(ws.builds, ws.project.root)
    executor = LocalExecutor(local_host(ws))
    with Ledger.open(ws.home) as ledger:
        run_id = ledger.begin_run(session=session, argv=argv, project=ws.project.name,
                                  project_root=ws.project.root, commit=facts.commit, branch=facts.branch,
                                  dirty=facts.dirty)
        summary = run_steps(steps, session=session, run_id=run_id, facts=facts, executor=executor,
                            ledger=ledger, reporter=ConsoleReporter(out))
    render_summary(summary, out)
    return summary
