"""One run, from planned steps to its summary: the ledger run (:class:`relgate.run.ledger_run.LedgerRun`),
the table, the reports.
(The host pool, local and SSH hosts, is :func:`relgate.remote.pool.host_pool`.)"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from relgate.core.schema import display_path
from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import GitFacts, read_git_facts, tree_is_dirty
from relgate.manifest.options import RunOptions
from relgate.manifest.workspace import Workspace
from relgate.run.console import ConsoleReporter
from relgate.run.facts import git_key
from relgate.run.ledger_run import LedgerRun, per_session, start_reports
from relgate.run.plan import PlannedStep
from relgate.run.runner import HostPool, RunSummary

__all__ = ["candidate_facts", "run_plan", "start_reports", "finish"]


def candidate_facts(ws: Workspace) -> GitFacts:
    """The candidate's git facts. HEAD is resolved once per invocation; whether the tree is
    dirty is read again for every later run, because an earlier session may have changed
    the tree (a record must never say clean about a dirty tree)."""
    key = git_key(ws.project.root)
    if key not in ws.memo:  # the first read (perhaps begun by relgate.run.facts.start_facts)
        return ws.memo.get(key, lambda: read_git_facts(ws.project.root))
    facts: GitFacts = ws.memo.get(key, lambda: read_git_facts(ws.project.root))
    return replace(facts, dirty=tree_is_dirty(facts.toplevel))


def run_plan(ws: Workspace, steps: Sequence[PlannedStep], *, session: str, argv: Sequence[str],
             pool: HostPool, reuse: bool = False, out: TextIO = sys.stdout,
             options: RunOptions | None = None) -> RunSummary:
    """Run planned steps as one ledger run and print the summary table; the pool is closed
    after it (SSH connections, host locks). The reports ``options`` asks for say "running"
    until :func:`finish` replaces them."""
    facts = candidate_facts(ws)
    if reuse and facts.dirty:
        print(f"--reuse: the tree at {facts.toplevel} is dirty (modified or untracked files), so nothing "
              "can be reused: a pass counts only for a clean tree; every step runs", file=out)
    with LedgerRun(ws, session=session, argv=argv, facts=facts, pool=pool, out=out, options=options) as run:
        run.steps(steps, reporter=ConsoleReporter(out), reuse=reuse)
    return run.summary


def finish(summary: RunSummary, options: RunOptions, out: TextIO) -> RunSummary:
    not_run = summary.count(Verdict.NOT_RUN)
    if not_run and options.require_all:
        print(f"--require-all: {not_run} step(s) not run count as a failure", file=out)
    elif not_run:
        print(f"{not_run} step(s) not run (they do not fail this run; --require-all makes them)", file=out)
    if options.report or options.junit:
        from relgate.run.reports import write_json_report, write_junit
    if options.report:
        path = per_session(options.report, summary.session)
        write_json_report(summary, path, require_all=options.require_all)
        print(f"report: {display_path(path)}", file=out)
        _warn_inside_tree(path, summary, out)
    if options.junit:
        path = per_session(options.junit, summary.session)
        write_junit(summary, path, require_all=options.require_all)
        print(f"junit: {display_path(path)}", file=out)
        _warn_inside_tree(path, summary, out)
    return summary


def _warn_inside_tree(path: Path, summary: RunSummary, out: TextIO) -> None:
    from relgate.run.report_paths import report_inside_tree

    warning = report_inside_tree(path, summary.facts.toplevel)
    if warning:
        print(warning, file=out)
