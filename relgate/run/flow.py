"""One run, from planned steps to its summary: the ledger run, the table, the reports.
(The host pool, local and SSH hosts, is :func:`relgate.remote.pool.host_pool`.)"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from relgate.core.verdict import Verdict
from relgate.ledger.gitfacts import GitFacts, read_git_facts, tree_is_dirty
from relgate.ledger.identity import project_identity
from relgate.ledger.store import Ledger
from relgate.manifest.options import RunOptions
from relgate.manifest.schema import display_path
from relgate.manifest.workspace import Workspace
from relgate.run.console import ConsoleReporter, render_summary
from relgate.run.facts import git_key
from relgate.run.plan import PlannedStep
from relgate.run.runner import HostPool, RunSummary, run_steps

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
    try:
        with Ledger.open(ws.home) as ledger:
            run_id = ledger.begin_run(session=session, argv=argv, project=ws.project.name,
                                      project_root=ws.project.root, commit=facts.commit, branch=facts.branch,
                                      dirty=facts.dirty, identity=project_identity(ws, facts))
            start_reports(options, run_id=run_id, session=session, facts=facts, ledger=ledger)
            summary = run_steps(steps, session=session, run_id=run_id, facts=facts, pool=pool, ledger=ledger,
                                reporter=ConsoleReporter(out), reuse=reuse)
    finally:
        close = getattr(pool, "close", None)
        if close is not None:
            close()
    render_summary(summary, out)
    return summary


def start_reports(options: RunOptions | None, *, run_id: str | None, session: str, facts: GitFacts,
                  ledger: Ledger | None = None) -> None:
    """The reports ``options`` asks for, saying "running" (never green) until :func:`finish`
    replaces them: an interrupted run leaves no earlier run's green report behind. A report
    that cannot be written stops the run before any step, and ``ledger``'s run is closed."""
    if options is not None and (options.report or options.junit):
        from relgate.run.reports import write_running

        try:
            write_running(json_path=options.report and _per_session(options.report, session),
                          junit_path=options.junit and _per_session(options.junit, session), run_id=run_id,
                          session=session, facts=facts)
        except BaseException:
            if ledger is not None and run_id is not None:
                ledger.finish_run(run_id, "failed")
            raise


def finish(summary: RunSummary, options: RunOptions, out: TextIO) -> RunSummary:
    not_run = summary.count(Verdict.NOT_RUN)
    if not_run and options.require_all:
        print(f"--require-all: {not_run} step(s) not run count as a failure", file=out)
    elif not_run:
        print(f"{not_run} step(s) not run (they do not fail this run; --require-all makes them)", file=out)
    if options.report or options.junit:
        from relgate.run.reports import write_json_report, write_junit
    if options.report:
        path = _per_session(options.report, summary.session)
        write_json_report(summary, path, require_all=options.require_all)
        print(f"report: {display_path(path)}", file=out)
        _warn_inside_tree(path, summary, out)
    if options.junit:
        path = _per_session(options.junit, summary.session)
        write_junit(summary, path, require_all=options.require_all)
        print(f"junit: {display_path(path)}", file=out)
        _warn_inside_tree(path, summary, out)
    return summary


def _warn_inside_tree(path: Path, summary: RunSummary, out: TextIO) -> None:
    from relgate.run.report_paths import report_inside_tree

    warning = report_inside_tree(path, summary.facts.toplevel)
    if warning:
        print(warning, file=out)


def _per_session(path: Path, session: str) -> Path:
    """``{session}`` in a report's name: one file per session of `nox -s host gate contract`."""
    return Path(str(path).replace("{session}", session))
